"""Quarantine: where records that cannot be written go, with why, and where they came from.

Each batch's bad records land under `<quarantine>/batch=<label>/` in parquet files named by the
task that found them, so a replayed or retried batch rewrites the same files instead of adding
copies. A record keeps every column it arrived with (for Kafka: raw key and value bytes, topic,
partition, offset, timestamp), plus the error and the time it was seen.
"""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq

from ingest import parquet_bytes
from ingest.storage import Storage

ERROR = "_ingest_error"
SEEN_AT = "_ingest_quarantined_at"


def quarantine_file(batch_label: str, part: str) -> str:
    return f"batch={batch_label}/part-{part}.parquet"


def write(storage: Storage, rows: pa.Table, batch_label: str, part: str) -> str | None:
    """Write one task's bad records; returns the file written (None when there were none)."""
    if rows.num_rows == 0:
        return None
    seen = pa.array([datetime.now(timezone.utc)] * rows.num_rows, pa.timestamp("us", tz="UTC"))
    table = rows.append_column(SEEN_AT, seen)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    path = quarantine_file(batch_label, part)
    storage.write(path, buf.getvalue())
    return path


def read_all(storage: Storage) -> pa.Table | None:
    """Every quarantined record under `storage` (for inspection and tests)."""
    parts = []
    for entry in storage.walk_files(""):
        if entry.name.endswith(".parquet"):
            parts.append(parquet_bytes.read_table(storage.read(entry.path)))
    if not parts:
        return None
    return pa.concat_tables(parts, promote_options="permissive")
