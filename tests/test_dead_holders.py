"""Liveness of the writer lease and of a compaction's executor never rests on a bare pid.

A pid may belong to another PID namespace (containers on one hostname), be reused, or be a killed
process nobody reaped yet. A holder is taken over at once only when its process start is certainly
gone; otherwise only its heartbeat's expiry frees it, as in Hudi (`HoodieHeartbeatUtils`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from test_services_crash import assert_consistent, table_with_slices

from ingest import liveness
from ingest.errors import ConcurrentWriterError
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.services import compaction
from ingest.hudi.timeline.instant import State
from ingest.liveness import ProcessIdentity
from ingest.storage import Storage
from ingest.write.lock import LOCK_FOLDER, LeaseRecord, WriterLock


def _lease_held_by(storage: Storage, who: ProcessIdentity, *, expiry: float = 60.0) -> None:
    now = time.time()
    record = {"owner": "other-writer", **who.to_dict(), "acquired_at": now, "heartbeat_at": now, "expiry": expiry}
    assert storage.create(f"{LOCK_FOLDER}/writer.0000000001.json", json.dumps(record).encode())
    assert LeaseRecord.from_bytes(storage.read(f"{LOCK_FOLDER}/writer.0000000001.json")).pid == who.pid


def _a_free_pid() -> int:
    """A pid that no process of our namespace has right now (one we started and reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_pid_from_another_namespace_is_not_taken_for_a_dead_writer(tmp_path):
    """HoodieHeartbeatUtils.isHeartbeatExpired: a writer is judged by its heartbeat's age; a pid that looks
    dead here may run in another container on the same hostname, so the lease stays its holder's."""
    storage = Storage(str(tmp_path))
    me = ProcessIdentity.current()
    other_container = ProcessIdentity(me.host, _a_free_pid(), me.boot_id, "pid:[4026599999]", 12345)
    _lease_held_by(storage, other_container, expiry=1.0)

    second = WriterLock(storage, expiry_seconds=60)
    with pytest.raises(ConcurrentWriterError, match=r"pid \d+, lease epoch 1, .* expires in [01]s"):
        second.acquire()
    time.sleep(1.1)  # the heartbeat expires: now the lease may be taken
    second.acquire()
    assert second.epoch == 2
    second.release()


def test_a_live_pid_of_another_process_start_is_a_dead_writer(tmp_path):
    """HoodieHeartbeatClient keys a writer by its own heartbeat, not a pid: here the pid is alive in our
    namespace (it is this test's own process) but started at another time, so the holder is gone."""
    storage = Storage(str(tmp_path))
    me = ProcessIdentity.current()
    if me.start_ticks is None:
        pytest.skip("no /proc: process start times are unknown, only heartbeat expiry applies")
    reused = ProcessIdentity(me.host, me.pid, me.boot_id, me.pid_namespace, me.start_ticks - 1)
    _lease_held_by(storage, reused)

    second = WriterLock(storage, expiry_seconds=60)
    second.acquire()
    assert second.epoch == 2
    second.release()


# -- `ingest compact` killed with SIGKILL, then run again -------------------------------------------------


def _compact(path, *args: str, pause: bool = False) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("INGEST_CRASH_AT", "INGEST_PAUSE_AT")}
    if pause:
        env["INGEST_PAUSE_AT"] = "mid_compaction"
    return subprocess.Popen([sys.executable, "-m", "ingest", "compact", "--path", str(path), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_compaction_killed_with_sigkill_is_taken_over_by_the_next_run(tmp_path):
    """BaseHoodieTableServiceClient.compact executes an inflight compaction again when no live writer holds
    it; the killed executor is not reaped yet (as a container's init may leave it), so its pid still
    answers kill(pid, 0): only its process start tells it is gone."""
    path = tmp_path / "t"
    w = table_with_slices(path)
    instant = compaction.schedule(w.table, ServiceSettings().compaction, force=True)
    killed = _compact(path, "--execute", instant, pause=True)
    try:
        lines = iter(killed.stderr.readline, "")
        assert any(line.strip() == "paused at mid_compaction" for line in lines), "never reached the pause"
        killed.send_signal(signal.SIGKILL)
        time.sleep(0.2)
        assert liveness._stat(killed.pid)[0] == "Z", "killed, not reaped"
        assert w.table.timeline().get(instant).state is State.INFLIGHT

        rerun = _compact(path)
        out, err = rerun.communicate(timeout=300)
    finally:
        killed.communicate()
    assert rerun.returncode == 0, err
    assert f"executed: {instant}" in out
    assert w.table.timeline().get(instant).is_completed
    assert_consistent(w, path)


@pytest.mark.slow
def test_compaction_held_by_a_fresh_heartbeat_is_not_reported_done(tmp_path):
    """HoodieHeartbeatUtils.isHeartbeatExpired: while the executor's heartbeat is fresh (here one from
    another PID namespace), the command says how long until it expires and exits non-zero."""
    path = tmp_path / "t"
    w = table_with_slices(path, rounds=1)
    instant = compaction.schedule(w.table, ServiceSettings().compaction, force=True)
    me = ProcessIdentity.current()
    elsewhere = ProcessIdentity(me.host, _a_free_pid(), me.boot_id, "pid:[4026599999]", 1)
    record = {"owner": "other", **elsewhere.to_dict(), "heartbeat_at": time.time(), "expiry": 120.0}
    w.table.storage.write(f"{compaction.HEARTBEAT_FOLDER}/{instant}.heartbeat", json.dumps(record).encode())

    out, err = _compact(path).communicate(timeout=300)

    assert "executed: -" in out
    assert f"compaction {instant} is being executed by host {me.host}, pid {elsewhere.pid}" in err
    assert "heartbeat expires in 1" in err  # ~120s
    assert w.table.timeline().get(instant).state is State.REQUESTED
