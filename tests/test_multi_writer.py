"""Writers of one table take turns, one commit at a time: ingest writers through the lease, Hudi writers
through Hudi's `FileSystemBasedLockProvider` lock file, which ingest takes exactly as Hudi does when
`hoodie.write.concurrency.mode` is OPTIMISTIC_CONCURRENCY_CONTROL."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import threading
import time

import pyarrow as pa
import pytest

from ingest.errors import ConcurrentWriterError, ConfigError
from ingest.hudi.table.lock_provider import LockSettings
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.heartbeat import HeartbeatSettings
from ingest.hudi.timeline.instant import Action, State
from ingest.storage import Storage
from ingest.write.batch import LocalWriter
from ingest.write.commit import abort, begin
from ingest.write.lock import LOCK_FOLDER, OLD_EPOCHS_AT_ONCE, WriterLock, for_writer
from ingest.write.options import IndexOptions, IndexType, WriteOptions

FS_PROVIDER = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
OCC = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL", "hoodie.write.lock.provider": FS_PROVIDER}
BASE = {
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
}
# A lock file as Hudi 0.14's FileSystemBasedLockProvider.acquireLock writes it (LockInfo.toString).
HUDI_LOCK = """{
  "lockCreateTime" : "2026-11-24 23:00:00.123",
  "lockThreadName" : "main",
  "lockStacksInfo" : [ "java.lang.Thread.getStackTrace (Thread.java:1610)", \
"org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider.initLockInfo \
(FileSystemBasedLockProvider.java:176)" ]
}"""


def opts(path, wait: float = 0.0, **hudi) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="t", hudi={**BASE, **hudi},
                        index=IndexOptions(type=IndexType.BUCKET, bucket_count=2), lock_wait_seconds=wait)


def rows(*records) -> pa.Table:
    return pa.table({"id": [r[0] for r in records], "part": [r[1] for r in records],
                     "ts": pa.array([r[2] for r in records], pa.int64()), "v": [r[3] for r in records]})


def snapshot(path) -> set[tuple]:
    return {(r["id"], r["part"], r["ts"], r["v"]) for r in read_snapshot(HudiTable.open(str(path))).to_pylist()}


def deltacommits(path) -> int:
    return len(HudiTable.open(str(path)).timeline().completed(Action.DELTA_COMMIT))


def write_in_thread(options: WriteOptions, data: pa.Table) -> tuple[threading.Thread, list]:
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(LocalWriter(options).write(data))
        except Exception as e:  # noqa: BLE001 - handed to the test
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_hudi_lock_file_is_taken_where_and_as_hudi_takes_it(table_dir, tmp_path):
    """FileSystemBasedLockProvider (Hudi 0.14): the constructor puts the lock at
    `<hoodie.write.lock.filesystem.path>/lock`, by default `<base path>/.hoodie/lock` (LOCK_FILE_NAME);
    `acquireLock` creates it exclusively (`fs.create(lockFile, false)`) holding `LockInfo.toString()`,
    Jackson's pretty print of lockCreateTime (SimpleDateFormat "yyyy-MM-dd HH:mm:ss.SSS"),
    lockThreadName and lockStacksInfo ("%s.%s (%s:%s)" per StackTraceElement); `unlock` deletes it."""
    LocalWriter(opts(table_dir)).write(rows(("a", "p", 1, "x")))
    lock = for_writer(opts(table_dir, **OCC))
    lock.acquire()
    try:
        path = table_dir / ".hoodie" / "lock"
        text = path.read_text()
        info = json.loads(text)
        assert list(info) == ["lockCreateTime", "lockThreadName", "lockStacksInfo"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}", info["lockCreateTime"])
        assert text.startswith('{\n  "lockCreateTime" : "') and '",\n  "lockThreadName" : "' in text
        assert text.endswith(" ]\n}") and '"lockStacksInfo" : [ "' in text
        assert info["lockStacksInfo"] and all(re.fullmatch(r".+\.\S+ \(.+:\d+\)", s) for s in info["lockStacksInfo"])
        lock.check()  # still ours
    finally:
        lock.release()
    assert not path.exists()

    elsewhere = tmp_path / "locks"
    lock = for_writer(opts(table_dir, **OCC, **{"hoodie.write.lock.filesystem.path": str(elsewhere)}))
    with lock:
        assert (elsewhere / "lock").exists() and not (table_dir / ".hoodie" / "lock").exists()
    assert not (elsewhere / "lock").exists()


def test_a_new_tables_first_commit_is_made_under_hudis_lock(table_dir):
    """FileSystemBasedLockProvider's constructor puts the lock in `<base path>/.hoodie` whether or not the
    table exists yet, so the first commit of a new table finds `.hoodie/lock` there: a lock file is no
    instant (timeline files are named by instant time), and the table is created under it."""
    result = LocalWriter(opts(table_dir, **OCC)).write(rows(("a", "p", 1, "x")))
    assert result.instant is not None and snapshot(table_dir) == {("a", "p", 1, "x")}
    assert not (table_dir / ".hoodie" / "lock").exists()


def test_a_fresh_hudi_lock_makes_ingest_wait_then_proceed_once_released(table_dir):
    """FileSystemBasedLockProvider.tryLock returns false while the lock file exists and has not expired
    (`checkIfExpired`), and LockManager.lock retries it; the holder's `unlock` deletes the file, and the
    next tryLock creates it. A Hudi writer's lock file makes ingest wait, and ingest commits once it is gone."""
    LocalWriter(opts(table_dir)).write(rows(("a", "p", 1, "x")))
    lock_file = table_dir / ".hoodie" / "lock"
    lock_file.write_text(HUDI_LOCK)

    thread, outcome = write_in_thread(opts(table_dir, wait=60, **OCC), rows(("b", "p", 1, "y")))
    time.sleep(1.5)
    assert thread.is_alive() and not outcome, "ingest must wait for the Hudi writer's lock"
    assert deltacommits(table_dir) == 1
    assert lock_file.read_text() == HUDI_LOCK

    lock_file.unlink()  # the Hudi writer's unlock
    thread.join(30)
    assert outcome and outcome[0].instant is not None, outcome
    assert deltacommits(table_dir) == 2 and snapshot(table_dir) == {("a", "p", 1, "x"), ("b", "p", 1, "y")}
    assert not lock_file.exists(), "ingest released Hudi's lock after its commit"


