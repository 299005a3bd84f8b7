"""The key index's shard state: a base with an overlay of later changes must answer exactly as the
plain "latest row per identity" model, through segments, the executor cache and overlay folding."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
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
        found = state.lookup(probe, keys, (ks.ORDERING, ks.DELETED)).columns.to_pylist()
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


# -- the key-hash index (`ingest.index.key_hash_index`) -------------------------------------------------

from ingest.hudi.keygen.bucket_index import java_string_hashes  # noqa: E402
from ingest.index import key_hash_index as khi  # noqa: E402

# "Aa" and "BB" have the same `String.hashCode`, so every word of them below shares one hash.
COLLIDING = ["AaAa", "AaBB", "BBAa", "BBBB", "Aa", "BB", "k1", "k2"]
probe_row = st.tuples(st.one_of(st.none(), st.sampled_from(COLLIDING)), st.one_of(st.none(), st.sampled_from(PARTITIONS)))


def test_colliding_keys_share_one_java_hash():
    """The crafted keys collide under `java.lang.String#hashCode` (the hash the index sorts by), so the
    tests below exercise candidates that the strings must tell apart."""
    hashes = java_string_hashes(pa.array(COLLIDING[:4]))
    assert len(set(hashes.tolist())) == 1


@settings(max_examples=40, deadline=None)
@given(history=st.lists(st.lists(st.tuples(st.sampled_from(COLLIDING), st.sampled_from(PARTITIONS), st.integers(0, 99),
                                           st.booleans()), max_size=12), min_size=2, max_size=12),
       probes=st.lists(probe_row, max_size=20), global_scope=st.booleans())
def test_indexed_state_answers_as_a_brute_force_model(history, probes, global_scope):
    """A shard kept between batches answers through its key-hash index exactly as the "latest row per
    identity" model: colliding hashes, keys in several partitions, null keys and partitions (they
    match nothing), base and overlay, folds. Identity is `HoodieKey#equals` (record key and partition
    path), or the record key alone for a global index (`HoodieGlobalSimpleIndex#tagLocationInternal`)."""
    schema = ks.memory_schema(pa.int64())

    def conformed(table: pa.Table) -> pa.Table:
        return pa.Table.from_arrays([table.column(f.name).cast(f.type) for f in schema], schema=schema)

    # A base of every identity (24 rows: no fold before the third batch, which finds the base indexed).
    seed = conformed(_changes([(k, p, -1, False) for k in COLLIDING for p in PARTITIONS], "0", global_scope))
    state = ks.ShardState("s", seed, schema.empty_table(), (), global_scope)
    model = _as_model(seed, global_scope)
    probe = pa.table({"k": pa.array([p[0] for p in probes], pa.string()),
                      "p": pa.array([p[1] for p in probes], pa.string())})
    keys = ["k"] if global_scope else ["k", "p"]
    for i, rows in enumerate(history):
        found = state.lookup(probe, keys, (ks.ORDERING, ks.DELETED)).columns.to_pylist()
        for (key, partition), got in zip(probes, found, strict=True):
            expected = None if key is None or (partition is None and not global_scope) else \
                model.get(key if global_scope else (key, partition))
            assert (got[ks.ORDERING], got[ks.DELETED]) == (expected or (None, None))
        asked = COLLIDING[i % 4:][:3]
        expected_rows = {k: v for k, v in model.items() if (k if global_scope else k[0]) in asked}
        assert _as_model(state.rows_for_keys(pa.array(asked)), global_scope) == expected_rows
        changes = conformed(_changes(rows, f"{i}", global_scope))
        state = state.with_changes(changes)
        model.update(_as_model(changes, global_scope))
        assert _as_model(state.table, global_scope) == model
    assert khi.index_of(state.base, ks.KEY) is not None, "the base answered through its index"


def test_a_warm_batch_hashes_the_batch_not_the_state(monkeypatch):
    """Once a shard has been probed twice, a batch hashes only its own keys: the state's index is kept
    with the base (through `dataclasses.replace`) and derived when changes are applied. The answers
    stay those of `HoodieKey#equals` identities (record key and partition path)."""
    monkeypatch.setattr(ks, "_OVERLAY_MIN_ROWS", 65_536)
    schema = ks.memory_schema(pa.int64())

    def batch(start: int, n: int) -> pa.Table:
        table = _changes([(f"key-{i}", "p0", i, False) for i in range(start, start + n)], "1", False)
        return pa.Table.from_arrays([table.column(f.name).cast(f.type) for f in schema], schema=schema)

    state = ks.ShardState("s", batch(0, 20_000), schema.empty_table(), (), False)
    hashed = []
    original = khi.key_hashes
    monkeypatch.setattr(khi, "key_hashes", lambda column: hashed.append(len(column)) or original(column))
    for b in range(4):
        rows = batch(19_900 + 100 * b, 200)
        probe = pa.table({"k": rows.column(ks.KEY), "p": rows.column(ks.PARTITION)})
        found = state.lookup(probe, ["k", "p"], (ks.ORDERING,)).columns.column(ks.ORDERING).to_pylist()
        assert found == [i if i < 20_000 or b and i < 19_900 + 100 * b + 100 else None
                         for i in range(19_900 + 100 * b, 20_100 + 100 * b)]
        state = ks.replace(state.with_changes(rows), segments=())
        if b >= 2:  # the base was indexed by the second batch's probe
            assert hashed and max(hashed) <= 200, hashed
        hashed.clear()
    assert khi.index_of(state.base, ks.KEY) is not None


def test_an_index_answers_only_for_its_own_table():
    """An index is found by the table object's identity: an equal table, or a table that later takes
    the same memory, never answers with another table's rows (a structure of ours, no Hudi rule; the
    match itself is `HoodieKey#equals`)."""
    table = pa.table({ks.KEY: ["a", "b"]})
    index = khi.KeyHashIndex.of_hashes(ks.KEY, khi.key_hashes(table.column(ks.KEY)))
    khi.register(table, index)
    assert khi.index_of(table, ks.KEY) is index
    assert khi.index_of(pa.table({ks.KEY: ["a", "b"]}), ks.KEY) is None
    assert khi.index_of(table, "other") is None
    dead = id(table)
    del table
    assert dead not in khi._ENTRIES
    state = ks.ShardState("s", pa.table({ks.KEY: ["b", "a"], ks.PARTITION: ["p", "p"]}),
                          pa.table({ks.KEY: pa.array([], pa.string()), ks.PARTITION: pa.array([], pa.string())}), ())
    probe = pa.table({"k": ["a"], "p": ["p"]})
    for _ in range(3):  # probed often enough to be indexed
        state.lookup(probe, ["k", "p"], (ks.KEY,))
    other = ks.replace(state, base=pa.table({ks.KEY: ["x", "a"], ks.PARTITION: ["p", "p"]}))
    assert ks.match_rows(other.base, [ks.KEY, ks.PARTITION], probe, ["k", "p"])[0].tolist() == [1]
    assert ks.match_rows(state.base, [ks.KEY, ks.PARTITION], probe, ["k", "p"])[0].tolist() == [1]


# -- a batch's changes applied with the overlay rows its lookup found (`resolve.Resolved.overlay_replaced`)

from ingest.hudi.merge import precombine as pcb  # noqa: E402
from ingest.write import resolve as rs  # noqa: E402


def _sorted_rows(state: ks.ShardState) -> list[dict]:
    return sorted(state.table.to_pylist(), key=lambda r: (r[ks.KEY], r[ks.PARTITION]))


incoming = st.tuples(st.sampled_from(KEYS), st.sampled_from(PARTITIONS), st.integers(0, 99), st.booleans())


@settings(max_examples=60, deadline=None)
@given(seed=st.lists(change, max_size=20), history=st.lists(st.lists(incoming, max_size=10), min_size=1, max_size=8),
       global_scope=st.booleans())
def test_changes_replace_the_overlay_rows_their_lookup_found(seed, history, global_scope):
    """Resolving a batch, then applying its state changes with the overlay rows the lookup found,
    gives the state that probing the overlay for them gives: every identity once, at its latest row
    (stale versions, deletes of missing keys and moved keys included)."""
    schema = ks.memory_schema(pa.int64())

    def conformed(table: pa.Table) -> pa.Table:
        return pa.Table.from_arrays([table.column(f.name).cast(f.type) for f in schema], schema=schema)

    state = ks.ShardState("s", conformed(_changes(seed, "0", global_scope)), schema.empty_table(), (), global_scope)
    for i, rows in enumerate(history):
        latest = {}
        for key, partition, ordering, deleted in rows:  # pre-combined: one row per identity
            latest[key if global_scope else (key, partition)] = (key, partition, ordering, deleted)
        values = list(latest.values())
        combined = pa.table({pcb.KEY: pa.array([v[0] for v in values], pa.string()),
                             pcb.PARTITION: pa.array([v[1] for v in values], pa.string()),
                             "ts": pa.array([v[2] for v in values], pa.int64()),
                             pcb.DELETE: pa.array([v[3] for v in values], pa.bool_())})
        resolved = rs.resolve(combined, state, "ts", True, global_scope)
        upserts = resolved.upserts.set_column(resolved.upserts.schema.get_field_index(rs.FILE_ID), rs.FILE_ID,
                                              pa.array(["f"] * resolved.upserts.num_rows, pa.string()))
        changes = conformed(rs.state_changes(upserts, resolved.deleted_state, "ts", pa.int64(), f"{i + 1}"))
        probed = state.with_changes(changes)
        told = state.with_changes(changes, resolved.overlay_replaced)
        assert _sorted_rows(told) == _sorted_rows(probed)
        assert told.table.num_rows == len({(r[ks.KEY], None if global_scope else r[ks.PARTITION])
                                           for r in told.table.to_pylist()}), "one row per identity"
        state = told


def test_a_state_this_process_wrote_in_a_narrower_ordering_type_is_read_again_in_the_wider(tmp_path, monkeypatch):
    """The table's int ordering field became long (`promotion.widens`): the base segment this process
    folded while it was int is read again and widened, not taken from the process's cache with its int
    ordering column (which the next fold could not concatenate with long changes)."""
    monkeypatch.setattr(ks, "MAX_DELTAS", 0)  # every write folds the shard into a base segment
    narrow = ks.KeyStateStore(Storage(str(tmp_path)), pa.int32(), False)
    state = narrow.load("shard", lambda _: True)
    narrow.write(state, _changes([("a", "p0", 1, False)], "1", False).cast(ks.state_schema(pa.int32())),
                 "00000000000000001")
    wide = ks.KeyStateStore(Storage(str(tmp_path)), pa.int64(), False)
    state = wide.load("shard", lambda _: True)
    assert state.base.schema.field(ks.ORDERING).type == pa.int64()
    wide.write(state, _changes([("b", "p0", 2**40, False)], "2", False), "00000000000000002")
    assert _as_model(wide.load("shard", lambda _: True).table, False) == {("a", "p0"): (1, False),
                                                                          ("b", "p0"): (2**40, False)}


def _one_chunk(state: ks.ShardState) -> bool:
    return all(len(column.chunks) <= 1 for part in (state.base, state.overlay) for column in part.columns)


def test_a_state_kept_between_batches_is_one_chunk(tmp_path, monkeypatch):
    """Every later batch takes the rows its keys found from the kept state, and a take from a chunked
    column costs several times one from a contiguous one: whether the state was read back from a segment
    of many row groups, or built from a batch Spark handed over in many record batches, it is kept as
    one chunk, and still answers as the latest row per identity."""
    monkeypatch.setattr(ks, "_OVERLAY_MIN_ROWS", 65_536)
    storage = Storage(str(tmp_path))
    store = ks.KeyStateStore(storage, pa.int64(), False)
    rows = _changes([(f"key-{i}", f"p{i % 3}", i, False) for i in range(3_000)], "1", False)
    path = tmp_path / ks.Segment("shard", "00000000000000001", "base").path
    path.parent.mkdir(parents=True)
    pq.write_table(rows, path, row_group_size=500)  # six row groups: six chunks when read
    state = store.load("shard", lambda _: True)
    assert _one_chunk(state) and state.base.num_rows == 3_000

    pieces = [_changes([(f"key-{i}", f"p{i % 3}", 10_000 + i, False) for i in range(j, 3_300 + j, 300)], "2", False)
              for j in range(0, 300, 60)]  # five record batches, each changing ten keys and adding one
    batch = pa.concat_tables(pieces)
    assert batch.column(0).num_chunks == 5
    store.write(state, batch, "00000000000000002")
    state = store.load("shard", lambda _: True)
    assert _one_chunk(state) and state.overlay.num_rows == 55
    assert _as_model(state.table, False) == {**_as_model(rows, False), **_as_model(batch, False)}

    ks._CACHE.entries.clear()
    ks._CACHE.written.clear()
    fresh = ks.KeyStateStore(Storage(str(tmp_path)), pa.int64(), False).load("shard", lambda _: True)
    assert _one_chunk(fresh)
    assert _as_model(fresh.table, False) == _as_model(state.table, False)
