"""What a write job's tasks run in the executors, and how they take and hand on Spark's Arrow batches.

The task functions given to `mapInArrow` are instances of this module's classes, not closures:
cloudpickle sends a nested function by value, its code and, for each module it names, a walk of
`sys.modules` (about 20 ms of a batch's commit on the driver), while an instance of an importable class
goes as a reference to its class and its fields as data. A task takes its rows as one table, hands rows
on between the job's two stages as packed Arrow IPC values, and its result back to the driver as one
JSON value.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.types import StructType

from ingest.errors import BadRecordError
from ingest.spark import routing
from ingest.spark.peak_memory import measured
from ingest.spark.worker_gc import frozen_after
from ingest.storage import Storage
from ingest.write import quarantine, tasks
from ingest.write import records as rec
from ingest.write.batch import first_error
from ingest.write.file_group_writer import TaskIdentity
from ingest.write.options import Operation, WriteOptions
from ingest.write.plan import WritePlan

KAFKA_OFFSET = "_kafka_offset"
INPUT_BYTES = "_input_bytes"  # Arrow bytes the write tasks received, for sizing the next batch's Arrow batches


def task_identity() -> TaskIdentity:
    ctx = TaskContext.get()
    if ctx is None:
        return TaskIdentity()
    return TaskIdentity(ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId())


def task_table(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """A task's rows as one contiguous table. The write reads them contiguous (a take from Spark's
    many batches costs several times one from one chunk); combined here, Spark's batches are freed
    before the work starts instead of staying beside the copy for the whole task."""
    batches = list(batches)
    if not batches:
        return None
    return pa.Table.from_batches(batches).combine_chunks()


def result_batch(result: tasks.TaskResult) -> pa.RecordBatch:
    payload = json.dumps({
        # Every field, `prevBaseFile` too (`to_json` is the commit file's JSON, which has none).
        "stats": [{**s.to_json(), "prevBaseFile": s.prev_base_file} for s in result.stats],
        "segments": list(result.segments),
        "counts": dict(result.counts),
    })
    return pa.RecordBatch.from_pydict({"result": pa.array([payload], pa.string())})


PACKED = "_ingest_packed"
PACKED_SCHEMA = StructType.fromJson({"type": "struct", "fields": [
    {"name": routing.SLOT, "type": "integer", "nullable": False, "metadata": {}},
    {"name": PACKED, "type": "binary", "nullable": False, "metadata": {}},
]})
PACKED_BYTES = 64 << 20  # Arrow bytes per packed value, far under Spark's 2 GB per value


def packed(table: pa.Table, slots: pa.Array) -> Iterator[pa.RecordBatch]:
    """`table`'s rows as Arrow IPC streams, a few values per slot: Spark shuffles them by slot as
    opaque bytes, neither converting the rows into its own nor back into Arrow for the next task."""
    for slot in pc.unique(slots).to_pylist():
        rows = table.filter(pc.equal(slots, slot))
        step = max(1, PACKED_BYTES * rows.num_rows // max(1, rows.nbytes))
        for start in range(0, rows.num_rows, step):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, rows.schema) as stream:
                stream.write_table(rows.slice(start, step))
            data = sink.getvalue()  # one binary value over the stream's buffer, not a copy of it
            offsets = pa.py_buffer(np.array([0, data.size], dtype=np.int32).tobytes())
            yield pa.RecordBatch.from_arrays(
                [pa.array([slot], pa.int32()), pa.Array.from_buffers(pa.binary(), 1, [None, offsets, data])],
                names=[routing.SLOT, PACKED])


def unpacked(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """The rows `packed` wrote, from the values a task gets, as one contiguous table (as `task_table`:
    the values' buffers are freed before the work starts)."""
    tables = [pa.ipc.open_stream(value.as_buffer()).read_all()
              for batch in batches for value in batch.column(PACKED)]
    return pa.concat_tables(tables).combine_chunks() if tables else None


# -- the task functions ---------------------------------------------------------------------------


def on_executor(fn, counters):
    """A task function for `mapInArrow`: its worker's peak memory measured, and its worker's objects
    frozen for the garbage collector after its first task (`ingest.spark.worker_gc`)."""
    return measured(frozen_after(fn), counters)


@dataclass(frozen=True)
class Prepare:
    """Prepare a task's rows (keys, deletes, conformed types); quarantine or fail on bad ones."""

    plan: WritePlan
    options: WriteOptions
    ordering_field: str | None
    on_error: str
    quarantine: Storage | None
    batch_label: str
    tasks_count: int
    counters: Any  # the sink's accumulator

    def __call__(self, table: pa.Table, task: TaskIdentity) -> pa.Table:
        table = routing.unpacked(table)
        options = self.options
        done = rec.prepare(table, options.keygen, ordering_field=self.ordering_field,
                           delete_flag_column=options.delete_flag_column,
                           all_deletes=options.operation is Operation.DELETE)
        routed = tasks.route(self.plan, tasks.conform(self.plan, done.records))
        routing.check_task(routed, self.tasks_count, task.partition_id)
        seen: dict[str, Any] = {"rows_in": table.num_rows, "quarantined": done.errors.num_rows,
                                INPUT_BYTES: table.nbytes}
        if KAFKA_OFFSET in table.column_names and "_kafka_topic" in table.column_names:
            offsets = pa.table({"k": pc.binary_join_element_wise(
                table.column("_kafka_topic"), table.column("_kafka_partition").cast(pa.string()), ":"),
                "o": table.column(KAFKA_OFFSET)}).group_by("k").aggregate([("o", "max")])
            seen["_kafka_offsets"] = dict(zip(offsets.column("k").to_pylist(),
                                              offsets.column("o_max").to_pylist(), strict=True))
        if done.errors.num_rows:
            if self.on_error == "fail":
                raise BadRecordError(f"{done.errors.num_rows} record(s) cannot be written; first: "
                                     f"{first_error(done.errors)}")
            quarantine.write(self.quarantine, done.errors, self.batch_label, f"{task.partition_id:05d}")
        self.counters.add(seen)
        return routed


@dataclass(frozen=True)
class BucketWrite:
    """Bucket index: the whole write of the buckets routed to a task."""

    plan: WritePlan
    prepare: Prepare

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = task_table(batches)
        if table is None:
            return
        task = task_identity()
        yield result_batch(tasks.bucket_task(self.plan, self.prepare(table, task), task))


@dataclass(frozen=True)
class Place:
    """Key index: tag a shard task's keys, place the new ones and write the shards' state."""

    plan: WritePlan
    prepare: Prepare
    tagged_schema: pa.Schema
    tasks_count: int

    def __call__(self, table: pa.Table, task: TaskIdentity) -> pa.Table:
        tagged, counts = tasks.tag(self.plan, self.prepare(table, task), self.tagged_schema)
        self.prepare.counters.add(counts)
        return tasks.place_in_task(self.plan, tagged, self.tasks_count, task.partition_id)


@dataclass(frozen=True)
class PlaceAndWrite:
    """Key index with one task: place, then write every file group, in the same task."""

    place: Place

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = task_table(batches)
        if table is not None:
            task = task_identity()
            yield result_batch(tasks.write_groups(self.place.plan, self.place(table, task), task))


@dataclass(frozen=True)
class PlaceAndHandOn:
    """Key index, first stage: place, then hand each file group's rows on to the task that writes it."""

    place: Place
    write_task: functools.partial  # (partition, file id) -> writing task
    slot_keys: tuple[int, ...]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = task_table(batches)
        if table is not None:
            rows = self.place(table, task_identity())
            yield from packed(rows, routing.group_slots(rows, self.write_task, self.slot_keys))


@dataclass(frozen=True)
class WriteGroups:
    """Key index, second stage: write the file groups whose rows were handed to this task."""

    plan: WritePlan

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = unpacked(batches)
        if table is not None:
            yield result_batch(tasks.write_groups(self.plan, table, task_identity()))