def test_an_expired_hudi_lock_is_taken_and_one_that_never_expires_is_waited_for(table_dir):
    """FileSystemBasedLockProvider.checkIfExpired: expired when the file's modification time is more than
    `hoodie.write.lock.filesystem.expire` minutes old, never when that is 0 (HoodieLockConfig default);
    tryLock deletes an expired lock file and takes the lock."""
    LocalWriter(opts(table_dir)).write(rows(("a", "p", 1, "x")))
    lock_file = table_dir / ".hoodie" / "lock"
    lock_file.write_text(HUDI_LOCK)
    old = time.time() - 100  # between the 1- and 2-minute expiries
    os.utime(lock_file, (old, old))

    with pytest.raises(ConcurrentWriterError, match=r"Hudi's table lock .*\.hoodie/lock is held .*never expires"):
        LocalWriter(opts(table_dir, wait=1, **OCC)).write(rows(("b", "p", 1, "y")))
    assert lock_file.read_text() == HUDI_LOCK and deltacommits(table_dir) == 1

    expiring = {**OCC, "hoodie.write.lock.filesystem.expire": "2"}
    with pytest.raises(ConcurrentWriterError, match="expires 2 minute"):
        LocalWriter(opts(table_dir, wait=0, **expiring)).write(rows(("b", "p", 1, "y")))

    result = LocalWriter(opts(table_dir, wait=0, **OCC, **{"hoodie.write.lock.filesystem.expire": "1"})).write(
        rows(("b", "p", 1, "y")))
    assert result.instant is not None and deltacommits(table_dir) == 2
    assert not lock_file.exists()


def test_ingest_keeps_its_hudi_lock_fresh_and_stops_if_a_hudi_writer_took_it(table_dir):
    """FileSystemBasedLockProvider.checkIfExpired judges a lock by its file's modification time, and
    tryLock deletes an expired one and creates its own: ingest, which holds the lock from plan to commit,
    keeps the modification time fresh (same content), and if a Hudi writer took the lock anyway it
    stops before committing and leaves that writer's lock file alone (`unlock` deletes only its own)."""
    LocalWriter(opts(table_dir)).write(rows(("a", "p", 1, "x")))
    lock_file = table_dir / ".hoodie" / "lock"
    lock = for_writer(opts(table_dir, **OCC, **{"hoodie.write.lock.filesystem.expire": "1"}))
    lock.acquire()
    try:
        ours = lock_file.read_text()
        old = time.time() - 100
        os.utime(lock_file, (old, old))
        lock.heartbeat()
        assert time.time() - lock_file.stat().st_mtime < 10 and lock_file.read_text() == ours
        lock.check()

        lock_file.unlink()  # a Hudi writer found it expired, deleted it and took the lock
        lock_file.write_text(HUDI_LOCK)
        with pytest.raises(ConcurrentWriterError, match="Hudi lock .* was taken by another writer"):
            lock.check()
    finally:
        lock.release()
    assert lock_file.read_text() == HUDI_LOCK


