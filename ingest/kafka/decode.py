"""Turning raw Kafka records into typed rows, with every bad record kept as an error row.

A `DecoderSpec` names the value format, the declared schema and where the record key comes from.
`decode_batch` takes Arrow columns `key`, `value`, `topic`, `partition`, `offset`, `timestamp` (what
the Kafka source yields) and returns two tables; every input row lands in exactly one of them:

* records: the declared columns, then `_kafka_topic`, `_kafka_partition`, `_kafka_offset`,
  `_kafka_timestamp`, `_ingest_is_tombstone` and `_ingest_is_deleted`. A tombstone (null value) is a
  delete marker: only its key columns are set, parsed from the Kafka key. `_ingest_is_deleted` is
  Hudi's delete marker `_hoodie_is_deleted: true` in a message whose declared schema lacks that
  column (a JSON field, or a field of a Confluent writer schema): it is read all the same (a delete
  never becomes an upsert), and a marker that is not true, false or null makes the message an error.
* errors: `key`, `value` (the raw bytes), `topic`, `partition`, `offset`, `timestamp`, `error`
  (what was wrong, naming the field) and `error_seen_at`.

Formats:

* `json`: one JSON object per message, read against the declared schema (a Spark DDL string or an
  Avro schema file).
* `avro`: Avro binary without framing, written with the schema from a file.
* `confluent-avro`: magic byte 0, a 4-byte big-endian schema id, then Avro binary. The writer
  schema is the one registered for that id: in a Confluent Schema Registry when the spec has one
  (ingest.kafka.registry: fetched once per process; the source and target schemas are the subject's
  versions), else in `schema_files_by_id` when given (unknown ids are bad records in both cases),
  else the spec's schema; records are resolved to the spec's schema.

JSON typing is strict: a value converts only when its JSON type is the declared one. Nothing becomes
null unless it is JSON null or absent, and absent/null is an error for NOT NULL fields and key fields.

    STRING                       JSON string (a number is an error, not "12")
    TINYINT..BIGINT              JSON integer within the type's range (12.0, 1e2, "12" are errors)
    FLOAT, DOUBLE                JSON number within the type's range (1e39 is an error for FLOAT), or
                                 the bare literals NaN, Infinity, -Infinity (as Python's json and
                                 Jackson's ALLOW_NON_NUMERIC_NUMBERS write them; Inf, -Inf too);
                                 quoted "NaN" is an error. Ordering and key fields refuse them
                                 (ingest.write.records)
    DECIMAL(p,s)                 JSON number, or a string holding one (the usual way to ship exact
                                 decimals); more than s fraction digits or p digits is an error,
                                 never rounded
    BOOLEAN                      true / false only
    TIMESTAMP                    ISO-8601 string: 2024-05-01, 2024-05-01 10:00:00, 2024-05-01T10:00:00.123456Z,
                                 ...+02:00; without an offset it is UTC; at most 6 fraction digits.
                                 Numbers are errors (seconds or milliseconds would be a guess)
    TIMESTAMP_NTZ                the same strings as wall-clock time (a given offset is applied:
                                 the UTC wall-clock time is kept)
    DATE                         "YYYY-MM-DD" string
    BINARY                       base64 string (as Spark's from_json reads it)
    ARRAY<T>, STRUCT<...>        JSON array / object, elements and fields typed as above

Fields not in the schema are ignored (except `_hoodie_is_deleted`, see above); a field given twice, invalid UTF-8, a top-level value that is
not an object, or more than one JSON value in a message are errors. MAP columns cannot be read from
JSON (declare a STRUCT); Avro maps work.

JSON is decoded vectorized, as it runs on every message: messages are joined with newlines and read
by `pyarrow.json` a chunk (up to 16k messages / 32 MiB) per call. A parse error names its row; that
message is read alone to confirm it and word its error, and parsing resumes around it. Errors pyarrow
reports without a row (a number out of range, a bad timestamp) halve the chunk until the culprit
stands alone. Messages with line breaks inside are read alone. A message's outcome never depends on
its neighbours.

Record keys: `key_fields` name the columns that form the record key (non-null in every record).
With `key_source="value"` they come from the decoded value; with `key_source="kafka_key"` from the
Kafka key (the value's copies are not read). Tombstones always take them from the Kafka key, read
as `key_format` says: `string` (the UTF-8 text of the single key field, converted to its type) or
`json` (an object holding the key fields, typed like the value's JSON). A tombstone whose key cannot
be read, or a spec without key fields, makes the tombstone an error row.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ingest.errors import ConfigError, SchemaEvolutionError
from ingest.hudi.avro.schema import avro_to_arrow
from ingest.kafka import registry as schema_registry

FORMATS = ("json", "avro", "confluent-avro")
KEY_SOURCES = ("value", "kafka_key")
KEY_FORMATS = ("string", "json")

TOPIC = "_kafka_topic"
PARTITION = "_kafka_partition"
OFFSET = "_kafka_offset"
TIMESTAMP = "_kafka_timestamp"
IS_TOMBSTONE = "_ingest_is_tombstone"
# Hudi's delete marker, and where a JSON message's marker goes when the schema does not declare it.
HOODIE_IS_DELETED = "_hoodie_is_deleted"
MARKED_DELETED = "_ingest_is_deleted"
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

META_FIELDS = pa.schema(
    [
        pa.field(TOPIC, pa.string(), nullable=False),
        pa.field(PARTITION, pa.int32(), nullable=False),
        pa.field(OFFSET, pa.int64(), nullable=False),
        pa.field(TIMESTAMP, TIMESTAMP_TYPE),
        pa.field(IS_TOMBSTONE, pa.bool_(), nullable=False),
        pa.field(MARKED_DELETED, pa.bool_(), nullable=False),
    ]
)
ERRORS_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", TIMESTAMP_TYPE),
        pa.field("error", pa.string(), nullable=False),
        pa.field("error_seen_at", TIMESTAMP_TYPE, nullable=False),
    ]
)
INPUT_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")

CONFLUENT_MAGIC = 0
CONFLUENT_HEADER = 5

# -- Spark DDL ----------------------------------------------------------------------------------

_SIMPLE_TYPES: dict[str, pa.DataType] = {
    "STRING": pa.string(),
    "VARCHAR": pa.string(),
    "CHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "BYTE": pa.int8(),
    "SMALLINT": pa.int16(),
    "SHORT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "LONG": pa.int64(),
    "FLOAT": pa.float32(),
    "REAL": pa.float32(),
    "DOUBLE": pa.float64(),
    "DATE": pa.date32(),
    "TIMESTAMP": TIMESTAMP_TYPE,
    "TIMESTAMP_LTZ": TIMESTAMP_TYPE,
    "TIMESTAMP_NTZ": pa.timestamp("us"),
    "BINARY": pa.binary(),
}
_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|('(?:[^'\\]|\\.)*')|(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\S))")


class _DDLParser:
    """A recursive-descent reader of Spark's schema DDL (`a INT NOT NULL, b ARRAY<STRUCT<c:STRING>>`)."""

    def __init__(self, text: str):
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                break
            token = next(g for g in match.groups() if g is not None)
            self.tokens.append(token)
            pos = match.end()
        if text[pos:].strip():
            self.fail(f"cannot read {text[pos:]!r}")
        self.pos = 0

    def fail(self, message: str) -> None:
        raise ConfigError(f"{message} in {self.text!r}", key="schema")

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            self.fail("unexpected end")
        self.pos += 1
        return token  # type: ignore[return-value]

    def expect(self, token: str) -> None:
        got = self.take()
        if got.upper() != token:
            self.fail(f"expected {token!r}, got {got!r}")

    def accept(self, token: str) -> bool:
        if (self.peek() or "").upper() == token:
            self.pos += 1
            return True
        return False

    def name(self) -> str:
        token = self.take()
        if token.startswith("`"):
            return token[1:-1].replace("``", "`")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token):
            self.fail(f"expected a field name, got {token!r}")
        return token

    def fields(self, closing: str | None) -> list[pa.Field]:
        out: list[pa.Field] = []
        while True:
            name = self.name()
            self.accept(":")
            dtype = self.type()
            nullable = True
            if self.accept("NOT"):
                self.expect("NULL")
                nullable = False
            if self.accept("COMMENT"):
                comment = self.take()
                if not comment.startswith("'"):
                    self.fail("COMMENT needs a quoted string")
            if any(f.name == name for f in out):
                self.fail(f"field {name!r} is declared twice")
            out.append(pa.field(name, dtype, nullable))
            if not self.accept(","):
                break
        if closing is None and self.peek() is not None:
            self.fail(f"unexpected {self.peek()!r}")
        return out

    def type(self) -> pa.DataType:
        word = self.take().upper()
        if word in ("DECIMAL", "DEC", "NUMERIC"):
            precision, scale = 10, 0
            if self.accept("("):
                precision = int(self.take())
                if self.accept(","):
                    scale = int(self.take())
                self.expect(")")
            if not 0 < precision <= 38 or not 0 <= scale <= precision:
                self.fail(f"DECIMAL({precision},{scale}) is out of range")
            return pa.decimal128(precision, scale)
        if word in ("VARCHAR", "CHAR"):
            self.expect("(")
            self.take()
            self.expect(")")
            return pa.string()
        if word == "ARRAY":
            self.expect("<")
            element = self.type()
            self.expect(">")
            return pa.list_(pa.field("element", element, True))
        if word == "MAP":
            self.expect("<")
            key = self.type()
            self.expect(",")
            value = self.type()
            self.expect(">")
            return pa.map_(key, pa.field("value", value, True))
        if word == "STRUCT":
            self.expect("<")
            if self.accept(">"):
                return pa.struct([])
            fields = self.fields(">")
            self.expect(">")
            return pa.struct(fields)
        if word in _SIMPLE_TYPES:
            return _SIMPLE_TYPES[word]
        self.fail(f"unknown type {word}")
        raise AssertionError  # unreachable: fail raises


