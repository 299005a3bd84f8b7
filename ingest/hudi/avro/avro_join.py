"""Concatenating pieces row by row into the bytes of records (and AVRO_DATA's framed records).

Not a Hudi class: the result is what fastavro's `schemaless_writer` writes record by record, and, when
framed, each record behind its 4-byte big-endian length as `HoodieAvroDataBlock.serializeRecords` does.

Arrow's `binary_join_element_wise` does the concatenation; it costs about the same per piece and row
whatever a piece's length, so neighbouring pieces whose rows all have one length are first copied
side by side into one matrix (`_fixed_runs`) and joined as one piece.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import BadRecordError
from ingest.hudi.avro.avro_pieces import _INLINE, _U64, _Chunk, _coalesce, _fixed_size, _Piece, _Small

_INT32_MAX = 2**31 - 1
# The join's empty separator, built from buffers: pa.scalar(b"") would import pandas on first use
# (pyarrow looks for pandas objects among Python values), a third of a second in a fresh process.
_EMPTY = {
    large: pa.Array.from_buffers(kind, 1, [None, pa.py_buffer(np.zeros(2, dtype=offsets)), pa.py_buffer(b"")])[0]
    for large, kind, offsets in ((False, pa.binary(), np.int32), (True, pa.large_binary(), np.int64))
}
# Where the join puts the records. Arrow's default pool (mimalloc in pyarrow's wheels) took 0 to 120 ms
# more on the first encode of a process (its first growth to the ~40 MB the records of 200,000 rows
# take), glibc's malloc a steady 10 ms or so.
OUTPUT_POOL = pa.system_memory_pool()
# Joins of more bytes than this use 64-bit offsets (large_binary).
_BINARY_LIMIT = _INT32_MAX


def _small_to_chunk(s: _Small, n: int) -> _Chunk:
    """A small piece of varying length as an Arrow-addressable chunk (fixed lengths go to `_fixed_run`)."""
    if s.width <= _INLINE:
        # An inline binary_view is a 4-byte length then up to 12 data bytes; Arrow's cast to
        # binary then does the compaction in C++.
        views = np.empty((n, 4), dtype=np.uint32)
        views[:, 0] = s.length
        views[:, 1:3] = s.lo.view(np.uint32).reshape(n, 2)
        views[:, 3] = 0 if s.hi is None else s.hi.view(np.uint32).reshape(n, 2)[:, 0]
        arr = pa.Array.from_buffers(pa.binary_view(), n, [None, pa.py_buffer(views)]).cast(pa.binary())
        return _Chunk(np.frombuffer(arr.buffers()[1], np.int32, n + 1), arr.buffers()[2])
    words = np.stack([s.lo, s.hi if s.hi is not None else np.zeros_like(s.lo)], axis=1)
    matrix = words.view(np.uint8).reshape(n, 16)
    lengths = s.length
    data = matrix[np.arange(16, dtype=np.int64)[None, :] < lengths[:, None]]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return _Chunk(offsets, pa.py_buffer(data))


def _parts(size: int) -> list[tuple[int, type]]:
    """(offset, unsigned type) covering `size` bytes with as few numpy items as possible."""
    parts = []
    at = 0
    for dtype in (np.uint64, np.uint32, np.uint16, np.uint8):
        step = np.dtype(dtype).itemsize
        while size - at >= step:
            parts.append((at, dtype))
            at += step
    return parts


def _fixed_run(run: list[_Piece], n: int) -> _Chunk:
    """Neighbouring pieces whose rows all have one length, as one chunk of fixed-size rows.

    Arrow's join costs about the same per piece and row whatever the piece's length, so copying the
    pieces side by side into one row-major matrix first leaves it one piece where there were many.
    Each piece is copied as columns of 8, 4, 2 and 1-byte numbers. Pieces are written left to right,
    and a small piece's word is written whole where it stays in its row: the bytes past the piece
    are overwritten by the pieces after it.
    """
    sizes = [_fixed_size(p) or 0 for p in run]
    width = sum(sizes)
    matrix = np.empty((n, width), dtype=np.uint8)

    def column(at: int, dtype: type) -> np.ndarray:
        return np.ndarray((n,), dtype, matrix, at, (width,))

    at = 0
    for p, size in zip(run, sizes, strict=True):
        if isinstance(p, _Small):
            for word, start in ((p.lo, 0), (p.hi, 8)):
                if word is None or size <= start:
                    continue
                if at + start + 8 <= width:
                    column(at + start, _U64)[:] = word
                    continue
                for offset, dtype in _parts(min(size - start, 8)):
                    column(at + start + offset, dtype)[:] = word >> _U64(8 * offset) if offset else word
        else:
            first = int(p.offsets[0])
            for offset, dtype in _parts(size):
                column(at + offset, dtype)[:] = np.ndarray((n,), dtype, p.data, first + offset, (size,))
        at += size
    return _Chunk(np.arange(n + 1, dtype=np.int64) * width, pa.py_buffer(matrix), size=width)


def _fixed_runs(pieces: list[_Piece], n: int) -> list[_Piece]:
    """Every fixed-size small piece, and every run of two or more fixed-size pieces, as one chunk."""
    out: list[_Piece] = []
    run: list[_Piece] = []
    for p in [*pieces, None]:
        if p is not None and _fixed_size(p) is not None:
            run.append(p)
            continue
        if len(run) > 1 or (run and isinstance(run[0], _Small)):
            out.append(_fixed_run(run, n))
        else:
            out.extend(run)
        run = []
        if p is not None:
            out.append(p)
    return out


def _piece_nbytes(p: _Piece) -> int:
    if isinstance(p, _Small):
        return p.length * len(p.lo) if isinstance(p.length, int) else int(p.length.sum())
    return int(p.offsets[-1]) - int(p.offsets[0]) if len(p.offsets) else 0


def _chunk_array(c: _Chunk, n: int, large: bool) -> pa.Array:
    offsets, data = c.offsets, c.data
    if large:
        offsets = offsets.astype(np.int64, copy=False)
    elif offsets.dtype != np.int32:
        base = int(offsets[0])
        if base:
            offsets = offsets - base
            data = data.slice(base)
        offsets = offsets.astype(np.int32)
    validity = None if c.valid is None else pa.py_buffer(np.packbits(c.valid, bitorder="little"))
    kind = pa.large_binary() if large else pa.binary()
    return pa.Array.from_buffers(kind, n, [validity, pa.py_buffer(offsets), data])


def _row_lengths(pieces: list[_Piece], n: int) -> np.ndarray:
    lengths = np.zeros(n, dtype=np.int64)
    for p in pieces:
        if isinstance(p, _Small):
            lengths += p.length
        else:
            piece = np.diff(p.offsets)
            lengths += piece if p.valid is None else piece * p.valid
    return lengths


def _length_prefix(lengths: np.ndarray) -> _Small:
    """4-byte big-endian lengths, as AVRO_DATA content puts before each record."""
    if len(lengths) and int(lengths.max()) > _INT32_MAX:
        raise BadRecordError("an encoded record exceeds 2 GiB")
    return _Small(lengths.astype(">u4").view(np.uint32).astype(_U64), None, 4, 4)


def _join(pieces: list[_Piece], n: int, *, framed: bool = False) -> tuple[np.ndarray, pa.Buffer]:
    """Concatenate the pieces row by row: (int64 offsets, data).

    With `framed`, each row is preceded by its length as AVRO_DATA frames records.
    """
    pieces = _coalesce(pieces)
    if framed:
        pieces = _coalesce([_length_prefix(_row_lengths(pieces, n)), *pieces])
    if not pieces or n == 0:
        return np.zeros(n + 1, dtype=np.int64), pa.py_buffer(b"")
    total = sum(_piece_nbytes(p) for p in pieces)
    large = total > _BINARY_LIMIT
    chunks = [_small_to_chunk(p, n) if isinstance(p, _Small) else p for p in _fixed_runs(pieces, n)]
    if len(chunks) == 1 and chunks[0].valid is None and int(chunks[0].offsets[0]) == 0:
        only = chunks[0]
        return only.offsets.astype(np.int64, copy=False), only.data
    arrays = [_chunk_array(c, n, large) for c in chunks]
    separator = _EMPTY[large]
    joined = pc.binary_join_element_wise(
        *arrays, separator, null_handling="replace", null_replacement=b"", memory_pool=OUTPUT_POOL
    )
    offsets = np.frombuffer(joined.buffers()[1], np.int64 if large else np.int32, n + 1)
    return offsets.astype(np.int64), joined.buffers()[2]