def test_ingest_writers_take_turns_waiting_a_bounded_time(table_dir):
    """LockManager.lock: a writer retries `tryLock` (hoodie.write.lock.client.num_retries times,
    wait_time_ms_between_retry apart) and fails only when the lock stays taken; ingest's bound is
    `write.lock_wait_seconds`. A second ingest writer (its own checkpoint) waits for the first's commit."""
    LocalWriter(opts(table_dir)).write(rows(("a", "p", 1, "x")))
    holder = WriterLock(Storage(str(table_dir)), expiry_seconds=60, description="stream")
    holder.acquire()
    try:
        started = time.monotonic()
        with pytest.raises(ConcurrentWriterError, match=r"another writer \(host .*waited 1s"):
            LocalWriter(opts(table_dir, wait=1)).write(rows(("b", "p", 1, "y")))
        assert time.monotonic() - started >= 0.9
        thread, outcome = write_in_thread(opts(table_dir, wait=60), rows(("b", "p", 1, "y")))
        time.sleep(1.0)
        assert thread.is_alive() and deltacommits(table_dir) == 1
    finally:
        holder.release()
    thread.join(30)
    assert outcome and outcome[0].instant is not None, outcome
    assert snapshot(table_dir) == {("a", "p", 1, "x"), ("b", "p", 1, "y")}


def test_earlier_lease_files_are_deleted_a_batch_at_a_time_and_stay_few(table_dir):
    """Each commit takes the lease as a new epoch file; the files of earlier epochs go
    `OLD_EPOCHS_AT_ONCE` at a time, the two before the current one always kept."""
    storage = Storage(str(table_dir))
    writer = LocalWriter(opts(table_dir))
    seen = []
    for i in range(2 * OLD_EPOCHS_AT_ONCE + 5):
        writer.write(rows((f"k{i}", "p", 1, "x")))
        seen.append(sorted(int(e.name.split(".")[1]) for e in storage.list(LOCK_FOLDER) if e.name.startswith("writer.")))
    latest = seen[-1][-1]
    assert latest == 2 * OLD_EPOCHS_AT_ONCE + 5
    assert max(len(epochs) for epochs in seen) == OLD_EPOCHS_AT_ONCE + 2
    assert all(epochs == list(range(epochs[0], epochs[-1] + 1)) and len(epochs) >= 3 for epochs in seen[2:]), seen
    assert min(seen[-1]) > OLD_EPOCHS_AT_ONCE, "the earliest epochs' files are gone"


def test_a_hudi_lock_left_by_a_stopped_ingest_writer_is_taken_over_with_the_lease(table_dir):
    """FileSystemBasedLockProvider never expires a lock at expire 0, so Hudi leaves a crashed writer's lock
    file to be deleted by hand. Ingest takes Hudi's lock only while holding its lease, so a lock file an
    ingest writer left behind (lockThreadName `ingest-writer-<owner>`) is known stale once this writer
    holds the lease, and is replaced; a Hudi writer's lock is never touched that way."""
    LocalWriter(opts(table_dir)).write(rows(("a", "p", 1, "x")))
    crashed = for_writer(opts(table_dir, **OCC))
    crashed.acquire()
    crashed._stop.set()  # the process died: no heartbeat, no release
    left = (table_dir / ".hoodie" / "lock").read_text()
    crashed_lease = Storage(str(table_dir))
    for entry in crashed_lease.list(".hoodie/.aux/ingest/lock"):  # its lease expired long ago
        record = json.loads(crashed_lease.read(entry.path))
        record["heartbeat_at"] -= 3600
        crashed_lease.write(entry.path, json.dumps(record).encode())

    result = LocalWriter(opts(table_dir, **OCC)).write(rows(("b", "p", 1, "y")))
    assert result.instant is not None and json.loads(left)["lockThreadName"].startswith("ingest-writer-")
    assert not (table_dir / ".hoodie" / "lock").exists()
    with pytest.raises(ConcurrentWriterError):
        crashed.check()


def test_a_lease_whose_create_landed_though_its_answer_was_lost_is_the_writers_own(table_dir):
    """On an object store a conditional PUT whose answer is lost is retried, and the retry is refused
    (412): the epoch file is there, holding this writer's record. It is taken as this writer's lease, not
    as another writer's to wait for until it expires."""
    from ingest.write.lock import _epoch_path

    LocalWriter(opts(table_dir)).write(rows(("a", "p", 1, "x")))
    lease = WriterLock(Storage(str(table_dir)), expiry_seconds=60.0)
    epochs = lease._epochs()
    landed = (epochs[-1] if epochs else 0) + 1
    lease.storage.create(_epoch_path(landed), lease._record().to_bytes())  # the PUT that landed
    lease.acquire()
    try:
        assert lease.epoch == landed
        lease.check()
    finally:
        lease.release()