def parse_ddl(ddl: str) -> pa.Schema:
    """A Spark DDL schema string as Arrow: fields nullable unless NOT NULL, timestamps in UTC micros."""
    if not ddl.strip():
        raise ConfigError("is empty", key="schema")
    return pa.schema(_DDLParser(ddl).fields(None))


# -- the spec -----------------------------------------------------------------------------------


def _has_type(dtype: pa.DataType, predicate) -> bool:
    if predicate(dtype):
        return True
    if pa.types.is_struct(dtype):
        return any(_has_type(f.type, predicate) for f in dtype)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return _has_type(dtype.value_type, predicate)
    if pa.types.is_map(dtype):
        return _has_type(dtype.key_type, predicate) or _has_type(dtype.item_type, predicate)
    return False


@dataclass(frozen=True)
class DecoderSpec:
    """How to turn a topic's messages into records: format, schema and record key.

    `schema` is the declared value schema (the output columns). `avro_schema` is the Avro schema
    (JSON text) records are read as, for the Avro formats; `writer_schemas` maps Confluent schema
    ids to the writer schema registered under them; `registry` is where the writer schemas of
    Confluent schema ids are looked up instead (and where `schema` and `avro_schema` came from).
    """

    format: str
    schema: pa.Schema
    key_fields: tuple[str, ...] = ()
    key_source: str = "value"
    key_format: str = "string"
    avro_schema: str | None = None
    writer_schemas: tuple[tuple[int, str], ...] = ()
    registry: schema_registry.RegistrySettings | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ConfigError(f"must be one of {', '.join(FORMATS)}, got {self.format!r}", key="format")
        if self.key_source not in KEY_SOURCES:
            raise ConfigError(f"must be one of {', '.join(KEY_SOURCES)}, got {self.key_source!r}", key="key_source")
        if self.key_format not in KEY_FORMATS:
            raise ConfigError(f"must be one of {', '.join(KEY_FORMATS)}, got {self.key_format!r}", key="key_format")
        if self.format != "json" and self.avro_schema is None:
            raise ConfigError(f"the {self.format} format needs an Avro schema file", key="schema_file")
        if self.writer_schemas and self.format != "confluent-avro":
            raise ConfigError("schema ids only apply to confluent-avro", key="schema_files_by_id")
        if self.registry is not None and (self.format != "confluent-avro" or self.writer_schemas):
            raise ConfigError("a schema registry serves confluent-avro values, instead of schema files by id",
                              key="schema_files_by_id")
        names = self.schema.names
        clash = sorted(set(names) & set(META_FIELDS.names))
        if clash:
            raise ConfigError(f"columns {clash} clash with the Kafka metadata columns", key="schema")
        missing = [f for f in self.key_fields if f not in names]
        if missing:
            raise ConfigError(f"key fields {missing} are not in the schema ({', '.join(names)})", key="key_fields")
        if self.key_source == "kafka_key" and not self.key_fields:
            raise ConfigError("key_source=kafka_key needs the key field(s) it fills", key="key_fields")
        if self.key_format == "string" and len(self.key_fields) > 1:
            raise ConfigError(
                "a plain-string Kafka key carries one field; use key_format=json for several", key="key_fields"
            )
        for name in self.key_fields:
            dtype = self.schema.field(name).type
            if pa.types.is_nested(dtype):
                raise ConfigError(f"key field {name!r} must be a scalar, not {dtype}", key="key_fields")
        if self.format == "json" and _has_type(pa.struct(list(self.schema)), pa.types.is_map):
            raise ConfigError("MAP columns cannot be read from JSON; declare them as STRUCT", key="schema")

    @property
    def records_schema(self) -> pa.Schema:
        """Declared columns (key fields non-null, the rest nullable: tombstones only carry keys) + metadata."""
        fields = [f.with_nullable(f.name not in self.key_fields) for f in self.schema]
        return pa.schema(fields + list(META_FIELDS))

    @property
    def value_schema(self) -> pa.Schema:
        """What is read from the value: all declared columns, less those the Kafka key fills."""
        if self.key_source == "kafka_key":
            return pa.schema([f for f in self.schema if f.name not in self.key_fields])
        return self.schema

    @property
    def key_schema(self) -> pa.Schema:
        return pa.schema([self.schema.field(name).with_nullable(False) for name in self.key_fields])


