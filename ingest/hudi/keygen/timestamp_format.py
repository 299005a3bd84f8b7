"""`TimestampBasedKeyGenerator`'s settings and its partition-path formatting.

Mirrors `TimestampBasedAvroKeyGenerator` (timestamp types, input/output formats and zones, scalar
time units, the deprecated `hoodie.deltastreamer.` keys) over the Joda-Time engine in `joda_time.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import ConfigError
from ingest.hudi.keygen.joda_time import (
    JodaPattern,
    joda_zone,
    local_millis,
    local_to_instant,
    offset_zone,
)
from ingest.hudi.keygen.partition_path import java_split

# -- TimestampBasedKeyGenerator ----------------------------------------------------------------------

TIMESTAMP_TYPES = ("UNIX_TIMESTAMP", "DATE_STRING", "MIXED", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS", "SCALAR")
TIME_UNITS = {"NANOSECONDS": -1_000_000, "MICROSECONDS": -1000, "MILLISECONDS": 1, "SECONDS": 1000,
              "MINUTES": 60_000, "HOURS": 3_600_000, "DAYS": 86_400_000}
_PREFIX, _OLD_PREFIX = "hoodie.keygen.timebased.", "hoodie.deltastreamer.keygen.timebased."
TIMESTAMP_TYPE_KEY = _PREFIX + "timestamp.type"
OUTPUT_FORMAT_KEY = _PREFIX + "output.dateformat"
INPUT_FORMAT_KEY = _PREFIX + "input.dateformat"
DELIMITER_KEY = _PREFIX + "input.dateformat.list.delimiter.regex"
TIMEZONE_KEY = _PREFIX + "timezone"
INPUT_TIMEZONE_KEY = _PREFIX + "input.timezone"
OUTPUT_TIMEZONE_KEY = _PREFIX + "output.timezone"
TIME_UNIT_KEY = _PREFIX + "timestamp.scalar.time.unit"
PARSER_CLASS_KEY = "hoodie.keygen.datetime.parser.class"
_PARSER_OLD_KEY = "hoodie.deltastreamer.keygen.datetime.parser.class"
DEFAULT_PARSER_CLASS = "org.apache.hudi.keygen.parser.HoodieDateTimeParser"
# HoodieTableConfig.PERSISTED_CONFIG_LIST: what Hudi copies into hoodie.properties (with alternatives).
PERSISTED_TIMESTAMP_KEYS = tuple(
    k
    for suffix in ("timestamp.scalar.time.unit", "input.dateformat.list.delimiter.regex", "input.dateformat",
                   "input.timezone", "output.dateformat", "output.timezone", "timezone")
    for k in (_PREFIX + suffix, _OLD_PREFIX + suffix)
) + (PARSER_CLASS_KEY, _PARSER_OLD_KEY)


def _lookup(config: Mapping[str, str], key: str) -> str | None:
    """`ConfigUtils.getRawValueWithAltKeys`: the key, else its deprecated `hoodie.deltastreamer.` twin."""
    if key in config:
        return config[key]
    if key == PARSER_CLASS_KEY:
        return config.get(_PARSER_OLD_KEY)
    return config.get(_OLD_PREFIX + key[len(_PREFIX) :]) if key.startswith(_PREFIX) else None


def _millis_from_units(values: np.ndarray, unit_factor: int) -> np.ndarray:
    """`TimeUnit.MILLISECONDS.convert`: finer units truncate toward zero, coarser ones saturate."""
    values = values.astype(np.int64)
    if unit_factor < 0:
        divisor = -unit_factor
        return np.sign(values) * (np.abs(values) // divisor)
    if unit_factor == 1:
        return values
    limit = np.iinfo(np.int64).max // unit_factor
    out = values * unit_factor
    out = np.where(values > limit, np.iinfo(np.int64).max, out)
    return np.where(values < -limit, np.iinfo(np.int64).min, out)


def _java_long_from_float(values: np.ndarray) -> np.ndarray:
    """Java's `(long) double`: NaN is 0, out-of-range saturates, otherwise truncation."""
    values = values.astype(np.float64)
    out = np.zeros(len(values), dtype=np.int64)
    finite = np.isfinite(values) & (np.abs(values) < 2.0**63)
    out[finite] = np.trunc(values[finite]).astype(np.int64)
    out[(values >= 2.0**63)] = np.iinfo(np.int64).max
    out[(values <= -(2.0**63))] = np.iinfo(np.int64).min
    return out


