"""A write task's error reaches the user as one line: the innermost Python error of Spark's message."""

from __future__ import annotations

from ingest.spark.failures import spark_failure

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