def _read_text(path: str | Path) -> str:
    import fsspec

    try:
        with fsspec.open(str(path), "rt", encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}", key="schema_file") from None


def _avro_record_schema(text: str, where: str, key: str) -> tuple[str, pa.Schema]:
    """Avro schema text (checked to be a record schema fastavro parses) and its Arrow columns."""
    from fastavro.schema import SchemaParseException

    try:
        parsed = json.loads(text)
        _parsed_avro(json.dumps(parsed))
        if not isinstance(parsed, dict) or parsed.get("type") != "record":
            raise ValueError("the top-level type must be a record")
        return json.dumps(parsed), avro_to_arrow(parsed)
    except (ValueError, KeyError, TypeError, SchemaEvolutionError, SchemaParseException) as e:
        raise ConfigError(f"{where} is not a usable Avro record schema: {e}", key=key) from None


def _avro_schema_text(path: str | Path) -> tuple[str, pa.Schema]:
    return _avro_record_schema(_read_text(path), str(path), "schema_file")


def decoder_spec(
    format: str,
    *,
    schema: str | None = None,
    schema_file: str | Path | None = None,
    schema_files_by_id: Mapping[int, str | Path] | None = None,
    registry: schema_registry.RegistrySettings | None = None,
    key_fields: Sequence[str] = (),
    key_source: str = "value",
    key_format: str = "string",
) -> DecoderSpec:
    """A validated spec. JSON takes `schema` (Spark DDL) or `schema_file` (Avro); the Avro formats
    take `schema_file`, or, for confluent-avro, a `registry` whose source subject version records
    are read as and whose target version gives the columns (both fetched now: see `refreshed`).
    With key_source=kafka_key and a plain-string key, a key field the schema lacks is added as a
    non-null STRING column."""
    if registry is not None:
        if schema is not None or schema_file is not None:
            raise ConfigError("the schema comes from the schema registry: give no schema or schema file",
                              key="schema_file")
        avro_text, _ = _avro_record_schema(schema_registry.subject_schema(registry, registry.source),
                                           registry.source.shown, schema_registry.URL_KEY)
        _, arrow = _avro_record_schema(schema_registry.subject_schema(registry, registry.target),
                                       registry.target.shown, schema_registry.URL_KEY)
    else:
        if (schema is None) == (schema_file is None):
            raise ConfigError("give exactly one of a DDL schema or an Avro schema file", key="schema")
        avro_text = None
        if schema is not None:
            if format != "json":
                raise ConfigError(f"the {format} format reads its schema from an Avro schema file", key="schema")
            arrow = parse_ddl(schema)
        else:
            avro_text, arrow = _avro_schema_text(schema_file)  # type: ignore[arg-type]
            if format == "json":
                avro_text = None
    writers = tuple(sorted((int(i), _avro_schema_text(p)[0]) for i, p in (schema_files_by_id or {}).items()))
    key_fields = tuple(key_fields)
    if key_source == "kafka_key" and key_format == "string" and len(key_fields) == 1:
        if key_fields[0] not in arrow.names:
            arrow = arrow.append(pa.field(key_fields[0], pa.string(), nullable=False))
    return DecoderSpec(
        format=format,
        schema=arrow,
        key_fields=key_fields,
        key_source=key_source,
        key_format=key_format,
        avro_schema=avro_text,
        writer_schemas=writers,
        registry=registry,
    )


