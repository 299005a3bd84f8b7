"""A failed micro-batch written again, as Hudi's streaming sink retries one (`HoodieStreamingSink.addBatch`
wraps `HoodieSparkSqlWriter.write` in `retry(retryCnt, retryIntervalMs)`: `hoodie.datasource.write.
streaming.retry.count` attempts in all, the pause doubled after each failure; `canSkipBatch` skips a batch
the timeline already holds). Here a writer that stalls past its lease loses it to another writer, which
rolls the stalled write back and commits its own; the stalled writer stops before committing and
writes the batch again under a new lease."""

from __future__ import annotations

import json
import logging
import time

import pyarrow as pa
import pytest
from test_table_semantics import HUDI_SETTINGS, check_hudi_rs

from ingest.errors import ConcurrentWriterError, IngestError
from ingest.hudi.log.log_reader import read_log_file
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import CommitMetadata
from ingest.hudi.timeline.instant import Action
from ingest.hudi.timeline.timeline import read_instant
from ingest.spark.sink import HudiSink
from ingest.write import lock as lock_mod
from ingest.write.batch import LocalWriter
from ingest.write.commit import SINK_CHECKPOINT_KEY
from ingest.write.options import BatchRetry, IndexOptions, IndexType, WriteOptions

EXPIRY = 1.0  # seconds a lease outlives its last heartbeat


def options(path, checkpoint_id: str, attempts: int) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="trips", hudi=HUDI_SETTINGS,
                        index=IndexOptions(type=IndexType.BUCKET, bucket_count=2), checkpoint_id=checkpoint_id,
                        lock_expiry_seconds=EXPIRY, lock_wait_seconds=30,
                        batch_retry=BatchRetry(attempts=attempts, interval_ms=200))


def trips(keys: list[str], ts: int, city: str = "sf") -> pa.Table:
    return pa.table({"uuid": keys, "city": [city] * len(keys), "ts": pa.array([ts] * len(keys), pa.int64()),
                     "fare": pa.array([float(ts)] * len(keys))})


@pytest.fixture
def stall_once(monkeypatch):
    """The sink's first check of its lease before a commit comes after a stall longer than the lease's
    expiry (its heartbeat stopped, as in a long pause of the process), in which another writer took the
    lease and committed `rival` rows (once armed with them); the check then finds the lease lost
    (`WriterLock.check`)."""
    check = lock_mod.WriterLock.check
    state = {"stalls": 0, "rival": None}

    def stalled_check(self):
        if state["rival"] is not None and state["stalls"] == 0:
            state["stalls"] += 1
            self._stop.set()
            self._thread.join()
            time.sleep(EXPIRY + 0.3)
            path, rows = state["rival"]
            state["rival_result"] = LocalWriter(options(path, "rival", 1)).write(rows)
        return check(self)

    monkeypatch.setattr(lock_mod.WriterLock, "check", stalled_check)
    return state


def committed_batches(table: HudiTable) -> list[tuple[str, str]]:
    out = []
    for instant in table.timeline().completed(Action.DELTA_COMMIT):
        extra = CommitMetadata.from_bytes(read_instant(table.storage, instant)).extra_metadata
        out += [(who, str(batch)) for who, batch in json.loads(extra.get(SINK_CHECKPOINT_KEY, "{}")).items()]
    return out


def test_a_batch_whose_lease_was_lost_is_written_again_and_committed_once(spark, tmp_path, stall_once, caplog):
    """The rival's write and the retried batch both land, each once; the stalled attempt's instant is
    rolled back (`BaseRollbackActionExecutor`), so Hudi's readers and hudi-rs see no trace of it."""
    path = tmp_path / "table"
    LocalWriter(options(path, "stream", 1)).write(trips(["a", "b"], 1))
    stall_once["rival"] = (path, trips(["b", "r"], 5))
    caplog.set_level(logging.WARNING, logger="ingest.spark.sink")
    with HudiSink(options(path, "stream", 3), spark=spark) as sink:
        sink(spark.createDataFrame(trips(["a", "c"], 3)), 7)
    assert stall_once["stalls"] == 1 and stall_once["rival_result"].instant is not None
    assert [r.getMessage() for r in caplog.records if "writing it again" in r.getMessage()][0].startswith(
        "batch 7 failed (attempt 1 of 3), writing it again in 0.2s:")
    assert "lost its lease" in caplog.text

    table = HudiTable.open(str(path))
    rows = {(r["uuid"], r["ts"]) for r in read_snapshot(table).to_pylist()}
    assert rows == {("a", 3), ("b", 5), ("c", 3), ("r", 5)}
    assert committed_batches(table) == [("stream", "7")]
    timeline = table.timeline()
    assert len(timeline.completed(Action.ROLLBACK)) == 1 and not timeline.pending()
    check_hudi_rs(str(path), table)


