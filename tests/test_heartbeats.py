"""`.hoodie/.heartbeat/<instant>`: kept by our writer like Hudi's, and respected for Hudi's writers.

Built on the Hudi-written fixture `v6_trips_8i1u` with a pending deltacommit a Hudi writer left (its
own inflight file, copied under a new instant time), beside a fresh or an expired heartbeat."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta, timezone

import pytest

from ingest.errors import ConcurrentWriterError
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline import heartbeat
from ingest.hudi.timeline.heartbeat import HeartbeatSettings
from ingest.hudi.timeline.instant import Action, State
from ingest.write.commit import abort, begin, complete_transaction

FIXTURE = "v6_trips_8i1u"
HUDI_INFLIGHT = "20250331030645735.deltacommit.inflight"  # written by Hudi's Spark writer


def _hudi_left_deltacommit(table_dir) -> str:
    """A deltacommit a Hudi writer requested and started, a minute ago, and has not completed."""
    t = (datetime.now(timezone.utc) - timedelta(minutes=1)).strftime("%Y%m%d%H%M%S%f")[:17]
    meta = table_dir / ".hoodie"
    (meta / f"{t}.deltacommit.requested").write_bytes(b"")
    (meta / f"{t}.deltacommit.inflight").write_bytes((meta / HUDI_INFLIGHT).read_bytes())
    return t


def _beat(table_dir, instant: str, age_seconds: float) -> None:
    path = table_dir / ".hoodie" / ".heartbeat" / instant
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"")
    then = time.time() - age_seconds
    os.utime(path, (then, then))


def test_a_hudi_writer_with_a_fresh_heartbeat_is_not_rolled_back(hudi_table_copy):
    """HoodieHeartbeatUtils.isHeartbeatExpired (now - file modification time > interval_in_ms x
    tolerable.misses, 60 s x 2 by default): a writer with lazy cleaning
    (BaseHoodieTableServiceClient.getInstantsToRollback) leaves an instant with a live heartbeat alone."""
    table_dir = hudi_table_copy(FIXTURE)
    pending = _hudi_left_deltacommit(table_dir)
    _beat(table_dir, pending, age_seconds=30)
    table = HudiTable.open(str(table_dir))

    with pytest.raises(ConcurrentWriterError) as raised:
        begin(table, table.schema(), "upsert")

    message = str(raised.value)
    assert "\n" not in message
    assert f"deltacommit {pending} is inflight with a live heartbeat (.hoodie/.heartbeat/{pending})" in message
    assert "its heartbeat expires in 90s" in message or "its heartbeat expires in 89s" in message
    timeline = table.timeline()
    assert timeline.get(pending).state is State.INFLIGHT and not timeline.completed(Action.ROLLBACK)


def test_a_hudi_writer_whose_heartbeat_expired_is_rolled_back_and_its_heartbeat_deleted(hudi_table_copy):
    """HoodieHeartbeatUtils.isHeartbeatExpired is true past interval x misses, so the instant is a failed
    write to roll back; HoodieHeartbeatClient.stop / HeartbeatUtils.deleteHeartbeatFile remove the file."""
    table_dir = hudi_table_copy(FIXTURE)
    pending = _hudi_left_deltacommit(table_dir)
    _beat(table_dir, pending, age_seconds=121)
    table = HudiTable.open(str(table_dir))

    txn = begin(table, table.schema(), "upsert")
    try:
        assert txn.rolled_back == (pending,)
        assert table.timeline().get(pending) is None
        assert not (table_dir / ".hoodie" / ".heartbeat" / pending).exists()
    finally:
        abort(txn)


def test_our_instant_keeps_a_hudi_heartbeat_while_in_flight(hudi_table_copy):
    """HoodieHeartbeatClient.start writes .hoodie/.heartbeat/<instant> (an empty file) before the instant
    is requested and rewrites it every interval_in_ms; stop deletes it when the instant is done."""
    table_dir = hudi_table_copy(FIXTURE)
    table = HudiTable.open(str(table_dir))

    txn = begin(table, table.schema(), "upsert", heartbeat_settings=HeartbeatSettings(interval_ms=1000))
    beat = table_dir / ".hoodie" / ".heartbeat" / txn.instant_time
    try:
        assert beat.is_file() and beat.stat().st_size == 0
        first = heartbeat.last_heartbeat_time(table.storage, txn.instant_time)
        assert time.time() - first < 5
        time.sleep(1.5)
        assert heartbeat.last_heartbeat_time(table.storage, txn.instant_time) > first, "refreshed"
    finally:
        abort(txn)
    assert not beat.exists(), "deleted once the instant is rolled back"


@pytest.mark.parametrize("lazy", [True, False], ids=["lazy", "eager"])
def test_a_commit_whose_own_heartbeat_expired_is_aborted_under_lazy_cleaning(hudi_table_copy, lazy):
    """HeartbeatUtils.abortIfHeartbeatExpired, called by BaseHoodieWriteClient.commitStats before the
    commit: under LAZY failed-writes cleaning, a writer whose last beat is older than interval x tolerable
    misses (HoodieHeartbeatClient.isHeartbeatExpired) aborts, since another writer may be rolling the
    instant back; and its refresher stops rather than make that instant look live again. Under EAGER
    cleaning no other writer goes by heartbeats, and the commit completes."""
    table_dir = hudi_table_copy(FIXTURE)
    table = HudiTable.open(str(table_dir))
    txn = begin(table, table.schema(), "upsert", heartbeat_settings=HeartbeatSettings(interval_ms=1000), lazy=lazy)
    try:
        txn.heartbeat.last_beat -= 2.5  # the process stalled: the beats due since were never made
        seen = heartbeat.last_heartbeat_time(table.storage, txn.instant_time)
        time.sleep(2.2)  # the refresher woke twice, found it too late, and stopped
        assert heartbeat.last_heartbeat_time(table.storage, txn.instant_time) == seen, "no beat after the expiry"
        assert heartbeat.expires_in(table.storage, txn.instant_time, txn.heartbeat.settings) <= 0
        if lazy:
            with pytest.raises(ConcurrentWriterError, match=rf"heartbeat for instant {txn.instant_time} has "
                                                            r"expired \(last heartbeat [45]s ago, 2s allowed\)"):
                complete_transaction(txn, [])
            assert table.timeline().get(txn.instant_time).state is State.INFLIGHT
        else:
            assert complete_transaction(txn, []).state is State.COMPLETED
    finally:
        if table.timeline().get(txn.instant_time).state is not State.COMPLETED:
            abort(txn)


def test_the_rollback_command_refuses_a_hudi_instant_with_a_live_heartbeat(hudi_table_copy, capsys):
    """HoodieHeartbeatUtils.isHeartbeatExpired guards every rollback of another writer's instant, so
    `ingest rollback` does not undo the files of a Hudi writer that is still running."""
    from ingest.cli import main

    table_dir = hudi_table_copy(FIXTURE)
    pending = _hudi_left_deltacommit(table_dir)
    _beat(table_dir, pending, age_seconds=0)

    assert main(["rollback", str(table_dir), pending]) == 1
    assert f"deltacommit {pending} is inflight with a live heartbeat" in capsys.readouterr().err
    assert HudiTable.open(str(table_dir)).timeline().get(pending).state is State.INFLIGHT


def test_the_rollback_command_judges_a_heartbeat_by_the_hudi_writers_settings(hudi_table_copy, capsys):
    """`HoodieHeartbeatClient.isHeartbeatExpired` allows `interval_in_ms` x `tolerable.misses`; a Hudi writer
    beating every 5 minutes is live 8 minutes after its last beat, which the defaults (2 minutes) would
    call expired. `--set` gives `ingest rollback` the writers' settings."""
    from ingest.cli import main

    table_dir = hudi_table_copy(FIXTURE)
    pending = _hudi_left_deltacommit(table_dir)
    _beat(table_dir, pending, age_seconds=480)
    beats = ["--set", "hudi.hoodie.client.heartbeat.interval_in_ms=300000",
             "--set", "hudi.hoodie.client.heartbeat.tolerable.misses=2"]
    assert main(["rollback", str(table_dir), pending, *beats]) == 1
    assert f"deltacommit {pending} is inflight with a live heartbeat" in capsys.readouterr().err
    assert HudiTable.open(str(table_dir)).timeline().get(pending).state is State.INFLIGHT
    assert main(["rollback", str(table_dir), pending]) == 0, "expired under the defaults"