def refreshed(spec: DecoderSpec) -> DecoderSpec:
    """The spec with the registry's current source and target schemas (HoodieStreamer refreshes its
    SchemaRegistryProvider every sync round); specs without a registry are returned as they are."""
    if spec.registry is None:
        return spec
    return decoder_spec(spec.format, registry=spec.registry, key_fields=spec.key_fields,
                        key_source=spec.key_source, key_format=spec.key_format)


# -- outcomes -----------------------------------------------------------------------------------


def _loose(schema: pa.Schema) -> pa.Schema:
    """`schema` with top-level nulls allowed: working tables hold all-null rows for bad records."""
    return pa.schema([f.with_nullable(True) for f in schema])


@dataclass
class _Outcome:
    """Decoded rows aligned with the input (error rows all-null) and the errors by row."""

    table: pa.Table
    errors: dict[int, str]
    marked: pa.Array | None = None  # Hudi's delete marker, where the schema does not declare it


def _aligned(pieces: list[tuple[np.ndarray, pa.Table]], n: int, schema: pa.Schema) -> pa.Table:
    """One table of n rows from pieces (original row indices, rows); rows in no piece are null."""
    if not pieces:
        return pa.table({f.name: pa.nulls(n, f.type) for f in schema}, schema=schema)
    tables = [t.cast(schema) if t.schema != schema else t for _, t in pieces]
    combined = pa.concat_tables(tables)
    positions = np.full(n, -1, dtype=np.int64)
    positions[np.concatenate([idx for idx, _ in pieces])] = np.arange(combined.num_rows)
    return combined.take(pa.array(positions, mask=positions < 0))


# -- JSON ---------------------------------------------------------------------------------------


def _json_read_type(dtype: pa.DataType) -> pa.DataType:
    """What pyarrow.json reads for a declared type: dates and base64 binaries arrive as strings,
    and every field may be null (pyarrow would reject a NOT NULL field under a null parent;
    `_finish` checks NOT NULL where it applies)."""
    if pa.types.is_date(dtype) or pa.types.is_binary(dtype) or pa.types.is_fixed_size_binary(dtype):
        return pa.string()
    if pa.types.is_float32(dtype):  # read wide, so a number beyond FLOAT's range is seen, not made infinite
        return pa.float64()
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(_json_read_type(f.type)).with_nullable(True) for f in dtype])
    if pa.types.is_list(dtype):
        return pa.list_(dtype.value_field.with_type(_json_read_type(dtype.value_type)).with_nullable(True))
    return dtype


def _needs_finish(dtype: pa.DataType, nullable: bool) -> bool:
    if not nullable or _json_read_type(dtype) != dtype:
        return True  # (a nested NOT NULL field also makes the read type differ)
    if pa.types.is_struct(dtype):
        return any(_needs_finish(f.type, f.nullable) for f in dtype)
    if pa.types.is_list(dtype):
        return _needs_finish(dtype.value_type, dtype.value_field.nullable)
    return False


def _where(mask: pa.Array) -> np.ndarray:
    return np.flatnonzero(mask.fill_null(False).to_numpy(zero_copy_only=False))


def _convert_strings(arr: pa.Array, dtype: pa.DataType, path: str) -> tuple[pa.Array, dict[int, str]]:
    """Dates ("YYYY-MM-DD") and base64 binaries from the strings JSON carries them in."""
    errors: dict[int, str] = {}
    if pa.types.is_date(dtype):
        try:
            return pc.cast(arr, dtype), errors
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            out = []
            for i, text in enumerate(arr.to_pylist()):
                try:
                    out.append(None if text is None else pc.cast(pa.array([text]), dtype)[0].as_py())
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    errors[i] = f"field {path}: {text!r} is not a date (YYYY-MM-DD)"
                    out.append(None)
            return pa.array(out, dtype), errors
    out_bytes: list[bytes | None] = []
    for i, text in enumerate(arr.to_pylist()):
        if text is None:
            out_bytes.append(None)
            continue
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            errors[i] = f"field {path}: not base64"
            out_bytes.append(None)
            continue
        if pa.types.is_fixed_size_binary(dtype) and len(raw) != dtype.byte_width:
            errors[i] = f"field {path}: {len(raw)} bytes where {dtype.byte_width} are declared"
            out_bytes.append(None)
            continue
        out_bytes.append(raw)
    return pa.array(out_bytes, dtype), errors


