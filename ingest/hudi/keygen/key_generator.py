"""Record keys and partition paths exactly as Hudi 0.14/0.15's key generators compute them.

Which Hudi code path we follow. Hudi has two: the Avro path (`KeyGenUtils` on `GenericRecord`s,
values rendered by `HoodieAvroUtils.getNestedFieldValAsString`) and the Spark-row path
(`BuiltinKeyGenerator` on `InternalRow`s). The Spark datasource's upsert/insert, its streaming sink
and the Hudi streamer all run the Avro path (default `HoodieRecordType.AVRO` in
`HoodieCreateRecordUtils`); only row-writer bulk_insert and the opt-in Spark record type use the
row path. We follow the Avro path, so a table we write is continued key-for-key by those writers.
The two paths disagree only on:
- timestamp columns: Avro gives the raw epoch number (`1680350460000000`), the row path
  `java.sql.Timestamp.toString()` in the JVM zone (`2023-04-01 12:01:00.0`). With
  `hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled=true` both paths (and we)
  give the latter; set it for tables keyed or partitioned by a timestamp.
- binary columns: Avro gives lowercase hex, the row path an identity hash (`[B@1b6d3586`).
- `NonpartitionedKeyGenerator` with several key fields: the row path fails on any null part, the
  Avro path (and we) write `__null__` placeholders.
- `TimestampBasedKeyGenerator` on decimals: the row path fails, the Avro path (and we) truncate.

Record keys of `ComplexKeyGenerator` with a single key field are `field:value` in Hudi 0.14.0 and
from 0.14.2/0.15.1/1.0.3 on, but the bare `value` in 0.14.1, 0.15.0 and 1.0.0-1.0.2 (HUDI-7001: their
`ComplexAvroKeyGenerator.getRecordKey` takes the one-field branch of `KeyGenUtils.getRecordKey`).
Later releases choose with the write config `hoodie.write.complex.keygen.new.encoding` (default false:
`field:value`; true: the bare value) at table versions 6 and 8, and ignore it from version 9 on, where
keys are always `field:value` (`KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen`); no Hudi release
records the choice in hoodie.properties. So we record that key there ourselves for such tables (new
tables: false, Hudi's default), and a writer of an existing table at 6 or 8 that records nothing must
say which form its keys have (`complex_key_encoding`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import ConfigError
from ingest.hudi.java_numbers import (
    java_big_decimal_to_string,
    java_double_to_string,
    java_float_to_string,
)
from ingest.hudi.keygen.joda_time import joda_zone, zone_offsets
from ingest.hudi.keygen.partition_path import (
    URLENCODE_KEY,
    escape_path_names,
    java_split,
    join_segments,
    misread_value_problems,
    partition_path_problems,
    partition_segments,
)
from ingest.hudi.keygen.timestamp_format import (
    OUTPUT_FORMAT_KEY,
    PERSISTED_TIMESTAMP_KEYS,
    TimestampPartitionFormat,
)

RECORD_KEY_FIELD = "hoodie.datasource.write.recordkey.field"
PARTITION_PATH_FIELD = "hoodie.datasource.write.partitionpath.field"
KEYGEN_CLASS = "hoodie.datasource.write.keygenerator.class"
KEYGEN_TYPE = "hoodie.datasource.write.keygenerator.type"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
URLENCODE = URLENCODE_KEY
CONSISTENT_LOGICAL_TIMESTAMP = "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled"
COMPLEX_NEW_ENCODING = "hoodie.write.complex.keygen.new.encoding"

TABLE_KEYGEN_CLASS = "hoodie.table.keygenerator.class"
TABLE_RECORDKEY_FIELDS = "hoodie.table.recordkey.fields"
TABLE_PARTITION_FIELDS = "hoodie.table.partition.fields"

NULL_PLACEHOLDER = "__null__"
EMPTY_PLACEHOLDER = "__empty__"


class KeyGeneratorType(str, Enum):
    SIMPLE = "SIMPLE"
    COMPLEX = "COMPLEX"
    TIMESTAMP = "TIMESTAMP"
    CUSTOM = "CUSTOM"
    NON_PARTITION = "NON_PARTITION"


_PKG = "org.apache.hudi.keygen."
SPARK_CLASS = {
    KeyGeneratorType.SIMPLE: _PKG + "SimpleKeyGenerator",
    KeyGeneratorType.COMPLEX: _PKG + "ComplexKeyGenerator",
    KeyGeneratorType.TIMESTAMP: _PKG + "TimestampBasedKeyGenerator",
    KeyGeneratorType.CUSTOM: _PKG + "CustomKeyGenerator",
    KeyGeneratorType.NON_PARTITION: _PKG + "NonpartitionedKeyGenerator",
}
_CLASS_TYPES = {
    **{name: kind for kind, name in SPARK_CLASS.items()},
    _PKG + "SimpleAvroKeyGenerator": KeyGeneratorType.SIMPLE,
    _PKG + "ComplexAvroKeyGenerator": KeyGeneratorType.COMPLEX,
    _PKG + "TimestampBasedAvroKeyGenerator": KeyGeneratorType.TIMESTAMP,
    _PKG + "CustomAvroKeyGenerator": KeyGeneratorType.CUSTOM,
    _PKG + "NonpartitionedAvroKeyGenerator": KeyGeneratorType.NON_PARTITION,
}


# -- Java's toString of the dates and timestamps Hudi keys on -------------------------------------


def _civil_from_days(days: int) -> tuple[int, int, int]:
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, doy - (153 * mp + 2) // 5 + 1


def java_local_date_to_string(days: int) -> str:
    """`LocalDate.ofEpochDay(days).toString()`: `yyyy-MM-dd`, `+` above year 9999, `-0001` below 1."""
    year, month, day = _civil_from_days(days)
    if abs(year) < 1000:
        year_text = ("-" if year < 0 else "") + f"{abs(year):04d}"
    else:
        year_text = ("+" if year > 9999 else "") + str(year)
    return f"{year_text}-{month:02d}-{day:02d}"


_GREGORIAN_CUTOVER_DAY = -141427  # 1582-10-15: java.util.Date uses the Julian calendar before it


def java_timestamp_to_string(epoch_millis: int, zone: str) -> str:
    """`new java.sql.Timestamp(millis).toString()` in a JVM whose default zone is `zone`."""
    offsets, bad = zone_offsets(np.array([epoch_millis], dtype=np.int64), zone)
    if bad[0]:
        raise ValueError(f"timestamp {epoch_millis} ms is beyond year 9999 in time zone {zone}")
    local = epoch_millis + int(offsets[0])
    days, millis_of_day = divmod(local, 86_400_000)
    if days >= _GREGORIAN_CUTOVER_DAY:
        year, month, day = _civil_from_days(days)
    else:
        c = days + 2440588 + 32082
        d = (4 * c + 3) // 1461
        e = c - (1461 * d) // 4
        m = (5 * e + 2) // 153
        year, month, day = d - 4800 + m // 10, m + 3 - 12 * (m // 10), e - (153 * m + 2) // 5 + 1
    if year < 1:
        raise ValueError(f"timestamp {epoch_millis} ms is before year 1")
    seconds, millis = divmod(millis_of_day, 1000)
    nanos = f"{millis * 1_000_000:09d}".rstrip("0") or "0"
    return (f"{year:04d}-{month:02d}-{day:02d} {seconds // 3600:02d}:{seconds // 60 % 60:02d}:"
            f"{seconds % 60:02d}.{nanos}")


def _jdk_dependent_rows(values: pa.Array, double: bool) -> list[int]:
    """Rows `java_numbers.jdk_dependent_text` holds for, found with Arrow's kernels (values as doubles,
    which holds floats exactly): finite, non-zero, outside [1e-3, 1e7), and not whole below 2^53 (2^24)."""
    v = values.cast(pa.float64())
    magnitude = pc.abs(v)
    plain = pc.and_(pc.greater_equal(magnitude, 1e-3), pc.less(magnitude, 1e7))
    whole = pc.and_(pc.equal(v, pc.trunc(v)), pc.less(magnitude, float(2 ** 53 if double else 2 ** 24)))
    dependent = pc.and_(pc.and_(pc.is_finite(v), pc.not_equal(v, 0.0)), pc.invert(pc.or_(plain, whole)))
    return np.flatnonzero(pc.fill_null(dependent, False).to_numpy(zero_copy_only=False)).tolist()


def java_strings(values: pa.Array, field: str, *, consistent_logical_timestamp: bool, jvm_zone: str) -> tuple[pa.Array, dict[int, str]]:
    """The string Hudi's Avro path makes of each value (`getNestedFieldValAsString`); null stays null.

    Returns the strings and row -> message for values that have no string. A column type Hudi
    cannot key meaningfully (structs, lists, maps, nanosecond timestamps...) raises ConfigError.
    """
    dtype = values.type
    if pa.types.is_dictionary(dtype):
        return java_strings(values.dictionary_decode(), field, consistent_logical_timestamp=consistent_logical_timestamp,
                            jvm_zone=jvm_zone)
    if pa.types.is_null(dtype):
        return pa.nulls(len(values), pa.string()), {}
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_boolean(dtype):
        return values.cast(pa.string()), {}
    if pa.types.is_integer(dtype) and dtype != pa.uint64():
        return values.cast(pa.string()), {}
    if pa.types.is_floating(dtype) and dtype != pa.float16():
        double = pa.types.is_float64(dtype)
        render = java_double_to_string if double else java_float_to_string
        floats = values.to_pylist()
        texts = [None if v is None else render(v) for v in floats]
        # A Hudi writer on Java 8-17 and one on Java 19+ would make different keys of these values.
        problems = {row: (f"value {texts[row]} of {'double' if double else 'float'} field {field!r} prints in "
                          f"other digits under Java 8-17 than under Java 19+ ({'Double' if double else 'Float'}"
                          ".toString, JDK-4511638), so Hudi's writers would not agree on its text; floating key "
                          "values must be whole below 2^53 (2^24 for float) or between 0.001 and 10^7")
                    for row in _jdk_dependent_rows(values, double)}
        return pa.array(texts, pa.string()), problems
    if pa.types.is_decimal(dtype):
        out = []
        for v in values.to_pylist():
            if v is None:
                out.append(None)
            else:
                sign, digits, exponent = v.as_tuple()
                unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
                out.append(java_big_decimal_to_string(unscaled, -exponent))
        return pa.array(out, pa.string()), {}
    if pa.types.is_date32(dtype) or pa.types.is_date64(dtype):
        days = values.cast(pa.date32())
        text = days.cast(pa.string())
        big = pc.fill_null(pc.greater(days.cast(pa.int32()), 2932896), False)  # after 9999-12-31
        if pc.any(big).as_py():
            text = pc.if_else(big, pc.binary_join_element_wise("+", text, ""), text)
        return text, {}
    if pa.types.is_timestamp(dtype) and dtype.unit in ("ms", "us"):
        raw = values.cast(pa.int64())
        if not (consistent_logical_timestamp and dtype.tz is not None):
            return raw.cast(pa.string()), {}
        out, errors = [], {}
        for row, v in enumerate(raw.to_pylist()):
            if v is None:
                out.append(None)
                continue
            millis = v if dtype.unit == "ms" else (abs(v) // 1000) * (1 if v >= 0 else -1)
            try:
                out.append(java_timestamp_to_string(millis, jvm_zone))
            except ValueError as e:
                out.append(None)
                errors[row] = f"field {field!r}: {e}"
        return pa.array(out, pa.string()), errors
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return pa.array([None if v is None else v.hex() for v in values.to_pylist()], pa.string()), {}
    raise ConfigError(f"field {field!r} has type {dtype}, which Hudi's key generators cannot turn into a key string")


# -- configuration -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionField:
    name: str
    timestamp: bool = False  # formatted by the timestamp key generator (TIMESTAMP, or CUSTOM `f:TIMESTAMP`)


def _flag(config: Mapping[str, str], key: str, default: bool) -> bool:
    raw = config.get(key)
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise ConfigError(f"expected true or false, got {raw!r}", key=key)
    return raw.strip().lower() == "true"


def _infer_type(record_key: str, partition: str | None) -> KeyGeneratorType:
    """`KeyGenUtils.inferKeyGeneratorType` (0.14/0.15): counts of raw comma-separated fields."""
    if not partition:
        return KeyGeneratorType.NON_PARTITION
    if len(java_split(partition)) == 1 and len(java_split(record_key)) == 1:
        return KeyGeneratorType.SIMPLE
    return KeyGeneratorType.COMPLEX


def _trimmed_fields(raw: str) -> tuple[str, ...]:
    """`KeyGenUtils.getRecordKeyFields` / complex partition fields: split on commas, trim, drop empties."""
    return tuple(f.strip() for f in java_split(raw) if f.strip())


# What a misread folder holds ('=', '%', or the '_' of `__HIVE_DEFAULT_PARTITION__`): a timestamp's
# printed fields hold no '=' or '%' and cannot spell that name (a ZZZ zone id's '_' never does), so
# only an output format's quoted literals can make one.
_MISREAD_CHARACTERS = frozenset("=%_")
# Instants the output format is tried on before any record: its quoted literals are in every folder.
_SAMPLE_MILLIS = np.array([0, 1_700_000_000_000], dtype=np.int64)


def _folder_parsed_as_a_value(timestamp: TimestampPartitionFormat) -> bool:
    """Whether Hudi's Spark reader parses the folder the output format prints as it parses any partition
    value: when it is one folder. `SparkHoodieTableFileIndex.doParsePartitionColumnValues` (0.14/0.15;
    `HoodieSparkUtils` in 1.x) hands a path with as many folders as partition columns to Spark's
    `parsePartition` (`name=value` split, `%XX` decoded); a deeper path of one column is taken whole,
    as a string, and one of several columns is not parsed. Since 1.0 (HUDI-7709) the reader also takes
    whole the path of a TimestampBasedKeyGenerator of type SCALAR, UNIX_TIMESTAMP or EPOCHMILLISECONDS;
    one folder is screened at every table version all the same, which refuses a few folders those
    readers would read as written, never one they misread. Hudi's sync tools split a hive-style path on
    its `=` whatever its depth (`misread_value_problems`, `parsed=False`)."""
    return timestamp.output.depth == 1


def _refuse_misread_literals(timestamp: TimestampPartitionFormat, hive_style: bool) -> None:
    """A config error when the output format's folder would be misread by Hudi's readers whatever the
    time (a quoted `=`, a `%` before digits): every record would be refused. A `%` before text only some
    times print (`'%'MMM` in December) is refused per record, by `compute_keys`."""
    folders, _ = timestamp.output.print_millis(_SAMPLE_MILLIS, "UTC")
    problems = misread_value_problems(folders, "", hive_style=hive_style, urlencode=False,
                                      parsed=_folder_parsed_as_a_value(timestamp))
    if problems:
        problem = next(iter(problems.values())).removeprefix("partition path field '': ")
        raise ConfigError(f"{timestamp.output.pattern!r} prints folders Hudi's readers would misread: {problem}",
                          key=OUTPUT_FORMAT_KEY)


@dataclass(frozen=True)
class KeyGeneratorSpec:
    """How a table's records are keyed and partitioned, resolved from Hudi's write config."""

    kind: KeyGeneratorType
    class_name: str  # for hoodie.table.keygenerator.class
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[PartitionField, ...]
    hive_style: bool
    urlencode: bool
    consistent_logical_timestamp: bool
    plain_record_key: bool  # the bare value, else `field:value,...` with placeholders
    timestamp: TimestampPartitionFormat | None
    jvm_zone: str
    record_key_config: str  # raw values Hudi stores in hoodie.properties
    persisted_timestamp_config: tuple[tuple[str, str], ...]

    @classmethod
    def from_config(cls, config: Mapping[str, str], *, jvm_timezone: str = "UTC") -> KeyGeneratorSpec:
        """Resolve as Hudi does: explicit class, else type, else inferred from the field counts.

        `jvm_timezone` stands for the default zone of the JVMs of Hudi writers that share the table;
        Hudi falls back to it for unzoned timestamp formatting.
        """
        record_key = config.get(RECORD_KEY_FIELD, "")
        record_fields = _trimmed_fields(record_key)
        if not record_fields:
            raise ConfigError("a record key field is required (auto-generated keys are not supported)",
                              key=RECORD_KEY_FIELD)
        partition = config.get(PARTITION_PATH_FIELD)
        kind, class_name = cls._resolve_class(config, record_key, partition)

        partition_fields: tuple[PartitionField, ...] = ()
        if kind in (KeyGeneratorType.SIMPLE, KeyGeneratorType.TIMESTAMP):
            if "," in record_key:
                raise ConfigError(f"{class_name} takes a single record key field, got {record_key!r}",
                                  key=RECORD_KEY_FIELD)
            if partition is None or not partition.strip() or "," in partition:
                raise ConfigError(f"{class_name} takes exactly one partition field, got {partition!r} "
                                  "(NON_PARTITION has none, COMPLEX several)", key=PARTITION_PATH_FIELD)
            partition_fields = (PartitionField(partition.strip(), kind is KeyGeneratorType.TIMESTAMP),)
        elif kind is KeyGeneratorType.COMPLEX:
            if partition is None:
                raise ConfigError(f"{class_name} needs the key (it may be empty)", key=PARTITION_PATH_FIELD)
            partition_fields = tuple(PartitionField(f) for f in _trimmed_fields(partition))
        elif kind is KeyGeneratorType.CUSTOM:
            partition_fields = cls._custom_partition_fields(partition)
        elif partition and partition.strip():
            raise ConfigError(f"{class_name} ignores partition fields; remove {partition!r} or choose another "
                              "key generator", key=PARTITION_PATH_FIELD)
        for field in partition_fields:
            if ":" in field.name:
                raise ConfigError(f"partition field {field.name!r} uses CustomKeyGenerator syntax; set "
                                  f"{KEYGEN_TYPE}=CUSTOM", key=PARTITION_PATH_FIELD)

        urlencode = _flag(config, URLENCODE, False)
        timestamp = None
        if any(f.timestamp for f in partition_fields):
            timestamp = TimestampPartitionFormat.from_config(config, jvm_timezone)
            if timestamp.output.prints_zone_id and not urlencode:
                raise ConfigError("ZZZ prints zone ids such as 'Europe/Paris', whose '/' would add folder "
                                  f"levels; use Z/ZZ or set {URLENCODE}=true", key=OUTPUT_FORMAT_KEY)
            if not urlencode:
                _refuse_misread_literals(timestamp, _flag(config, HIVE_STYLE, False))
        persisted = ()
        if kind is KeyGeneratorType.TIMESTAMP:
            persisted = tuple((k, config[k]) for k in PERSISTED_TIMESTAMP_KEYS if k in config)
        if kind in (KeyGeneratorType.SIMPLE, KeyGeneratorType.TIMESTAMP):
            plain = True
        elif kind is KeyGeneratorType.COMPLEX:
            plain = len(record_fields) == 1 and _flag(config, COMPLEX_NEW_ENCODING, False)
        elif kind is KeyGeneratorType.CUSTOM:  # counts raw entries, blank ones included
            plain = len(java_split(record_key)) == 1
        else:
            plain = len(record_fields) == 1
        return cls(
            kind=kind,
            class_name=class_name,
            record_key_fields=record_fields,
            partition_fields=partition_fields,
            hive_style=_flag(config, HIVE_STYLE, False),
            urlencode=urlencode,
            consistent_logical_timestamp=_flag(config, CONSISTENT_LOGICAL_TIMESTAMP, False),
            plain_record_key=plain,
            timestamp=timestamp,
            jvm_zone=joda_zone(jvm_timezone, "JVM default time zone"),
            record_key_config=record_key,
            persisted_timestamp_config=persisted,
        )

    @staticmethod
    def _resolve_class(config: Mapping[str, str], record_key: str, partition: str | None) -> tuple[KeyGeneratorType, str]:
        """`HoodieSparkKeyGeneratorFactory.getKeyGeneratorClassName`: class, else type, else inference."""
        class_name = (config.get(KEYGEN_CLASS) or "").strip()
        type_name = (config.get(KEYGEN_TYPE) or "").strip().upper()
        if type_name and type_name not in KeyGeneratorType.__members__:
            raise ConfigError(f"{type_name!r} is not one of {', '.join(KeyGeneratorType.__members__)}", key=KEYGEN_TYPE)
        if class_name:
            if class_name not in _CLASS_TYPES:
                raise ConfigError(f"unsupported key generator {class_name!r}; supported: "
                                  f"{', '.join(sorted(_CLASS_TYPES))}", key=KEYGEN_CLASS)
            kind = _CLASS_TYPES[class_name]
            if type_name and KeyGeneratorType(type_name) is not kind:
                raise ConfigError(f"{class_name} contradicts {KEYGEN_TYPE}={type_name}", key=KEYGEN_CLASS)
            return kind, class_name
        kind = KeyGeneratorType(type_name) if type_name else _infer_type(record_key, partition)
        return kind, SPARK_CLASS[kind]

    @staticmethod
    def _custom_partition_fields(partition: str | None) -> tuple[PartitionField, ...]:
        """`CustomAvroKeyGenerator`: `field:SIMPLE` / `field:TIMESTAMP`, or one empty entry for none."""
        if partition is None:
            raise ConfigError("CustomKeyGenerator needs the key (it may be empty)", key=PARTITION_PATH_FIELD)
        entries = [p.strip() for p in java_split(partition)]
        if entries == [""]:
            return ()
        fields = []
        for entry in entries:
            parts = java_split(entry, ":")
            if len(parts) != 2 or parts[1].upper() not in ("SIMPLE", "TIMESTAMP") or not parts[0]:
                raise ConfigError(f"{entry!r} is not <field>:SIMPLE or <field>:TIMESTAMP", key=PARTITION_PATH_FIELD)
            fields.append(PartitionField(parts[0], parts[1].upper() == "TIMESTAMP"))
        return tuple(fields)

    @property
    def partition_depth(self) -> int:
        """Folder levels of every partition path (the `partitionDepth` of partition metadata)."""
        return sum(self.timestamp.depth(self.urlencode) if f.timestamp and self.timestamp else 1
                   for f in self.partition_fields)

    @property
    def partition_config(self) -> str:
        """The partition field names as ingest reads them. Hudi records the raw value, whose blanks Spark's
        `HoodieTableConfig.getPartitionFields` keeps, and then cannot find those columns."""
        return ",".join(f.name for f in self.partition_fields)

    @property
    def typed_partition_config(self) -> str:
        """The CustomKeyGenerator's partition fields with their types, `region:SIMPLE,ts:TIMESTAMP`, as
        Hudi 1.x records them (`SparkKeyGenUtils.getPartitionColumnsForKeyGenerator` with types from
        table version 7 on); other key generators have no types to record."""
        if self.kind is not KeyGeneratorType.CUSTOM:
            return self.partition_config
        return ",".join(f"{f.name}:{'TIMESTAMP' if f.timestamp else 'SIMPLE'}" for f in self.partition_fields)

    def table_properties(self, *, typed_partition_fields: bool = False) -> dict[str, str]:
        """What Hudi's Spark writer records in hoodie.properties for this key generator."""
        props = {
            TABLE_KEYGEN_CLASS: self.class_name,
            TABLE_RECORDKEY_FIELDS: self.record_key_config,
            TABLE_PARTITION_FIELDS: self.typed_partition_config if typed_partition_fields else self.partition_config,
            HIVE_STYLE: str(self.hive_style).lower(),
            URLENCODE: str(self.urlencode).lower(),
        }
        props.update(self.persisted_timestamp_config)
        if self.kind is KeyGeneratorType.COMPLEX and len(self.record_key_fields) == 1:
            props[COMPLEX_NEW_ENCODING] = str(self.plain_record_key).lower()
        return props

    @property
    def bare_complex_keys(self) -> bool:
        """A one-field complex key generator keying the bare value (`hoodie.write.complex.keygen.new.encoding`)."""
        return self.kind is KeyGeneratorType.COMPLEX and self.plain_record_key


