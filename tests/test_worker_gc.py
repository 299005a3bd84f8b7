"""A write task's Python worker freezes its objects for the garbage collector after its first task
(`ingest.spark.worker_gc`). PySpark's daemon runs a full `gc.collect()` after every task of a reused
worker (`pyspark/daemon.py`, `manager`); unfrozen, each examined every object the worker holds.

No Hudi rule applies: this is ingest's own use of the executors' CPU.
"""

from __future__ import annotations

import pyarrow as pa

from ingest.spark.worker_gc import frozen_after

SCHEMA = "pid long, frozen long, collected long, rows long"


def _state(reset: bool):
    """A task reporting its worker's pid and frozen objects, and what a collection found of a
    reference cycle it left; with `reset`, the worker starts unfrozen."""

    def run(batches):
        import gc
        import os

        if reset:
            gc.unfreeze()
        rows = sum(b.num_rows for b in batches)
        frozen = gc.get_freeze_count()
        cycle: list = []
        cycle.append(cycle)
        del cycle
        collected = gc.collect()
        yield pa.RecordBatch.from_pydict({"pid": [os.getpid()], "frozen": [frozen], "collected": [collected],
                                          "rows": [rows]})

    return run


def test_a_worker_is_frozen_after_its_first_task_and_still_collects(spark):
    df = spark.range(0, 1000, numPartitions=2)
    first = df.mapInArrow(frozen_after(_state(reset=True)), SCHEMA).collect()
    assert sum(r["rows"] for r in first) == 1000  # the task's own output passes through
    assert all(r["frozen"] == 0 for r in first)
    second = df.mapInArrow(frozen_after(_state(reset=False)), SCHEMA).collect()
    reused = [r for r in second if r["pid"] in {f["pid"] for f in first}]
    assert reused, "Spark reuses Python workers by default; none of the first job's ran the second"
    # The first job's workers froze what they held; a cycle left later is still collected.
    assert all(r["frozen"] > 1000 for r in reused)
    assert all(r["collected"] >= 1 for r in second)