def _finish(arr: pa.Array, dtype: pa.DataType, nullable: bool, path: str) -> tuple[pa.Array, dict[int, str]]:
    """Bring a read column to its declared type and check what pyarrow.json does not: NOT NULL,
    FLOAT's range, dates, base64. Returns the column and errors by row."""
    errors: dict[int, str] = {}
    if pa.types.is_struct(dtype):
        children = []
        for i, child_field in enumerate(dtype):
            child = pc.struct_field(arr, [i])
            if arr.null_count:  # struct_field ignores the parent's nulls; apply them
                child = pc.if_else(arr.is_valid(), child, pa.nulls(len(arr), child.type))
            done, child_errors = _finish(child, child_field.type, child_field.nullable, f"{path}.{child_field.name}")
            for row, message in child_errors.items():
                if arr[row].is_valid:
                    errors.setdefault(row, message)
            children.append(done)
        arr = pa.StructArray.from_arrays(children, fields=list(dtype), mask=arr.is_null())
    elif pa.types.is_list(dtype):
        flat = arr.flatten()
        done, child_errors = _finish(flat, dtype.value_type, dtype.value_field.nullable, f"{path}[]")
        if child_errors:
            parents = pc.list_parent_indices(arr).to_numpy()
            for row, message in child_errors.items():
                errors.setdefault(int(parents[row]), message)
        lengths = pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False)
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
        arr = pa.ListArray.from_arrays(offsets, done, type=dtype, mask=arr.is_null())
    elif pa.types.is_float32(dtype):
        narrow = pc.cast(arr, dtype, safe=False)
        for row in _where(pc.and_(pc.is_finite(arr), pc.invert(pc.is_finite(narrow)))):
            errors[int(row)] = f"field {path}: {arr[int(row)].as_py()} is beyond the range of FLOAT"
        arr = narrow
    elif arr.type != dtype:
        arr, errors = _convert_strings(arr, dtype, path)
    if not nullable:
        for row in _where(arr.is_null()):
            errors.setdefault(int(row), f"field {path} is required but missing or null")
    return arr, errors


_PARSE_CHANGED = re.compile(r"Column\(([^)]*)\) changed from (\w+) to (\w+)")
_PARSE_TWICE = re.compile(r"Column\(([^)]*)\) was specified twice")


def _field_path(pointer: str) -> str:
    return pointer.strip("/").replace("/[]", "[]").replace("/", ".") or "(top level)"


def _json_message(error: Exception) -> str:
    text = str(error).split("\n")[0]
    text = re.sub(r" in row \d+$", "", text)
    if m := _PARSE_CHANGED.search(text):
        return f"field {_field_path(m.group(1))}: expected {m.group(2)}, got {m.group(3)}"
    if m := _PARSE_TWICE.search(text):
        return f"field {_field_path(m.group(1))} appears twice"
    if text.startswith("JSON parse error: "):
        return "invalid JSON: " + text[len("JSON parse error: ") :].rstrip(".")
    return text


def _read_buffer(data: pa.Buffer | bytes, schema: pa.Schema, *, newlines: bool) -> pa.Table:
    # One block for the whole buffer, so a parse error's "in row N" counts from its start.
    size = data.size if isinstance(data, pa.Buffer) else len(data)
    return pa_json.read_json(
        pa.BufferReader(data),
        read_options=pa_json.ReadOptions(use_threads=False, block_size=size + 2),
        parse_options=pa_json.ParseOptions(
            explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=newlines
        ),
    )


_JSON_FAILURES = (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError)
_IN_ROW = re.compile(r" in row (\d+)$")
MAX_CHUNK_ROWS = 16_384
MAX_CHUNK_BYTES = 32 << 20


def _explain(value: bytes, schema: pa.Schema, error: Exception) -> str:
    """The error of one message, naming the field when pyarrow's message does not."""
    message = _json_message(error)
    if message.startswith("field ") or message.startswith("invalid JSON"):
        return message
    for f in schema:
        try:
            _read_buffer(value, pa.schema([f]), newlines=True)
        except _JSON_FAILURES as e:
            return f"field {f.name}: {_json_message(e)}"
    return message


def _joined(values: pa.Array) -> tuple[pa.Buffer, np.ndarray]:
    """The values one per line, without copying them through Python, and where each line starts."""
    lines = pc.binary_join_element_wise(values, pa.scalar(b"\n"), pa.scalar(b""))
    buffers = lines.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[lines.offset : lines.offset + len(lines) + 1]
    return buffers[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0])), (offsets - offsets[0]).astype(np.int64)


def _read_alone(value: pa.Scalar, schema: pa.Schema) -> pa.Table | str:
    """One message by itself (newlines allowed inside): its single row, or what is wrong with it."""
    try:
        table = _read_buffer(value.as_buffer(), schema, newlines=True)
    except _JSON_FAILURES as e:
        return _explain(value.as_py(), schema, e)
    return table if table.num_rows == 1 else "more than one JSON value in the message"