def complex_key_encoding(table_props: Mapping[str, str], config: Mapping[str, str], *,
                         chosen_by_writer: bool = True) -> str | None:
    """The `hoodie.write.complex.keygen.new.encoding` a writer of this existing table uses: the one the
    config gives, else the one the table records; None for tables the setting does not concern.
    `chosen_by_writer`: whether the table's version lets the setting choose; where it does not (version
    9), the keys are `field:value` whatever a writer says, and the bare form is refused.

    Raises ConfigError when the table has a single-field complex key generator, records no encoding and
    the config gives none: Hudi 0.14.1, 0.15.0 and 1.0.0-1.0.2 wrote such keys bare, every other
    release `field:value`, and a wrong guess duplicates every record on its next upsert.
    """
    kind = _CLASS_TYPES.get((table_props.get(TABLE_KEYGEN_CLASS) or "").strip())
    if kind is not KeyGeneratorType.COMPLEX or len(_trimmed_fields(table_props.get(TABLE_RECORDKEY_FIELDS, ""))) != 1:
        return None
    chosen = config.get(COMPLEX_NEW_ENCODING) or table_props.get(COMPLEX_NEW_ENCODING)
    if not chosen_by_writer:
        if chosen is not None and _flag({COMPLEX_NEW_ENCODING: chosen}, COMPLEX_NEW_ENCODING, False):
            raise ConfigError(BARE_KEYS_REFUSED, key=COMPLEX_NEW_ENCODING)
        return "false"
    if chosen is None:
        raise ConfigError(
            "this table's complex key generator has one record key field and the table does not record "
            "whether its keys are `field:value` (Hudi 0.14.0, 0.14.2+, 0.15.1+, 1.0.3+, ingest) or the bare "
            "value (Hudi 0.14.1, 0.15.0, 1.0.0-1.0.2); set it: false for `field:value`, true for the bare "
            "value (look at _hoodie_record_key in its files)", key=COMPLEX_NEW_ENCODING)
    return chosen


