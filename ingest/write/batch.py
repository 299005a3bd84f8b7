"""Writing one batch: the driver's sequence, shared by the Spark sink and the in-process writer.

1. prepare the records (keys, partitions, deletes) and deal with bad ones — quarantine them or fail
   the batch naming the first — before anything touches the table;
2. begin the commit (a replayed batch stops here), make sure the key index is complete;
3. plan, and let the engine run the write tasks (in executors, or in this process);
4. check the writer lease, then complete the commit.

An `Engine` only decides where tasks run. `LocalEngine` runs them here on Arrow tables; the Spark
engine (`ingest.spark.sink`) runs the very same task functions in executors.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from ingest.errors import BadRecordError, TableNotFound
from ingest.faults import crash_point
from ingest.hudi.avro import schema as avro
from ingest.hudi.table.file_system_view import FileSlice
from ingest.hudi.table.listing_sync import ListingSync
from ingest.hudi.table.snapshot import ReadContext
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import WriteStat
from ingest.phases import phase
from ingest.write import index_bootstrap, tasks
from ingest.write import records as rec
from ingest.write.commit import BatchId, Transaction, begin, complete_transaction, release
from ingest.write.file_group_writer import TaskIdentity
from ingest.write.lock import WriterLock, for_writer
from ingest.write.options import IndexType, Operation, WriteOptions
from ingest.write.plan import WritePlan, build_plan

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CommitResult:
    """What one batch did; `instant` is None when nothing was committed."""

    instant: str | None
    skipped_replay: bool = False
    rows_in: int = 0
    quarantined: int = 0
    counts: Mapping[str, int] = field(default_factory=dict)
    files: int = 0
    rolled_back: tuple[str, ...] = ()
    durations: Mapping[str, float] = field(default_factory=dict)
    stats: tuple[WriteStat, ...] = ()       # the commit's write stats, for metrics

    def log_line(self, batch: BatchId | None = None) -> str:
        c = self.counts
        head = f"batch {batch.batch_id}" if batch else "write"
        if self.skipped_replay:
            return f"{head}: already committed, replay skipped"
        timing = " ".join(f"{k}={v:.2f}s" for k, v in self.durations.items())
        return (f"{head}: instant {self.instant} rows_in={self.rows_in} written={c.get('upserts', 0)} "
                f"inserts={c.get('inserts', 0)} updates={c.get('updates', 0)} deletes={c.get('deletes', 0)} "
                f"stale={c.get('stale', 0)} quarantined={self.quarantined} files={self.files} {timing}")


class Engine(Protocol):
    """Where a batch's work runs."""

    def schema(self, data: Any) -> pa.Schema: ...

    def prepare(self, data: Any, options: WriteOptions, ordering_field: str | None) -> Any:
        """The records to write, possibly lazily: bad rows are quarantined, or fail the batch naming one."""

    def run(self, plan: WritePlan, prepared: Any) -> tasks.TaskResult:
        """Run the write tasks; counts include `rows_in` and `quarantined`."""

    def commit_metadata(self) -> Mapping[str, str]:
        """Extra metadata the run learned (e.g. source offsets), recorded in the commit."""

    def slice_reader(self) -> Callable[[ReadContext, Iterable[FileSlice], str], list[tuple[str, pa.Table]]] | None: ...


def incoming_avro_schema(arrow_schema: pa.Schema, table_name: str) -> avro.AvroSchema:
    """The data's Avro schema; all-null columns (type unknown) are left out until they carry values."""
    return avro.without_null_fields(avro.arrow_to_avro(rec.data_schema(arrow_schema), table_name))


def open_for_write(options: WriteOptions, arrow_schema: pa.Schema) -> tuple[HudiTable, WriteOptions]:
    """The table (created if absent) and the options as its writer uses them (`WriteOptions.for_table`)."""
    try:
        table = HudiTable.open(options.table_path, options.storage_options)
    except TableNotFound:
        schema = incoming_avro_schema(arrow_schema, options.table_name)
        table = HudiTable.open_or_create(options.table_path, options.table_settings(), schema,
                                         options.storage_options, options.table_version)
        options = options.for_table(table.config.props)
    else:
        options = options.for_table(table.config.props)
        table.checked_for_write(options.table_settings())
    table.config.check_compatible(options.table_path, options.identity_settings())
    return table, options


def open_table(options: WriteOptions, arrow_schema: pa.Schema) -> HudiTable:
    return open_for_write(options, arrow_schema)[0]


