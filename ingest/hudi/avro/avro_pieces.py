"""Per-row Avro byte strings of a column, as numpy arrays: the pieces `avro_encoder` builds records of.

Not a Hudi class: fastavro's `schemaless_writer` is the rule (Avro's binary encoding, as Java's
`BinaryEncoder` writes it: zigzag varints for int and long, union branch indexes, block counts).

* `_Small`: at most 16 bytes per row (branch indexes, varints, numbers, short decimals), held as two
  little-endian uint64 words plus a length, so adjacent small pieces merge with shifts instead of
  byte copies;
* `_Chunk`: bytes already in an Arrow buffer (strings, binary, encoded array items), addressed by
  offsets, with an optional validity mask (an invalid row contributes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

_U64 = np.uint64
# Bytes an Arrow binary_view keeps inline; small pieces up to this width become Arrow arrays
# through one C++ cast instead of a numpy compaction.
_INLINE = 12

# -- pieces -------------------------------------------------------------------------------------


@dataclass
class _Small:
    """Per-row byte strings of at most 16 bytes: bytes 0-7 in `lo`, 8-15 in `hi` (little-endian).

    Bytes past a row's length are zero, so pieces concatenate with shifts and ors.
    """

    lo: np.ndarray
    hi: np.ndarray | None
    length: np.ndarray | int  # per row (small unsigned ints), or one length for every row
    width: int  # the largest length


@dataclass
class _Chunk:
    """Per-row byte strings in an Arrow buffer: row i is `data[offsets[i]:offsets[i + 1]]`."""

    offsets: np.ndarray  # int32 or int64, n + 1
    data: pa.Buffer
    valid: np.ndarray | None = None  # rows where False contribute no bytes
    size: int | None = None  # every row's length, when the producer knows all rows are that long


_Piece = _Small | _Chunk


def _fixed_size(p: _Piece) -> int | None:
    """The length every row of the piece has, if they all have the same."""
    if isinstance(p, _Small):
        return p.length if isinstance(p.length, int) else None
    return p.size if p.valid is None else None


def _const_small(n: int, value: bytes) -> _Small:
    lo = np.full(n, int.from_bytes(value[:8], "little"), dtype=_U64)
    hi = np.full(n, int.from_bytes(value[8:16], "little"), dtype=_U64) if len(value) > 8 else None
    return _Small(lo, hi, len(value), len(value))


def _shift_left(lo: np.ndarray, hi: np.ndarray | None, bits: np.ndarray | int, wide: bool):
    """(lo, hi) << bits as 128-bit values; numpy shifts by >= 64 give 0, which the formulas use."""
    if isinstance(bits, int):
        if bits == 0:
            return lo, hi
        if bits < 64:
            new_lo = lo << _U64(bits)
            if not wide:
                return new_lo, None
            new_hi = lo >> _U64(64 - bits)
            if hi is not None:
                new_hi |= hi << _U64(bits)
            return new_lo, new_hi
        return np.zeros_like(lo), (lo << _U64(bits - 64)) if wide else None
    new_lo = lo << bits
    if not wide:
        return new_lo, None
    new_hi = (lo >> (_U64(64) - bits)) | (lo << (bits - _U64(64)))
    if hi is not None:
        new_hi |= hi << bits
    return new_lo, new_hi


def _concat_small(a: _Small, b: _Small) -> _Small:
    width = a.width + b.width
    wide = width > 8
    bits = 8 * a.length if isinstance(a.length, int) else a.length.astype(_U64) * _U64(8)
    lo, hi = _shift_left(b.lo, b.hi, bits, wide)
    lo = a.lo | lo
    if wide:
        if hi is None:
            hi = np.zeros_like(lo)
        if a.hi is not None:
            hi = a.hi | hi
    return _Small(lo, hi, a.length + b.length, width)


def _mask_small(s: _Small, valid: np.ndarray) -> _Small:
    """Rows where `valid` is False become empty."""
    length = np.where(valid, s.length, 0)
    lo = np.where(valid, s.lo, _U64(0))
    hi = None if s.hi is None else np.where(valid, s.hi, _U64(0))
    return _Small(lo, hi, length, s.width)


def _mask_pieces(pieces: list[_Piece], valid: np.ndarray) -> list[_Piece]:
    out: list[_Piece] = []
    for p in pieces:
        if isinstance(p, _Small):
            out.append(_mask_small(p, valid))
        else:
            out.append(_Chunk(p.offsets, p.data, valid if p.valid is None else (p.valid & valid), p.size))
    return out


def _with_branch(pieces: list[_Piece], valid: np.ndarray, value_byte: int, null_byte: int) -> list[_Piece]:
    """A nullable union's pieces: the branch byte, then the value's pieces where `valid`."""
    first = pieces[0] if pieces else None
    if not isinstance(first, _Small) or first.width >= 16:
        branch = np.where(valid, _U64(value_byte), _U64(null_byte))
        return [_Small(branch, None, 1, 1), *_mask_pieces(pieces, valid)]
    merged = _concat_small(_Small(_U64(value_byte), None, 1, 1), first)
    lo = np.where(valid, merged.lo, _U64(null_byte))
    hi = None if merged.hi is None else np.where(valid, merged.hi, _U64(0))
    length = np.where(valid, merged.length, np.uint8(1))
    return [_Small(lo, hi, length, merged.width), *_mask_pieces(pieces[1:], valid)]


def _coalesce(pieces: list[_Piece]) -> list[_Piece]:
    """Merge neighbouring small pieces while they stay cheap to turn into Arrow arrays."""
    out: list[_Piece] = []
    for p in pieces:
        prev = out[-1] if out else None
        if isinstance(p, _Small) and isinstance(prev, _Small):
            fixed = isinstance(prev.length, int) and isinstance(p.length, int)
            if prev.width + p.width <= (16 if fixed else _INLINE):
                out[-1] = _concat_small(prev, p)
                continue
        out.append(p)
    return out


# -- numbers ------------------------------------------------------------------------------------


def _bit_length(z: np.ndarray) -> np.ndarray:
    """Bit length of uint64 values (float exponent, corrected where rounding went up)."""
    e = np.frexp(z.astype(np.float64))[1].astype(np.int64)
    shift = np.maximum(e - 1, 0).astype(_U64)
    e -= (z >> shift) == 0
    return np.maximum(e, 0)


def _varint_len(value: int) -> int:
    return max(1, (int(value).bit_length() + 6) // 7)


# 0x80 in byte j for every j below k - 1: the continuation bits of a k-byte varint's first 8 bytes.
_CONTINUATION = np.array(
    [sum(0x80 << (8 * j) for j in range(min(k - 1, 8))) for k in range(11)], dtype=_U64
)


def _varint(z: np.ndarray) -> _Small:
    """Avro varints of unsigned (already zigzagged) values."""
    z = z.astype(_U64, copy=False)
    if not len(z):
        return _Small(z, None, 1, 1)
    widest = _varint_len(z.max())
    if widest == 1:
        return _Small(z, None, 1, 1)
    narrowest = _varint_len(z.min())
    length: np.ndarray | int
    if narrowest == widest:
        length = widest
    else:
        length = np.full(len(z), narrowest, dtype=np.uint8)
        for k in range(narrowest, widest):
            length += z >= _U64(1 << (7 * k))
    # Spread 7-bit groups into byte lanes: 28-bit halves, then 14-bit quarters, then 7-bit eighths.
    x = z & _U64((1 << 56) - 1) if widest > 8 else z.copy()
    for keep, move, bits, needed in (
        (0x000000000FFFFFFF, 0x00FFFFFFF0000000, 4, 4),
        (0x00003FFF00003FFF, 0x0FFFC0000FFFC000, 2, 2),
        (0x007F007F007F007F, 0x3F803F803F803F80, 1, 1),
    ):
        if widest > needed:
            t = x & _U64(move)
            x &= _U64(keep)
            t <<= _U64(bits)
            x |= t
    x |= _CONTINUATION[length] if isinstance(length, np.ndarray) else _CONTINUATION[length]
    hi = None
    if widest > 8:
        top = z >> _U64(56)
        hi = (top & _U64(0x7F)) | ((top >> _U64(7)) << _U64(8))
        hi |= np.where(np.asarray(length) == 10, _U64(0x80), _U64(0))
    return _Small(x, hi, length, widest)


def _unsigned_varint(v: np.ndarray) -> _Small:
    """Varints of non-negative values (lengths, counts): zigzag is a doubling."""
    return _varint(v.astype(_U64) << _U64(1))


def _zigzag(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.int64, copy=False)
    return ((v << 1) ^ (v >> 63)).view(_U64)


def _long(v: np.ndarray) -> _Small:
    return _varint(_zigzag(v))


def _count_prefix(counts: np.ndarray) -> _Small:
    """Block count of an array or map: the varint count, omitted when the block list is empty."""
    s = _unsigned_varint(counts)
    if (counts == 0).any():
        s = _mask_small(s, counts != 0)
    return s
