"""Peak memory of this process while a block runs: the driver's, or a Python worker's while it
runs a write task.

Two figures, sampled every 50 ms by a thread:

* resident memory (`/proc/self/statm`): what the OS gives the process. A Python worker is reused
  across tasks and batches and, started with ingest's allocator settings, keeps the memory it
  freed, so its resident peak while a task runs is at least what any earlier task of it needed;
  `getrusage`'s `ru_maxrss` is the same since the process started.
* bytes in use: Arrow's memory pool (`pyarrow.total_allocated_bytes`) plus what glibc's malloc
  has handed out and not taken back (`mallinfo2`: numpy's arrays, Python's large objects). This is
  the task's own need, whatever the worker kept from before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext

INTERVAL_S = 0.05  # a write task holds its peak for far longer; a sample takes the GIL from the task
TASK_PEAK_RSS = "_task_peak_rss"  # accumulator keys: per task, its worker's peaks while it ran
TASK_PEAK_IN_USE = "_task_peak_in_use"


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mallinfo2():
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallinfo2
    except (OSError, AttributeError):  # not glibc, or glibc before 2.33
        return None
    fn.restype = _MallInfo2
    return fn


_MALLINFO2 = _mallinfo2()


def current_rss() -> int:
    """Resident bytes of this process now (0 without `/proc`)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def current_in_use() -> int:
    """Bytes allocated and not freed now: Arrow's pool, plus malloc's where glibc says."""
    used = pa.total_allocated_bytes()
    if _MALLINFO2 is not None:
        info = _MALLINFO2()
        used += info.uordblks + info.hblkhd
    return used


class PeakMemory:
    """`with PeakMemory() as m: ...`, then `m.peak` (resident bytes), `m.growth` (over the start) and
    `m.peak_in_use` (bytes in use)."""

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.base = self.peak = self.peak_in_use = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        self.peak = max(self.peak, current_rss())
        self.peak_in_use = max(self.peak_in_use, current_in_use())

    def __enter__(self) -> PeakMemory:
        self.base = current_rss()
        self._sample()

        def run() -> None:
            while not self._stop.wait(self.interval_s):
                self._sample()

        self._thread = threading.Thread(target=run, name="peak-memory", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()

    @property
    def growth(self) -> int:
        return self.peak - self.base


def measured(fn: Callable[[Iterator], Iterator], counters) -> Callable[[Iterator], Iterator]:
    """The task function `fn` (for `mapInArrow`), adding its Python worker's peaks while it ran to
    the accumulator `counters` as `{TASK_PEAK_RSS: {"<stage>:<partition>": bytes}}` and the same
    under `TASK_PEAK_IN_USE` (an accumulator keeping the largest value per inner key, as the sink's)."""
    return _Measured(fn, counters)


@dataclass(frozen=True)
class _Measured:
    """A class, not a closure: it pickles by reference (`ingest.spark.task_functions`)."""

    fn: Callable[[Iterator], Iterator]
    counters: Any

    def __call__(self, batches: Iterator) -> Iterator:
        with PeakMemory() as memory:
            yield from self.fn(batches)
        ctx = TaskContext.get()
        task = f"{ctx.stageId()}:{ctx.partitionId()}" if ctx is not None else "0:0"
        self.counters.add({TASK_PEAK_RSS: {task: memory.peak}, TASK_PEAK_IN_USE: {task: memory.peak_in_use}})
