"""Pre-combining a batch: one version per key, chosen as Hudi's event-time ordering would.

Rules, per record identity (the key, or key + partition when the index is partition-scoped):

* a delete without an ordering value (a Kafka tombstone, or a delete flag on a record whose ordering
  field is null) is a processing-time event: it supersedes every earlier version in source order;
* among the remaining versions the largest ordering value wins, ties going to the later record in
  source order (the Kafka offset when there is one);
* without an ordering field (commit-time tables) the last record in source order wins.

Input columns (added by `ingest.write.records`): `_ingest_key`, `_ingest_partition`,
`_ingest_order` (source order), `_ingest_delete`; the ordering field is a data column.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

KEY = "_ingest_key"
PARTITION = "_ingest_partition"
ORDER = "_ingest_order"
DELETE = "_ingest_delete"
ROW = "_ingest_row"
HAS_ORDERING = "_ingest_has_ordering"


def identity_columns(global_scope: bool) -> list[str]:
    return [KEY] if global_scope else [KEY, PARTITION]


def group_starts(table: pa.Table, columns: list[str]) -> np.ndarray:
    """For rows sorted by `columns`, True where a new identity starts."""
    n = table.num_rows
    starts = np.zeros(n, dtype=bool)
    if n == 0:
        return starts
    starts[0] = True
    differs = np.zeros(n - 1, dtype=bool)
    for name in columns:
        col = table.column(name)
        ne = pc.not_equal(col.slice(1), col.slice(0, n - 1))
        differs |= np.asarray(pc.fill_null(ne, True).to_numpy(zero_copy_only=False), dtype=bool)
    starts[1:] = differs
    return starts


def _repeated_keys(table: pa.Table) -> np.ndarray | None:
    """Whether each row's key occurs more than once in the batch; None if none does.

    Large loads repeat no key: `unique` answers that in 40% of `count_distinct`'s time (125,000 keys:
    9.5 ms against 24 ms), less than numbering the keys would take.
    """
    keys = table.column(KEY)
    if len(pc.unique(keys)) == table.num_rows:
        return None
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    codes = np.asarray(keys.dictionary_encode(null_encoding="encode").indices.to_numpy(zero_copy_only=False))
    return np.bincount(codes)[codes] > 1


def precombine(table: pa.Table, ordering_field: str | None, global_scope: bool) -> pa.Table:
    """One row per identity: the winning version (possibly a delete), in the batch's row order.

    A key with one version keeps it, whatever it is; only the rows of repeated keys are sorted to
    choose, and of those only the columns the choice reads (a batch of updates repeats few keys).
    """
    if table.num_rows <= 1:
        return table
    repeated = _repeated_keys(table)
    if repeated is None:
        return table
    rows = np.flatnonzero(repeated)
    columns = identity_columns(global_scope) + [ORDER, DELETE] + ([ordering_field] if ordering_field else [])
    versions = table.select(columns).take(pa.array(rows)).append_column(ROW, pa.array(rows))
    keep = ~repeated
    keep[_winners(versions, ordering_field, global_scope)] = True
    return table.filter(pa.array(keep))


def _winners(table: pa.Table, ordering_field: str | None, global_scope: bool) -> np.ndarray:
    """The `ROW` of each identity's winning version among `table`'s versions."""
    ident = identity_columns(global_scope)
    by_source = table.take(pc.sort_indices(table, [(c, "ascending") for c in ident] + [(ORDER, "ascending"), (ROW, "ascending")]))

    # Drop versions superseded by a later tombstone of the same identity.
    n = by_source.num_rows
    starts = group_starts(by_source, ident)
    group_id = np.cumsum(starts) - 1
    deletes = np.asarray(by_source.column(DELETE).to_numpy(zero_copy_only=False), dtype=bool)
    if ordering_field is not None:
        unordered = np.asarray(pc.is_null(by_source.column(ordering_field)).to_numpy(zero_copy_only=False), dtype=bool)
        tombstone = deletes & unordered
    else:
        tombstone = deletes
    positions = np.arange(n)
    if tombstone.any():
        last_tomb = np.full(group_id[-1] + 1, -1, dtype=np.int64)
        np.maximum.at(last_tomb, group_id[tombstone], positions[tombstone])
        keep = positions >= last_tomb[group_id]
        # A tombstone followed by later versions yields to them.
        group_size_after = np.zeros_like(last_tomb)
        np.add.at(group_size_after, group_id[positions > last_tomb[group_id]], 1)
        keep &= ~(tombstone & (group_size_after[group_id] > 0))
        by_source = by_source.filter(pa.array(keep))

    if ordering_field is None:
        sort_keys = [(c, "ascending") for c in ident] + [(ORDER, "ascending"), (ROW, "ascending")]
    else:
        # A missing ordering value ranks below every present one.
        by_source = by_source.append_column(HAS_ORDERING, pc.is_valid(by_source.column(ordering_field)))
        sort_keys = [(c, "ascending") for c in ident] + [
            (HAS_ORDERING, "ascending"), (ordering_field, "ascending"), (ORDER, "ascending"), (ROW, "ascending"),
        ]
    ordered = by_source.take(pc.sort_indices(by_source, sort_keys))
    starts = group_starts(ordered, ident)
    last = np.empty_like(starts)
    last[:-1] = starts[1:]
    last[-1] = True
    return np.asarray(ordered.column(ROW).filter(pa.array(last)).to_numpy(zero_copy_only=False), dtype=np.int64)