def write_batch(
    engine: Engine,
    options: WriteOptions,
    data: Any,
    *,
    batch: BatchId | None = None,
    extra_metadata: Mapping[str, str] | None = None,
    lock: WriterLock | None = None,
    listings: ListingSync | None = None,
) -> CommitResult:
    """Write `data` as one commit (the caller holds `lock`, if the table is shared; `listings`: the
    partition listings the writer keeps between its commits)."""
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    arrow_schema = engine.schema(data)
    table, options = open_for_write(options, arrow_schema)
    ordering_field = table.config.precombine_field or options.precombine_field
    with phase("preparing the records"):
        prepared = engine.prepare(data, options, ordering_field)
    timings["prepare"] = time.monotonic() - t0

    t1 = time.monotonic()
    txn = begin(table, incoming_avro_schema(arrow_schema, options.table_name), options.operation.value, batch,
                options.heartbeat, options.lazy_failed_writes, keyed_fields=options.keyed_fields,
                nested_additions=options.nested_field_additions, listings=listings)
    if txn is None:
        return CommitResult(None, skipped_replay=True)
    try:
        return _write_and_commit(engine, options, table, txn, prepared, extra_metadata, lock, timings, t1)
    finally:
        release(txn)  # completed, or given up: no heartbeat outlives this call


def _write_and_commit(engine: Engine, options: WriteOptions, table: HudiTable, txn: Transaction, prepared: Any,
                      extra_metadata: Mapping[str, str] | None, lock: WriterLock | None,
                      timings: dict[str, float], t1: float) -> CommitResult:
    plan = build_plan(txn, options)
    index_bootstrap.ensure(table, txn.timeline, options, plan.ordering_type, engine.slice_reader())
    timings["plan"] = time.monotonic() - t1

    t2 = time.monotonic()
    with phase("writing the file groups"):
        result = engine.run(plan, prepared)
    timings["write"] = time.monotonic() - t2
    crash_point("after_data_write")

    t3 = time.monotonic()
    extra = {**engine.commit_metadata(), **(extra_metadata or {})}
    done = complete_transaction(
        txn, list(result.stats), extra, extra_files=result.segments, planned_sizes=plan.planned_sizes(),
        lease_check=lock.check if lock is not None else None,
        after_commit=[lambda published: index_bootstrap.advance(table, options, published.timestamp, txn.timeline)])
    timings["commit"] = time.monotonic() - t3
    crash_point("after_commit")
    return CommitResult(
        instant=done.timestamp,
        rows_in=result.counts.get("rows_in", 0),
        quarantined=result.counts.get("quarantined", 0),
        counts=result.counts,
        files=len(result.stats),
        rolled_back=txn.rolled_back,
        durations=timings,
        stats=tuple(result.stats),
    )


# -- in-process engine ----------------------------------------------------------------------------


def first_error(errors: pa.Table) -> str:
    row = errors.slice(0, 1).to_pylist()[0]
    reason = row.pop(rec.ERROR)
    where = {k: row[k] for k in ("_kafka_topic", "_kafka_partition", "_kafka_offset") if k in row}
    return f"bad record {where or row}: {reason}"


@dataclass
class LocalEngine:
    """Runs every task in this process (tests, small tables, tools)."""

    on_error: str = "fail"                       # "fail" | "quarantine"
    quarantine: Callable[[pa.Table], None] | None = None
    task: TaskIdentity = TaskIdentity()

    def schema(self, data: pa.Table) -> pa.Schema:
        return data.schema

    def prepare(self, data: pa.Table, options: WriteOptions, ordering_field: str | None) -> rec.Prepared:
        prepared = rec.prepare(data, options.keygen, ordering_field=ordering_field,
                               delete_flag_column=options.delete_flag_column,
                               all_deletes=options.operation is Operation.DELETE)
        bad = prepared.errors.num_rows
        if bad:
            if self.on_error == "quarantine" and self.quarantine is not None:
                self.quarantine(prepared.errors)
            else:
                raise BadRecordError(f"{bad} record(s) cannot be written; first: {first_error(prepared.errors)}")
        return prepared

    def run(self, plan: WritePlan, prepared: rec.Prepared) -> tasks.TaskResult:
        records = tasks.conform(plan, prepared.records)
        routed = tasks.route(plan, records)
        admitted = {"rows_in": prepared.records.num_rows + prepared.errors.num_rows,
                    "quarantined": prepared.errors.num_rows}
        if plan.index_type is IndexType.BUCKET:
            return tasks.TaskResult.merge([tasks.bucket_task(plan, routed, self.task),
                                           tasks.TaskResult(counts=admitted)])
        tagged, counts = tasks.tag(plan, routed, tasks.tagged_schema(routed.schema, plan))
        written = tasks.write_groups(plan, tasks.place_in_task(plan, tagged), self.task)
        return tasks.TaskResult(written.stats, written.segments, {**counts, **admitted})

    def slice_reader(self):
        return None

    def commit_metadata(self) -> dict[str, str]:
        return {}


class LocalWriter:
    """Write Arrow tables into a table from one process, taking the writer lease for each commit."""

    def __init__(self, options: WriteOptions, engine: LocalEngine | None = None):
        self.options = options
        self.engine = engine or LocalEngine()
        self.listings = ListingSync()

    def write(self, data: pa.Table, batch: BatchId | None = None,
              extra_metadata: Mapping[str, str] | None = None) -> CommitResult:
        with for_writer(self.options) as lock:
            return write_batch(self.engine, self.options, data, batch=batch,
                               extra_metadata=extra_metadata, lock=lock, listings=self.listings)


__all__ = ["CommitResult", "Engine", "LocalEngine", "LocalWriter", "write_batch", "Transaction"]
