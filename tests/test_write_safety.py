"""The writer's guarantees that do not need Spark: replays, one writer per table, schema changes,
bad records, hostile partition values, and object-store semantics (no rename, no append)."""

from __future__ import annotations

import collections
import dataclasses
import os
import re
import time
from pathlib import Path

import crashes
import hudi_invariants
import pyarrow as pa
import pytest

from ingest.errors import BadRecordError, ConcurrentWriterError, SchemaEvolutionError
from ingest.hudi.table import markers
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.storage import Storage
from ingest.write import quarantine
from ingest.write.batch import LocalEngine, LocalWriter
from ingest.write.commit import BatchId
from ingest.write.lock import WriterLock
from ingest.write.options import IndexOptions, IndexType, WriteOptions

BASE = {
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
}


def opts(path, index="bucket", **hudi) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="t", hudi={**BASE, **hudi},
                        index=IndexOptions(type=IndexType(index), bucket_count=2))


def rows(*records) -> pa.Table:
    return pa.table({
        "id": [r[0] for r in records],
        "part": [r[1] for r in records],
        "ts": pa.array([r[2] for r in records], pa.int64()),
        "v": [r[3] for r in records],
    })


def snapshot(path) -> set[tuple]:
    return {(r["id"], r["part"], r["ts"], r["v"]) for r in read_snapshot(HudiTable.open(str(path))).to_pylist()}


def test_replayed_batch_is_skipped_and_nothing_is_duplicated(table_dir):
    writer = LocalWriter(opts(table_dir))
    first = writer.write(rows(("a", "p", 1, "x")), batch=BatchId("q", 0))
    replay = writer.write(rows(("a", "p", 1, "x"), ("b", "p", 1, "y")), batch=BatchId("q", 0))
    writer.write(rows(("b", "p", 2, "z")), batch=BatchId("q", 1))
    assert first.instant and replay.skipped_replay and replay.instant is None
    assert snapshot(table_dir) == {("a", "p", 1, "x"), ("b", "p", 2, "z")}
    table = HudiTable.open(str(table_dir))
    assert len(table.timeline().completed(Action.DELTA_COMMIT)) == 2
    # The checkpoint is recorded where Hudi's own streaming sink records it.
    meta = table.commit_metadata(table.timeline().last_completed())
    assert meta.extra_metadata["_hudi_streaming_sink_checkpoint"] == '{"q":"1"}'


def test_a_second_writer_fails_fast_naming_the_holder(table_dir):
    options = opts(table_dir)
    LocalWriter(options).write(rows(("a", "p", 1, "x")))
    holder = WriterLock(Storage(str(table_dir)), expiry_seconds=60)
    holder.acquire()
    try:
        with pytest.raises(ConcurrentWriterError, match=r"another writer \(host .*, pid \d+"):
            LocalWriter(options).write(rows(("b", "p", 1, "y")))
    finally:
        holder.release()
    LocalWriter(options).write(rows(("b", "p", 1, "y")))  # released: the next writer proceeds
    assert snapshot(table_dir) == {("a", "p", 1, "x"), ("b", "p", 1, "y")}


def test_a_writer_whose_lease_expired_loses_it_and_cannot_commit(table_dir):
    storage = Storage(str(table_dir))
    stale = WriterLock(storage, expiry_seconds=0.3)
    stale.acquire()
    stale._stop.set()  # its heartbeat stops, as if the process hung
    time.sleep(0.6)
    taker = WriterLock(storage, expiry_seconds=60)
    taker.acquire()
    with pytest.raises(ConcurrentWriterError, match="lost its lease"):
        stale.check()
    taker.release()


def test_incompatible_schema_change_fails_before_anything_is_written(table_dir):
    options = opts(table_dir)
    LocalWriter(options).write(rows(("a", "p", 1, "x")))
    table = HudiTable.open(str(table_dir))
    before = table.timeline().instants
    bad = pa.table({"id": ["b"], "part": ["p"], "ts": pa.array([2], pa.int64()), "v": pa.array([True])})
    with pytest.raises(SchemaEvolutionError, match="column 'v' changes type"):
        LocalWriter(options).write(bad)
    assert table.timeline().instants == before
    # A new nullable column is accepted, and old rows read it as null.
    grown = rows(("b", "p", 2, "y")).append_column("extra", pa.array([1.5]))
    LocalWriter(options).write(grown)
    got = {r["id"]: r["extra"] for r in read_snapshot(HudiTable.open(str(table_dir))).to_pylist()}
    assert got == {"a": None, "b": 1.5}


