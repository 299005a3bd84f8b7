"""Helpers for the table-service tests: tables written with `LocalWriter` and checked against the
reference model (`model.py`), with our reader and with hudi-rs."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pyarrow as pa
from model import Op, TableModel

from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

HUDI_SETTINGS = {
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
}
CITIES = ("san_francisco", "chennai", "sao_paulo")


def options_for(path: Path | str, buckets: int = 2, version: int | None = None) -> WriteOptions:
    """Options for a trips table; `version` sets `hoodie.write.table.version` (default: ingest's)."""
    hudi = {**HUDI_SETTINGS, "hoodie.write.table.version": str(version)} if version else HUDI_SETTINGS
    return WriteOptions(
        table_path=str(path), table_name="trips", hudi=hudi,
        index=IndexOptions(type=IndexType.BUCKET, bucket_count=buckets),
    )


def to_table(ops: list[Op]) -> pa.Table:
    return pa.table({
        "uuid": [o.key for o in ops],
        "city": [o.partition for o in ops],
        "ts": pa.array([o.ts for o in ops], pa.int64()),
        "fare": pa.array([o.values.get("fare") for o in ops], pa.float64()),
        "_hoodie_is_deleted": [o.delete and not o.tombstone for o in ops],
        "_ingest_is_tombstone": [o.tombstone for o in ops],
    })


def random_batch(rng: random.Random, batch_no: int, keys: int = 12, size: int = 5) -> list[Op]:
    """Upserts (ordering value = batch number, so later batches win) and a few deletes."""
    ops = []
    for _ in range(size):
        key = f"key-{rng.randrange(keys)}"
        city = CITIES[int(key.split("-")[1]) % len(CITIES)]
        if rng.random() < 0.15:
            ops.append(Op(key, city, batch_no, True))
        else:
            ops.append(Op(key, city, batch_no, False, {"fare": round(rng.uniform(1, 100), 2)}))
    return ops


class ModelWriter:
    """A LocalWriter and the reference model fed the same batches."""

    def __init__(self, path: Path | str, buckets: int = 2, version: int | None = None):
        self.path = str(path)
        self.writer = LocalWriter(options_for(path, buckets, version))
        self.model = TableModel(event_time=True)

    def write(self, ops: list[Op]) -> str | None:
        for op in ops:
            op.values = {"fare": op.values.get("fare")}
        result = self.writer.write(to_table(ops))
        self.model.apply(ops)
        return result.instant

    @property
    def table(self) -> HudiTable:
        return HudiTable.open(self.path)

    def expected(self) -> set[tuple]:
        return {(r["key"], r["partition"], r["ts"], r["fare"]) for r in self.model.rows()}


def abandon(execution) -> None:
    """Leave a compaction as a crashed executor does: inflight, its heartbeat no longer beating."""
    heartbeat = execution.heartbeat
    heartbeat.stop()
    record = json.loads(heartbeat.storage.read(heartbeat.path))
    heartbeat.storage.write(heartbeat.path, json.dumps({**record, "heartbeat_at": 0}).encode())


def rows(table: pa.Table) -> set[tuple]:
    return {(r["uuid"], r["city"], r["ts"], r["fare"]) for r in table.to_pylist()}


def our_rows(path: Path | str) -> set[tuple]:
    return rows(read_snapshot(HudiTable.open(str(path))))


def hudi_rs_rows(path: Path | str) -> list[tuple]:
    """Every row hudi-rs reads (a list: duplicates must show)."""
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    out = []
    for batch in table.read():
        out.extend((r["uuid"], r["city"], r["ts"], r["fare"]) for r in batch.to_pylist())
    return out


def data_files(path: Path | str) -> set[str]:
    """Relative paths of every file in the table's partitions (no `.hoodie`)."""
    root = Path(path)
    out = set()
    for folder, _, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        if rel.parts and rel.parts[0] == ".hoodie":
            continue
        out.update(str(rel / f) if rel.parts else f for f in files)
    return out


# -- the services a table version allows -------------------------------------------------------------------

SERVICES = ("compaction", "cleaning", "archival")

# Small thresholds, so a few commits give every service work: compaction after two deltacommits, one
# file version kept, archival between four and six instants.
SMALL_SERVICE_SETTINGS = {
    "hoodie.compact.inline.max.delta.commits": "2",
    "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1",
    "hoodie.cleaner.commits.retained": "2", "hoodie.keep.min.commits": "4", "hoodie.keep.max.commits": "6",
}


def allowed_services(version) -> frozenset[str]:
    """The table services ingest runs at this `TableVersion`. The one place that asks: the per-service
    flags (`.compaction`, `.cleaning`, `.archival`) where `TableVersion` has them, else `.services`."""
    if all(hasattr(version, s) for s in SERVICES):
        return frozenset(s for s in SERVICES if getattr(version, s))
    return frozenset(SERVICES) if getattr(version, "services", False) else frozenset()


def service_settings(version, **overrides: str):
    """`SMALL_SERVICE_SETTINGS` with inline compaction, each service on only where the version allows it."""
    from ingest.hudi.config.service_settings import ServiceSettings

    allowed = allowed_services(version)
    flags = {"hoodie.compact.inline": str("compaction" in allowed).lower(),
             "hoodie.clean.automatic": str("cleaning" in allowed).lower(),
             "hoodie.archive.automatic": str("archival" in allowed).lower()}
    return ServiceSettings.from_mapping({**SMALL_SERVICE_SETTINGS, **flags, **overrides})


def run_allowed_services(table: HudiTable):
    """A writer's inline services after a commit (`run_inline_services`), those the version allows."""
    from ingest.services import ServicesRun, run_inline_services

    if not allowed_services(table.version):
        return ServicesRun()
    return run_inline_services(table, service_settings(table.version))
