"""The key index's Spark job: two passes, and the same files and key state as the in-process writer.

The tagged batch goes into Spark's cache once (as Arrow IPC values), the insert counts come back
with it, and the shard state is written on the way to the file-group writers; no job of its own
counts inserts or writes the state.
"""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest
from test_table_semantics import check_hudi_rs, options_for

from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.spark.sink import HudiSink
from ingest.write import tasks
from ingest.write.batch import LocalWriter

pytest.importorskip("hudi")


def batch(keys, ts: int) -> pa.Table:
    return pa.table({
        "uuid": list(keys), "city": [("chennai", "sfo")[int(k[1:]) % 2] for k in keys],
        "ts": pa.array([ts] * len(keys), pa.int64()), "fare": [float(ts)] * len(keys),
    })


def layout(table: HudiTable, instant: str) -> list[tuple]:
    """What a commit wrote, file group by file group, less the names derived from the instant."""
    stats = table.commit_metadata(table.timeline().get(instant)).all_write_stats()
    return sorted((s.partition_path, s.path.endswith(".parquet"), s.num_writes, s.num_inserts,
                   s.num_update_writes, s.num_deletes) for s in stats)


BATCHES = [
    [f"k{i}" for i in range(12)],
    [f"k{i}" for i in range(0, 12, 3)] + [f"k{i}" for i in range(12, 18)],   # updates and new keys
    [f"k{i}" for i in range(12, 18, 2)] + [f"k{i}" for i in range(1, 4)],    # updates of both
]


def test_an_upsert_is_two_spark_jobs_writing_what_the_local_writer_writes(spark, tmp_path):
    """`UpsertPartitioner.assignInserts`: new keys are spread over the small files and new file groups
    from the whole batch's insert count per partition, so every key is tagged (`HoodieIndex.tagLocation`)
    before any file group is written: one job tags and counts, one places, indexes and writes. The
    files each commit writes, the rows, and the key state (the third batch's keys from the second are
    updates) are the in-process writer's."""
    spark_path, local_path = tmp_path / "spark", tmp_path / "local"
    local = LocalWriter(options_for(local_path, "key", "base"))
    jobs = []
    with HudiSink(options_for(spark_path, "key", "base"), spark=spark, parallelism=2, small_batch_rows=0) as sink:
        for b, keys in enumerate(BATCHES):
            group = f"key-index-{b}"
            spark.sparkContext.setJobGroup(group, group)
            try:
                got = sink.write(spark.createDataFrame(batch(keys, b + 1)))
            finally:
                spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            jobs.append(len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)))
            want = local.write(batch(keys, b + 1))
            assert dict(got.counts, rows_in=0) == dict(want.counts, rows_in=0)
            assert layout(HudiTable.open(str(spark_path)), got.instant) == \
                layout(HudiTable.open(str(local_path)), want.instant)
    assert got.counts["updates"] == 6 and got.counts["inserts"] == 0
    assert jobs[1:] == [2, 2]  # the first batch also asks Spark which slot keys hash where (`routing`)
    spark_table = HudiTable.open(str(spark_path))
    assert read_snapshot(spark_table).sort_by("uuid").select(["uuid", "fare"]).equals(
        read_snapshot(HudiTable.open(str(local_path))).sort_by("uuid").select(["uuid", "fare"]))
    assert check_hudi_rs(str(spark_path), spark_table) > 0


def test_file_groups_are_spread_over_the_write_tasks_by_their_work():
    """`UpsertPartitioner.getPartition`: Hudi gives each file group a Spark partition of its own, so no
    task writes more than its share while another idles. With a fixed number of write tasks the
    heaviest groups go first, each onto the least loaded task; a small file that takes new keys
    weighs its base file's keys too, as `HoodieMergeHandle` rewrites them all."""
    plan = SimpleNamespace(small_files={"a": (("small", 1000),)})
    groups = [("a", "small", 100, 5000), ("a", "big-log", 3000, 90000), ("b", "x", 2000, 0), ("b", "y", 1500, 0)]
    buckets = {"a": (("small", 50),), "b": (("new-b", 400),)}
    task_of = tasks.balanced(plan, groups, buckets, 2)
    # weights: small 100 + 50 new + 5000 rewritten, big-log 3000, x 2000, y 1500, new-b 400
    assert task_of == {("a", "small"): 0, ("a", "big-log"): 1, ("b", "x"): 1, ("b", "y"): 1, ("b", "new-b"): 0}
