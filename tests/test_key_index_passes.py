"""The key index's Spark job: two passes in one job, and the same files and key state as the
in-process writer.

Shard tasks tag, place and index the batch's keys and hand each file group's rows, as Arrow IPC
values, to the task writing it; nothing runs on the driver between the passes.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
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


def test_an_upsert_is_one_spark_job_writing_what_the_local_writer_writes(spark, tmp_path):
    """`UpsertPartitioner.assignInserts`: new keys are spread over the small files and new file groups
    from the batch's insert count per partition, and every key is tagged (`HoodieIndex.tagLocation`)
    before any file group is written. Here each shard task places its keys from its own count scaled
    by its share of the shards, in the same job that writes them. The files each commit writes, the
    rows, and the key state (the third batch's keys from the second are updates) are the in-process
    writer's."""
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
    assert jobs[1:] == [1, 1]  # the first batch also asks Spark which slot keys hash where (`routing`)
    spark_table = HudiTable.open(str(spark_path))
    assert read_snapshot(spark_table).sort_by("uuid").select(["uuid", "fare"]).equals(
        read_snapshot(HudiTable.open(str(local_path))).sort_by("uuid").select(["uuid", "fare"]))
    assert check_hudi_rs(str(spark_path), spark_table) > 0


def test_a_shard_task_scales_its_new_keys_by_its_share_of_the_shards():
    """`UpsertPartitioner.assignInserts` sizes placements by the batch's new keys per partition. Task
    `i` of `n` owns the shards `s % n == i` and sees their keys only: its count is scaled by all
    shards over its own, which is exact with one task and rounds up (a small file is never
    under-filled by rounding down)."""
    plan = SimpleNamespace(shards=5)
    keys = [f"k{i}" for i in range(7)]
    tagged = pa.table({
        "_ingest_partition": ["a"] * 4 + ["b"] * 3, tasks.FILE_ID: pa.nulls(7, pa.string()),
        tasks.KIND: [tasks.UPSERT] * 7, "_ingest_key": keys,
    })
    assert tasks.estimated_insert_counts(plan, tagged, 1, 0) == {"a": 4, "b": 3}
    assert tasks.estimated_insert_counts(plan, tagged, 2, 0) == {"a": 7, "b": 5}  # owns 3 of 5: 4*5/3, 3*5/3
    assert tasks.estimated_insert_counts(plan, tagged, 2, 1) == {"a": 10, "b": 8}  # owns 2 of 5
    assert tasks.estimated_insert_counts(plan, tagged, 6, 5) == {}  # owns no shard: gets no rows


def test_new_keys_placed_from_two_tasks_estimates_fill_the_small_file_then_new_groups():
    """Two shard tasks, each with about half of a partition's 2,500 new keys, estimate the whole and
    place their keys as `UpsertPartitioner.assignInserts` does for the whole batch: the small file's
    room (1,000) first, the rest over new file groups of the insert split size (1,000, then the
    remainder), the share of each by the hash of the key; the groups and their fill come out as with
    one task's exact count, within the estimate's error (2%). (Where the tasks' estimates straddle a
    multiple of the split size, one task opens a group the other does not: a small extra file.)"""
    plan = SimpleNamespace(shards=2, record_bytes=100, insert_split=1000, file_group_max_bytes=200_000,
                           small_files={"a": (("small", 100_000),)},
                           new_file_id=lambda partition, index: f"new-{index}")
    keys = pa.array([f"key-{i}" for i in range(2500)])
    shard = tasks.key_shards(keys, 2)

    def placed(rows: np.ndarray, tasks_count: int, task: int) -> list[str]:
        tagged = pa.table({"_ingest_partition": ["a"] * len(rows), tasks.FILE_ID: pa.nulls(len(rows), pa.string()),
                           tasks.KIND: [tasks.UPSERT] * len(rows), "_ingest_key": keys.take(pa.array(rows))})
        counts = tasks.estimated_insert_counts(plan, tagged, tasks_count, task)
        return tasks.assign(tagged, tasks.insert_buckets(plan, counts)).column(tasks.FILE_ID).to_pylist()

    one = placed(np.arange(2500), 1, 0)
    two = placed(np.flatnonzero(shard == 0), 2, 0) + placed(np.flatnonzero(shard == 1), 2, 1)
    exact, estimated = ({f: got.count(f) for f in set(got)} for got in (one, two))
    assert set(exact) == set(estimated) == {"small", "new-0", "new-1"}
    assert all(abs(estimated[f] - exact[f]) <= 50 for f in exact), (exact, estimated)


def test_small_files_are_spread_over_the_write_tasks_by_their_size():
    """`UpsertPartitioner.getPartition`: Hudi gives each file group a Spark partition of its own, so no
    task writes more than its share while another idles. With a fixed number of write tasks the
    small files, which `HoodieMergeHandle` rewrites whole, go largest first onto the least loaded task;
    then the other existing groups, which take updates in proportion to their keys, by base file size;
    new groups by a hash of their name, and rows of no group to the first task."""
    from ingest.write.file_group_writer import FileGroupTarget

    sizes = {("a", "s1"): 900, ("a", "s2"): 100, ("b", "s3"): 500, ("b", "s4"): 450,
             ("a", "l1"): 700, ("a", "l2"): 300, ("b", "l3"): 350, ("b", "l4"): 0}
    plan = SimpleNamespace(small_files={"a": (("s1", 900), ("s2", 100)), "b": (("s3", 500), ("s4", 450))},
                           targets={k: FileGroupTarget(*k, base_instant="1", base_size=v) for k, v in sizes.items()})
    task_of = tasks.write_tasks(plan, 2)
    assert task_of == {("a", "s1"): 0, ("b", "s3"): 1, ("b", "s4"): 1, ("a", "s2"): 0,  # 900+100 vs 500+450
                       ("a", "l1"): 0, ("b", "l3"): 1, ("a", "l2"): 1}  # 700 vs 350+300; no base: hashed
    assert tasks.write_task(task_of, 2, "a", "s2") == 0
    assert tasks.write_task(task_of, 2, None, "segment") == 0
    hashed = {tasks.write_task(task_of, 2, "a", f"log-{i}") for i in range(20)}
    assert hashed == {0, 1}