def test_a_lock_directory_shared_by_two_tables_is_never_taken_from_the_other_tables_writer(tmp_path):
    """`hoodie.write.lock.filesystem.path` may name one folder for several tables (`<path>/lock`, one lock
    for all). A lock file another ingest writer holds is stale only when it is this table's: that writer
    would hold this table's lease. Another table's live writer keeps it, and this one waits."""
    shared = {**OCC, "hoodie.write.lock.filesystem.path": str(tmp_path / "locks")}
    LocalWriter(opts(tmp_path / "a")).write(rows(("a", "p", 1, "x")))
    LocalWriter(opts(tmp_path / "b")).write(rows(("b", "p", 1, "x")))
    holder = for_writer(opts(tmp_path / "a", **shared))
    holder.acquire()
    try:
        held = (tmp_path / "locks" / "lock").read_text()
        assert json.loads(held)["lockThreadName"].endswith(f" {Storage(str(tmp_path / 'a')).base_url}")
        with pytest.raises(ConcurrentWriterError, match="Hudi's table lock .* is held by another writer"):
            LocalWriter(opts(tmp_path / "b", **shared)).write(rows(("c", "p", 1, "y")))
        assert (tmp_path / "locks" / "lock").read_text() == held
        holder.check()
    finally:
        holder.release()
    assert deltacommits(tmp_path / "b") == 1


def test_under_occ_a_live_hudi_writers_pending_write_is_left_alone(hudi_table_copy):
    """With optimistic concurrency control Hudi cleans failed writes LAZY
    (HoodieWriteConfig.Builder.autoAdjustConfigsForConcurrencyMode), and then rolls back only pending
    writes whose heartbeat expired (BaseHoodieTableServiceClient.getInstantsToRollback,
    HoodieHeartbeatUtils.isHeartbeatExpired): a concurrent Hudi writer's inflight deltacommit with a
    live heartbeat is left to it, not refused and not rolled back."""
    from test_heartbeats import FIXTURE, _beat, _hudi_left_deltacommit

    table_dir = hudi_table_copy(FIXTURE)
    pending = _hudi_left_deltacommit(table_dir)
    _beat(table_dir, pending, age_seconds=30)
    table = HudiTable.open(str(table_dir))
    lazy = dataclasses.replace(opts(table_dir, **OCC)).lazy_failed_writes
    assert lazy and not opts(table_dir).lazy_failed_writes

    txn = begin(table, table.schema(), "upsert", heartbeat_settings=HeartbeatSettings(), lazy=lazy)
    try:
        assert txn.rolled_back == ()
        assert table.timeline().get(pending).state is State.INFLIGHT
        assert txn.instant_time > pending
    finally:
        abort(txn)


def test_under_occ_a_killed_ingest_writers_write_waits_for_its_heartbeat_to_expire(table_dir):
    """BaseHoodieTableServiceClient.getInstantsToRollback with LAZY cleaning rolls back a pending write
    only once HoodieHeartbeatUtils.isHeartbeatExpired says so, whoever wrote it: a write whose writer
    was killed (its heartbeat file left fresh) is left pending, then rolled back once the heartbeat is
    gone (expired, or deleted by a writer giving its write up, as HoodieHeartbeatClient.stop does)."""
    LocalWriter(opts(table_dir)).write(rows(("a", "p", 1, "x")))
    table = HudiTable.open(str(table_dir))
    settings = HeartbeatSettings(interval_ms=1000, tolerable_misses=2)
    killed = begin(table, table.schema(), "upsert", heartbeat_settings=settings, lazy=True)
    killed.heartbeat._stop.set()  # the process died: the heartbeat file stays as it was last written

    second = begin(table, table.schema(), "upsert", heartbeat_settings=settings, lazy=True)
    assert second.rolled_back == () and table.timeline().get(killed.instant_time).state is State.INFLIGHT
    abort(second)

    time.sleep(2.2)  # interval x tolerable misses
    third = begin(table, table.schema(), "upsert", heartbeat_settings=settings, lazy=True)
    try:
        assert third.rolled_back == (killed.instant_time,) and table.timeline().get(killed.instant_time) is None
    finally:
        abort(third)


def test_occ_needs_the_file_system_lock_provider():
    """LockManager.getLockProvider loads `hoodie.write.lock.provider` (default ZookeeperBasedLockProvider,
    HoodieLockConfig.LOCK_PROVIDER_CLASS_NAME) only when the concurrency mode supports optimistic
    concurrency control; ingest can take only FileSystemBasedLockProvider's lock."""
    assert LockSettings.from_hudi(BASE, "/t") is None
    with pytest.raises(ConfigError, match="hoodie.write.lock.provider.*ZookeeperBasedLockProvider"):
        LockSettings.from_hudi({"hoodie.write.concurrency.mode": "optimistic_concurrency_control"}, "/t")
    settings = LockSettings.from_hudi(OCC, "/t/")
    assert settings.directory == "/t/.hoodie" and settings.expire_minutes == 0


