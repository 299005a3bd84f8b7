"""The cyclic garbage collector of the Python worker a write task runs in.

PySpark's daemon runs `gc.collect()` after every task of a reused worker (`pyspark/daemon.py`,
`manager`). A full collection examines every object the worker holds: once pyarrow, numpy, pyspark
and ingest are imported, about 90,000 of them (modules' functions, classes, dicts), which took
33-70 ms of CPU after each write task on the 2-core VM: CPU an executor's other tasks could use.

After a worker's first task, the objects it holds are frozen (`gc.freeze`): later collections skip
them and still collect everything that later tasks leave behind. Frozen objects are still freed when
their last reference goes; only those left in unreachable reference cycles stay (the first task's
own, once per worker).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass


def frozen_after(fn: Callable[[Iterator], Iterator]) -> Callable[[Iterator], Iterator]:
    """The task function `fn` (for `mapInArrow`), freezing its worker's objects after its first task."""
    return _FrozenAfter(fn)


@dataclass(frozen=True)
class _FrozenAfter:
    """A class, not a closure: it pickles by reference (`ingest.spark.task_functions`)."""

    fn: Callable[[Iterator], Iterator]

    def __call__(self, batches: Iterator) -> Iterator:
        yield from self.fn(batches)
        # The state lives in the interpreter, not here: this object is pickled anew with every task.
        if not gc.get_freeze_count():
            gc.freeze()