def test_a_column_differing_from_the_tables_only_in_case_fails_before_anything_is_written(table_dir):
    """Hudi's writer matches column names exactly (`AvroSchemaUtils.checkValidEvolution`,
    `findAnyMissingFields`), and Spark's readers resolve them ignoring case
    (`SchemaUtils.checkSchemaColumnNameDuplication`): a column `V` added beside `v`, at the top or in a nested
    record, or a batch holding both, would leave a table Spark refuses to read. Each is refused before
    anything is written, naming both columns."""
    options = opts(table_dir)
    LocalWriter(options).write(rows(("a", "p", 1, "x")).append_column(
        "addr", pa.array([{"city": "c"}], pa.struct([("city", pa.string())]))))
    table = HudiTable.open(str(table_dir))
    before = table.timeline().instants
    clash = rows(("b", "p", 2, "y"))
    clash = clash.rename_columns([n if n != "v" else "V" for n in clash.column_names])
    with pytest.raises(SchemaEvolutionError, match="column 'V' differs from the table's 'v' only in case"):
        LocalWriter(options).write(clash)
    nested = rows(("b", "p", 2, "y")).append_column(
        "addr", pa.array([{"City": "d"}], pa.struct([("City", pa.string())])))
    with pytest.raises(SchemaEvolutionError, match="field 'addr.City' differs from the table's 'addr.city' only"):
        LocalWriter(options).write(nested)
    both = rows(("b", "p", 2, "y")).append_column("V", pa.array(["z"]))
    with pytest.raises(SchemaEvolutionError, match="names differ only in case: 'v' and 'V'"):
        LocalWriter(options).write(both)
    assert table.timeline().instants == before


def test_null_key_fails_the_batch_naming_the_record_or_is_quarantined(table_dir, tmp_path):
    options = opts(table_dir)
    batch = rows(("a", "p", 1, "x"), (None, "p", 1, "no key"))
    with pytest.raises(BadRecordError, match="no key"):
        LocalWriter(options).write(batch)
    assert not HudiTable.exists(str(table_dir)) or not HudiTable.open(str(table_dir)).timeline().instants

    qpath = tmp_path / "quarantine"
    engine = LocalEngine(on_error="quarantine",
                         quarantine=lambda bad: quarantine.write(Storage(str(qpath)), bad, "0", "00000"))
    result = LocalWriter(options, engine).write(batch)
    assert result.quarantined == 1 and result.counts["upserts"] == 1
    kept = quarantine.read_all(Storage(str(qpath)))
    assert kept.num_rows == 1 and kept.column("v").to_pylist() == ["no key"]
    assert "id" in kept.column("_ingest_error")[0].as_py()


HOSTILE = ["../../escape", "/abs/path", "a/b", "..", ".", "", ".hoodie", "x" * 300, "nul\x00byte",
           "tab\tand\nnewline", "ünïcödé ✓", "a=b", "%2F..%2F", "C:\\windows", "   "]


