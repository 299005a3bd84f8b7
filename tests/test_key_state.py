"""The key index's shard state: a base with an overlay of later changes must answer exactly as the
plain "latest row per identity" model, through segments, the executor cache and overlay folding."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.index import key_state as ks
from ingest.storage import Storage

KEYS = [f"k{i}" for i in range(12)]
PARTITIONS = ["p0", "p1", "p2"]

change = st.tuples(st.sampled_from(KEYS), st.sampled_from(PARTITIONS), st.integers(0, 99), st.booleans())
batches = st.lists(st.lists(change, min_size=0, max_size=10), min_size=1, max_size=14)


def _changes(rows, instant: str, global_scope: bool) -> pa.Table:
    latest = {}
    for key, partition, ordering, deleted in rows:  # one row per identity, as writers produce them
        latest[key if global_scope else (key, partition)] = (key, partition, ordering, deleted)
    values = list(latest.values())
    return pa.table({
        ks.KEY: [v[0] for v in values], ks.PARTITION: [v[1] for v in values],
        ks.FILE_ID: [f"f-{v[1]}" for v in values], ks.ORDERING: pa.array([v[2] for v in values], pa.int64()),
        ks.DELETED: [v[3] for v in values], ks.INSTANT: [instant] * len(values),
    }, schema=ks.state_schema(pa.int64()))


def _as_model(table: pa.Table, global_scope: bool) -> dict:
    return {(r[ks.KEY] if global_scope else (r[ks.KEY], r[ks.PARTITION])): (r[ks.ORDERING], r[ks.DELETED])
            for r in table.to_pylist()}


@pytest.fixture(autouse=True)
def _small_overlay(monkeypatch):
    monkeypatch.setattr(ks, "_OVERLAY_MIN_ROWS", 4)  # fold overlays into the base often
    monkeypatch.setattr(ks, "_CACHE", ks._ShardCache(1 << 30))
    monkeypatch.setattr(ks, "MAX_DELTAS", 3)  # base segments too


@settings(max_examples=60, deadline=None)
@given(history=batches, global_scope=st.booleans(), cold=st.lists(st.booleans(), min_size=14, max_size=14))
def test_state_answers_as_the_latest_row_per_identity(tmp_path_factory, history, global_scope, cold):
    storage = Storage(str(tmp_path_factory.mktemp("state")))
    store = ks.KeyStateStore(storage, pa.int64(), global_scope)
    model: dict = {}
    for i, rows in enumerate(history):
        if cold[i]:
            ks._CACHE.entries.clear()  # another executor process: read the segments back
        state = store.load("shard", lambda _: True)
        assert _as_model(state.table, global_scope) == model

        probe = pa.table({"k": KEYS * len(PARTITIONS), "p": [p for p in PARTITIONS for _ in KEYS]})
        keys = ["k"] if global_scope else ["k", "p"]
        found = state.lookup(probe, keys, (ks.ORDERING, ks.DELETED)).to_pylist()
        for (key, partition), got in zip(zip(probe["k"].to_pylist(), probe["p"].to_pylist(), strict=True),
                                         found, strict=True):
            expected = model.get(key if global_scope else (key, partition))
            assert (got[ks.ORDERING], got[ks.DELETED]) == (expected or (None, None))

        asked = KEYS[i % len(KEYS):][:3]
        of_keys = state.rows_for_keys(pa.array(asked))
        expected = {k: v for k, v in model.items() if (k if global_scope else k[0]) in asked}
        assert _as_model(of_keys, global_scope) == expected
        assert of_keys.num_rows == len(expected), "one row per identity"

        changes = _changes(rows, f"{i:017d}", global_scope)
        store.write(state, changes, f"{i:017d}")
        model.update(_as_model(changes, global_scope))

    ks._CACHE.entries.clear()
    assert _as_model(store.load("shard", lambda _: True).table, global_scope) == model


def test_a_process_catches_up_from_its_own_last_write(tmp_path, monkeypatch):
    """Process A writes, process B writes the shard twice, A loads it again: A starts from the state it
    wrote (its segment is visible) and reads only B's two deltas."""
    monkeypatch.setattr(ks, "MAX_DELTAS", 32)
    store = ks.KeyStateStore(Storage(str(tmp_path)), pa.int64(), False)
    store.write(store.load("shard", lambda _: True), _changes([("a", "p0", 1, False)], "1", False),
                "00000000000000001")
    state = store.load("shard", lambda _: True)
    store.write(state, _changes([("b", "p0", 1, False)], "2", False), "00000000000000002")
    process_a = (dict(ks._CACHE.entries), dict(ks._CACHE.written))
    ks._CACHE.entries.clear()
    ks._CACHE.written.clear()
    for i, key in ((3, "c"), (4, "a")):  # process B
        state = store.load("shard", lambda _: True)
        store.write(state, _changes([(key, "p0", i, False)], str(i), False), f"{i:017d}")
    ks._CACHE.entries.clear()
    ks._CACHE.entries.update(process_a[0])
    ks._CACHE.written.clear()
    ks._CACHE.written.update(process_a[1])
    read = []
    original = ks._read
    monkeypatch.setattr(ks, "_read", lambda storage, segment: read.append(segment.instant) or original(storage, segment))
    state = store.load("shard", lambda _: True)
    assert read == ["00000000000000003", "00000000000000004"]
    assert _as_model(state.table, False) == {("a", "p0"): (4, False), ("b", "p0"): (1, False),
                                             ("c", "p0"): (3, False)}


def test_segments_of_invisible_instants_are_not_read(tmp_path):
    store = ks.KeyStateStore(Storage(str(tmp_path)), pa.int64(), False)
    state = store.load("shard", lambda _: True)
    store.write(state, _changes([("a", "p0", 1, False)], "1", False), "00000000000000001")
    state = store.load("shard", lambda _: True)
    store.write(state, _changes([("a", "p0", 2, False)], "2", False), "00000000000000002")
    visible = {"00000000000000001"}
    state = store.load("shard", lambda ts: ts in visible)  # the second batch never committed
    assert _as_model(state.table, False) == {("a", "p0"): (1, False)}
