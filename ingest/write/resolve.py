"""Resolving a pre-combined batch against the table's current versions (the key state).

Every Hudi reader merges a key's versions differently when deletes are involved (Hudi's Java
payloads, hudi-rs and Trino disagree on deletes that carry ordering values). We sidestep the
disagreement at write time: a version whose ordering value is lower than the key's current one (live
or deleted) is stale and is not written. Every key's history on disk is then monotonic in its
ordering value, deletes can be written as Hudi's "delete regardless of ordering" (ordering 0), and
all readers resolve the same rows — the event-time result.

For commit-time tables (no ordering field, or a latest-commit-wins payload) nothing is stale: the
batch's version always wins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.hudi.merge.precombine import DELETE, KEY, PARTITION
from ingest.index import key_state as ks

FILE_ID = "_ingest_file_id"
IS_UPDATE = "_ingest_is_update"
DELETED_IN = "_ingest_deleted_in"   # a new key's file group when the state holds it deleted there
S_PARTITION = "_state_partition"
S_FILE_ID = "_state_file_id"
S_ORDERING = "_state_ordering"
S_DELETED = "_state_deleted"


@dataclass(frozen=True)
class Resolved:
    """What a batch does to the table, before new keys are assigned file groups."""

    upserts: pa.Table        # data rows; FILE_ID null for keys that need a file group; IS_UPDATE
    deletes: pa.Table        # KEY, PARTITION, FILE_ID of versions to delete
    deleted_state: pa.Table  # key-state rows of the keys this batch deletes
    stale: int               # versions older than the table's current one (not written)
    missing_deletes: int     # deletes of keys the table does not hold (nothing to do)
    # The state's overlay rows that the rows of `upserts` and `deleted_state` replace, as the lookup
    # found them (for `ShardState.with_changes`, when those rows become the state's changes).
    overlay_replaced: np.ndarray


def _np(arr) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False))


ROW = "_ingest_resolve_row"


def join_rows(left: pa.Table, keys: list[str], right: pa.Table, right_columns: tuple[str, ...],
              join_type: str = "left outer") -> pa.Table:
    """`left` joined with `right` on `keys`, bringing `right_columns` over.

    Only the keys and a row number go through the hash join (it cannot carry every Arrow type, e.g.
    maps); the left rows are then taken whole.
    """
    index = left.select(keys).append_column(ROW, pa.array(np.arange(left.num_rows, dtype=np.int64)))
    matched = index.join(right.select(keys + list(right_columns)), keys=keys, join_type=join_type,
                         use_threads=False)
    out = left.take(matched.column(ROW))
    for name in right_columns:
        out = out.append_column(name, matched.column(name))
    return out


def resolve(
    combined: pa.Table,
    state: ks.ShardState,
    ordering_field: str | None,
    event_time: bool,
    global_scope: bool,
) -> Resolved:
    join_keys = [KEY] if global_scope else [KEY, PARTITION]
    found = state.lookup(combined, join_keys, (ks.PARTITION, ks.FILE_ID, ks.ORDERING, ks.DELETED))
    joined = combined
    for name, column in zip((S_PARTITION, S_FILE_ID, S_ORDERING, S_DELETED), found.columns.columns, strict=True):
        joined = joined.append_column(name, column)

    n = joined.num_rows
    has_state = _np(pc.is_valid(joined.column(S_FILE_ID))).astype(bool) if n else np.zeros(0, bool)
    state_deleted = _np(pc.fill_null(joined.column(S_DELETED), False)).astype(bool) if n else np.zeros(0, bool)
    live = has_state & ~state_deleted
    is_delete = _np(joined.column(DELETE)).astype(bool) if n else np.zeros(0, bool)

    stale = np.zeros(n, dtype=bool)
    if event_time and ordering_field is not None and n:
        incoming = joined.column(ordering_field)
        current = joined.column(S_ORDERING)
        if current.type != incoming.type and current.null_count < len(current):
            current = current.cast(incoming.type)
        if current.null_count < len(current):
            older = pc.fill_null(pc.less(incoming, current), False)
            stale = _np(older).astype(bool) & has_state

    data = ~is_delete & ~stale
    delete_effective = is_delete & live & ~stale
    moved = np.zeros(n, dtype=bool)
    same_partition = np.ones(n, dtype=bool)
    if global_scope and n:
        same_partition = _np(pc.fill_null(pc.equal(joined.column(PARTITION), joined.column(S_PARTITION)), False)).astype(bool)
        moved = data & live & ~same_partition

    update_in_place = data & live & ~moved
    file_ids = pc.if_else(pa.array(update_in_place), joined.column(S_FILE_ID), pa.nulls(n, pa.string())) if n else pa.array([], pa.string())
    every = bool(data.all())  # a load of new keys: filtering would only copy every column

    def upsert_rows(values):
        return values if every else values.filter(pa.array(data))

    upserts = upsert_rows(joined)
    upserts = upserts.append_column(FILE_ID, upsert_rows(file_ids))
    upserts = upserts.append_column(IS_UPDATE, pa.array(update_in_place[data]))
    again = data & has_state & state_deleted & same_partition
    deleted_in = pc.if_else(pa.array(again), joined.column(S_FILE_ID), pa.nulls(n, pa.string())) if n else pa.array([], pa.string())
    upserts = upserts.append_column(DELETED_IN, upsert_rows(deleted_in))
    upserts = upserts.drop_columns([S_PARTITION, S_FILE_ID, S_ORDERING, S_DELETED])

    to_delete = delete_effective | moved
    deletes = pa.table({
        KEY: joined.column(KEY).filter(pa.array(to_delete)),
        PARTITION: joined.column(S_PARTITION).filter(pa.array(to_delete)),
        FILE_ID: joined.column(S_FILE_ID).filter(pa.array(to_delete)),
        # Deletes of moved keys are housekeeping: the key lives on in its new partition.
        "_ingest_moved": pa.array(moved[to_delete]),
    }) if n else pa.table({KEY: pa.array([], pa.string()), PARTITION: pa.array([], pa.string()),
                           FILE_ID: pa.array([], pa.string()), "_ingest_moved": pa.array([], pa.bool_())})
    eff = pa.array(delete_effective)
    state_ordering = joined.column(S_ORDERING).filter(eff)
    if ordering_field is not None:
        incoming_ordering = joined.column(ordering_field).filter(eff)
        if state_ordering.type != incoming_ordering.type:
            state_ordering = state_ordering.cast(incoming_ordering.type)
        state_ordering = pc.coalesce(incoming_ordering, state_ordering)
    deleted_state = pa.table({
        ks.KEY: joined.column(KEY).filter(eff),
        ks.PARTITION: joined.column(S_PARTITION).filter(eff),
        ks.FILE_ID: joined.column(S_FILE_ID).filter(eff),
        ks.ORDERING: state_ordering,
        ks.DELETED: pa.array(np.ones(int(delete_effective.sum()), dtype=bool)),
    }) if n else None
    overlay_rows = found.overlay_rows[data | delete_effective]  # the rows `state_changes` makes state of
    return Resolved(
        upserts=upserts,
        deletes=deletes,
        deleted_state=deleted_state if deleted_state is not None else pa.table({}),
        stale=int(stale.sum()),
        missing_deletes=int((is_delete & ~live & ~stale).sum()),
        overlay_replaced=overlay_rows[overlay_rows >= 0],
    )


def state_changes(
    upserts_with_file_ids: pa.Table,
    deleted_state: pa.Table,
    ordering_field: str | None,
    ordering_type: pa.DataType | None,
    instant: str,
) -> pa.Table:
    """Key-state rows this instant writes: new locations and orderings, and deletions.

    In the state's memory schema (`ks.memory_schema`): partitions, file ids and the instant are
    dictionary-encoded there, and a caller that already holds them so (a bucket task's partitions
    and file ids) saves hashing every row's strings twice, to strings and back.
    """
    schema = ks.memory_schema(ordering_type)
    n = upserts_with_file_ids.num_rows
    if ordering_field is not None and ordering_type is not None:
        ordering = upserts_with_file_ids.column(ordering_field).cast(ordering_type)
    else:
        ordering = pa.nulls(n, schema.field(ks.ORDERING).type)
    live = ks.as_schema({
        ks.KEY: upserts_with_file_ids.column(KEY),
        ks.PARTITION: upserts_with_file_ids.column(PARTITION),
        ks.FILE_ID: upserts_with_file_ids.column(FILE_ID),
        ks.ORDERING: ordering,
        ks.DELETED: pa.array(np.zeros(n, dtype=bool)),
        ks.INSTANT: _repeated(instant, n),
    }, schema, n)
    if not deleted_state.num_rows:
        return live
    m = deleted_state.num_rows
    dead = ks.as_schema({
        ks.KEY: deleted_state.column(ks.KEY),
        ks.PARTITION: deleted_state.column(ks.PARTITION),
        ks.FILE_ID: deleted_state.column(ks.FILE_ID),
        ks.ORDERING: deleted_state.column(ks.ORDERING),
        ks.DELETED: deleted_state.column(ks.DELETED),
        ks.INSTANT: _repeated(instant, m),
    }, schema, m)
    return pa.concat_tables([live, dead])


def _repeated(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], pa.string()))
