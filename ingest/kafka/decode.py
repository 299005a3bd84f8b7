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

The pieces: `columns` (the batch's columns), `ddl` (Spark DDL schemas), `spec` (the decoder spec),
`json_values` and `avro_values` (the two value readers), `outcome` (rows aligned with their errors);
this module reads the keys and puts a batch together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import ConfigError
from ingest.kafka.avro_values import read_avro
from ingest.kafka.columns import ERRORS_SCHEMA, HOODIE_IS_DELETED, INPUT_COLUMNS, TIMESTAMP_TYPE
from ingest.kafka.json_values import read_json
from ingest.kafka.outcome import Outcome, aligned, loose, rows_where
from ingest.kafka.spec import DecoderSpec

# -- keys ---------------------------------------------------------------------------------------


def _key_from_text(text: str, dtype: pa.DataType) -> Any:
    if pa.types.is_string(dtype):
        return text
    if pa.types.is_integer(dtype) and not re.fullmatch(r"-?[0-9]+", text):
        raise ValueError(f"{text!r} is not an integer")
    if pa.types.is_binary(dtype):
        return text.encode()
    return pc.cast(pa.array([text]), dtype)[0].as_py()


def read_keys(keys: pa.Array, spec: DecoderSpec) -> Outcome:
    """The key fields from Kafka key bytes, as key_format says; one outcome row per key."""
    schema = spec.key_schema
    n = len(keys)
    null_rows = set(int(i) for i in rows_where(keys.is_null()))
    present = np.array(sorted(set(range(n)) - null_rows), dtype=np.int64)
    errors: dict[int, str] = {i: "the Kafka key is null, but the record key comes from it" for i in null_rows}
    if spec.key_format == "json":
        outcome = read_json(keys.take(pa.array(present)), schema)
        table = aligned([(present, outcome.table)] if len(present) else [], n, loose(schema))
        errors.update({int(present[r]): f"Kafka key: {m}" for r, m in outcome.errors.items()})
        return Outcome(table, errors)
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
    return Outcome(pa.table({field.name: pa.array(values, field.type)}, schema=loose(schema)), errors)


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


def _key_columns(outcome: Outcome, positions: np.ndarray, spec: DecoderSpec) -> dict[str, pa.Array]:
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
                for r in rows_where(data_columns[name].is_null()):
                    errors.setdefault(int(data_rows[int(r)]), f"record key field {name} is missing or null")
    else:
        for r in tomb_rows:
            errors[int(r)] = "a tombstone only carries a key, and the spec declares no key fields"

    working = loose(spec.schema)
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
