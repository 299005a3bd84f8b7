"""Executing a compaction's operations on Spark executors: one task per operation.

The driver writes the plan and the commit (`ingest.hudi.services.compaction`); executors only run
`compact_operation`, the same function the in-process runner runs, so a table compacted here equals
one compacted locally. Each task names its file with its own write token (partition, stage and
attempt ids), so a retried task never collides with a failed attempt; the driver removes the files of
attempts whose stats it did not receive before it commits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pyspark import TaskContext
from pyspark.sql import SparkSession

from ingest.hudi.services.compaction import CompactionJob, CompactionOperation, compact_operation, run_locally
from ingest.hudi.table.file_names import make_write_token
from ingest.hudi.timeline.commit_metadata import WriteStat


def _compact_partition(job: CompactionJob, operations: Iterator[CompactionOperation]) -> Iterator[WriteStat]:
    ctx = TaskContext.get()
    token = make_write_token(ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId())
    for op in operations:
        yield compact_operation(job, op, token)


@dataclass
class SparkCompactionRunner:
    """A compaction `Runner` that spreads operations over executors.

    Plans whose estimated IO (the operations' `TOTAL_IO_MB`, read plus write) is under `local_below_mb`
    run in the driver process instead: starting a Spark stage costs more than compacting a few small
    file groups.
    """

    spark: SparkSession
    local_below_mb: float = 256.0

    def __call__(self, job: CompactionJob, operations: Sequence[CompactionOperation]) -> list[WriteStat]:
        if not operations:
            return []
        if sum(op.io_mb for op in operations) < self.local_below_mb:
            return run_locally(job, operations)
        sc = self.spark.sparkContext
        sc.setJobDescription(f"ingest: compaction {job.instant} ({len(operations)} file groups)")
        rdd = sc.parallelize(list(operations), len(operations))
        return rdd.mapPartitions(lambda ops: _compact_partition(job, ops)).collect()