def _chunks(rows: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """`rows` cut into runs small enough to parse as one block each."""
    if not len(rows):
        return []
    by_bytes = np.cumsum(lengths[rows] + 1) // MAX_CHUNK_BYTES
    run = by_bytes * (len(rows) + 1) + np.arange(len(rows)) // MAX_CHUNK_ROWS
    return np.split(rows, np.flatnonzero(np.diff(run)) + 1)


def read_json(values: pa.Array, schema: pa.Schema) -> _Outcome:
    """Decode non-null binary `values` (JSON objects) to `schema`; one outcome row per value.

    Messages are parsed a chunk at a time. A parse error names its row: that message is confirmed
    bad by reading it alone, and the rows around it are parsed again. Errors found only after
    parsing (a number out of range, a bad timestamp) carry no row, so such a chunk is halved
    until the culprit stands alone. Good data costs one parse; each bad message about one more.
    """
    n = len(values)
    read_schema = pa.schema([f.with_type(_json_read_type(f.type)).with_nullable(True) for f in schema])
    errors: dict[int, str] = {}
    try:
        texts = pc.cast(values, pa.string())
    except pa.ArrowInvalid:
        texts_list = []
        for i, raw in enumerate(values.to_pylist()):
            try:
                texts_list.append(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                errors[i] = f"not UTF-8: {e.reason} at byte {e.start}"
                texts_list.append("")
        texts = pa.array(texts_list, pa.string())
    trimmed = pc.utf8_ltrim(texts, characters=" \t\r\n")
    for row in _where(pc.invert(pc.starts_with(trimmed, "{"))):
        row = int(row)
        if row not in errors:
            errors[row] = "empty value" if not trimmed[row].as_py().strip() else "not a JSON object"
    multiline = _where(pc.match_substring_regex(texts, "[\r\n]"))
    good = np.setdiff1d(np.arange(n), np.fromiter(errors.keys(), dtype=np.int64, count=len(errors)))
    single = np.intersect1d(good, multiline)
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False) if n else np.zeros(0, dtype=np.int64)
    pieces: list[tuple[np.ndarray, pa.Table]] = []
    for i in single:
        alone = _read_alone(values[int(i)], read_schema)
        if isinstance(alone, str):
            errors[int(i)] = alone
        else:
            pieces.append((np.array([i]), alone))
    for rows in _chunks(np.setdiff1d(good, single), lengths):
        buffer, starts = _joined(values.take(pa.array(rows)))
        ranges = [(0, len(rows))]
        while ranges:
            a, b = ranges.pop()
            if b - a == 1:
                alone = _read_alone(values[int(rows[a])], read_schema)
                if isinstance(alone, str):
                    errors[int(rows[a])] = alone
                else:
                    pieces.append((rows[a:b], alone))
                continue
            bad_row = None
            try:
                data = buffer.slice(int(starts[a]), int(starts[b] - starts[a]))
                table = _read_buffer(data, read_schema, newlines=False)
                if table.num_rows == b - a:
                    pieces.append((rows[a:b], table))
                    continue
            except _JSON_FAILURES as e:
                found = _IN_ROW.search(str(e).split("\n")[0])
                bad_row = a + int(found.group(1)) if found else None
            if bad_row is not None and bad_row < b:
                alone = _read_alone(values[int(rows[bad_row])], read_schema)
                if isinstance(alone, str):
                    errors[int(rows[bad_row])] = alone
                    ranges += [r for r in ((bad_row + 1, b), (a, bad_row)) if r[1] > r[0]]
                    continue
            middle = (a + b) // 2
            ranges += [(middle, b), (a, middle)]
    table = _aligned(pieces, n, read_schema)
    columns = []
    for f in schema:
        column = table.column(f.name).combine_chunks()
        if _needs_finish(f.type, f.nullable):
            column, column_errors = _finish(column, f.type, f.nullable, f.name)
            for row, message in column_errors.items():
                # Rows that failed to parse are null everywhere: their first error is the cause.
                errors.setdefault(row, message)
        columns.append(column)
    return _Outcome(pa.Table.from_arrays(columns, schema=_loose(schema)), errors)


# -- Avro ---------------------------------------------------------------------------------------


def _strip_uuid(node: Any) -> Any:
    """Avro uuid strings stay strings (fastavro would hand out UUID objects)."""
    if isinstance(node, dict):
        out = {k: _strip_uuid(v) for k, v in node.items()}
        if out.get("logicalType") == "uuid":
            out.pop("logicalType")
        return out
    if isinstance(node, list):
        return [_strip_uuid(v) for v in node]
    return node


@lru_cache(maxsize=64)
def _parsed_avro(text: str) -> Any:
    import fastavro

    return fastavro.parse_schema(_strip_uuid(json.loads(text)))


def _avro_reader(writer: str, reader: str):
    import fastavro

    writer_schema = _parsed_avro(writer)
    reader_schema = None if writer == reader else _parsed_avro(reader)

    def read(payload: bytes) -> dict:
        stream = io.BytesIO(payload)
        record = fastavro.schemaless_reader(stream, writer_schema, reader_schema)
        trailing = len(payload) - stream.tell()
        if trailing:
            raise ValueError(f"{trailing} bytes left after the Avro record")
        return record

    return read


def read_avro(values: pa.Array, spec: DecoderSpec, schema: pa.Schema) -> _Outcome:
    """Decode non-null binary values as the spec's Avro flavour, one record at a time, to `schema`."""
    assert spec.avro_schema is not None
    reader_text = spec.avro_schema
    writers = dict(spec.writer_schemas)
    default_read = _avro_reader(reader_text, reader_text)
    readers: dict[int, Any] = {}
    # A writer schema may carry Hudi's delete marker the declared schema lacks: read it too.
    marker_reader = None
    if HOODIE_IS_DELETED not in schema.names:
        parsed = json.loads(reader_text)
        marker = {"name": HOODIE_IS_DELETED, "type": ["null", "boolean"], "default": None}
        marker_reader = json.dumps({**parsed, "fields": [*parsed["fields"], marker]})
    records: list[dict | None] = []
    errors: dict[int, str] = {}
    for i, payload in enumerate(values.to_pylist()):
        read = default_read
        if spec.format == "confluent-avro":
            if len(payload) < CONFLUENT_HEADER:
                errors[i] = f"{len(payload)} bytes: too short for a Confluent header (magic byte, schema id)"
                records.append(None)
                continue
            if payload[0] != CONFLUENT_MAGIC:
                errors[i] = f"not Confluent-framed Avro: magic byte {payload[0]} (expected {CONFLUENT_MAGIC})"
                records.append(None)
                continue
            schema_id = struct.unpack(">I", payload[1:CONFLUENT_HEADER])[0]
            payload = payload[CONFLUENT_HEADER:]
            if spec.registry is not None:
                if schema_id not in readers:  # asked once per batch; writer schemas are cached per process
                    writer = schema_registry.writer_schema(spec.registry, schema_id)
                    readers[schema_id] = None if writer is None else _avro_reader(writer, reader_text)
                if readers[schema_id] is None:
                    registry_url = schema_registry.without_credentials(spec.registry.source.root)
                    errors[i] = f"schema id {schema_id} is not registered in the schema registry at {registry_url}"
                    records.append(None)
                    continue
                read = readers[schema_id]
            elif writers:
                if schema_id not in writers:
                    errors[i] = f"unknown schema id {schema_id} (known: {sorted(writers)})"
                    records.append(None)
                    continue
                if schema_id not in readers:
                    writer = writers[schema_id]
                    carries = marker_reader is not None and any(
                        f.get("name") == HOODIE_IS_DELETED for f in json.loads(writer).get("fields", ()))
                    readers[schema_id] = _avro_reader(writer, marker_reader if carries else reader_text)
                read = readers[schema_id]
        try:
            records.append(read(payload))
        except Exception as e:  # garbage bytes can fail inside fastavro in many ways; all are bad records
            errors[i] = f"not Avro for the schema: {type(e).__name__}: {e}"[:500]
            records.append(None)
    struct_type = pa.struct(list(schema))
    pieces: list[tuple[np.ndarray, pa.Table]] = []
    pending = [np.array([i for i in range(len(records)) if records[i] is not None], dtype=np.int64)]
    while pending:
        idx = pending.pop()
        if not len(idx):
            continue
        try:
            array = pa.array([records[i] for i in idx], type=struct_type)
            pieces.append((idx, pa.Table.from_struct_array(array)))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError) as e:
            if len(idx) == 1:
                errors[int(idx[0])] = f"Avro record does not fit the declared schema: {e}"[:500]
            else:
                pending += [idx[len(idx) // 2 :], idx[: len(idx) // 2]]
    marked = pa.array([i not in errors and r is not None and r.get(HOODIE_IS_DELETED) is True
                       for i, r in enumerate(records)], pa.bool_())
    return _Outcome(_aligned(pieces, len(records), _loose(schema)), errors, marked)


# -- keys ---------------------------------------------------------------------------------------


def _key_from_text(text: str, dtype: pa.DataType) -> Any:
    if pa.types.is_string(dtype):
        return text
    if pa.types.is_integer(dtype) and not re.fullmatch(r"-?[0-9]+", text):
        raise ValueError(f"{text!r} is not an integer")
    if pa.types.is_binary(dtype):
        return text.encode()
    return pc.cast(pa.array([text]), dtype)[0].as_py()


def read_keys(keys: pa.Array, spec: DecoderSpec) -> _Outcome:
    """The key fields from Kafka key bytes, as key_format says; one outcome row per key."""
    schema = spec.key_schema
    n = len(keys)
    null_rows = set(int(i) for i in _where(keys.is_null()))
    present = np.array(sorted(set(range(n)) - null_rows), dtype=np.int64)
    errors: dict[int, str] = {i: "the Kafka key is null, but the record key comes from it" for i in null_rows}
    if spec.key_format == "json":
        outcome = read_json(keys.take(pa.array(present)), schema)
        table = _aligned([(present, outcome.table)] if len(present) else [], n, _loose(schema))
        errors.update({int(present[r]): f"Kafka key: {m}" for r, m in outcome.errors.items()})
        return _Outcome(table, errors)
    field = schema.field(0)
    values: list[Any] = [None] * n
    for i in present:
        raw = keys[int(i)].as_py()
        try:
            values[i] = _key_from_text(raw.decode("utf-8"), field.type)
        except UnicodeDecodeError:
            errors[int(i)] = "Kafka key: not UTF-8"
        except (ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            errors[int(i)] = f"Kafka key: {str(e).splitlines()[0]} (field {field.name} is {field.type})"
    return _Outcome(pa.table({field.name: pa.array(values, field.type)}, schema=_loose(schema)), errors)


# -- batches ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodedBatch:
    """The two sides of one decoded batch: every input row is in exactly one of them."""

    records: pa.Table
    errors: pa.Table


def _input_table(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    missing = [c for c in INPUT_COLUMNS if c not in table.column_names]
    if missing:
        raise ConfigError(f"the Kafka rows lack columns {missing}", key="decode")
    types = {
        "key": pa.binary(),
        "value": pa.binary(),
        "topic": pa.string(),
        "partition": pa.int32(),
        "offset": pa.int64(),
        "timestamp": TIMESTAMP_TYPE,
    }
    return pa.table({c: table.column(c).cast(t).combine_chunks() for c, t in types.items()})


def _subset(table: pa.Table, rows: np.ndarray) -> pa.Table:
    return table.take(pa.array(rows, type=pa.int64()))


def _key_columns(outcome: _Outcome, positions: np.ndarray, spec: DecoderSpec) -> dict[str, pa.Array]:
    take = pa.array(positions, type=pa.int64())
    return {name: outcome.table.column(name).combine_chunks().take(take) for name in spec.key_fields}


def decode_batch(
    batch: pa.RecordBatch | pa.Table, spec: DecoderSpec, *, seen_at: datetime | None = None
) -> DecodedBatch:
    """Decode Kafka rows: records (declared columns + metadata) and errors (raw row + message)."""
    rows = _input_table(batch)
    values = rows.column("value").chunk(0) if rows.column("value").num_chunks else pa.array([], pa.binary())
    keys = rows.column("key").chunk(0) if rows.column("key").num_chunks else pa.array([], pa.binary())
    tomb_mask = values.is_null().to_numpy(zero_copy_only=False)
    data_rows = np.flatnonzero(~tomb_mask)
    tomb_rows = np.flatnonzero(tomb_mask)
    errors: dict[int, str] = {}

    data_values = values.take(pa.array(data_rows, type=pa.int64()))
    value_schema = spec.value_schema
    marked = None
    if spec.format == "json":
        marker_read = HOODIE_IS_DELETED not in spec.schema.names
        read_schema = value_schema.append(pa.field(HOODIE_IS_DELETED, pa.bool_())) if marker_read else value_schema
        decoded = read_json(data_values, read_schema)
        if marker_read:
            marked = decoded.table.column(HOODIE_IS_DELETED).combine_chunks().fill_null(False)
    else:
        decoded = read_avro(data_values, spec, value_schema)
        marked = decoded.marked
    if marked is None:
        marked = pa.array(np.zeros(len(data_rows), dtype=bool))
    errors.update({int(data_rows[r]): m for r, m in decoded.errors.items()})
    data_columns = {name: decoded.table.column(name) for name in value_schema.names}
    tomb_columns = {f.name: pa.nulls(len(tomb_rows), f.type) for f in spec.schema}

    if spec.key_fields:
        from_key = np.union1d(data_rows if spec.key_source == "kafka_key" else [], tomb_rows).astype(np.int64)
        key_outcome = read_keys(keys.take(pa.array(from_key, type=pa.int64())), spec)
        for position, message in key_outcome.errors.items():
            errors.setdefault(int(from_key[position]), message)
        tomb_columns.update(_key_columns(key_outcome, np.searchsorted(from_key, tomb_rows), spec))
        if spec.key_source == "kafka_key":
            data_columns.update(_key_columns(key_outcome, np.searchsorted(from_key, data_rows), spec))
        else:
            for name in spec.key_fields:
                for r in _where(data_columns[name].is_null()):
                    errors.setdefault(int(data_rows[int(r)]), f"record key field {name} is missing or null")
    else:
        for r in tomb_rows:
            errors[int(r)] = "a tombstone only carries a key, and the spec declares no key fields"

    working = _loose(spec.schema)
    declared = pa.concat_tables(
        [
            pa.table([data_columns[f.name] for f in spec.schema], schema=working),
            pa.table([tomb_columns[f.name] for f in spec.schema], schema=working),
        ]
    )
    origin = np.concatenate([data_rows, tomb_rows]).astype(np.int64)
    bad = np.fromiter(errors.keys(), dtype=np.int64, count=len(errors))
    keep = np.flatnonzero(~np.isin(origin, bad))
    keep = keep[np.argsort(origin[keep], kind="stable")]
    kept_rows = origin[keep]
    kept = declared.take(pa.array(keep, type=pa.int64()))
    meta = _subset(rows, kept_rows)
    records = pa.Table.from_arrays(
        [kept.column(f.name) for f in spec.schema]
        + [
            meta.column("topic"),
            meta.column("partition"),
            meta.column("offset"),
            meta.column("timestamp"),
            pa.array(tomb_mask[kept_rows], pa.bool_()),
            pa.concat_arrays([marked, pa.array(np.zeros(len(tomb_rows), dtype=bool))])
            .take(pa.array(keep, type=pa.int64())),
        ],
        schema=spec.records_schema,
    )

    error_rows = np.array(sorted(errors), dtype=np.int64)
    raw = _subset(rows, error_rows)
    seen = seen_at or datetime.now(timezone.utc)
    error_table = pa.Table.from_arrays(
        [raw.column(c) for c in INPUT_COLUMNS]
        + [
            pa.array([errors[int(r)] for r in error_rows], pa.string()),
            pa.array([seen] * len(error_rows), TIMESTAMP_TYPE),
        ],
        schema=ERRORS_SCHEMA,
    )
    return DecodedBatch(records=records, errors=error_table)
