"""Whole parquet files held in memory (quarantine files, key-state segments, PARQUET_DATA blocks).

`pq.read_table` pre-buffers on Arrow's I/O thread pool, and those threads may release the Python
object that owns the bytes after the call has returned. If that happens while the interpreter is
exiting, CPython before 3.14 ends the thread with `pthread_exit`, whose unwinding through Arrow's
C++ aborts the process ("terminate called without an active exception"): a command that read
one of these files just before exiting then fails at random. Reading synchronously on the calling
thread leaves nothing behind; these files are small, so nothing is lost.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq


def read_table(data: bytes) -> pa.Table:
    """The rows of a parquet file given as bytes, read on this thread only."""
    return pq.read_table(pa.BufferReader(data), use_threads=False, pre_buffer=False)