BARE_KEYS_REFUSED = (
    "true (the bare value) cannot be written at table version 9: Hudi keys a one-field complex key generator's "
    "records `field:value` there whatever this setting says (KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen), "
    "so its writers would not find these keys")


# -- computing keys -------------------------------------------------------------------------------------


class KeyColumns(NamedTuple):
    record_keys: pa.Array  # string; null where the row has an error
    partition_paths: pa.Array  # string; null where the row has an error
    errors: pa.Array  # string; null for good rows, else why the record cannot be keyed


def field_values(batch: pa.RecordBatch, path: str) -> pa.Array:
    """The values of a (dot-nested) field; a null parent struct gives null, as Hudi reads it."""
    parts = java_split(path, r"\.")
    if parts[0] not in batch.schema.names:
        raise ConfigError(f"field {path!r} is not in the data (columns: {', '.join(batch.schema.names)})")
    values = batch.column(parts[0])
    for depth, part in enumerate(parts[1:], start=1):
        index = values.type.get_field_index(part) if pa.types.is_struct(values.type) else -1
        if index < 0:
            raise ConfigError(f"field {path!r}: {'.'.join(parts[:depth])} has no struct field {part!r}")
        values = pc.struct_field(values, [index])
    return values.dictionary_decode() if pa.types.is_dictionary(values.type) else values