def test_hudis_lock_needs_a_file_system_whose_create_is_atomic():
    """FileSystemBasedLockProvider's constructor refuses a scheme unless StorageSchemes says its create is
    atomic (file, hdfs, viewfs, hopsfs) or `hoodie.fs.atomic_creation.support` lists it: s3 is refused."""
    with pytest.raises(ConfigError, match="Hudi's writers refuse scheme s3"):
        LockSettings.from_hudi(OCC, "s3://bucket/t")
    listed = LockSettings.from_hudi({**OCC, "hoodie.fs.atomic_creation.support": "s3,gs"}, "s3://bucket/t")
    assert listed.directory == "s3://bucket/t/.hoodie"
    assert LockSettings.from_hudi(OCC, "file:///tmp/t").directory == "file:///tmp/t/.hoodie"


# -- Spark writers --------------------------------------------------------------------------------------


def test_a_stream_sink_and_a_backfill_sink_take_turns_commit_by_commit(spark, tmp_path):
    """Two writers of one table, each with its own checkpoint identifier (Hudi's HoodieStreamingSink keeps
    one `_hudi_streaming_sink_checkpoint` entry per identifier, CommitUtils.getValidCheckpointForCurrentWriter
    finds a writer's own among the other's commits). A sink holds the lease only for a commit (Hudi's
    TransactionManager begins and ends a transaction per commit), so the other's commits interleave;
    each reloads the timeline and the key index after taking it, and replays are skipped per writer."""
    from model import Op, TableModel

    from ingest.spark.sink import HudiSink
    from ingest.write.commit import committed_batch

    path = tmp_path / "table"
    base = WriteOptions(table_path=str(path), table_name="t", hudi=BASE, lock_wait_seconds=60,
                        index=IndexOptions(type=IndexType.KEY, shards=2))
    stream = HudiSink(dataclasses.replace(base, checkpoint_id="stream"), spark=spark)
    backfill = HudiSink(dataclasses.replace(base, checkpoint_id="backfill:history"), spark=spark)
    model = TableModel(event_time=True)
    batches = [
        (stream, 0, [("a", "p", 2, "s0"), ("b", "p", 2, "s0")]),
        (backfill, 0, [("a", "p", 1, "old"), ("c", "q", 1, "h0")]),       # older than the stream's a: stale
        (stream, 1, [("c", "q", 4, "s1"), ("d", "q", 4, "s1")]),
        (backfill, 1, [("b", "p", 3, "h1"), ("d", "q", 3, "h1-stale")]),
        (stream, 1, [("a", "p", 9, "replayed")]),                         # a replay: skipped
    ]
    for sink, batch_id, records in batches:
        sink(spark.createDataFrame(rows(*records)), batch_id)
        assert sink.lock is None, "the lease is given back after each commit"
        if (sink, batch_id) != (stream, 1) or records[0][3] != "replayed":
            model.apply([Op(k, p, ts, values={"v": v}) for k, p, ts, v in records])

    assert snapshot(path) == {(r["key"], r["partition"], r["ts"], r["v"]) for r in model.rows()}
    table = HudiTable.open(str(path))
    timeline = table.timeline()
    assert len(timeline.completed(Action.DELTA_COMMIT)) == 4
    assert committed_batch(table, timeline, "stream")[0] == 1
    assert committed_batch(table, timeline, "backfill:history")[0] == 1


# -- two writers killed and restarted -------------------------------------------------------------------

STREAM_ID, BACKFILL_ID = "orders-stream", "orders-history"


def _writer_data(seed: int) -> tuple[list[list[tuple]], list[list[tuple]]]:
    """Stream batches and backfill files over overlapping keys. Ordering values are unique (the stream's
    even, the backfill's odd), so the table the model makes does not depend on how the two writers'
    commits interleave; the stream also deletes (with an ordering value) keys only it writes."""
    import random

    rng = random.Random(seed)
    stream, history = [], []
    for b in range(8):
        batch = [(f"k{rng.randrange(8):02d}", 2 * (10 * b + i) + 2, False) for i in range(4)]
        if b >= 2:
            batch.append((f"s{b - 2}", 2 * (10 * b + 9) + 2, True))  # delete a stream-only key
        batch += [(f"s{b}", 2 * (10 * b + 8) + 2, False)]
        stream.append([(k, f"p{int(k[1:]) % 2}", ts, f"stream-{b}", d) for k, ts, d in batch])
    for f in range(8):
        history.append([(f"k{rng.randrange(8):02d}", 2 * (10 * f + i) + 1, f"history-{f}", False) for i in range(4)])
        history[-1] = [(k, f"p{int(k[1:]) % 2}", ts, v, d) for k, ts, v, d in history[-1]]
    return stream, history


