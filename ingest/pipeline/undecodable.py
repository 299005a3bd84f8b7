"""Kafka messages that cannot be decoded: set aside in the quarantine, or the batch fails naming one.

Nothing is dropped silently. With `stream.on_error: quarantine` the executors that decoded the
messages write them under `<quarantine>/batch=<id>/`, beside the records the sink sets aside (records
that decode but cannot be keyed), one parquet file per Kafka partition and batch named after its
first offset, so a batch replayed after a crash rewrites the same files rather than adding copies.
The columns match the sink's quarantine where they mean the same thing, so one read of the folder
shows every bad message with where it came from:

    key, value                           the raw Kafka key and value bytes
    _kafka_topic, _kafka_partition,
    _kafka_offset, _kafka_timestamp      where the message was
    _ingest_error                        what was wrong with it
    _ingest_quarantined_at               when it was set aside
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from ingest.errors import BadRecordError
from ingest.storage import Storage
from ingest.write import quarantine

RENAMED = {
    "topic": "_kafka_topic",
    "partition": "_kafka_partition",
    "offset": "_kafka_offset",
    "timestamp": "_kafka_timestamp",
    "error": quarantine.ERROR,
}
KEPT = ("key", "value", *RENAMED)


def quarantine_rows(errors: pa.Table) -> pa.Table:
    """Decode error rows (ingest.kafka.columns' errors schema) in the quarantine's column names."""
    table = errors.select(list(KEPT))
    return table.rename_columns([RENAMED.get(name, name) for name in table.column_names])


def file_part(topic: str, partition: int, first_offset: int) -> str:
    """The file a Kafka partition's bad messages of one batch go to (Kafka topic names are file-safe)."""
    return f"decode-{topic}-{partition}-{first_offset}"


def write_task(storage: Storage, batch_label: str, errors: pa.Table) -> int:
    """Write one task's error rows, a file per Kafka partition; returns how many were written."""
    written = 0
    pairs = sorted(set(zip(errors.column("topic").to_pylist(), errors.column("partition").to_pylist(), strict=True)))
    for topic, partition in pairs:
        mask = pc.and_(pc.equal(errors.column("topic"), topic), pc.equal(errors.column("partition"), partition))
        rows = errors.filter(mask).sort_by("offset")
        first = rows.column("offset")[0].as_py()
        quarantine.write(storage, quarantine_rows(rows), batch_label, file_part(topic, partition, first))
        written += rows.num_rows
    return written


def set_aside(errors: DataFrame, storage: Storage, batch_label: str) -> int:
    """Quarantine every error row, written by the executors that hold them; returns the count."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        parts = [b for b in batches if b.num_rows]
        count = write_task(storage, batch_label, pa.Table.from_batches(parts)) if parts else 0
        yield pa.RecordBatch.from_pydict({"n": pa.array([count], pa.int64())})

    return int(sum(row["n"] for row in errors.mapInArrow(write, "n long").collect()))


def fail_if_any(errors: DataFrame) -> None:
    """Fail the batch, naming its first undecodable message (by topic, partition and offset)."""
    first = errors.orderBy("topic", "partition", "offset").limit(1).collect()
    if not first:
        return
    row = first[0]
    count = errors.count()
    raise BadRecordError(
        f"{count} Kafka message(s) cannot be decoded; first: {row['topic']}-{row['partition']} offset "
        f"{row['offset']}: {row['error']} (stream.on_error is fail; set quarantine.path and "
        "stream.on_error: quarantine to set such messages aside)"
    )