@pytest.mark.parametrize("urlencode", ["false", "true"])
@pytest.mark.parametrize("index", ["bucket", "key"])
def test_hostile_partition_values_and_keys_never_leave_the_table(tmp_path, urlencode, index):
    root = tmp_path / "root"
    table = root / "table"
    table.mkdir(parents=True)
    outside_before = {p for p in tmp_path.rglob("*")} - {p for p in table.rglob("*")} - {table}
    options = opts(table, index, **{"hoodie.datasource.write.partitionpath.urlencode": urlencode})
    bad_rows = []
    engine = LocalEngine(on_error="quarantine", quarantine=bad_rows.append)
    records = [(f"key-{i}-{v}", v, 1, f"v{i}") for i, v in enumerate(HOSTILE)]
    records += [(k, "ok", 1, "hostile key") for k in HOSTILE if k]
    LocalWriter(options, engine).write(rows(*records))
    outside_after = {p for p in tmp_path.rglob("*")} - {p for p in table.rglob("*")} - {table}
    assert outside_after == outside_before, "a file was created outside the table"
    for path in table.rglob("*"):
        assert os.path.realpath(path).startswith(os.path.realpath(table))
    got = read_snapshot(HudiTable.open(str(table)))
    accepted = {r["id"] for r in got.to_pylist()}
    rejected = {r for t in bad_rows for r in t.column("id").to_pylist()}
    assert accepted | rejected == {r[0] for r in records}, "every record is written or quarantined"
    assert not accepted & rejected
    for r in got.to_pylist():
        depth = len([s for s in r["_hoodie_partition_path"].split("/") if s])
        assert depth == 1
        assert ".." not in r["_hoodie_partition_path"].split("/")
    for t in bad_rows:
        assert all(t.column("_ingest_error").to_pylist())
    assert hudi_invariants.check_partition_values(table) == len(accepted)
    misread = {r["id"]: r["_ingest_error"] for t in bad_rows for r in t.to_pylist() if r["part"] == "a=b"}
    if urlencode == "false":
        assert "holds '='" in misread[f"key-{HOSTILE.index('a=b')}-a=b"]
    else:
        assert not misread


# -- object stores ------------------------------------------------------------------------------


@pytest.mark.parametrize("index", ["bucket", "key"])
def test_object_store_table_equals_local_table(s3, table_dir, index):
    batches = [
        rows(("a", "p", 1, "x"), ("b", "q", 1, "y")),
        rows(("a", "p", 2, "x2"), ("c", "q", 1, "z"), ("b", "q", 0, "late")),
        pa.table({"id": ["c"], "part": ["q"], "ts": pa.array([5], pa.int64()), "v": [None],
                  "_hoodie_is_deleted": [True]}),
        rows(("d", "p", 3, "w")),
    ]
    local = opts(table_dir, index)
    remote = dataclasses.replace(local, table_path=f"s3://lake/t_{index}", storage_options=s3)
    for b in batches:
        LocalWriter(local).write(b)
        LocalWriter(remote).write(b)
    from_s3 = read_snapshot(HudiTable.open(f"s3://lake/t_{index}", s3))
    assert {(r["id"], r["ts"], r["v"]) for r in from_s3.to_pylist()} == \
        {(i, t, v) for i, _, t, v in snapshot(table_dir)}
    storage = Storage(f"s3://lake/t_{index}", s3)
    logs = [e for e in storage.walk_files("") if ".log." in e.name]
    # No append: every commit that wrote log blocks wrote a new log file version. With the key index
    # (an index that cannot index log files) new keys go to base files, as Hudi's writer puts them:
    # only the update of a (batch 2) and the delete of c (batch 3) are log blocks.
    assert len(logs) >= 4 if index == "bucket" else len(logs) == 2
    assert not [e for e in storage.walk_files("") if e.name.endswith(".tmp")]


@pytest.mark.parametrize("index", ["bucket", "key"])
def test_a_commit_on_an_object_store_lists_each_folder_once(s3, monkeypatch, index):
    """Each request to an object store costs a round trip, and a stream pays them every micro-batch:
    a commit reads `hoodie.properties` without first asking whether `.hoodie` exists, lists each
    partition once (the walk that finds partitions feeds the file system view), gathers its
    markers in one recursive listing, not one per partition folder, which also finds `MARKERS.type`,
    and deletes its heartbeat once."""
    import s3fs

    table = f"t_obj_{index}"  # moto's buckets outlive its server in this process
    calls: list[tuple[str, str, str]] = []
    for name in ("_lsdir", "_cat_file", "_info", "_rm_file"):
        real = getattr(s3fs.S3FileSystem, name)

        async def spy(self, path, *args, _real=real, _name=name, **kwargs):
            calls.append((_name, path.split(f"/{table}/", 1)[-1], kwargs.get("delimiter", "/")))
            return await _real(self, path, *args, **kwargs)

        monkeypatch.setattr(s3fs.S3FileSystem, name, spy)
    options = dataclasses.replace(opts(f"s3://lake/{table}", index), storage_options=s3)
    parts = [f"p{i}" for i in range(6)]
    LocalWriter(options).write(rows(*[(f"k{i}", p, 1, "x") for i, p in enumerate(parts)]))
    calls.clear()
    LocalWriter(options).write(rows(*[(f"k{i}", p, 2, "y") for i, p in enumerate(parts)]))

    listed = [path for name, path, _ in calls if name == "_lsdir"]
    for p in parts:
        assert listed.count(p) == 1, (p, listed)
    marker_listings = [(path, delimiter) for name, path, delimiter in calls
                       if name == "_lsdir" and path.startswith(".hoodie/.temp/")]
    # One to gather them, one in removing the folder (s3fs's recursive `rm`).
    assert len(marker_listings) == 2 and {d for _, d in marker_listings} == {""}, marker_listings
    assert ("_info", ".hoodie", "/") not in calls
    assert not [path for name, path, _ in calls if name == "_info" and path.endswith("MARKERS.type")]
    assert [path for name, path, _ in calls if name == "_cat_file"].count(".hoodie/hoodie.properties") <= 2
    # The instant's heartbeat is deleted once, though both the commit and the write's end stop it.
    assert len([path for name, path, _ in calls if name == "_rm_file" and path.startswith(".hoodie/.heartbeat/")]) == 1
    assert {r["id"]: r["v"] for r in read_snapshot(HudiTable.open(f"s3://lake/{table}", s3)).to_pylist()} == \
        {f"k{i}": "y" for i in range(len(parts))}