def _record_key_error(field: str, value: str | None) -> str:
    shown = "null" if value is None else value
    return f'recordKey value: "{shown}" for field: "{field}" cannot be null or empty.'


def _record_keys(batch: pa.RecordBatch, spec: KeyGeneratorSpec, errors: dict[int, str]) -> pa.Array:
    """Record key of every row; rows whose key cannot be computed get an entry in `errors`."""
    render = dict(consistent_logical_timestamp=spec.consistent_logical_timestamp, jvm_zone=spec.jvm_zone)
    key_parts = []
    for field in spec.record_key_fields:
        strings, problems = java_strings(field_values(batch, field), field, **render)
        key_parts.append(strings)
        for row, message in problems.items():
            errors.setdefault(row, f"record key {message}")
    missing = [pc.fill_null(pc.equal(pc.binary_length(s), 0), True) for s in key_parts]
    if spec.plain_record_key:
        record_keys = key_parts[0]
        bad = missing[0]
        for row in np.flatnonzero(bad.to_numpy(zero_copy_only=False)).tolist():
            errors.setdefault(row, _record_key_error(spec.record_key_fields[0], key_parts[0][row].as_py()))
    else:
        pieces: list[pa.Array | pa.Scalar] = []
        for index, (field, strings, absent) in enumerate(zip(spec.record_key_fields, key_parts, missing, strict=True)):
            placeholder = pc.if_else(pc.is_null(strings), pa.scalar(NULL_PLACEHOLDER), pa.scalar(EMPTY_PLACEHOLDER))
            pieces += [pa.scalar(("," if index else "") + field + ":"), pc.if_else(absent, placeholder, strings)]
        record_keys = pc.binary_join_element_wise(*pieces, "")
        bad = missing[0]
        for absent in missing[1:]:
            bad = pc.and_(bad, absent)
        fields = ", ".join(spec.record_key_fields)
        for row in np.flatnonzero(bad.to_numpy(zero_copy_only=False)).tolist():
            errors.setdefault(row, f'recordKey values: "{record_keys[row].as_py()}" for fields: [{fields}] '
                                   "cannot be entirely null or empty.")
    return record_keys


