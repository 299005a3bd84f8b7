"""Hudi's record-key bloom filters, bit-compatible with the ones Hudi stores in base file footers.

Hudi's bloom index opens the footer of every candidate base file and asks its filter whether an
incoming key might be there; a filter that differs from Hudi's by a single bit would make the index
miss keys (duplicates) or read every file. So everything here follows Hudi's code exactly:

* sizing from `BloomFilterUtils` (bits = ceil(n * -ln(p) / ln(2)^2), hashes = ceil(ln(2) * bits / n)),
* hashing from Hadoop's `HashFunction` over `MurmurHash` (hash type 1): the UTF-8 bytes of the key are
  hashed `num_hashes` times, each round seeded with the previous round's hash, and each position is
  `abs(h % vector_size)` in Java's signed arithmetic,
* the dynamic filter from `InternalDynamicBloomFilter`: a new row of bits once the current one holds
  `num_entries` keys, until `max_entries` is reached, then keys are spread round-robin over the rows,
* serialization from Hadoop's `Filter.write`/`BloomFilter.write`/`DynamicBloomFilter.write` (big-endian
  ints, bit vectors least significant bit first), base64-encoded as `Base64CodecUtil` does.

Hashing is vectorized with numpy: keys are grouped by byte length and all keys of a group run through
each Murmur round at once, so adding a million keys takes seconds.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from ingest.errors import IngestError, UnsupportedTable

SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"
TYPE_CODES = (SIMPLE, DYNAMIC_V0)

# Defaults of `hoodie.index.bloom.num_entries`, `hoodie.index.bloom.fpp`,
# `hoodie.bloom.index.filter.dynamic.max.entries` and `hoodie.bloom.index.filter.type`
# (HoodieStorageConfig / HoodieIndexConfig).
DEFAULT_NUM_ENTRIES = 60_000
DEFAULT_FPP = 0.000000001
DEFAULT_DYNAMIC_MAX_ENTRIES = 100_000
DEFAULT_TYPE_CODE = DYNAMIC_V0

MURMUR_HASH = 1  # org.apache.hadoop.util.hash.Hash.MURMUR_HASH; Hudi never writes another type
_FILTER_VERSION = -1  # Hadoop Filter.VERSION: negative so old, unversioned filters stay readable
_MURMUR_M = np.uint32(0x5BD1E995)
_CHUNK = 1 << 14  # keys hashed per numpy pass: the (hashes x keys) positions stay in cache

Keys = str | Iterable[str] | pa.Array | pa.ChunkedArray


def bit_size(num_entries: int, fpp: float) -> int:
    """Bits in one vector, as `BloomFilterUtils.getBitSize` (same operation order, same doubles)."""
    log2_squared = math.log(2) * math.log(2)
    return int(math.ceil(num_entries * (-math.log(fpp) / log2_squared)))


def num_hashes(bits: int, num_entries: int) -> int:
    """Hash rounds per key, as `BloomFilterUtils.getNumHashes`."""
    return int(math.ceil(math.log(2) * bits / num_entries))


# -- hashing ------------------------------------------------------------------------------------


def _utf8_keys(keys: Keys) -> tuple[np.ndarray, np.ndarray]:
    """The keys' UTF-8 bytes as one byte array and n+1 offsets, without a Python loop for Arrow input."""
    if isinstance(keys, str):
        keys = [keys]
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks != 1 else keys.chunk(0)
    if not isinstance(keys, pa.Array):
        keys = pa.array(keys if isinstance(keys, (list, tuple)) else list(keys), pa.string())
    if pa.types.is_large_string(keys.type) or pa.types.is_large_binary(keys.type):
        offset_type = np.int64
    elif pa.types.is_string(keys.type) or pa.types.is_binary(keys.type):
        offset_type = np.int32
    else:
        keys = keys.cast(pa.large_string())
        offset_type = np.int64
    if keys.null_count:
        raise ValueError("a record key for the bloom filter is null")
    _, offsets_buf, data_buf = keys.buffers()
    n = len(keys)
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)[keys.offset : keys.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    if n and np.any(offsets[1:] == offsets[:-1]):
        raise ValueError("an empty record key cannot be added to a bloom filter (Hadoop's hash rejects it)")
    return data, offsets


def _murmur_rounds(rows: np.ndarray, rounds: int, vector_size: int) -> np.ndarray:
    """Positions (rounds x keys, uint32) of keys of equal byte length (`rows`: keys x length) for
    `rounds` chained rounds.

    One round is Hadoop's `MurmurHash.hash(data, length, seed)`; the next round's seed is this
    round's (signed) result, and the position is `abs(h % vector_size)` with Java's remainder, which
    is `|h| % vector_size` on 32 unsigned bits (|Integer.MIN_VALUE| is 2^31 there, as Java's
    remainder of it gives). The mixed 4-byte blocks do not depend on the seed, so they are computed
    once for all rounds; each round works in place on one row of the hashes, and the positions come
    from all of them at once (numpy's passes, not their count, are the cost).
    """
    count, length = rows.shape
    nblocks = length // 4
    with np.errstate(over="ignore"):
        blocks = np.ascontiguousarray(rows[:, : nblocks * 4]).view("<u4").reshape(count, nblocks)
        k = blocks * _MURMUR_M
        k ^= k >> 24
        k *= _MURMUR_M
        mixed = [np.ascontiguousarray(k[:, j]) for j in range(nblocks)]
        tail_len = length - nblocks * 4
        tail = np.zeros(count, dtype=np.uint32)
        if tail_len:
            # Java sign-extends each tail byte before shifting and xor-ing it in.
            signed = rows[:, nblocks * 4 :].view(np.int8).astype(np.int32).view(np.uint32)
            for i in range(tail_len):
                tail ^= signed[:, i] << np.uint32(8 * (tail_len - 1 - i))
        hashes = np.empty((rounds, count), dtype=np.uint32)
        shifted = np.empty(count, dtype=np.uint32)
        seed = np.zeros(count, dtype=np.uint32)
        length_u32 = np.uint32(length)
        for r in range(rounds):
            h = hashes[r]
            np.bitwise_xor(seed, length_u32, out=h)
            for block in mixed:
                h *= _MURMUR_M
                h ^= block
            if tail_len:
                h ^= tail
                h *= _MURMUR_M
            np.right_shift(h, 13, out=shifted)
            h ^= shifted
            h *= _MURMUR_M
            np.right_shift(h, 15, out=shifted)
            h ^= shifted
            seed = h
        signed_hashes = hashes.view(np.int32)
        np.abs(signed_hashes, out=signed_hashes)  # Integer.MIN_VALUE stays 0x80000000: 2^31 unsigned
        np.remainder(hashes, np.uint32(vector_size), out=hashes)
        return hashes


def hash_positions(keys: Keys, rounds: int, vector_size: int) -> np.ndarray:
    """Bit positions (keys x rounds) Hadoop's `HashFunction` gives the keys' UTF-8 bytes."""
    data, offsets = _utf8_keys(keys)
    out = np.empty((rounds, len(offsets) - 1), dtype=np.uint32)
    for keys_here, positions in _positions(data, offsets, rounds, vector_size):
        out[:, keys_here] = positions
    return out.T.astype(np.int64)


def _positions(data: np.ndarray, offsets: np.ndarray, rounds: int,
               vector_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(key numbers, their positions: rounds x keys, uint32) for every key, at most `_CHUNK` keys at a
    time, each time keys of one byte length.

    Keys are put in order of length once (stably), so each pass hashes a contiguous run of equal
    lengths: grouping per chunk instead cost more than the hashing where lengths vary (`order-7` to
    `order-1234567`), in scattering each group's positions back among the chunk's columns.
    """
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    if not len(lengths):
        return  # no keys: a compaction of a slice whose records were all deleted writes an empty file
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[order]
    edges = np.flatnonzero(np.diff(sorted_lengths)) + 1
    for begin, end in zip(np.r_[0, edges].tolist(), np.r_[edges, len(order)].tolist(), strict=True):
        length = int(sorted_lengths[begin])
        for a in range(begin, end, _CHUNK):
            keys_here = order[a:min(end, a + _CHUNK)]
            yield keys_here, _murmur_rounds(data[starts[keys_here, None] + np.arange(length)], rounds, vector_size)


# -- filters ------------------------------------------------------------------------------------


class BloomFilter(ABC):
    """A filter Hudi can read back from a base file footer with `BloomFilterFactory.fromString`."""

    type_code: str

    def __init__(self, vector_size: int, num_hashes: int, hash_type: int = MURMUR_HASH):
        if hash_type != MURMUR_HASH:
            raise UnsupportedTable(f"bloom filter hash type {hash_type} is not supported (Hudi writes {MURMUR_HASH}, Murmur)")
        if vector_size <= 0 or num_hashes <= 0:
            raise ValueError(f"bloom filter needs positive size and hash count, got {vector_size} bits, {num_hashes} hashes")
        self.vector_size = vector_size
        self.num_hashes = num_hashes
        self.hash_type = hash_type

    def add(self, key: str) -> None:
        self.add_all([key])

    def add_all(self, keys: Keys) -> None:
        """Add keys in order (for the dynamic filter the order decides which row holds a key)."""
        data, offsets = _utf8_keys(keys)
        n = len(offsets) - 1
        rows = self._assign_rows(n)
        single = len(self._rows) == 1
        bits = _BitSetter(self._rows, unpack=n * self.num_hashes > len(self._rows[0]))
        for keys_here, positions in _positions(data, offsets, self.num_hashes, self.vector_size):
            if single:
                bits.set(0, positions)
                continue
            chunk_rows = rows[keys_here]
            used = np.unique(chunk_rows).tolist()
            for row in used:
                bits.set(row, positions if len(used) == 1 else positions[:, chunk_rows == row])
        bits.done()

    def might_contain(self, key: str) -> bool:
        return bool(self.might_contain_all([key])[0])

    def might_contain_all(self, keys: Keys) -> np.ndarray:
        """For each key: False if it was certainly never added (bloom filters have no false negatives)."""
        data, offsets = _utf8_keys(keys)
        n = len(offsets) - 1
        result = np.zeros(n, dtype=bool)
        for keys_here, positions in _positions(data, offsets, self.num_hashes, self.vector_size):
            found = np.zeros(len(keys_here), dtype=bool)
            for bits in self._rows:
                found |= _bits_at(bits, positions).all(axis=0)
            result[keys_here] = found
        return result

    @abstractmethod
    def serialize(self) -> bytes:
        """The bytes of Hadoop's `write(DataOutput)`, before base64."""

    def to_string(self) -> str:
        """The footer value (`org.apache.hudi.bloomfilter`): base64 of `serialize()`, padded."""
        return base64.b64encode(self.serialize()).decode("ascii")

    # -- internals shared by both kinds ---------------------------------------------------------

    # One packed bit vector (uint8) per row, bit i at `1 << (i % 8)` of byte i // 8: Hadoop's
    # serialized layout (`InternalBloomFilter.write`), so serializing and parsing copy bytes only.
    _rows: list[np.ndarray]

    @abstractmethod
    def _assign_rows(self, count: int) -> np.ndarray:
        """The row (bit vector) each of the next `count` keys goes to."""

    def _header(self) -> bytes:
        return struct.pack(">iibi", _FILTER_VERSION, self.num_hashes, self.hash_type, self.vector_size)

    def _empty_row(self) -> np.ndarray:
        return np.zeros((self.vector_size + 7) // 8, dtype=np.uint8)


class _BitSetter:
    """Sets bits in packed rows: a few straight into the packed bytes, many in an unpacked copy of
    each row they touch, packed back once in `done` (unpacking and packing a row for every chunk of
    keys costs more than hashing the chunk)."""

    def __init__(self, rows: list[np.ndarray], unpack: bool):
        self.rows = rows
        self.unpacked: dict[int, np.ndarray] | None = {} if unpack else None

    def set(self, row: int, positions: np.ndarray) -> None:
        positions = positions.ravel()
        if self.unpacked is None:
            np.bitwise_or.at(self.rows[row], positions >> 3, np.left_shift(1, positions & 7).astype(np.uint8))
            return
        if row not in self.unpacked:
            self.unpacked[row] = np.unpackbits(self.rows[row], bitorder="little")
        self.unpacked[row][positions] = 1

    def done(self) -> None:
        for row, bits in (self.unpacked or {}).items():
            self.rows[row][:] = np.packbits(bits, bitorder="little")


def _bits_at(row: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Whether bits `positions` of a packed row are set."""
    return ((row[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1).astype(bool)


class SimpleBloomFilter(BloomFilter):
    """`SIMPLE`: Hudi's `SimpleBloomFilter`, one Hadoop `BloomFilter` of fixed size."""

    type_code = SIMPLE

    def __init__(self, vector_size: int, num_hashes: int, hash_type: int = MURMUR_HASH):
        super().__init__(vector_size, num_hashes, hash_type)
        self._rows = [self._empty_row()]

    @classmethod
    def create(cls, num_entries: int = DEFAULT_NUM_ENTRIES, fpp: float = DEFAULT_FPP) -> SimpleBloomFilter:
        bits = bit_size(num_entries, fpp)
        return cls(bits, num_hashes(bits, num_entries))

    def _assign_rows(self, count: int) -> np.ndarray:
        return np.zeros(count, dtype=np.int32)

    def serialize(self) -> bytes:
        return self._header() + self._rows[0].tobytes()


class DynamicBloomFilter(BloomFilter):
    """`DYNAMIC_V0`: Hudi's `HoodieDynamicBoundedBloomFilter` (an `InternalDynamicBloomFilter`).

    Rows of `num_entries` keys each are added while the rows hold fewer than `max_entries` keys in
    total; after that the false positive rate is no longer bounded and keys go to the existing rows
    in turn. `max_entries` is not serialized: like Hudi, a parsed filter treats its rows as final.
    """

    type_code = DYNAMIC_V0

    def __init__(self, vector_size: int, num_hashes: int, num_entries: int, max_entries: int,
                 hash_type: int = MURMUR_HASH):
        super().__init__(vector_size, num_hashes, hash_type)
        if num_entries <= 0:
            raise ValueError(f"dynamic bloom filter needs num_entries > 0, got {num_entries}")
        self.num_entries = num_entries  # Hadoop's `nr`
        self.max_entries = max_entries
        self.current_count = 0  # keys added since the newest row was created (`currentNbRecord`)
        self._reached_max = False
        self._round_robin = 0  # `curMatrixIndex`
        self._rows = [self._empty_row()]

    @classmethod
    def create(cls, num_entries: int = DEFAULT_NUM_ENTRIES, fpp: float = DEFAULT_FPP,
               max_entries: int = DEFAULT_DYNAMIC_MAX_ENTRIES) -> DynamicBloomFilter:
        bits = bit_size(num_entries, fpp)
        return cls(bits, num_hashes(bits, num_entries), num_entries, max_entries)

    @property
    def num_rows(self) -> int:
        return len(self._rows)

    def _assign_rows(self, count: int) -> np.ndarray:
        """The row each of the next `count` keys goes to, advancing the state as `add` would."""
        out = np.empty(count, dtype=np.int32)
        done = 0
        while done < count:
            if self._reached_max:
                take = count - done
                out[done:] = (self._round_robin + np.arange(take)) % len(self._rows)
                self._round_robin += take
                self.current_count += take
                done = count
            elif self.current_count < self.num_entries:
                take = min(count - done, self.num_entries - self.current_count)
                out[done : done + take] = len(self._rows) - 1
                self.current_count += take
                done += take
            elif len(self._rows) * self.num_entries < self.max_entries:
                self._rows.append(self._empty_row())
                self.current_count = 0
            else:
                # Hadoop's getActiveStandardBF hands out row 0 when the bound is first hit, then
                # starts the round-robin at row 0 again.
                self._reached_max = True
                out[done] = 0
                self.current_count += 1
                done += 1
        return out

    def serialize(self) -> bytes:
        parts = [
            self._header(),
            struct.pack(">iii", self.num_entries, self.current_count, len(self._rows)),
        ]
        for bits in self._rows:
            parts.append(self._header())
            parts.append(bits.tobytes())
        return b"".join(parts)


def create_bloom_filter(type_code: str = DEFAULT_TYPE_CODE, num_entries: int = DEFAULT_NUM_ENTRIES,
                        fpp: float = DEFAULT_FPP, max_entries: int = DEFAULT_DYNAMIC_MAX_ENTRIES) -> BloomFilter:
    """An empty filter as `BloomFilterFactory.createBloomFilter` makes it (type code case-insensitive)."""
    code = type_code.upper()
    if code == SIMPLE:
        return SimpleBloomFilter.create(num_entries, fpp)
    if code == DYNAMIC_V0:
        return DynamicBloomFilter.create(num_entries, fpp, max_entries)
    raise UnsupportedTable(f"bloom filter type code {type_code!r} is not one of {', '.join(TYPE_CODES)}")


def extended(held: BloomFilter, keys_held: int, fresh: BloomFilter, added: Keys) -> BloomFilter | None:
    """`fresh` (empty) after the `keys_held` keys `held` was built from and then `added`, made from
    `held`'s bits and the hashes of `added` only; None where that is not certain to equal adding
    every key to `fresh`: another size, hash or row capacity, or a dynamic filter whose keys do not
    all fit its first row (its rows then depend on the order of the keys)."""
    added_count = len(added) if not isinstance(added, str) else 1
    if (held.type_code != fresh.type_code or len(held._rows) != 1 or held.vector_size != fresh.vector_size
            or held.num_hashes != fresh.num_hashes or held.hash_type != fresh.hash_type):
        return None
    if isinstance(fresh, DynamicBloomFilter):
        if (not isinstance(held, DynamicBloomFilter) or held.num_entries != fresh.num_entries
                or held.current_count != keys_held or keys_held + added_count > fresh.num_entries):
            return None
        fresh.current_count = keys_held
    fresh._rows = [held._rows[0].copy()]
    fresh.add_all(added)
    return fresh


# -- parsing ------------------------------------------------------------------------------------


class _Cursor:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise IngestError(f"bloom filter is truncated at byte {self.pos} of {len(self.data)}")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def bytes(self, size: int) -> bytes:
        if self.pos + size > len(self.data):
            raise IngestError(f"bloom filter bit vector is truncated at byte {self.pos} of {len(self.data)}")
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out


def _read_header(cursor: _Cursor) -> tuple[int, int, int]:
    (version,) = cursor.take(">i")
    if version > 0:
        # Hadoop's pre-versioned layout: the first int is the hash count and the hash is Jenkins.
        raise UnsupportedTable("bloom filter uses Hadoop's unversioned layout with the Jenkins hash, which Hudi never writes")
    if version != _FILTER_VERSION:
        raise UnsupportedTable(f"bloom filter version {version} is not supported")
    num_hashes_, hash_type, vector_size = cursor.take(">ibi")
    return vector_size, num_hashes_, hash_type


def _read_vector(cursor: _Cursor, vector_size: int) -> np.ndarray:
    """A packed row; bits past `vector_size` in its last byte are dropped, as `InternalBloomFilter.readFields`
    reads only `vectorSize` bits (and `write` pads with zeros)."""
    row = np.frombuffer(cursor.bytes((vector_size + 7) // 8), dtype=np.uint8).copy()
    if vector_size % 8:
        row[-1] &= (1 << (vector_size % 8)) - 1
    return row


def parse_bloom_filter(text: str | bytes, type_code: str | None = None) -> BloomFilter:
    """The filter a footer value holds, as `BloomFilterFactory.fromString`.

    A missing type code means SIMPLE, as Hudi reads footers without `hoodie_bloom_filter_type_code`.
    """
    code = (type_code or SIMPLE).upper()
    if code not in TYPE_CODES:
        raise UnsupportedTable(f"bloom filter type code {type_code!r} is not one of {', '.join(TYPE_CODES)}")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as e:
        raise IngestError(f"bloom filter is not valid base64: {e}") from e
    cursor = _Cursor(data)
    vector_size, hashes, hash_type = _read_header(cursor)
    filt: BloomFilter
    if code == SIMPLE:
        filt = SimpleBloomFilter(vector_size, hashes, hash_type)
        filt._rows = [_read_vector(cursor, vector_size)]
    else:
        num_entries, current_count, num_rows = cursor.take(">iii")
        if num_rows < 1:
            raise IngestError(f"dynamic bloom filter has {num_rows} rows")
        # Hadoop's readFields leaves maxNr at 0: a parsed filter never grows.
        dyn = DynamicBloomFilter(vector_size, hashes, num_entries, 0, hash_type)
        dyn.current_count = current_count
        rows = []
        for _ in range(num_rows):
            row_size, row_hashes, row_hash_type = _read_header(cursor)
            if (row_size, row_hashes, row_hash_type) != (vector_size, hashes, hash_type):
                raise IngestError("dynamic bloom filter rows disagree with the filter's size or hash")
            rows.append(_read_vector(cursor, vector_size))
        dyn._rows = rows
        filt = dyn
    if cursor.pos != len(data):
        raise IngestError(f"bloom filter has {len(data) - cursor.pos} bytes after its last bit vector")
    return filt