def _kill_mode(rng, crash_points: list[str]) -> str:
    """A crash point reached on the first, second or third batch of a run, or `sigkill`."""
    point = rng.choice(crash_points)
    return point if point == "sigkill" else f"{point}@{rng.randint(1, 3)}"


def _run_killed(command: list[str], env: dict, mode: str, delay: float, log: list) -> int:
    """Run a writer; `mode` is a crash point (INGEST_CRASH_AT, `<point>@<n>` for its n-th time), `sigkill`
    (SIGKILL after `delay`, or a crash after the third commit if the writer gets that far first, so that
    no killed run finishes the writer's work and both writers' last runs still have batches to commit
    beside each other) or clean."""
    import contextlib
    import signal
    import subprocess

    env = {**env, "PYTHONFAULTHANDLER": "1"}  # a run that hangs is stopped with SIGABRT: its threads' stacks
    if mode == "sigkill":
        env["INGEST_CRASH_AT"] = "after_commit@3"
    elif mode != "clean":
        env["INGEST_CRASH_AT"] = mode
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    err = ""
    try:
        if mode == "sigkill":
            try:
                err = process.communicate(timeout=delay)[1]  # reading stderr, so a chatty run never blocks on it
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        try:
            err = process.communicate(timeout=600)[1] or err
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=30)
            os.killpg(process.pid, signal.SIGKILL)  # its JVM too, which holds the stderr pipe
            err = process.communicate(timeout=60)[1]
            err = f"hung for {time.monotonic() - started:.0f}s, stopped; its stderr ends:\n{err[-6000:]}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    log.append((mode, process.returncode, err[-20000:]))
    return process.returncode


def _runs(logs: dict[str, list]) -> str:
    """Each writer's runs for a failure message: mode, exit code, the errors its stderr names, its end."""
    def errors(err: str) -> str:
        named = [line.strip()[:400] for line in err.splitlines() if re.search(r"(Error|Exception)\b", line)]
        return "\n    ".join(dict.fromkeys(named))

    return "\n".join(f"{name} {mode}: exit {code}\n    {errors(err)}\n    ...{err[-600:]}"
                     for name, runs in logs.items() for mode, code, err in runs)