def compute_record_keys(batch: pa.RecordBatch, spec: KeyGeneratorSpec) -> pa.Array:
    """Only the record keys (null where a row has none): what routing by key needs."""
    errors: dict[int, str] = {}
    keys = _record_keys(batch, spec, errors)
    if not errors:
        return keys
    failed = np.zeros(batch.num_rows, dtype=bool)
    failed[list(errors)] = True
    return pc.if_else(pa.array(failed), pa.scalar(None, pa.string()), keys)


def compute_keys(batch: pa.RecordBatch, spec: KeyGeneratorSpec) -> KeyColumns:
    """Record key and partition path of every row; rows that cannot be keyed get an error instead.

    Never raises for a bad record (null key, unparseable time, unsafe partition path); raises
    ConfigError only when the batch's schema cannot be keyed at all (missing or unkeyable field).
    """
    length = batch.num_rows
    errors: dict[int, str] = {}
    render = dict(consistent_logical_timestamp=spec.consistent_logical_timestamp, jvm_zone=spec.jvm_zone)
    record_keys = _record_keys(batch, spec, errors)

    levels = []
    for field in spec.partition_fields:
        values = field_values(batch, field.name)
        if field.timestamp and spec.timestamp is not None:
            text, problems = spec.timestamp.format(values, field.name, spec.consistent_logical_timestamp)
            text = pc.fill_null(text, "")
            if _MISREAD_CHARACTERS & set(spec.timestamp.output.literals):  # fields print none of them
                for row, message in misread_value_problems(text, field.name, hive_style=spec.hive_style,
                                                           urlencode=spec.urlencode,
                                                           parsed=_folder_parsed_as_a_value(spec.timestamp)).items():
                    errors.setdefault(row, message)
            if spec.urlencode:
                text = escape_path_names(text)
            if spec.hive_style:
                text = pc.binary_join_element_wise(pa.scalar(field.name + "="), text, "")
            levels.append(text)
        else:
            strings, problems = java_strings(values, field.name, **render)
            levels.append(partition_segments(strings, field.name, hive_style=spec.hive_style, urlencode=spec.urlencode))
            for row, message in misread_value_problems(strings, field.name, hive_style=spec.hive_style,
                                                               urlencode=spec.urlencode).items():
                errors.setdefault(row, message)
        for row, message in problems.items():
            errors.setdefault(row, f"partition path field {field.name!r}: {message}")
    paths = join_segments(levels, length)
    for row, message in partition_path_problems(paths, spec.partition_depth).items():
        errors.setdefault(row, message)

    if not errors:
        return KeyColumns(record_keys, paths, pa.nulls(length, pa.string()))
    failed = np.zeros(length, dtype=bool)
    failed[list(errors)] = True
    mask = pa.array(failed)
    none = pa.scalar(None, pa.string())
    messages = pa.array([errors.get(row) for row in range(length)], pa.string())
    return KeyColumns(pc.if_else(mask, none, record_keys), pc.if_else(mask, none, paths), messages)

