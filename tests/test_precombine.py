"""Pre-combining a batch against the rules in `ingest.hudi.merge.precombine`, written out per identity:
a tombstone (a delete without ordering value) supersedes every earlier version in source order and
yields to any later one; of the rest the largest ordering value wins (a missing value ranks lowest),
ties going to the later version in source order; without an ordering field the last version wins."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.hudi.merge import precombine as pcb

version = st.tuples(
    st.sampled_from(["a", "b", "c", "d", "e", None]),  # key (a null key is its own identity)
    st.sampled_from(["p0", "p1"]),                      # partition
    st.integers(0, 5),                                  # source order (ties: row position decides)
    st.one_of(st.none(), st.integers(0, 3)),            # ordering value
    st.booleans(),                                      # delete
)


def _table(rows: list[tuple]) -> pa.Table:
    return pa.table({
        pcb.KEY: pa.array([r[0] for r in rows], pa.string()),
        pcb.PARTITION: pa.array([r[1] for r in rows], pa.string()),
        pcb.ORDER: pa.array([r[2] for r in rows], pa.int64()),
        "ts": pa.array([r[3] for r in rows], pa.int64()),
        pcb.DELETE: pa.array([r[4] for r in rows], pa.bool_()),
        "payload": pa.array(range(len(rows)), pa.int64()),  # the row's position, to name the winner by
    })


def _model(rows: list[tuple], ordering: str | None, global_scope: bool) -> list[int]:
    """The winning row positions, by the rules, in row order."""
    groups: dict = {}
    for i, (key, partition, order, ts, delete) in enumerate(rows):
        identity = (i,) if key is None else (key,) if global_scope else (key, partition)
        groups.setdefault(identity, []).append((order, i, ts, delete))
    winners = []
    for versions in groups.values():
        versions.sort()  # source order, then position
        tombstones = [n for n, (_, _, ts, delete) in enumerate(versions) if delete and (ordering is None or ts is None)]
        if tombstones:
            last = tombstones[-1]
            versions = versions[last + 1:] or [versions[last]]
        if ordering is None:
            winner = versions[-1]
        else:
            winner = max(versions, key=lambda v: (v[2] is not None, v[2] if v[2] is not None else 0, v[0], v[1]))
        winners.append(winner[1])
    return sorted(winners)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(version, max_size=30), ordering=st.sampled_from([None, "ts"]), global_scope=st.booleans(),
       chunks=st.integers(1, 3))
def test_one_version_per_identity_as_the_rules_choose_it_in_row_order(rows, ordering, global_scope, chunks):
    table = _table(rows)
    if rows and chunks > 1:  # Spark hands a task several record batches
        cut = len(rows) // chunks
        table = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    combined = pcb.precombine(table, ordering, global_scope)
    assert combined.schema == table.schema
    assert combined.column("payload").to_pylist() == _model(rows, ordering, global_scope)
