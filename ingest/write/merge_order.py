"""The order of the records in a base file rewritten by a merge, as Hudi's `HoodieMergeHandle` writes them.

`HoodieMergeHandle.write` goes through the old file in its order: a record with a new version is
written as that version where it stood, a deleted one is left out, the others are copied. Then
`close` (`writeIncomingRecords`) writes the incoming keys the file did not hold, in the iteration
order of the map the incoming records were put into (`ExternalSpillableMap`, whose in-memory part
is a `java.util.HashMap` keyed by record key; updates, inserts and deletes all went in). Readers
rely on no sort order in a base file (it carries min/max keys and a bloom filter), but the order
decides every written record's `_hoodie_commit_seqno`, which numbers its place in the file.

Not reproduced: a map that spilled to disk (its spilled entries come after the in-memory ones), and
a `HashMap` bucket long enough to become a tree (8 keys in one bucket of a map of 64 or more).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.hudi.keygen.bucket_index import java_string_hashes

HASH_MAP_CAPACITY = 16  # `HashMap`'s default initial capacity; its load factor is 3/4


def hash_map_order(keys: pa.Array, entries: int) -> np.ndarray:
    """The order in which a `java.util.HashMap` holding `entries` string keys iterates `keys` (given
    in the order they were put): by bucket, `(h ^ h >>> 16) & (capacity - 1)` of `String.hashCode`,
    and in put order within a bucket. The capacity doubles whenever the size passes 3/4 of it
    (`HashMap.putVal`, `resize`); a resize keeps the put order inside each bucket."""
    capacity = HASH_MAP_CAPACITY
    while entries > capacity * 3 // 4:
        capacity *= 2
    hashes = java_string_hashes(keys).astype(np.uint32)
    return np.argsort((hashes ^ (hashes >> 16)) & (capacity - 1), kind="stable")


def merge_order(old_keys: pa.Array, new_keys: pa.Array, delete_keys: pa.Array) -> tuple[np.ndarray, int]:
    """The merged file's rows, as indexes into the old file's rows followed by the new ones (`new_keys`
    in the order they arrived), and how many of them, the last, are keys the old file did not hold."""
    n_old = len(old_keys)
    at = np.asarray(pc.fill_null(pc.index_in(old_keys, value_set=new_keys), -1), dtype=np.int64)
    rows = np.where(at >= 0, n_old + at, np.arange(n_old, dtype=np.int64))
    if len(delete_keys):
        rows = rows[~np.asarray(pc.is_in(old_keys, value_set=delete_keys), dtype=bool)]
    fresh = np.ones(len(new_keys), dtype=bool)
    fresh[at[at >= 0]] = False
    inserts = np.flatnonzero(fresh)
    inserts = inserts[hash_map_order(new_keys.take(pa.array(inserts)), len(new_keys) + len(delete_keys))]
    return np.concatenate([rows, n_old + inserts]), len(inserts)