def test_with_one_attempt_a_lost_lease_fails_the_batch_and_nothing_of_it_is_committed(spark, tmp_path, stall_once):
    path = tmp_path / "table"
    LocalWriter(options(path, "stream", 1)).write(trips(["a"], 1))
    stall_once["rival"] = (path, trips(["r"], 5))
    with HudiSink(options(path, "stream", 1), spark=spark) as sink:
        with pytest.raises(ConcurrentWriterError, match="lost its lease"):
            sink(spark.createDataFrame(trips(["a", "c"], 3)), 7)
    table = HudiTable.open(str(path))
    assert {(r["uuid"], r["ts"]) for r in read_snapshot(table).to_pylist()} == {("a", 1), ("r", 5)}
    assert ("stream", "7") not in committed_batches(table)


def test_a_bad_record_fails_the_batch_at_the_first_attempt(spark, tmp_path, caplog):
    """Another attempt would fail alike: the batch fails at once, naming the record."""
    path = tmp_path / "table"
    caplog.set_level(logging.WARNING, logger="ingest.spark.sink")
    bad = pa.table({"uuid": pa.array(["a", None]), "city": ["sf", "sf"], "ts": pa.array([1, 2], pa.int64()),
                    "fare": [1.0, 2.0]})
    with HudiSink(options(path, "stream", 3), spark=spark) as sink:
        with pytest.raises(IngestError, match=r'writing batch 0 into .*recordKey value: "null" for field: "uuid" '
                                              r'cannot be null or empty'):
            sink(spark.createDataFrame(bad), 0)
    assert "writing it again" not in caplog.text


def test_tasks_that_find_their_instant_rolled_back_write_nothing_and_the_batch_is_written_again(
        spark, tmp_path, monkeypatch, caplog):
    """The stall comes after the plan and before the Spark job: the rival rolls the instant back before the
    write tasks run. Each task checks its instant first (`ingest.write.fence`) and writes nothing; the
    failed job counts as a lost lease, and the batch is written again under a new instant."""
    from ingest.write import batch as batch_mod

    path = tmp_path / "table"
    LocalWriter(options(path, "stream", 1)).write(trips(["a", "b"], 1))
    ensure = batch_mod.index_bootstrap.ensure
    state: dict = {}

    def stalled_before_the_job(*args, **kwargs):
        out = ensure(*args, **kwargs)
        if not state.get("stalled"):  # once: the rival's own write comes through here too
            state["stalled"] = True
            lease = state["sink"].lock
            lease._stop.set()  # the heartbeat stops with the stalled process
            lease._thread.join()
            time.sleep(EXPIRY + 0.3)
            state["rival"] = LocalWriter(options(path, "rival", 1)).write(trips(["b", "r"], 5))
        return out

    monkeypatch.setattr(batch_mod.index_bootstrap, "ensure", stalled_before_the_job)
    caplog.set_level(logging.WARNING, logger="ingest.spark.sink")
    with HudiSink(options(path, "stream", 3), spark=spark) as sink:
        state["sink"] = sink
        sink(spark.createDataFrame(trips(["a", "c"], 3)), 7)
    table = HudiTable.open(str(path))
    timeline = table.timeline()
    (rollback,) = timeline.completed(Action.ROLLBACK)
    (stalled,) = read_rollback_targets(table, rollback)
    data = [f for f in path.rglob("*") if f.is_file() and ".hoodie" not in f.relative_to(path).parts]
    assert not [f for f in data if stalled in f.name], "files of the stalled instant"
    blocks = [(b.instant_time, b.target_instant_time) for f in data if ".log." in f.name
              for b in read_log_file(table.storage, str(f.relative_to(path)))]
    assert not [b for b in blocks if b[0] == stalled], "blocks of the stalled instant"
    retried = [r.getMessage() for r in caplog.records if "writing it again" in r.getMessage()]
    assert len(retried) == 1 and "was rolled back while its tasks ran" in retried[0], retried
    rows = {(r["uuid"], r["ts"]) for r in read_snapshot(table).to_pylist()}
    assert rows == {("a", 3), ("b", 5), ("c", 3), ("r", 5)}
    assert committed_batches(table) == [("stream", "7")] and not timeline.pending()
    check_hudi_rs(str(path), table)


def read_rollback_targets(table: HudiTable, rollback) -> list[str]:
    from ingest.hudi.avro import avro_models

    return avro_models.deserialize(read_instant(table.storage, rollback), avro_models.ROLLBACK_METADATA)["commitsRollback"]
