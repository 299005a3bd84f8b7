"""Row lookup by record key in a large table that stays the same across many batches.

The key index's shard state (`ingest.index.key_state`) is probed with every batch; a hash join built
on the batch would hash every key of the state each time, a cost in the table's size. This index
hashes the state's keys once (the 32-bit `String.hashCode`, as Hudi's `HoodieKey` identities hash),
keeps them sorted together with their row numbers (a table of fewer than 2**32 rows), and answers a
probe with a binary search per probing key, the candidates then verified on the strings themselves:
a batch costs time in the batch (times the log of the state).
Identity is the record key with the partition path (`HoodieKey#equals`) unless the index is global
(`HoodieGlobalSimpleIndex` tags by record key alone); the caller passes the columns that make it up.

An index belongs to one table object: `index_of(table)` finds it only for that very object (its
identity, checked through a weak reference), so a table derived from another never answers with the
other's rows. A table derived by replacing rows (`after_apply`) gets its index from its parent's
without hashing again.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.hudi.keygen.bucket_index import java_string_hashes

_ROW_MASK = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


def plain_column(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A dictionary-encoded column decoded (the state holds partitions and file ids that way)."""
    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


def _strings(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A key column as one string array (the hash reads its buffers)."""
    column = plain_column(column)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        column = column.cast(pa.string())
    return column


def key_hashes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The 32-bit Java hash of every key (nulls hash to 0: callers drop them)."""
    return java_string_hashes(_strings(column))


@dataclass(frozen=True)
class KeyHashIndex:
    """A table's key hashes sorted, each packed with its row number: `hash << 32 | row`."""

    key: str  # the column hashed
    packed: np.ndarray  # uint64, sorted

    @classmethod
    def of_hashes(cls, key: str, hashes: np.ndarray) -> KeyHashIndex:
        rows = np.arange(len(hashes), dtype=np.uint64)
        return cls(key, np.sort((hashes.astype(np.uint64) << _SHIFT) | rows))

    def row_hashes(self, num_rows: int) -> np.ndarray:
        """The hash of each row in row order (the hashes of a table this index covers)."""
        out = np.zeros(num_rows, dtype=np.uint32)
        out[(self.packed & _ROW_MASK).astype(np.int64)] = (self.packed >> _SHIFT).astype(np.uint32)
        return out

    def candidates(self, hashes: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows whose hashes equal the probes' (for the probes where `valid` holds): per probe the
        first such row (-1 if none), and the other `(row, probe)` pairs (rare: equal hashes of
        different keys, or one key in several partitions)."""
        first = np.full(len(hashes), -1, dtype=np.int64)
        probes = np.flatnonzero(valid).astype(np.uint64)
        if not len(self.packed) or not len(probes):
            return first, np.zeros(0, np.int64), np.zeros(0, np.int64)
        # Probed in hash order: binary searches that walk the index in order stay in the cache
        # (random probes of a 250,000-key index cost four times as much).
        sorted_probes = np.sort((hashes[probes].astype(np.uint64) << _SHIFT) | probes)
        wide = sorted_probes & ~_ROW_MASK
        probe_rows = (sorted_probes & _ROW_MASK).astype(np.int64)
        n = len(self.packed)
        lo = np.searchsorted(self.packed, wide, side="left")
        hit = (lo < n) & ((self.packed[np.minimum(lo, n - 1)] & ~_ROW_MASK) == wide)
        first[probe_rows[hit]] = (self.packed[lo[hit]] & _ROW_MASK).astype(np.int64)
        more = hit & (lo + 1 < n)
        more[more] = (self.packed[lo[more] + 1] & ~_ROW_MASK) == wide[more]
        if not more.any():
            return first, np.zeros(0, np.int64), np.zeros(0, np.int64)
        lo, wide, probe_rows = lo[more] + 1, wide[more], probe_rows[more]
        counts = np.searchsorted(self.packed, wide | _ROW_MASK, side="right") - lo
        pair_probes = np.repeat(probe_rows, counts)
        at = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(len(pair_probes), dtype=np.int64)
        return first, (self.packed[at] & _ROW_MASK).astype(np.int64), pair_probes

    def after_apply(self, keep: np.ndarray, added: KeyHashIndex) -> KeyHashIndex:
        """The index of `concat(table.filter(keep), added_table)`, from this index and `added`'s."""
        rows = (self.packed & _ROW_MASK).astype(np.int64)
        kept = keep[rows]
        renumbered = np.cumsum(keep, dtype=np.int64) - 1
        moved = (self.packed[kept] & ~_ROW_MASK) | renumbered[rows[kept]].astype(np.uint64)
        shifted = added.packed + np.uint64(int(keep.sum()))  # rows after the kept ones
        return KeyHashIndex(self.key, np.sort(np.concatenate([moved, shifted])))

    @property
    def nbytes(self) -> int:
        return self.packed.nbytes


class _Entry:
    __slots__ = ("ref", "probes", "index")

    def __init__(self, ref: weakref.ref):
        self.ref = ref
        self.probes = 0
        self.index: KeyHashIndex | None = None


_ENTRIES: dict[int, _Entry] = {}


def _entry(table: pa.Table) -> _Entry:
    key = id(table)
    entry = _ENTRIES.get(key)
    if entry is not None and entry.ref() is table:
        return entry

    def forget(ref: weakref.ref, key: int = key) -> None:
        if (held := _ENTRIES.get(key)) is not None and held.ref is ref:
            del _ENTRIES[key]

    entry = _ENTRIES[key] = _Entry(weakref.ref(table, forget))
    return entry


def index_of(table: pa.Table, key: str) -> KeyHashIndex | None:
    """The index of `key` registered for this very table object, if any."""
    entry = _ENTRIES.get(id(table))
    if entry is None or entry.ref() is not table or entry.index is None or entry.index.key != key:
        return None
    return entry.index


def register(table: pa.Table, index: KeyHashIndex) -> None:
    _entry(table).index = index


def index_for_probe(table: pa.Table, key: str) -> KeyHashIndex | None:
    """The table's index, built the second time the table is probed: a table probed once (the state a
    process has just read, or a batch's changes) costs no more than one hash join; a table kept
    between batches is hashed once for all of them."""
    entry = _entry(table)
    entry.probes += 1
    if entry.probes > 1 and (entry.index is None or entry.index.key != key):
        entry.index = KeyHashIndex.of_hashes(key, key_hashes(table.column(key)))
    return entry.index if entry.index is not None and entry.index.key == key else None


def hashes_of(table: pa.Table, key: str) -> np.ndarray:
    """The hash of every row's key, from the table's index when it has one."""
    index = index_of(table, key)
    return index.row_hashes(table.num_rows) if index is not None else key_hashes(table.column(key))


def equal_rows(big: pa.Table, big_keys: list[str], big_rows: np.ndarray,
               small: pa.Table, small_keys: list[str]) -> np.ndarray:
    """Whether each row of `small` equals the row `big_rows` names (-1: none) on every key (null
    equals nothing); `small` is read in place, not taken."""
    return _equal(big, big_keys, pa.array(big_rows, mask=big_rows < 0), small, small_keys, None)


def equal_pairs(big: pa.Table, big_keys: list[str], big_rows: np.ndarray,
                small: pa.Table, small_keys: list[str], small_rows: np.ndarray) -> np.ndarray:
    """Whether each pair of rows is equal on every key (null equals nothing)."""
    return _equal(big, big_keys, big_rows, small, small_keys, small_rows)


def _equal(big: pa.Table, big_keys: list[str], big_rows: pa.Array | np.ndarray,
           small: pa.Table, small_keys: list[str], small_rows: np.ndarray | None) -> np.ndarray:
    same = np.ones(len(big_rows), dtype=bool)
    for big_key, small_key in zip(big_keys, small_keys, strict=True):
        ours = plain_column(big.column(big_key).take(big_rows))
        theirs = small.column(small_key)
        theirs = plain_column(theirs.take(small_rows) if small_rows is not None else theirs)
        theirs = theirs.cast(ours.type) if theirs.type != ours.type else theirs
        same &= np.asarray(pc.fill_null(pc.equal(ours, theirs), False).to_numpy(zero_copy_only=False), dtype=bool)
    return same