def test_a_beat_that_outlives_stop_is_deleted_by_the_next_stop(tmp_path, monkeypatch):
    """`stop` waits `STOP_WAIT_S` for a beat under way, then deletes the file anyway; a beat that ends
    later writes the file again, and the next `stop` (the write's end, after the commit's) deletes it
    once more, where a stop with no beat left running makes no request."""
    import threading

    from ingest.storage import Storage

    class SlowStorage(Storage):
        def __init__(self, root):
            super().__init__(root)
            self.touches, self.deletes = 0, 0
            self.in_beat, self.let_go = threading.Event(), threading.Event()

        def touch(self, rel):
            self.touches += 1
            if self.touches == 2:  # the first beat of the thread: held until the test lets it go
                self.in_beat.set()
                self.let_go.wait(10)
            return super().touch(rel)

        def delete(self, rel):
            self.deletes += 1
            return super().delete(rel)

    monkeypatch.setattr(heartbeat, "STOP_WAIT_S", 0.1)
    storage = SlowStorage(str(tmp_path))
    beat = heartbeat.InstantHeartbeat(storage, "20261129000000000", HeartbeatSettings(interval_ms=10)).start()
    assert storage.in_beat.wait(10)
    beat.stop()  # the beat is still under way
    assert not storage.exists(heartbeat.path("20261129000000000")) and storage.deletes == 1
    storage.let_go.set()
    beat._thread.join(10)
    assert storage.exists(heartbeat.path("20261129000000000")), "the late beat wrote the file again"
    beat.stop()
    assert not storage.exists(heartbeat.path("20261129000000000")) and storage.deletes == 2
    beat.stop()
    assert storage.deletes == 2, "no beat left: nothing more to delete"

