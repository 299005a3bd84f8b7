"""Decoding Kafka rows in Spark: one `mapInArrow` pass, then split into records and errors.

Each message is decoded once. The pass emits one combined frame: the records' columns plus
`_ingest_error` (null for good rows), the error time and the raw key/value bytes (kept for error
rows only). `decode` persists that frame (memory, spilling to disk) and derives both sides from it,
so writing records and then errors decodes - and reads Kafka - once, not twice. The cost is holding
one batch of decoded rows in the executors' cache until `unpersist()`; in a foreachBatch that is
one micro-batch. Use `with decode(df, spec) as (records, errors): ...` or call `unpersist()` after
the batch is written. Without persisting, each action on either side would re-run the whole
lineage, the Kafka read included.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from types import TracebackType

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ingest.kafka.columns import ERRORS_SCHEMA, INPUT_COLUMNS, OFFSET, PARTITION, TIMESTAMP, TOPIC
from ingest.kafka.decode import decode_batch
from ingest.kafka.spec import DecoderSpec

ERROR = "_ingest_error"
ERROR_SEEN_AT = "_ingest_error_seen_at"
RAW_KEY = "_ingest_raw_key"
RAW_VALUE = "_ingest_raw_value"


def combined_schema(spec: DecoderSpec) -> pa.Schema:
    """Records' columns (all nullable: error rows leave them empty) + the error columns."""
    fields = [f.with_nullable(True) for f in spec.records_schema]
    fields += [
        pa.field(ERROR, pa.string()),
        pa.field(ERROR_SEEN_AT, ERRORS_SCHEMA.field("error_seen_at").type),
        pa.field(RAW_KEY, pa.binary()),
        pa.field(RAW_VALUE, pa.binary()),
    ]
    return pa.schema(fields)


def _combine(batch: pa.RecordBatch, spec: DecoderSpec, schema: pa.Schema) -> pa.Table:
    decoded = decode_batch(batch, spec, seen_at=datetime.now(timezone.utc))
    records, errors = decoded.records, decoded.errors
    n = records.num_rows
    good = {f.name: records.column(f.name) for f in spec.records_schema}
    good.update(
        {
            ERROR: pa.nulls(n, pa.string()),
            ERROR_SEEN_AT: pa.nulls(n, schema.field(ERROR_SEEN_AT).type),
            RAW_KEY: pa.nulls(n, pa.binary()),
            RAW_VALUE: pa.nulls(n, pa.binary()),
        }
    )
    m = errors.num_rows
    bad = {f.name: pa.nulls(m, f.type) for f in schema}
    bad.update(
        {
            TOPIC: errors.column("topic"),
            PARTITION: errors.column("partition"),
            OFFSET: errors.column("offset"),
            TIMESTAMP: errors.column("timestamp"),
            "_ingest_is_tombstone": pa.array([False] * m, pa.bool_()),
            ERROR: errors.column("error"),
            ERROR_SEEN_AT: errors.column("error_seen_at"),
            RAW_KEY: errors.column("key"),
            RAW_VALUE: errors.column("value"),
        }
    )
    tables = [pa.table(part, schema=schema) for part in (good, bad)]
    return pa.concat_tables(tables)


def _spark_schema(schema: pa.Schema):
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


@dataclass(frozen=True, eq=False)
class Decoded:
    """Records and errors of one decode; unpacks as `records, errors = decode(...)`."""

    records: DataFrame
    errors: DataFrame
    combined: DataFrame

    def __iter__(self) -> Iterator[DataFrame]:
        return iter((self.records, self.errors))

    def unpersist(self) -> None:
        """Drop the cached decoded rows (after both sides are written)."""
        self.combined.unpersist()

    def __enter__(self) -> Decoded:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.unpersist()


def decode(df: DataFrame, spec: DecoderSpec, *, storage_level: StorageLevel = StorageLevel.MEMORY_AND_DISK) -> Decoded:
    """Decode Kafka rows (columns key, value, topic, partition, offset, timestamp) with `spec`.

    Records carry the declared columns and `_kafka_topic`, `_kafka_partition`, `_kafka_offset`,
    `_kafka_timestamp`, `_ingest_is_tombstone`, `_ingest_is_deleted`; errors carry `key`, `value`,
    `topic`, `partition`, `offset`, `timestamp`, `error`, `error_seen_at` (see ingest.kafka.columns).
    """
    schema = combined_schema(spec)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from _combine(batch, spec, schema).to_batches()

    combined = df.select(*INPUT_COLUMNS).mapInArrow(run, _spark_schema(schema)).persist(storage_level)
    record_columns = [F.col(f"`{name}`") for name in spec.records_schema.names]
    records = combined.where(F.col(ERROR).isNull()).select(*record_columns)
    errors = combined.where(F.col(ERROR).isNotNull()).select(
        F.col(RAW_KEY).alias("key"),
        F.col(RAW_VALUE).alias("value"),
        F.col(TOPIC).alias("topic"),
        F.col(PARTITION).alias("partition"),
        F.col(OFFSET).alias("offset"),
        F.col(TIMESTAMP).alias("timestamp"),
        F.col(ERROR).alias("error"),
        F.col(ERROR_SEEN_AT).alias("error_seen_at"),
    )
    return Decoded(records=records, errors=errors, combined=combined)