@dataclass(frozen=True)
class TimestampPartitionFormat:
    """Hudi's `TimestampBasedAvroKeyGenerator.getPartitionPath`, before escaping and hive style."""

    timestamp_type: str
    unit_factor: int  # TIME_UNITS value for numeric input; 0 for DATE_STRING / MIXED
    output: JodaPattern
    inputs: tuple[JodaPattern, ...]
    input_zone: str | None
    output_zone: str | None
    jvm_zone: str

    @classmethod
    def from_config(cls, config: Mapping[str, str], jvm_timezone: str = "UTC") -> TimestampPartitionFormat:
        timestamp_type = _lookup(config, TIMESTAMP_TYPE_KEY)
        if timestamp_type is None or timestamp_type not in TIMESTAMP_TYPES:
            raise ConfigError(f"{timestamp_type!r} is not one of {', '.join(TIMESTAMP_TYPES)}", key=TIMESTAMP_TYPE_KEY)
        parser = _lookup(config, PARSER_CLASS_KEY)
        if parser not in (None, DEFAULT_PARSER_CLASS):
            raise ConfigError(f"only {DEFAULT_PARSER_CLASS} is supported", key=PARSER_CLASS_KEY)
        output_format = _lookup(config, OUTPUT_FORMAT_KEY)
        if output_format is None:
            raise ConfigError("required by the timestamp key generator", key=OUTPUT_FORMAT_KEY)
        output = JodaPattern.compile(output_format, OUTPUT_FORMAT_KEY)
        if timestamp_type in ("DATE_STRING", "MIXED"):
            unit_factor = 0
            formats = _lookup(config, INPUT_FORMAT_KEY) or ""
            delimiter = (_lookup(config, DELIMITER_KEY) or ",").strip() or ","
            patterns = [p.strip() for p in java_split(formats, delimiter)] if formats else []
            if not patterns:
                raise ConfigError(f"required when the timestamp type is {timestamp_type}", key=INPUT_FORMAT_KEY)
            inputs = tuple(JodaPattern.compile(p, INPUT_FORMAT_KEY, for_parsing=True) for p in patterns)
        else:
            unit = {"UNIX_TIMESTAMP": "SECONDS", "EPOCHMILLISECONDS": "MILLISECONDS",
                    "EPOCHMICROSECONDS": "MICROSECONDS"}.get(timestamp_type)
            unit = unit or (_lookup(config, TIME_UNIT_KEY) or "SECONDS").upper()
            if unit not in TIME_UNITS:
                raise ConfigError(f"{unit!r} is not one of {', '.join(TIME_UNITS)}", key=TIME_UNIT_KEY)
            unit_factor, inputs = TIME_UNITS[unit], ()
        # HoodieDateTimeParser: the deprecated single zone wins; absent zones mean the JVM default.
        both = _lookup(config, TIMEZONE_KEY)
        zones = []
        for key in (INPUT_TIMEZONE_KEY, OUTPUT_TIMEZONE_KEY):
            value, named = (both, TIMEZONE_KEY) if both is not None else (_lookup(config, key), key)
            zones.append(joda_zone(value, named) if value and value.strip() else None)
        return cls(timestamp_type, unit_factor, output, inputs, zones[0], zones[1],
                   joda_zone(jvm_timezone, "JVM default time zone"))

    def depth(self, urlencode: bool) -> int:
        return 1 if urlencode else self.output.depth

    def format(self, values: pa.Array, field: str, consistent_logical_timestamp: bool) -> tuple[pa.Array, dict[int, str]]:
        """Formatted partition values (no escaping, no `field=`) and row -> error for unparseable rows."""
        dtype = values.type
        if self.unit_factor == 0:
            if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_null(dtype)):
                raise ConfigError(
                    f"partition field {field!r} has type {dtype}; timestamp type {self.timestamp_type} needs strings",
                    key=TIMESTAMP_TYPE_KEY,
                )
            return self._format_strings(values.cast(pa.string()))
        millis = self._instants(values, field, consistent_logical_timestamp)
        return self._print(millis, [self.output_zone or self.jvm_zone] * len(millis))

    def _instants(self, values: pa.Array, field: str, consistent: bool) -> np.ndarray:
        """Epoch milliseconds as Hudi derives them from each Avro value type; null means 1 unit."""
        dtype = values.type
        default = _millis_from_units(np.array([1]), self.unit_factor)[0]
        if pa.types.is_timestamp(dtype):
            if not consistent or dtype.tz is None or dtype.unit not in ("ms", "us"):
                raise ConfigError(
                    f"partition field {field!r} has type {dtype}: Hudi would read the raw number as "
                    f"{self.timestamp_type} (or fail); set hoodie.datasource.write.keygenerator."
                    "consistent.logical.timestamp.enabled=true to partition by a timestamp column",
                    key=TIMESTAMP_TYPE_KEY,
                )
            raw = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
            millis = np.sign(raw) * (np.abs(raw) // 1000) if dtype.unit == "us" else raw
            return np.where(values.is_null().to_numpy(zero_copy_only=False), default, millis)
        if pa.types.is_integer(dtype) and dtype != pa.uint64():
            raw = pc.fill_null(values.cast(pa.int64()), 1).to_numpy(zero_copy_only=False)
        elif pa.types.is_floating(dtype):
            raw = _java_long_from_float(pc.fill_null(values.cast(pa.float64()), 1.0).to_numpy(zero_copy_only=False))
        elif pa.types.is_decimal(dtype):
            # BigDecimal.longValue(): truncate, then keep the low 64 bits.
            raw = np.array([1 if v is None else ((int(v) + 2**63) % 2**64) - 2**63 for v in values.to_pylist()],
                           dtype=np.int64)
        elif pa.types.is_date32(dtype):
            raw = pc.fill_null(values.cast(pa.int32()).cast(pa.int64()), 1).to_numpy(zero_copy_only=False)
        elif pa.types.is_null(dtype):
            raw = np.ones(len(values), dtype=np.int64)
        else:
            raise ConfigError(
                f"partition field {field!r} has type {dtype}, which the timestamp key generator cannot read",
                key=TIMESTAMP_TYPE_KEY,
            )
        return _millis_from_units(raw, self.unit_factor)

    def _format_strings(self, values: pa.Array) -> tuple[pa.Array, dict[int, str]]:
        errors: dict[int, str] = {}
        millis = np.zeros(len(values), dtype=np.int64)
        zones = [self.jvm_zone] * len(values)
        default = None
        for row, text in enumerate(values.to_pylist()):
            if text is None:
                default = default or self._default_string()
                text = default
            try:
                millis[row], zones[row] = self.parse(text)
            except ValueError as e:
                errors[row] = f"Unable to parse input partition field: {text!r}: {e}"
        strings, print_errors = self._print(millis, zones)
        return strings, {**print_errors, **errors}

    def _default_string(self) -> str:
        """`getDefaultPartitionVal`: epoch + 1 ms printed with the first input format."""
        zone = self.input_zone or self.output_zone or "UTC"
        text, _ = self.inputs[0].print_millis(np.array([1]), zone)
        return text[0].as_py()

    def parse(self, text: str) -> tuple[int, str]:
        """(epoch ms, zone to print in) for a DATE_STRING value, as `HoodieDateTimeParser` reads it.

        Patterns are tried in order and the first that consumes the whole text wins (Joda's
        MatchingParser); fields are then range-checked. Without an input zone the parsed offset (or
        the JVM zone) becomes the value's zone, which is also the output zone if none is configured.
        """
        for pattern in self.inputs:
            consumed, fields = pattern.parse_prefix(text)
            if consumed == len(text):
                break
        else:
            raise ValueError(f"matches none of the input formats {[p.pattern for p in self.inputs]}")
        local = local_millis(fields)
        parsed_zone = str(fields["zone"]) if "zone" in fields else None
        if "offset" in fields:
            instant = local - int(fields["offset"])
            value_zone = offset_zone(int(fields["offset"]))
        else:
            value_zone = parsed_zone or self.input_zone or self.jvm_zone
            instant = local_to_instant(local, value_zone)
        return instant, self.output_zone or self.input_zone or value_zone

    def _print(self, millis: np.ndarray, zones: Sequence[str]) -> tuple[pa.Array, dict[int, str]]:
        """Print each instant in its zone; rows sharing a zone are printed together."""
        distinct = sorted(set(zones))
        if len(distinct) <= 1:
            zone = distinct[0] if distinct else self.jvm_zone
            text, bad = self.output.print_millis(millis, zone)
            return text, self._range_errors(np.flatnonzero(bad), zone)
        codes = np.array([distinct.index(z) for z in zones]) if len(distinct) < 8 else \
            np.searchsorted(np.array(distinct, dtype=object), np.array(zones, dtype=object))
        out = np.empty(len(millis), dtype=object)
        errors: dict[int, str] = {}
        for code, zone in enumerate(distinct):
            rows = np.flatnonzero(codes == code)
            text, bad = self.output.print_millis(millis[rows], zone)
            out[rows] = text.to_numpy(zero_copy_only=False)
            errors.update(self._range_errors(rows[bad], zone))
        return pa.array(out, pa.string()), errors

    @staticmethod
    def _range_errors(rows: np.ndarray, zone: str) -> dict[int, str]:
        return {int(r): f"timestamp beyond year 9999 cannot be placed in time zone {zone}" for r in rows.tolist()}
