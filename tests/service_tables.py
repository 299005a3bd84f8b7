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


class FixtureWriter:
    """A Hudi-written table continued by `LocalWriter` (key index) and the model of its rows: each round
    upserts a live key (a larger ordering value), deletes another and inserts a new key into the next
    partition, as `test_write_versions` continues the Hudi 1.x fixtures."""

    def __init__(self, path: Path | str, key: str, part: str, order: str):
        self.path, self.key, self.part, self.order = str(path), key, part, order
        table = HudiTable.open(self.path)
        base = read_snapshot(table)
        base = base.drop_columns([c for c in base.column_names if c.startswith("_hoodie")])
        self.schema = base.schema
        self.existing = {r[key]: r for r in base.to_pylist()}
        self.templates = sorted(self.existing)
        self.partitions = sorted({r[part] for r in self.existing.values()})
        self.top = max(r[order] for r in self.existing.values())
        self.model = TableModel(event_time=True)
        self.model.apply([Op(k, r[part], r[order], False, r) for k, r in self.existing.items()])
        self.writer = LocalWriter(WriteOptions(
            table_path=self.path, table_name=table.name,
            hudi={"hoodie.datasource.write.recordkey.field": key, "hoodie.datasource.write.partitionpath.field": part,
                  "hoodie.datasource.write.precombine.field": order,
                  "hoodie.datasource.write.hive_style_partitioning": "true"},
            index=IndexOptions(type=IndexType.KEY),
        ))
        self.rounds = 0

    def write_round(self) -> str | None:
        n, key, part, order = self.rounds, self.key, self.part, self.order
        live = sorted(ident[0] for ident in self.model.live)
        upd = live[n % len(live)]
        gone = next(k for k in live[(n + 3) % len(live):] + live if k != upd)
        ts = self.top + 10 + n
        new = dict(self.existing[self.templates[n % len(self.templates)]],
                   **{key: f"new-{n}", part: self.partitions[(n + 1) % len(self.partitions)], order: ts})
        rows = [dict(self.existing[upd], **{order: ts}), dict(self.existing[gone], **{order: ts}), new]
        deleted = [False, True, False]
        batch = pa.Table.from_pylist(rows, schema=self.schema).append_column("_hoodie_is_deleted", pa.array(deleted))
        result = self.writer.write(batch)
        self.model.apply([Op(r[key], r[part], r[order], d, r) for r, d in zip(rows, deleted, strict=True)])
        self.existing[new[key]] = new
        self.rounds += 1
        return result.instant

    @property
    def table(self) -> HudiTable:
        return HudiTable.open(self.path)

    def expected(self) -> list[tuple]:
        return sorted((r["key"], r["partition"], r[self.order]) for r in self.model.rows())

    def ours(self) -> list[tuple]:
        rows = read_snapshot(HudiTable.open(self.path)).select([self.key, self.part, self.order]).to_pylist()
        return sorted((r[self.key], r[self.part], r[self.order]) for r in rows)

    def hudi_rs(self) -> list[tuple]:
        """Every row hudi-rs reads (duplicates would show)."""
        import hudi

        batches = hudi.HudiTableBuilder.from_base_uri(self.path).build().read()
        rows = pa.Table.from_batches(batches).select([self.key, self.part, self.order]).to_pylist()
        return sorted((r[self.key], r[self.part], r[self.order]) for r in rows)


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
    """The table services ingest runs at this `TableVersion` (`TableVersion.runs`): the one place tests ask."""
    return frozenset(s for s in SERVICES if version.runs(s))


def service_settings(version, **overrides: str):
    """`SMALL_SERVICE_SETTINGS` with inline compaction, each service on only where the version allows it."""
    from ingest.hudi.config.service_settings import ServiceSettings

    allowed = allowed_services(version)
    flags = {"hoodie.compact.inline": str("compaction" in allowed).lower(),
             "hoodie.clean.automatic": str("cleaning" in allowed).lower(),
             "hoodie.archive.automatic": str("archival" in allowed).lower()}
    return ServiceSettings.from_mapping({**SMALL_SERVICE_SETTINGS, **flags, **overrides})


def run_allowed_services(table: HudiTable, **overrides: str):
    """A writer's inline services after a commit (`run_inline_services`), those the version allows."""
    from ingest.services import ServicesRun, run_inline_services

    if not allowed_services(table.version):
        return ServicesRun()
    return run_inline_services(table, service_settings(table.version, **overrides))
