"""What a write job's tasks do with Spark's Arrow batches in the executors: take a task's rows as one
table, hand rows on between the job's two stages as packed Arrow IPC values, and hand each task's
result back to the driver as one JSON value."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.types import StructType

from ingest.spark import routing
from ingest.write import tasks
from ingest.write.file_group_writer import TaskIdentity


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
