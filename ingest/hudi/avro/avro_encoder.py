"""Avro binary encoding of whole Arrow record batches, column at a time.

Encoding record by record with fastavro is the main cost of ingestion, so this module encodes each
column with numpy (varints, IEEE bytes, decimals, union branches) and lets one Arrow kernel,
`binary_join_element_wise`, concatenate the per-row pieces of all columns. The bytes of record i are
exactly what `fastavro.schemaless_writer` writes for row i of `batch.to_pylist(maps_as_pydicts=
"lossy")`; tests hold the two to the same bytes.

Pieces of a record (`avro_pieces`; `avro_join` concatenates them) are of two kinds:

* `_Small`: at most 16 bytes per row (branch indexes, varints, numbers, short decimals), held as two
  little-endian uint64 words plus a length, so adjacent small pieces merge with shifts instead of
  byte copies;
* `_Chunk`: bytes already in an Arrow buffer (strings, binary, encoded array items), addressed by
  offsets, with an optional validity mask (an invalid row contributes nothing).

Shapes the vectorized path does not cover (unions of several non-null types, duplicate map keys,
non-null defaults of missing fields, uncommon Arrow/Avro type pairs) fall back to fastavro for the
whole batch, so `encode_batch` always returns fastavro's bytes. Data fastavro would reject (nulls in
non-nullable fields, enum values outside the symbols, ints out of range, decimals that do not fit)
raises `BadRecordError` naming the field and record.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from fastavro.write import LOGICAL_WRITERS

from ingest.errors import BadRecordError, SchemaEvolutionError
from ingest.hudi.avro.avro_join import OUTPUT_POOL, _join, _length_prefix
from ingest.hudi.avro.avro_pieces import (
    _U64,
    _bit_length,
    _Chunk,
    _const_small,
    _count_prefix,
    _long,
    _Piece,
    _Small,
    _unsigned_varint,
    _with_branch,
)

__all__ = ["EncodedRecords", "encode_batch", "avro_data_block_content", "AVRO_DATA_BLOCK_VERSION"]

AVRO_DATA_BLOCK_VERSION = 3
# Rows encoded at a time: numpy's intermediates stay in cache and their memory stays bounded.
ROWS_PER_SLICE = 16_384


class EncodedRecords:
    """Avro-encoded records back to back: record i is `data[offsets[i]:offsets[i + 1]]`.

    The encoder keeps its output as framed slices (each record behind its 4-byte big-endian
    length, as AVRO_DATA content wants them), so `avro_data_block_content` only prepends the
    header; `data` is assembled from them the first time it is asked for.
    """

    __slots__ = ("offsets", "_data", "_framed")

    def __init__(self, offsets: np.ndarray, data: pa.Buffer | None = None, framed: tuple[pa.Buffer, ...] | None = None):
        if data is None and framed is None:
            raise ValueError("EncodedRecords needs data or framed slices")
        self.offsets = offsets  # int64, len(records) + 1, offsets[0] == 0
        self._data = data
        self._framed = framed

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def data(self) -> pa.Buffer:
        if self._data is None:
            self._data = _unframe(self._framed or (), self.offsets)
        return self._data

    @property
    def nbytes(self) -> int:
        return int(self.offsets[-1])

    def record(self, i: int) -> bytes:
        return self.data[int(self.offsets[i]) : int(self.offsets[i + 1])].to_pybytes()

    def framed(self) -> tuple[pa.Buffer, ...]:
        """The records as length-prefixed slices, in order (AVRO_DATA content without its header)."""
        if self._framed is None:
            self._framed = _frame(self.data, self.offsets)
        return self._framed


class _Unsupported(Exception):
    """The vectorized path does not cover this batch; fastavro encodes it instead."""


# -- Arrow access -------------------------------------------------------------------------------


def _bits(buf: pa.Buffer, offset: int, n: int) -> np.ndarray:
    raw = np.frombuffer(buf, np.uint8, count=(offset + n + 7) // 8 - offset // 8, offset=offset // 8)
    start = offset % 8
    return np.unpackbits(raw, bitorder="little")[start : start + n].view(bool)


def _validity(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=bool)
    return _bits(arr.buffers()[0], arr.offset, len(arr))


def _values(arr: pa.Array, dtype: Any) -> np.ndarray:
    dtype = np.dtype(dtype)
    return np.frombuffer(arr.buffers()[1], dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def _offsets(arr: pa.Array) -> np.ndarray:
    """The n + 1 offsets of a (large) string, binary, list or map array, as stored."""
    dtype = np.int64 if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type) or pa.types.is_large_list(arr.type) else np.int32
    return np.frombuffer(arr.buffers()[1], dtype, count=len(arr) + 1, offset=arr.offset * np.dtype(dtype).itemsize)


def _data_buffer(arr: pa.Array) -> pa.Buffer:
    """The values buffer of a string or binary array (some producers leave it out when empty)."""
    buf = arr.buffers()[2]
    return pa.py_buffer(b"") if buf is None else buf


def _and(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _normalize(arr: Any) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks(memory_pool=OUTPUT_POOL) if arr.num_chunks != 1 else arr.chunk(0)
    t = arr.type
    if pa.types.is_dictionary(t):
        return _normalize(arr.dictionary_decode())
    if pa.types.is_string_view(t):
        return arr.cast(pa.large_string())
    if pa.types.is_binary_view(t):
        return arr.cast(pa.large_binary())
    if isinstance(t, pa.ExtensionType):
        raise _Unsupported(f"extension type {t}")
    return arr


# -- schema -------------------------------------------------------------------------------------

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
# Logical types fastavro converts on write that this module mirrors.
_HANDLED_LOGICAL = {
    "long-timestamp-millis",
    "long-timestamp-micros",
    "long-local-timestamp-millis",
    "long-local-timestamp-micros",
    "int-date",
    "bytes-decimal",
    "fixed-decimal",
    "string-uuid",
    "int-time-millis",
    "long-time-micros",
}
_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_UTC_NAMES = {"UTC", "utc", "Etc/UTC", "+00:00", "Z", "GMT", "Etc/GMT"}


def _is_null_type(t: Any) -> bool:
    return t == "null" or (isinstance(t, dict) and t.get("type") == "null")


@dataclass(frozen=True)
class _Ctx:
    """Where a value sits: its field path, and how to find the record of an index (for errors)."""

    path: str
    first_row: int = 0
    lineage: tuple[np.ndarray, ...] = ()  # list offsets from the record down to this value

    def child(self, name: str) -> _Ctx:
        return _Ctx(f"{self.path}.{name}" if self.path else name, self.first_row, self.lineage)

    def items(self, offsets: np.ndarray, suffix: str) -> _Ctx:
        return _Ctx(f"{self.path}{suffix}", self.first_row, (*self.lineage, offsets))

    def record_of(self, index: int) -> int:
        for offsets in reversed(self.lineage):
            index = int(np.searchsorted(offsets, index, side="right")) - 1
        return self.first_row + index

    def fail(self, bad: np.ndarray, problem: str) -> BadRecordError:
        index = int(np.flatnonzero(bad)[0])
        return BadRecordError(f"field {self.path or '<record>'}: {problem} (record {self.record_of(index)})")


def _check(bad: np.ndarray, present: np.ndarray | None, ctx: _Ctx, problem: str) -> None:
    if present is not None:
        bad = bad & present
    if bad.any():
        raise ctx.fail(bad, problem)


class _Encoder:
    def __init__(self, named: dict[str, Any]):
        self.named = named

    def resolve(self, schema: Any) -> Any:
        while isinstance(schema, str) and schema not in _PRIMITIVES:
            if schema not in self.named:
                raise _Unsupported(f"unknown named type {schema}")
            schema = self.named[schema]
        while isinstance(schema, dict) and isinstance(schema.get("type"), str) and schema["type"] not in _PRIMITIVES and schema["type"] in self.named:
            schema = self.named[schema["type"]]
        return schema

    # Each method returns the pieces of its values for every row; rows outside `present` (hidden by
    # an enclosing null) may hold anything, they are masked out by whoever hid them.

    def encode(self, arr: pa.Array, schema: Any, present: np.ndarray | None, ctx: _Ctx) -> list[_Piece]:
        schema = self.resolve(schema)
        if len(arr) == 0:
            return []
        if isinstance(schema, list):
            return self.union(arr, schema, present, ctx)
        if _is_null_type(schema):
            return []
        arr = _normalize(arr)
        valid = _validity(arr)
        if valid is not None:
            _check(~valid, present, ctx, "null value for a non-nullable type")
        if isinstance(schema, str):
            kind, logical, full = schema, None, None
        else:
            kind = schema["type"]
            lt = schema.get("logicalType")
            full = f"{kind}-{lt}" if lt else None
            logical = full if full in LOGICAL_WRITERS else None
            if logical is not None and logical not in _HANDLED_LOGICAL:
                raise _Unsupported(f"custom logical type {logical}")
        t = arr.type
        n = len(arr)
        if valid is not None and not valid.any():
            return []  # every row is null, so (checked above) none is written
        if kind in ("int", "long"):
            return [_long(self.integers(arr, kind, logical, present, ctx))]
        if kind in ("float", "double"):
            return [self.floating(arr, kind)]
        if kind == "boolean":
            if not pa.types.is_boolean(t):
                raise _Unsupported(f"{t} as boolean")
            bits = _bits(arr.buffers()[1], arr.offset, n)
            return [_Small(bits.astype(_U64), None, 1, 1)]
        if kind == "string":
            if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                raise _Unsupported(f"{t} as string")
            return self.length_prefixed(arr)
        if kind == "bytes":
            if logical == "bytes-decimal" and pa.types.is_decimal(t):
                return self.bytes_decimal(arr, schema, present, ctx)
            if pa.types.is_binary(t) or pa.types.is_large_binary(t):
                return self.length_prefixed(arr)
            if pa.types.is_fixed_size_binary(t):
                size = t.byte_width
                return [_long(np.full(n, size)), self.fixed_chunk(arr, size)]
            raise _Unsupported(f"{t} as bytes")
        if kind == "fixed":
            size = int(schema["size"])
            if logical == "fixed-decimal" and pa.types.is_decimal(t):
                return self.fixed_decimal(arr, schema, present, ctx)
            if pa.types.is_fixed_size_binary(t):
                if t.byte_width != size:
                    _check(np.ones(n, dtype=bool), present, ctx, f"{t.byte_width} bytes for fixed size {size}")
                return [self.fixed_chunk(arr, size)]
            if pa.types.is_binary(t) or pa.types.is_large_binary(t):
                offsets = _offsets(arr)
                _check(np.diff(offsets) != size, present, ctx, f"value length differs from fixed size {size}")
                return [_Chunk(offsets, _data_buffer(arr))]
            raise _Unsupported(f"{t} as fixed")
        if kind == "enum":
            if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                raise _Unsupported(f"{t} as enum")
            symbols = list(schema["symbols"])
            index = pc.index_in(arr, value_set=pa.array(symbols, t))
            found = _validity(index)
            if found is not None:
                _check(~found, _and(present, valid), ctx, f"value not among the enum symbols {symbols}")
            return [_long(_values(index, np.int32))]
        if kind == "array":
            return self.array(arr, schema, present, ctx)
        if kind == "map":
            return self.map(arr, schema, present, ctx)
        if kind in ("record", "error"):
            if not pa.types.is_struct(t):
                raise _Unsupported(f"{t} as record")
            return self.record_fields(arr, schema["fields"], present, ctx, _struct_children(arr))
        raise _Unsupported(f"Avro type {kind}")

    def union(self, arr: pa.Array, branches: list[Any], present: np.ndarray | None, ctx: _Ctx) -> list[_Piece]:
        resolved = [self.resolve(b) for b in branches]
        null_at = [i for i, b in enumerate(resolved) if _is_null_type(b)]
        others = [i for i, b in enumerate(resolved) if not _is_null_type(b)]
        if len(others) > 1 or len(null_at) > 1 or isinstance(resolved[others[0]] if others else None, list):
            raise _Unsupported(f"union {branches}")
        arr = _normalize(arr)
        n = len(arr)
        valid = _validity(arr)
        if not others:
            _check(np.ones(n, dtype=bool) if valid is None else valid, present, ctx, "value for a null-only union")
            return [_const_small(n, bytes([2 * null_at[0]]))]
        value_index = others[0]
        if not null_at:
            if valid is not None:
                _check(~valid, present, ctx, "null value for a union without null")
            return [_const_small(n, bytes([2 * value_index])), *self.encode(arr, branches[value_index], present, ctx)]
        null_index = null_at[0]
        if valid is not None and not valid.any():
            return [_const_small(n, bytes([2 * null_index]))]
        if valid is None:
            return [_const_small(n, bytes([2 * value_index])), *self.encode(arr, branches[value_index], present, ctx)]
        inner = self.encode(arr, branches[value_index], _and(present, valid), ctx)
        return _with_branch(inner, valid, 2 * value_index, 2 * null_index)

    def record_fields(
        self,
        arr_n: int | pa.Array,
        fields: list[dict[str, Any]],
        present: np.ndarray | None,
        ctx: _Ctx,
        children: dict[str, pa.Array | None],
    ) -> list[_Piece]:
        n = arr_n if isinstance(arr_n, int) else len(arr_n)
        pieces: list[_Piece] = []
        for field in fields:
            name = field["name"]
            child = children.get(name)
            fctx = ctx.child(name)
            ftype = field["type"]
            if child is None:
                if name in children:
                    raise SchemaEvolutionError(f"field {fctx.path} appears more than once in the data")
                default = field.get("default")
                if default is not None:
                    raise _Unsupported(f"missing field {name} with default {default!r}")
                resolved = self.resolve(ftype)
                nullable = _is_null_type(resolved) or (
                    isinstance(resolved, list) and any(_is_null_type(self.resolve(b)) for b in resolved)
                )
                if not nullable:
                    raise SchemaEvolutionError(f"field {fctx.path} is not in the data and has no default")
                child = pa.nulls(n)
            pieces.extend(self.encode(child, ftype, present, fctx))
        return pieces

    # -- numbers

    def integers(self, arr: pa.Array, kind: str, logical: str | None, present: np.ndarray | None, ctx: _Ctx) -> np.ndarray:
        t = arr.type
        if pa.types.is_integer(t):
            v = _values(arr, t.to_pandas_dtype())
            if pa.types.is_uint64(t):
                _check(v > np.iinfo(np.int64).max, present, ctx, "value exceeds the long range")
                v = v.view(np.int64)
        elif pa.types.is_timestamp(t) and logical is not None and "timestamp" in logical:
            v = self.timestamp(arr, logical, ctx, present)
        elif pa.types.is_date(t) and logical == "int-date":
            v = _values(arr, np.int32) if pa.types.is_date32(t) else np.floor_divide(_values(arr, np.int64), 86_400_000)
        elif pa.types.is_time(t) and logical in ("int-time-millis", "long-time-micros"):
            target = 1_000 if logical == "int-time-millis" else 1_000_000
            v = _convert_unit(_values(arr, np.int32 if pa.types.is_time32(t) else np.int64), _UNITS[t.unit], target, present, ctx)
        else:
            raise _Unsupported(f"{t} as {kind} ({logical})")
        if kind == "int" and (v.dtype.itemsize > 4 or v.dtype == np.uint32):
            _check((v < -(2**31)) | (v > 2**31 - 1), present, ctx, "value out of the int range")
        return v

    def timestamp(self, arr: pa.Array, logical: str, ctx: _Ctx, present: np.ndarray | None) -> np.ndarray:
        t = arr.type
        target = 1_000 if logical.endswith("millis") else 1_000_000
        local = "local-" in logical
        raw = _values(arr, np.int64)
        if t.tz is None and not local:
            # fastavro reads naive datetimes as machine-local time (mktime); let it convert them.
            return self.python_longs(arr, logical)
        if t.tz is not None and local and t.tz not in _UTC_NAMES:
            # Wall-clock time in the column's zone, as Python's tz database sees it.
            return self.python_longs(arr, logical)
        return _convert_unit(raw, _UNITS[t.unit], target, present, ctx)

    def python_longs(self, arr: pa.Array, logical: str) -> np.ndarray:
        prepare: Callable[[Any, Any], Any] = LOGICAL_WRITERS[logical]
        return np.array([0 if x is None else prepare(x, None) for x in arr.to_pylist()], dtype=np.int64)

    def floating(self, arr: pa.Array, kind: str) -> _Small:
        t = arr.type
        # Python sees every float as a double, and fastavro narrows it again for "float": the same
        # casts here give the same bits (rounding, overflow to infinity, quieted NaNs).
        with np.errstate(over="ignore", invalid="ignore"):
            if pa.types.is_float64(t):
                v = _values(arr, np.float64)
            elif pa.types.is_float32(t):
                v = _values(arr, np.float32).astype(np.float64)
            elif pa.types.is_integer(t):
                v = _values(arr, t.to_pandas_dtype()).astype(np.float64)
            else:
                raise _Unsupported(f"{t} as {kind}")
            if kind == "double":
                return _Small(v.view(_U64), None, 8, 8)
            f = v.astype(np.float32)
        return _Small(f.view(np.uint32).astype(_U64), None, 4, 4)

    # -- bytes

    def length_prefixed(self, arr: pa.Array) -> list[_Piece]:
        offsets = _offsets(arr)
        lengths = np.diff(offsets)
        size = int(lengths[0]) if len(lengths) and lengths.min() == lengths.max() else None
        return [_unsigned_varint(lengths), _Chunk(offsets, _data_buffer(arr), size=size)]

    def fixed_chunk(self, arr: pa.Array, size: int) -> _Chunk:
        n = len(arr)
        offsets = (np.arange(n + 1, dtype=np.int64) + arr.offset) * size
        return _Chunk(offsets, arr.buffers()[1], size=size)

    def decimal_matrix(self, arr: pa.Array, schema: dict[str, Any], present: np.ndarray | None, ctx: _Ctx) -> np.ndarray:
        """Big-endian two's complement of the unscaled values at the schema's scale, one row each.

        Mirrors fastavro's checks on the Decimal it would get: at most `precision` digits before
        rescaling, and no more fractional digits than the schema's scale.
        """
        t = arr.type
        n = len(arr)
        precision = int(schema["precision"])
        scale = int(schema.get("scale", 0))
        if scale < t.scale:
            _check(np.ones(n, dtype=bool), present, ctx, f"decimal scale {t.scale} exceeds the schema's scale {scale}")
        checked = _with_validity(arr, present) if precision < t.precision or scale > t.scale else arr
        if precision < t.precision:
            try:
                checked.cast(_decimal_type(precision, t.scale))
            except pa.ArrowInvalid as exc:
                raise BadRecordError(f"field {ctx.path}: decimal value has more than {precision} digits") from exc
        if scale > t.scale or not (pa.types.is_decimal128(t) or pa.types.is_decimal256(t)):
            digits = max(t.precision + scale - t.scale, 1)
            if digits > 76:
                raise _Unsupported("decimal rescale beyond 76 digits")
            arr = checked.cast(_decimal_type(digits, scale))
        width = arr.type.byte_width
        raw = np.frombuffer(arr.buffers()[1], np.uint8, count=n * width, offset=arr.offset * width)
        return raw.reshape(n, width)[:, ::-1]

    def fixed_decimal(self, arr: pa.Array, schema: dict[str, Any], present: np.ndarray | None, ctx: _Ctx) -> list[_Piece]:
        size = int(schema["size"])
        be = self.decimal_matrix(arr, schema, present, ctx)
        n, width = be.shape
        if width == 16 and size <= 16:
            return [self.fixed_decimal128(be[:, ::-1], size, present, ctx)]
        sign = np.where(be[:, 0] >= 0x80, np.uint8(0xFF), np.uint8(0))
        if size < width:
            extra = be[:, : width - size]
            fits = (extra == sign[:, None]).all(axis=1) & ((be[:, width - size] >= 0x80) == (sign == 0xFF))
            _check(~fits, present, ctx, f"decimal value does not fit in fixed({size})")
            be = be[:, width - size :]
        elif size > width:
            be = np.concatenate([np.repeat(sign[:, None], size - width, axis=1), be], axis=1)
        if size <= 16:
            padded = np.zeros((n, 16), dtype=np.uint8)
            padded[:, :size] = be
            words = padded.view(_U64)
            return [_Small(np.ascontiguousarray(words[:, 0]), np.ascontiguousarray(words[:, 1]) if size > 8 else None, size, size)]
        data = np.ascontiguousarray(be)
        return [_Chunk(np.arange(n + 1, dtype=np.int64) * size, pa.py_buffer(data), size=size)]

    def fixed_decimal128(self, le: np.ndarray, size: int, present: np.ndarray | None, ctx: _Ctx) -> _Small:
        """The last `size` big-endian bytes of 128-bit values (given little-endian, one row each),
        computed on their two 64-bit halves rather than byte by byte."""
        halves = np.ascontiguousarray(le).view(np.int64)
        lo, hi = halves[:, 0], halves[:, 1]
        kept = hi if size > 8 else lo  # the half holding the top kept byte
        bits = 8 * (size - 8 if size > 8 else size)
        fits = (kept >= -(1 << (bits - 1))) & (kept < 1 << (bits - 1)) if bits < 64 else np.ones(len(lo), dtype=bool)
        if size <= 8:
            fits &= hi == (lo >> 63)
        _check(~fits, present, ctx, f"decimal value does not fit in fixed({size})")
        first, second = lo.view(_U64).byteswap(), None
        if size > 8:
            first, second = hi.view(_U64).byteswap(), first
        shift = _U64(8 * (8 - size if size <= 8 else 16 - size))
        if second is None:
            return _Small(first >> shift, None, size, size)
        if shift:
            first = (first >> shift) | (second << (_U64(64) - shift))
            second = second >> shift
        return _Small(first, second, size, size)

    def bytes_decimal(self, arr: pa.Array, schema: dict[str, Any], present: np.ndarray | None, ctx: _Ctx) -> list[_Piece]:
        be = self.decimal_matrix(arr, schema, present, ctx)
        n, width = be.shape
        negative = be[:, 0] >= 0x80
        # fastavro writes (|v|.bit_length() + 8) // 8 bytes: the magnitude's bits plus a sign bit.
        words = np.ascontiguousarray(be[:, ::-1]).view(_U64)  # little-endian words, least first
        magnitude = np.where(negative[:, None], ~words, words)
        carry = negative.astype(_U64)
        for j in range(magnitude.shape[1]):
            col = magnitude[:, j] + carry
            carry = carry & (col == 0)
            magnitude[:, j] = col
        bits = np.zeros(n, dtype=np.int64)
        for j in range(magnitude.shape[1] - 1, -1, -1):
            word_bits = _bit_length(magnitude[:, j])
            bits = np.where((bits == 0) & (word_bits > 0), word_bits + 64 * j, bits)
        length = bits // 8 + 1
        sign = np.where(negative, np.uint8(0xFF), np.uint8(0))
        extended = np.concatenate([sign[:, None], be], axis=1)
        keep = np.arange(width + 1)[None, :] >= (width + 1 - length)[:, None]
        data = extended[keep]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(length, out=offsets[1:])
        return [_unsigned_varint(length), _Chunk(offsets, pa.py_buffer(data))]

    # -- containers

    def array(self, arr: pa.Array, schema: dict[str, Any], present: np.ndarray | None, ctx: _Ctx) -> list[_Piece]:
        t = arr.type
        n = len(arr)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            offsets = _offsets(arr).astype(np.int64)
            values = arr.values
        elif pa.types.is_fixed_size_list(t):
            offsets = (np.arange(n + 1, dtype=np.int64) + arr.offset) * t.list_size
            values = arr.values
        else:
            raise _Unsupported(f"{t} as array")
        start = int(offsets[0])
        rel = offsets - start
        m = int(rel[-1])
        items = _normalize(values.slice(start, m))
        counts = np.diff(rel)
        item_present = None if present is None else np.repeat(present, counts)
        ictx = ctx.items(rel, "[]")
        item_offsets, item_data = _join(self.encode(items, schema["items"], item_present, ictx), m)
        return [_count_prefix(counts), _Chunk(item_offsets[rel], item_data), _const_small(n, b"\x00")]

    def map(self, arr: pa.Array, schema: dict[str, Any], present: np.ndarray | None, ctx: _Ctx) -> list[_Piece]:
        t = arr.type
        if not pa.types.is_map(t):
            raise _Unsupported(f"{t} as map")
        n = len(arr)
        offsets = _offsets(arr).astype(np.int64)
        start = int(offsets[0])
        rel = offsets - start
        m = int(rel[-1])
        entries = arr.values.slice(start, m)
        keys = _normalize(entries.field(0))
        values = entries.field(1)
        counts = np.diff(rel)
        item_present = None if present is None else np.repeat(present, counts)
        if not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
            raise _Unsupported(f"map keys of type {keys.type}")
        if m and _has_duplicate_keys(keys, counts, item_present):
            raise _Unsupported("map with duplicate keys")
        ictx = ctx.items(rel, "{}")
        pieces = self.length_prefixed(keys) + self.encode(values, schema["values"], item_present, ictx)
        item_offsets, item_data = _join(pieces, m)
        return [_count_prefix(counts), _Chunk(item_offsets[rel], item_data), _const_small(n, b"\x00")]


def _struct_children(arr: pa.StructArray) -> dict[str, pa.Array | None]:
    children: dict[str, pa.Array | None] = {}
    for i, field in enumerate(arr.type):
        children[field.name] = None if field.name in children else arr.field(i)
    return children


def _has_duplicate_keys(keys: pa.Array, counts: np.ndarray, item_present: np.ndarray | None) -> bool:
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    table = pa.table({"row": rows, "key": keys})
    if item_present is not None:
        table = table.filter(pa.array(item_present))
    return table.group_by(["row", "key"]).aggregate([]).num_rows < table.num_rows


def _convert_unit(v: np.ndarray, source: int, target: int, present: np.ndarray | None, ctx: _Ctx) -> np.ndarray:
    v = v.astype(np.int64, copy=False)
    if source == target:
        return v
    if source > target:
        return np.floor_divide(v, source // target)
    factor = target // source
    limit = np.iinfo(np.int64).max // factor
    _check((v > limit) | (v < -limit), present, ctx, "timestamp out of the long range")
    return v * factor


def _decimal_type(precision: int, scale: int) -> pa.DataType:
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def _with_validity(arr: pa.Array, present: np.ndarray | None) -> pa.Array:
    """The array with rows outside `present` nulled, so Arrow kernels skip them."""
    if present is None:
        return arr
    return pc.if_else(pa.array(present), arr, pa.nulls(len(arr), arr.type))


# -- public -------------------------------------------------------------------------------------


def encode_batch(batch: pa.RecordBatch | pa.Table, schema: dict[str, Any]) -> EncodedRecords:
    """Avro-encode every row of `batch` with the record schema `schema` (columns matched by name)."""
    named: dict[str, Any] = {}
    parsed = fastavro.parse_schema(schema, named)
    if not (isinstance(parsed, dict) and parsed.get("type") in ("record", "error")):
        raise SchemaEvolutionError(f"encode_batch needs a record schema, got {schema!r}")
    try:
        return _encode_vectorized(batch, parsed, named)
    except _Unsupported:
        return _encode_with_fastavro(batch, parsed)


def _encode_vectorized(batch: pa.RecordBatch | pa.Table, parsed: dict[str, Any], named: dict[str, Any]) -> EncodedRecords:
    n = batch.num_rows
    encoder = _Encoder(named)
    framed: list[pa.Buffer] = []
    offsets = [np.zeros(1, dtype=np.int64)]
    for start in range(0, n, ROWS_PER_SLICE):
        rows = batch.slice(start, ROWS_PER_SLICE)
        children: dict[str, pa.Array | None] = {}
        for i, name in enumerate(rows.schema.names):
            children[name] = None if name in children else rows.column(i)
        pieces = encoder.record_fields(rows.num_rows, parsed["fields"], None, _Ctx("", start), children)
        slice_offsets, data = _join(pieces, rows.num_rows, framed=True)
        base = int(slice_offsets[0])
        framed.append(data.slice(base, int(slice_offsets[-1]) - base))
        lengths = np.diff(slice_offsets) - 4
        offsets.append(offsets[-1][-1] + np.cumsum(lengths))
    return EncodedRecords(np.concatenate(offsets), framed=tuple(framed))


def _unframe(framed: tuple[pa.Buffer, ...], offsets: np.ndarray) -> pa.Buffer:
    """The records of framed slices back to back, without their length prefixes."""
    n = len(offsets) - 1
    frames = offsets[:-1] + 4 * np.arange(n, dtype=np.int64)  # where each length prefix starts
    keep = np.ones(int(offsets[-1]) + 4 * n, dtype=bool)
    keep[(frames[:, None] + np.arange(4)).ravel()] = False
    raw = np.concatenate([np.frombuffer(part, np.uint8) for part in framed]) if framed else np.empty(0, np.uint8)
    return pa.py_buffer(raw[keep])


def _frame(data: pa.Buffer, offsets: np.ndarray) -> tuple[pa.Buffer, ...]:
    parts = []
    n = len(offsets) - 1
    for start in range(0, n, ROWS_PER_SLICE):
        rows = offsets[start : start + ROWS_PER_SLICE + 1]
        lengths = np.diff(rows)
        joined_offsets, joined = _join([_length_prefix(lengths), _Chunk(rows, data)], len(lengths))
        parts.append(joined.slice(0, int(joined_offsets[-1])))
    return tuple(parts)


def _encode_with_fastavro(batch: pa.RecordBatch | pa.Table, parsed: dict[str, Any]) -> EncodedRecords:
    wanted = [f["name"] for f in parsed["fields"] if f["name"] in batch.schema.names]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = batch.select(wanted).to_pylist(maps_as_pydicts="lossy")
    out = io.BytesIO()
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    for i, row in enumerate(rows):
        fastavro.schemaless_writer(out, parsed, row)
        offsets[i + 1] = out.tell()
    return EncodedRecords(offsets, data=pa.py_buffer(out.getvalue()))


def avro_data_block_content(encoded: EncodedRecords) -> bytes:
    """Content of a Hudi AVRO_DATA block: version, record count, then each record's length and bytes."""
    header = np.array([AVRO_DATA_BLOCK_VERSION, len(encoded)], dtype=">i4").tobytes()
    return b"".join([header, *encoded.framed()])
