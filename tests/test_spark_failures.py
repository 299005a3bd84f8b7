"""A write task's error reaches the user as one line: the innermost Python error of Spark's message."""

from __future__ import annotations

import pyarrow as pa
import pytest

from ingest.errors import ConcurrentWriterError
from ingest.spark.failures import spark_failure, task_conflict
from ingest.write.fence import InstantRolledBackError

WORKER = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/work/ingest/write/tasks.py", line 327, in refuse_pending_clustering
    raise {raised}
{last}

JVM stacktrace:
org.apache.spark.SparkException: Job aborted due to stage failure: ..."""


def test_ingests_own_errors_are_named_whatever_their_class_is_called():
    """`ingest.errors` classes need not end in Error (`UnsupportedTable`, `ClusteringConflict`); they are the
    line the user needs, not the first line of Spark's message."""
    for last, want in [
        ("ingest.errors.ClusteringConflict: Not allowed to update the clustering file group X",
         "writing batch 1 failed: ClusteringConflict: Not allowed to update the clustering file group X"),
        ("ingest.errors.UnsupportedTable: AVRO_DATA block at offset 0 (instant 1) holds partial updates",
         "writing batch 1 failed: UnsupportedTable: AVRO_DATA block at offset 0 (instant 1) holds partial updates"),
        ("OSError: [Errno 28] No space left on device: '/data/t'",
         "writing batch 1 failed: OSError: [Errno 28] No space left on device: '/data/t'"),
    ]:
        error = spark_failure(RuntimeError(WORKER.format(raised="it", last=last)), "writing batch 1")
        assert str(error) == want


def test_a_write_tasks_conflict_with_another_writer_is_told_from_other_failures(spark):
    """A task that met another writer's rollback or blocks fails the job with `ConcurrentWriterError`; the
    sink writes such a batch again (`BatchRetry`), so the driver must tell it from every other failure in
    the text of the error a real Spark job raises."""
    def failing(error: Exception):
        def task(batches):
            for _ in batches:
                pass
            raise error
            yield pa.RecordBatch.from_pydict({"n": pa.array([0], pa.int64())})
        return task

    df = spark.range(4).repartition(2)
    found = {}
    for name, error in [("conflict", ConcurrentWriterError("t/p/.f.log.1_0-1-1 holds blocks of instant(s) 2")),
                        ("rolled back", InstantRolledBackError("t: instant 1 was rolled back while its tasks ran")),
                        ("other", ValueError("no such column"))]:
        with pytest.raises(Exception) as raised:
            df.mapInArrow(failing(error), "n long").collect()
        found[name] = task_conflict(raised.value)
    assert found == {"conflict": "t/p/.f.log.1_0-1-1 holds blocks of instant(s) 2",
                     "rolled back": "t: instant 1 was rolled back while its tasks ran", "other": None}
    assert task_conflict(ConcurrentWriterError("raised on the driver, not a Spark failure")) is None