@pytest.mark.slow
@pytest.mark.parametrize("hudi_lock", [True, False], ids=["occ-hudi-lock", "lease-only"])
def test_a_stream_and_a_backfill_killed_at_random_points_each_commit_every_batch_exactly_once(tmp_path, hudi_lock):
    """A stream (foreachBatch sink over a Spark checkpoint) and `ingest backfill` write one table at once,
    under optimistic concurrency control with Hudi's FileSystemBasedLockProvider (LAZY failed-write
    cleaning) or with the lease alone (a killed writer's write rolled back at once), each killed twice at
    seeded random points (a crash point, or SIGKILL after a random delay) and restarted. Exactly once per
    writer, as Hudi's streaming sink keeps it per identifier (HoodieStreamingSink, `_hudi_streaming_sink_
    checkpoint`): every batch of each identifier is committed once, the backfill's files once
    (`ingest.backfill` records), the table equals the model, nothing is left pending, and no lock file
    (FileSystemBasedLockProvider's `<base>/.hoodie/lock`) outlives the writers."""
    import random
    import sys

    import hudi_invariants
    import pyarrow.parquet as pq
    import yaml
    from model import Op, TableModel

    from ingest.hudi.timeline.commit_metadata import CommitMetadata
    from ingest.hudi.timeline.timeline import read_instant
    from ingest.pipeline import inputs
    from ingest.write.commit import SINK_CHECKPOINT_KEY

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rng = random.Random(20261124)
    stream_batches, history = _writer_data(7)
    table = tmp_path / "table"
    source, export = tmp_path / "source", tmp_path / "export"
    source.mkdir()
    export.mkdir()
    for i, batch in enumerate(stream_batches):
        path = source / f"batch-{i:03d}.json"
        path.write_text("\n".join(json.dumps({"id": k, "part": p, "ts": ts, "v": v, "_hoodie_is_deleted": d})
                                  for k, p, ts, v, d in batch) + "\n")
        os.utime(path, (1_700_000_000 + 10 * i, 1_700_000_000 + 10 * i))
    for i, rows_ in enumerate(history):
        pq.write_table(pa.table({"id": [r[0] for r in rows_], "part": [r[1] for r in rows_],
                                 "ts": pa.array([r[2] for r in rows_], pa.int64()), "v": [r[3] for r in rows_],
                                 "_hoodie_is_deleted": [r[4] for r in rows_]}),
                       export / f"part-{i}.parquet")
    occ = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL", "hoodie.write.lock.provider": FS_PROVIDER}
    occ = occ if hudi_lock else {}
    config = tmp_path / "backfill.yaml"
    config.write_text(yaml.safe_dump({
        "table": {"path": str(table), "name": "events"},
        "hudi": {**BASE, **occ, "hoodie.datasource.write.operation": "upsert",
                 "hoodie.client.heartbeat.interval_in_ms": 1000,  # a killed writer's write expires in 2 s
                 "hoodie.datasource.write.streaming.checkpoint.identifier": BACKFILL_ID,
                 "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 2},
        "source": {"files": {"path": str(export), "format": "parquet", "max_files_per_trigger": 1}},
        "write": {"lock_wait_seconds": 300, "lock_expiry_seconds": 2},
        "spark": {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": 1}},
    }))
    commands = {
        "stream": [sys.executable, os.path.join(repo, "tests", "stream_job.py"), str(source), str(tmp_path / "ckpt"),
                   str(table), "--master", "local[1]", "--checkpoint-id", STREAM_ID, "--lock-wait", "300",
                   "--heartbeat-ms", "1000",
                   *[f"--hudi={k}={v}" for k, v in occ.items()]],
        "backfill": [sys.executable, "-m", "ingest", "backfill", "--config", str(config)],
    }
    env = {**{k: v for k, v in os.environ.items() if k != "INGEST_CRASH_AT"}, "PYTHONPATH": repo}
    crash_points = ["after_data_write", "mid_commit", "after_commit", "sigkill", "sigkill"]
    plans = {name: [(_kill_mode(rng, crash_points), rng.uniform(8, 20)) for _ in range(2)] + [("clean", 0)]
             for name in commands}
    logs: dict[str, list] = {name: [] for name in commands}
    together = threading.Barrier(len(commands), timeout=900)  # each run starts beside one of the other's

    def drive(name: str) -> None:
        finished = False
        try:
            for mode, delay in plans[name]:
                together.wait()
                if not finished:
                    finished = _run_killed(commands[name], env, mode, delay, logs[name]) == 0 or mode == "clean"
        except BaseException as e:  # a failure message that says what stopped this writer's runs
            logs[name].append(("raised", None, repr(e)))
            together.abort()

    threads = [threading.Thread(target=drive, args=(name,), daemon=True) for name in commands]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(1200)
    for name in commands:
        assert logs[name] and logs[name][-1][1] == 0, f"{name} did not finish: {plans}\n{_runs(logs)}"
        assert any(code != 0 for _, code, _ in logs[name]), f"{name} was never killed: {logs[name]}"

    model = TableModel(event_time=True)
    for batch in stream_batches:
        model.apply([Op(k, p, ts, d, {"v": v}) for k, p, ts, v, d in batch])
    for batch in history:
        model.apply([Op(k, p, ts, d, {"v": v}) for k, p, ts, v, d in batch])
    assert snapshot(table) == {(r["key"], r["partition"], r["ts"], r["v"]) for r in model.rows()}, logs

    t = HudiTable.open(str(table))
    timeline = t.timeline()
    assert not timeline.pending(Action.DELTA_COMMIT, Action.ROLLBACK)
    batches: dict[str, list[int]] = {}
    loaded = []
    for instant in timeline.completed(Action.DELTA_COMMIT):
        extra = CommitMetadata.from_bytes(read_instant(t.storage, instant)).extra_metadata
        for identifier, batch_id in json.loads(extra[SINK_CHECKPOINT_KEY]).items():
            batches.setdefault(identifier, []).append(int(batch_id))
        if inputs.METADATA_KEY in extra:
            loaded += [f[0] for f in json.loads(extra[inputs.METADATA_KEY])["files"]]
    assert batches == {STREAM_ID: list(range(len(stream_batches))),
                       f"backfill:{BACKFILL_ID}": list(range(len(history)))}, (batches, logs)
    writers = [next(iter(json.loads(t.commit_metadata(i).extra_metadata[SINK_CHECKPOINT_KEY])))
               for i in timeline.completed(Action.DELTA_COMMIT)]
    turns = sum(a != b for a, b in zip(writers, writers[1:], strict=False))
    if hudi_lock:  # Hudi's lock is taken per commit; the lease alone is held for a whole run, and a fast
        # run can finish all its batches before its kill comes, so only OCC guarantees interleaving
        assert turns >= 2, f"the writers' commits did not interleave: {writers}"
    assert sorted(p.rsplit("/", 1)[-1] for p in loaded) == [f"part-{i}.parquet" for i in range(len(history))]
    assert not (table / ".hoodie" / "lock").exists()
    hudi_invariants.check(table, bucket_index=True)


def test_cli_table_services_take_hudis_lock_under_occ(table_dir, capsys):
    """Hudi's table services take the table lock (TransactionManager around scheduling, cleaning and
    archiving) only with optimistic concurrency control (LockManager.lock checks the concurrency mode):
    `ingest clean` given those settings refuses while a Hudi writer holds `.hoodie/lock`, runs once it is
    released, and leaves no lock behind; without them it ignores the file, as Hudi's single writer does."""
    from ingest import cli

    LocalWriter(opts(table_dir)).write(rows(("a", "p", 1, "x")))
    lock_file = table_dir / ".hoodie" / "lock"
    lock_file.write_text(HUDI_LOCK)
    sets = ["--set", "hudi.hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL",
            "--set", f"hudi.hoodie.write.lock.provider={FS_PROVIDER}"]
    assert cli.main(["clean", str(table_dir), *sets]) != 0
    assert "Hudi's table lock" in capsys.readouterr().err and lock_file.read_text() == HUDI_LOCK
    assert cli.main(["clean", str(table_dir)]) == 0
    lock_file.unlink()
    assert cli.main(["clean", str(table_dir), *sets]) == 0 and not lock_file.exists()


def test_a_hudi_write_completing_after_ingest_with_an_earlier_time_is_noticed(hudi_table_copy, tmp_path):
    """Hudi's writers take their instant time before they write the requested instant
    (`BaseHoodieWriteClient.startCommitWithTime`, then `HoodieActiveTimeline.createNewInstant`), on hosts
    whose clocks differ: a concurrent Hudi write can appear, and complete, after an ingest commit whose
    time is later than its own. The key index names the writes it reflects rather than a time, so the
    next batch notices that write's keys: an update of a key it inserted goes to the key's file group,
    not into a second one (`HoodieSimpleIndex` would then find the key twice, and readers return it twice)."""
    from model import Op
    from service_tables import FixtureWriter

    path = hudi_table_copy("v9_txns_simple_nometa")
    late = "20260307135840975"  # the fixture's last deltacommit: inserts TXN-017 (us) and TXN-018 (eu)
    aside = tmp_path / "aside"
    for f in [f for f in path.rglob(f"*{late}*") if f.is_file()]:
        target = aside / f.relative_to(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        f.rename(target)

    first = FixtureWriter(path, "txn_id", "region", "txn_ts")
    assert "TXN-017" not in first.existing
    apac = next(r for r in first.existing.values() if r["region"] == "apac")  # a partition the late write leaves
    batch = pa.Table.from_pylist([dict(apac, txn_ts=first.top + 1)], schema=first.schema)
    assert first.writer.write(batch.append_column("_hoodie_is_deleted", pa.array([False]))).instant > late

    for f in [f for f in aside.rglob("*") if f.is_file()]:  # the Hudi write completes
        f.rename(path / f.relative_to(aside))
    second = FixtureWriter(path, "txn_id", "region", "txn_ts")
    assert second.existing["TXN-017"]["region"] == "us"
    update = dict(second.existing["TXN-017"], txn_ts=second.top + 1)
    second.writer.write(pa.Table.from_pylist([update], schema=second.schema)
                        .append_column("_hoodie_is_deleted", pa.array([False])))
    second.model.apply([Op("TXN-017", "us", second.top + 1, False, update)])
    assert second.ours() == second.expected()
    assert second.hudi_rs() == second.expected()


def test_the_index_manifest_covers_writes_by_name_and_reads_older_manifests_by_time(tmp_path):
    """What the manifest covers: the completed instants it names, and those before the oldest name it
    keeps unless they were pending then. A manifest of an earlier release (no names) covers by time,
    so upgrading ingest does not rebuild every table's index."""
    from service_tables import ModelWriter, random_batch

    from ingest.write import index_bootstrap as ib

    m = ib.Manifest({"type": "key"}, as_of="300", pending=("150",), known=("200", "300"), known_since="200")
    assert m.covers("200") and m.covers("300") and m.covers("100")
    assert not m.covers("250") and not m.covers("150") and not m.covers("400")

    w = ModelWriter(tmp_path / "t")
    instant = w.write(random_batch(random.Random(7), 10))
    table = w.table
    manifest = ib.Manifest.read(table)
    assert instant in manifest.known and manifest.known_since == "0"
    older = {"layout": manifest.layout, "as_of": manifest.as_of, "pending": []}
    table.storage.write(ib.MANIFEST, json.dumps(older).encode())
    assert ib.Manifest.read(table).known is None
    assert not ib.ensure(table, table.timeline(), w.writer.options, None)