def _side_by_side(monkeypatch, kind_of) -> tuple[collections.Counter, list[tuple[str, str]]]:
    """The most S3 requests of each kind in flight at once, and every PUT's ("start" | "end", key) in
    the order they happened. `kind_of("list" | "put", key)` names a request's kind (None: not watched);
    keys are relative to the bucket. Listings are watched where s3fs lists a folder (`_lsdir`), writes
    where it calls PutObject.

    A watched request waits (a second at most) for another of its kind before it goes on, so requests
    made side by side are seen together however the threads are scheduled, and requests made one
    after another are seen alone."""
    import asyncio

    import s3fs

    in_flight: collections.Counter = collections.Counter()
    peak: collections.Counter = collections.Counter()
    company: dict[str, asyncio.Event] = {}
    puts: list[tuple[str, str]] = []

    async def watched(kind, request):
        if kind is None:
            return await request
        in_flight[kind] += 1
        peak[kind] = max(peak[kind], in_flight[kind])
        arrived = company.setdefault(kind, asyncio.Event())
        if in_flight[kind] > 1:
            arrived.set()
        try:
            try:
                await asyncio.wait_for(arrived.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
            return await request
        finally:
            in_flight[kind] -= 1

    real_lsdir, real_call = s3fs.S3FileSystem._lsdir, s3fs.S3FileSystem._call_s3

    async def lsdir(self, path, *args, **kwargs):
        key = path.split("/", 1)[1] if "/" in path else ""
        return await watched(kind_of("list", key), real_lsdir(self, path, *args, **kwargs))

    async def call(self, method, *args, **kwargs):
        if method != "put_object":
            return await real_call(self, method, *args, **kwargs)
        key = kwargs.get("Key", "")
        puts.append(("start", key))
        try:
            return await watched(kind_of("put", key), real_call(self, method, *args, **kwargs))
        finally:
            puts.append(("end", key))

    monkeypatch.setattr(s3fs.S3FileSystem, "_lsdir", lsdir)
    monkeypatch.setattr(s3fs.S3FileSystem, "_call_s3", call)
    return peak, puts


@pytest.mark.parametrize("index", ["bucket", "key"])
def test_a_commits_independent_requests_to_an_object_store_go_side_by_side(s3, monkeypatch, index):
    """On an object store every request waits a network round trip, so a commit makes the requests
    that do not depend on each other side by side (`Storage.map`): the listings of the partitions for
    the file system view, the key-index shards' listings and new segments, each file group's log
    file (its marker still before it) and merges of small base files. A commit over 64 partitions took 24.1 s with a 20 ms round trip
    when each waited for the last (`jobs/benchmark_object_store.py --latency-ms 20`)."""
    table = f"t_side_{index}"  # moto's buckets outlive its server in this process
    options = dataclasses.replace(opts(f"s3://lake/{table}", index), storage_options=s3)
    parts = [f"p{i}" for i in range(6)]
    LocalWriter(options).write(rows(*[(f"k{i}", p, 1, "x") for i, p in enumerate(parts)]))

    def kind_of(request, key):
        if not key.startswith(f"{table}/"):
            return None
        key = key[len(table) + 1:].rstrip("/")
        if request == "list" and re.fullmatch(r"p\d", key):
            return "partition listing"
        if request == "list" and key.startswith(".hoodie/.aux/ingest/key_index/"):
            return "shard listing"
        if request == "put" and HUDI_LOG_FILE.match(key.rpartition("/")[2]):
            return "log file"
        if request == "put" and key.startswith(".hoodie/.aux/ingest/key_index/") and ".parquet" in key:
            return "key-index segment"
        if request == "put" and re.fullmatch(r"p\d/[^/]+\.parquet", key):
            return "base file"
        return None

    peak, puts = _side_by_side(monkeypatch, kind_of)
    # New keys: with the key index they fill the partitions' small base files (`HoodieMergeHandle`).
    LocalWriter(options).write(rows(*[(f"n{i}", p, 1, "n") for i, p in enumerate(parts)]))
    if index == "key":
        assert peak["base file"] >= 2, peak
    LocalWriter(options).write(rows(*[(f"k{i}", p, 2, "y") for i, p in enumerate(parts)]))  # log files
    assert peak["partition listing"] >= 2, peak
    assert peak["shard listing"] >= 2, peak
    assert peak["log file"] >= 2, peak
    assert peak["key-index segment"] >= 2, peak
    # Each data file's marker was written before the file was begun (`DirectWriteMarkers`).
    ended = {key: n for n, (event, key) in enumerate(puts) if event == "end"}
    files = [(n, key) for n, (event, key) in enumerate(puts) if event == "start" and re.match(rf"{table}/p\d/", key)]
    assert files
    for n, key in files:
        partition, _, name = key[len(table) + 1:].partition("/")
        [marker] = [k for k in ended if k.startswith(f"{table}/.hoodie/.temp/") and f"/{partition}/{name}.marker." in k]
        assert ended[marker] < n, key
    left = {r["id"]: r["v"] for r in read_snapshot(HudiTable.open(f"s3://lake/{table}", s3)).to_pylist()}
    assert left == {**{f"k{i}": "y" for i in range(len(parts))}, **{f"n{i}": "n" for i in range(len(parts))}}


def test_storage_map_waits_for_every_call_and_raises_the_first_failure(s3, tmp_path):
    """`Storage.map` runs calls side by side on an object store: none is still running when it
    returns or raises, results keep the items' order, and the first failure in that order is raised.
    On a local disk the calls run one after another, in the caller's thread."""
    import threading

    remote = Storage("s3://lake/map", s3)
    ended: list[int] = []

    def put(i: int) -> int:
        if i == 1:
            raise OSError("the second request failed")
        remote.write(f"f{i}", b"x")
        ended.append(i)
        return i

    with pytest.raises(OSError, match="second request"):
        remote.map(put, range(6))
    assert sorted(ended) == [0, 2, 3, 4, 5]  # all others ran, and had ended
    assert remote.map(lambda i: remote.read(f"f{i}") + bytes([48 + i]), [5, 0, 3]) == [b"x5", b"x0", b"x3"]

    local = Storage(str(tmp_path), {})
    threads = local.map(lambda _: threading.current_thread(), range(3))
    assert threads == [threading.current_thread()] * 3


def test_storage_map_makes_as_many_requests_at_once_as_the_client_keeps_connections(s3):
    """botocore keeps 10 connections unless `max_pool_connections` says otherwise; `map` follows what
    the storage options give the client."""
    assert Storage("s3://lake/pool", s3).requests_at_once == 10
    wider = {**s3, "config_kwargs": {"max_pool_connections": 24}}
    storage = Storage("s3://lake/pool", wider)
    assert storage.requests_at_once == 24
    assert storage.fs.config_kwargs["max_pool_connections"] == 24
    storage.map(lambda i: storage.write(f"f{i}", b"x"), range(30))
    assert sorted(e.name for e in storage.list("")) == sorted(f"f{i}" for i in range(30))


# FSUtils.LOG_FILE_PATTERN, written out here so the check does not lean on the code under test.
HUDI_LOG_FILE = re.compile(r"^\.(?P<id>.+)_(?P<base>\d+)\.log\.(?P<version>\d+)_(?P<token>\d+-\d+-\d+)$")


@pytest.mark.parametrize("index", ["bucket", "key"])
def test_a_write_killed_on_an_object_store_is_rolled_back_by_its_markers(s3, index):
    """A writer killed after writing its files leaves markers on S3 (one marker per data file, in
    partition folders under `.hoodie/.temp/<instant>`, gathered by one recursive listing); the next
    writer rolls the instant back from them (`MarkerBasedRollbackStrategy`): every file they name is
    deleted or neutralized by a command block, the marker folder is gone, and the table reads the last
    committed rows."""
    path = f"s3://lake/t_killed_{index}"  # moto's buckets outlive its server in this process
    options = dataclasses.replace(opts(path, index), storage_options=s3)

    def batch(n: int) -> pa.Table:
        return rows(*[(f"k{i}", f"p{i % 3}", n, f"k{i}-{n}") for i in range(6)])

    LocalWriter(options).write(batch(1))
    assert crashes.in_child("after_data_write", lambda: LocalWriter(options).write(batch(2)))
    table = HudiTable.open(path, s3)
    [failed] = table.timeline().pending(Action.DELTA_COMMIT)
    left = markers.list_markers(table.storage, failed.timestamp)
    assert {m.partition_path for m in left} == {"p0", "p1", "p2"}
    assert all(table.storage.exists(m.data_file_path) for m in left)

    LocalWriter(options).write(batch(3))
    table = HudiTable.open(path, s3)
    timeline = table.timeline()
    assert not timeline.pending() and failed.timestamp not in {i.timestamp for i in timeline.completed()}
    # A base file or a log file that opened its slice is deleted; a log file appended to an older slice
    # (a new log version here: no appends on S3) stays, and the rollback's COMMAND block goes to the
    # slice's next log version, named with Hudi's roll-over token 1-0-1 (`BaseRollbackHelper`).
    for m in left:
        if not table.storage.exists(m.data_file_path):
            continue
        assert m.io_type is markers.IOType.APPEND, m
        failed_log = HUDI_LOG_FILE.match(m.file_name)
        later = [HUDI_LOG_FILE.match(e.name) for e in table.storage.list(m.partition_path)]
        assert [g for g in later if g and g["id"] == failed_log["id"] and g["base"] == failed_log["base"]
                and int(g["version"]) > int(failed_log["version"]) and g["token"] == "1-0-1"], m
    assert list(table.storage.walk_files(markers.marker_folder(failed.timestamp))) == []
    assert {(r["id"], r["v"]) for r in read_snapshot(table).to_pylist()} == {(f"k{i}", f"k{i}-3") for i in range(6)}


def test_log_files_on_local_disk_are_appended_while_under_the_limit(table_dir):
    writer = LocalWriter(opts(table_dir))
    for i in range(4):
        writer.write(rows((f"k{i}", "p", 1, "x")))
    logs = sorted(p.name for p in Path(table_dir).rglob(".*.log.*"))
    assert all(".log.1_" in n for n in logs), logs  # one log file per file group, appended to


def test_fsync_storage_option_flushes_every_table_file_before_it_is_published(table_dir, monkeypatch):
    """`table.storage_options: {fsync: true}`: each file the writer publishes went through an fsync
    (under its own name, or the temporary name it was moved from), so a commit survives power loss."""
    synced: list[str] = []
    moved: dict[str, str] = {}  # published name -> the temporary it was moved from
    real_fsync, real_replace, real_link = os.fsync, os.replace, os.link

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def recording_replace(src, dst, *args, **kwargs):
        moved[os.path.abspath(dst)] = os.path.abspath(src)
        return real_replace(src, dst, *args, **kwargs)

    def recording_link(src, dst, *args, **kwargs):
        moved[os.path.abspath(dst)] = os.path.abspath(src)
        return real_link(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    monkeypatch.setattr(os, "link", recording_link)
    writer = LocalWriter(dataclasses.replace(opts(table_dir), storage_options={"fsync": True}))
    writer.write(rows(("a", "p1", 1, "x"), ("b", "p2", 1, "y")))
    writer.write(rows(("a", "p1", 2, "x2"), ("c", "p1", 1, "z")))
    assert snapshot(table_dir) == {("a", "p1", 2, "x2"), ("b", "p2", 1, "y"), ("c", "p1", 1, "z")}

    def published_from(path: Path) -> bool:
        return str(path) in synced or moved.get(str(path)) in synced

    files = [p for p in Path(table_dir).rglob("*") if p.is_file() and "/.hoodie/.lock" not in str(p)]
    data = [p for p in files if ".log." in p.name]
    commits = [p for p in files if p.name.endswith(".deltacommit")]
    assert data and len(commits) == 2
    unsynced = [str(p.relative_to(table_dir)) for p in data + commits if not published_from(p)]
    assert unsynced == []

    monkeypatch.setattr(os, "fsync", recording_fsync)
    synced.clear()
    LocalWriter(opts(table_dir)).write(rows(("d", "p1", 1, "w")))
    assert synced == [], "without the option nothing is flushed"


def _stat(table: HudiTable, timestamp: str):
    instant = next(i for i in table.timeline().completed(Action.DELTA_COMMIT) if i.timestamp == timestamp)
    [stat] = table.commit_metadata(instant).all_write_stats()
    return stat


def test_delta_write_stats_list_the_slices_log_files_and_the_whole_file_size(table_dir):
    """`HoodieAppendHandle.init` seeds `logFiles` with the latest slice's `FileSlice.getLogFiles()`
    (a TreeSet on `HoodieLogFile.getReverseLogFileComparator`: newest first) and `updateWriteStat`
    adds the file written when it is not among them; `close()` then sets `fileSizeInBytes` to the
    log file's size on storage ("update final size, once for all log files"), while
    `totalWriteBytes` is the `AppendResult.size()` of this commit's blocks."""
    writer = LocalWriter(dataclasses.replace(opts(table_dir), log_file_max_bytes=1))
    instants = [writer.write(rows(("k", "p", i, f"v{i}"))).instant for i in range(3)]
    table = HudiTable.open(str(table_dir))
    stats = [_stat(table, i) for i in instants]
    names = [Path(s.path).name for s in stats]
    assert [int(n.split(".log.")[1].split("_")[0]) for n in names] == [1, 2, 3], names
    assert [list(s.log_files) for s in stats] == [[names[0]], [names[0], names[1]], [names[1], names[0], names[2]]]
    for s in stats:
        assert s.file_size_in_bytes == os.path.getsize(Path(table_dir) / s.path) == s.total_write_bytes

    appended = LocalWriter(opts(table_dir)).write(rows(("k", "p", 9, "v9"))).instant
    stat = _stat(table, appended)
    assert list(stat.log_files) == [names[2], names[1], names[0]]
    assert stat.file_size_in_bytes == os.path.getsize(Path(table_dir) / stat.path) > stat.total_write_bytes


def test_conf_backfill_runs_alongside_the_stream_taking_turns(table_dir):
    """Writers take turns per commit, as Hudi's LockManager.lock makes writers with optimistic concurrency
    control wait (retrying `tryLock`) for the lock another writer's commit holds: the backfill of
    conf/backfill.yaml, started while the stream holds the lease, waits (write.lock_wait_seconds) and
    commits once the stream's commit releases it, so the example may offer to run alongside the stream."""
    import threading

    from ingest.config.loader import load_config
    from ingest.pipeline.backfill import write_options

    conf = Path(__file__).resolve().parent.parent / "conf" / "backfill.yaml"
    config = load_config(conf, [f"table.path={table_dir}"], check_table=False)
    backfill = write_options(config)
    assert backfill.checkpoint_id == "orders-backfill-2023" and backfill.lock_wait_seconds == 600
    stream = WriterLock(Storage(str(table_dir)), expiry_seconds=60, description="orders-stream")
    stream.acquire()
    data = pa.table({"order_id": ["o-1"], "region": ["emea"], "updated_at": pa.array([1], pa.int64())})
    done: list = []
    thread = threading.Thread(target=lambda: done.append(LocalWriter(backfill).write(data)), daemon=True)
    try:
        thread.start()
        time.sleep(1.0)
        assert thread.is_alive() and not done, "the backfill waits for the stream's commit"
    finally:
        stream.release()
    thread.join(60)
    assert done and done[0].instant is not None
    comments = " ".join(line.split("#", 1)[1] for line in conf.read_text().splitlines() if "#" in line).lower()
    assert "alongside" in comments and "take turns" in comments
