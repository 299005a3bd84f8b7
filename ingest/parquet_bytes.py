"""Whole parquet files held in memory (quarantine files, key-state segments, PARQUET_DATA blocks).

Arrow may release a buffer on one of its own threads after a read has returned. If that buffer
is owned by a Python object, the release needs the GIL; while the interpreter is exiting,
CPython before 3.14 ends such a thread with `pthread_exit`, whose unwinding through Arrow's C++
aborts the process ("terminate called without an active exception"). So the bytes are first
copied into Arrow-owned memory (no Python owner left to release), and read through the file
reader directly, on the calling thread, without the dataset layer's asynchronous I/O. These
files are small; the copy costs well under a millisecond per megabyte.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq


def read_table(data: bytes, dictionary_columns: Sequence[str] = (), columns: Sequence[str] | None = None) -> pa.Table:
    """The rows of a parquet file given as bytes, read on this thread only; `dictionary_columns`
    (those the file has) come dictionary-encoded; `columns` picks columns by name."""
    owned = pa.BufferOutputStream()
    owned.write(data)
    source = owned.getvalue()
    file = pq.ParquetFile(pa.BufferReader(source))
    present = [c for c in dictionary_columns if c in file.schema_arrow.names]
    if present:
        file = pq.ParquetFile(pa.BufferReader(source), metadata=file.metadata, read_dictionary=present)
    return file.read(columns=columns, use_threads=False)
