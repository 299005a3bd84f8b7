"""The Spark sink: micro-batch scenarios against the reference model, separate executor processes,
continuing tables Hudi itself wrote, and a writer killed at every point of the commit."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import hudi_invariants
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model import Op, TableModel
from pyspark.sql import functions as F
from test_table_semantics import (
    check_hudi_rs,
    expected_rows,
    model_values,
    operation,
    options_for,
    our_rows,
    to_table,
)

from ingest.errors import ConfigError
from ingest.faults import CRASH_EXIT_CODE
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.spark.sink import (
    ARROW_MAX_BYTES,
    ARROW_MAX_RECORDS,
    UNMEASURED,
    HudiSink,
    arrow_batch_settings,
    sampled_row_bytes,
    session_conf,
)
from ingest.write.options import IndexOptions, IndexType, WriteOptions

REPO = Path(__file__).resolve().parent.parent


def spark_frame(spark, table: pa.Table):
    return spark.createDataFrame(table)


@pytest.mark.slow
@pytest.mark.parametrize(("index", "insert_mode"), [("bucket", "log"), ("bucket", "base"), ("key", "base")])
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(operation, min_size=1, max_size=6), min_size=10, max_size=10))
def test_micro_batches_match_the_model(spark, tmp_path_factory, index, insert_mode, batches):
    path = tmp_path_factory.mktemp("table")
    options = options_for(path, index, insert_mode)
    model = TableModel(event_time=True)
    # Batches of up to 3 rows are small: the batch after one is written by a single task.
    with HudiSink(options, spark=spark, small_batch_rows=3) as sink:
        for batch_id, ops in enumerate(batches):
            with_note = batch_id >= 5
            for op in ops:
                op.values = model_values(op, with_note, batch_id)
            sink(spark_frame(spark, to_table(ops, with_note, batch_id)), batch_id)
            model.apply(ops)
        # A replay of the last batch (Spark restarting before it recorded the batch) changes nothing.
        sink(spark_frame(spark, to_table(batches[-1], True, 99)), len(batches) - 1)
    table = HudiTable.open(str(path))
    assert our_rows(read_snapshot(table)) == expected_rows(model)
    assert len(table.timeline().completed(Action.DELTA_COMMIT)) == len(batches)
    check_hudi_rs(str(path), table)
    checked = hudi_invariants.check(path, bucket_index=index == "bucket")
    assert checked["schemas"] > 0 and (index == "bucket" or checked["keys_in_base_files"] == len(model.rows()))


def _writing_tasks(snapshot: pa.Table) -> dict[str, set[int]]:
    """Per commit, the Spark partition ids of the tasks that wrote its records (from the seqno)."""
    out: dict[str, set[int]] = {}
    for row in snapshot.select(["_hoodie_commit_time", "_hoodie_commit_seqno"]).to_pylist():
        out.setdefault(row["_hoodie_commit_time"], set()).add(int(row["_hoodie_commit_seqno"].split("_")[1]))
    return out


def test_the_batch_after_a_small_one_is_written_by_one_task(spark, tmp_path):
    options = options_for(tmp_path / "table", "bucket", "log")
    model = TableModel(event_time=True)
    sizes = [40, 3, 40, 40]
    with HudiSink(options, spark=spark, small_batch_rows=5) as sink:
        for batch_id, size in enumerate(sizes):
            ops = [Op(f"k{batch_id}-{i}", f"p{i % 3}", batch_id, values={"fare": float(i)}) for i in range(size)]
            for op in ops:
                op.values = model_values(op, False, batch_id)
            sink(spark_frame(spark, to_table(ops, False, batch_id)), batch_id)
            model.apply(ops)
    table = HudiTable.open(str(tmp_path / "table"))
    snapshot = read_snapshot(table)
    tasks = _writing_tasks(snapshot)
    assert [tasks[c.timestamp] for c in table.timeline().completed(Action.DELTA_COMMIT)] == [{0, 1}, {0, 1}, {0}, {0, 1}]
    assert our_rows(snapshot) == expected_rows(model)


@pytest.mark.parametrize(("index", "insert_mode"), [("bucket", "log"), ("key", "base")])
def test_the_sink_writes_a_table_on_an_object_store_as_on_a_local_disk(spark, s3, tmp_path, index, insert_mode):
    """The executors write to an object store through s3fs in their Python workers, making a task's
    independent requests side by side (`Storage.map`, threads in a forked worker): the same batches
    read back the same from S3 as from a local disk, and as the model says."""
    local = options_for(tmp_path / "table", index, insert_mode)
    remote = dataclasses.replace(local, table_path=f"s3://lake/sink_{index}", storage_options=s3)
    model = TableModel(event_time=True)
    batches = []
    for batch_id in range(3):
        ops = [Op(f"k{(batch_id * 7 + i) % 40}", f"p{i % 6}", batch_id, values={"fare": float(i)}) for i in range(30)]
        for op in ops:
            op.values = model_values(op, False, batch_id)
        batches.append(to_table(ops, False, batch_id))
        model.apply(ops)
    for options in (local, remote):
        with HudiSink(options, spark=spark) as sink:
            for batch_id, batch in enumerate(batches):
                sink(spark_frame(spark, batch), batch_id)
            # The table listed in full once; each later batch lists what the timeline says changed.
            assert sink.listings.full_listings == 1 and sink.listings.partitions_listed == 2 * 6
    from_s3 = our_rows(read_snapshot(HudiTable.open(remote.table_path, s3)))
    assert from_s3 == expected_rows(model)
    assert from_s3 == our_rows(read_snapshot(HudiTable.open(local.table_path)))
    assert len(HudiTable.open(remote.table_path, s3).timeline().completed(Action.DELTA_COMMIT)) == len(batches)


def test_keys_that_need_hudis_full_cut_are_written_again_with_the_exact_route(spark, tmp_path, caplog):
    """Keys holding ':' and ',' hash differently under Hudi's cut than whole: the fast route sends some
    to the wrong task, the batch fails before writing, and the sink writes it again with the exact
    route, rolled back attempt and all; it then keeps the exact route."""
    options = options_for(tmp_path / "table", "bucket", "log")
    model = TableModel(event_time=True)
    plain = [Op(f"k-{i}", f"p{i % 3}", 1, values={"fare": float(i)}) for i in range(40)]
    cut = [Op(f"id:{i},part:{i % 5}", f"p{i % 3}", 2, values={"fare": float(i)}) for i in range(40)]
    with HudiSink(options, spark=spark, small_batch_rows=5) as sink:
        for batch_id, ops in enumerate([plain, cut]):
            for op in ops:
                op.values = model_values(op, False, batch_id)
            with caplog.at_level("WARNING", logger="ingest.spark.sink"):
                sink(spark_frame(spark, to_table(ops, False, batch_id)), batch_id)
            model.apply(ops)
            assert sink.exact_routes is (batch_id == 1)
    assert "writing the batch again with the exact route" in caplog.text
    table = HudiTable.open(str(tmp_path / "table"))
    timeline = table.timeline()
    assert len(timeline.completed(Action.DELTA_COMMIT)) == 2
    assert len(timeline.completed(Action.ROLLBACK)) == 1, "the failed attempt was rolled back"
    assert our_rows(read_snapshot(table)) == expected_rows(model)


def test_at_table_version_9_keys_reach_the_buckets_hudi_1x_hashes_them_to(spark, tmp_path):
    """At 9 (and 8) Hudi 1.x's `BucketIdentifier` hashes a key without both `,` and `:` whole, so the
    sink's fast route is exact for such keys, `order:7` included; every row lands in the file group
    of the bucket `KeyGenUtils.extractRecordKeysByFields` (1.x) gives it, without a second attempt."""
    from ingest.hudi.keygen.bucket_index import bucket_id

    options = options_for(tmp_path / "table", "bucket", "log", version=9)
    model = TableModel(event_time=True)
    ops = [Op(f"order:{i}", f"p{i % 3}", 1, values={"fare": float(i)}) for i in range(30)]
    with HudiSink(options, spark=spark, small_batch_rows=5) as sink:
        for op in ops:
            op.values = model_values(op, False, 0)
        sink(spark_frame(spark, to_table(ops, False, 0)), 0)
        model.apply(ops)
        assert sink.exact_routes is False
    table = HudiTable.open(str(tmp_path / "table"))
    assert not table.timeline().completed(Action.ROLLBACK)
    snapshot = read_snapshot(table)
    assert our_rows(snapshot) == expected_rows(model)
    buckets = options.index.bucket_count
    for row in snapshot.to_pylist():
        file_id = row["_hoodie_file_name"].lstrip(".")
        assert int(file_id[:8]) == bucket_id(row["_hoodie_record_key"], options.hash_fields, buckets, cut_1x=True)
    assert len({int(r["_hoodie_file_name"].lstrip(".")[:8]) for r in snapshot.to_pylist()}) > 1


def test_arrow_batch_settings_turn_the_byte_bound_into_a_row_bound(spark):
    with session_conf(spark, {ARROW_MAX_BYTES: "64m", ARROW_MAX_RECORDS: "100000"}):
        assert arrow_batch_settings(spark, None) == {}, "unknown width: Spark's own settings stand"
        assert arrow_batch_settings(spark, 200.0) == {ARROW_MAX_BYTES: str(UNMEASURED), ARROW_MAX_RECORDS: "100000"}
        assert arrow_batch_settings(spark, 4096.0) == {ARROW_MAX_BYTES: str(UNMEASURED), ARROW_MAX_RECORDS: "16384"}
        assert arrow_batch_settings(spark, 1e12)[ARROW_MAX_RECORDS] == "1"
    with session_conf(spark, {ARROW_MAX_BYTES: "1048576b", ARROW_MAX_RECORDS: "0"}):  # 0: no row limit of its own
        assert arrow_batch_settings(spark, 100.0)[ARROW_MAX_RECORDS] == "10485"
    with session_conf(spark, {ARROW_MAX_BYTES: str(UNMEASURED)}):
        assert arrow_batch_settings(spark, 100.0) == {}, "nothing measured already: nothing to change"


def test_a_first_batch_learns_its_width_from_its_first_rows_unless_a_shuffle_comes_before_them(spark):
    """With no earlier batch, the width comes from the first rows (one small job), as the sink later
    learns it from every row; a frame whose rows come out of a shuffle is not read twice for it."""
    table = pa.table({"id": [f"key-{i:05d}" for i in range(3000)], "n": pa.array(range(3000), pa.int64())})
    df = spark.createDataFrame(table)
    assert sampled_row_bytes(df, rows=1000) == pytest.approx(table.slice(0, 1000).nbytes / 1000, rel=0.05)
    assert sampled_row_bytes(df.repartition(2, "id")) is None
    assert sampled_row_bytes(df.filter("n < 0")) is None  # no rows: nothing learned
    from pyspark.sql import functions as F

    failing = df.select(F.udf(lambda n: 1 // (n - n), "int")("n").alias("n"))
    assert sampled_row_bytes(failing) is None  # the write itself reports rows that cannot be read


def test_spark_hands_python_batches_of_the_bounded_rows(spark):
    """The premise of `arrow_batch_settings`: with the byte limit at the unmeasured value, Spark cuts
    Arrow batches by the row bound alone."""

    def batch_rows(batches):  # defined here so that Spark ships it by value
        for batch in batches:
            yield pa.RecordBatch.from_pydict({"rows": pa.array([batch.num_rows], pa.int64())})

    df = spark.range(1000).select(F.col("id"), F.struct(F.col("id").cast("string").alias("s")).alias("nested"))
    with session_conf(spark, {ARROW_MAX_BYTES: "1k", ARROW_MAX_RECORDS: "10000"}):
        settings_ = arrow_batch_settings(spark, 50.0)
        assert settings_[ARROW_MAX_RECORDS] == "20"
        with session_conf(spark, settings_):
            sizes = [r["rows"] for r in df.coalesce(1).mapInArrow(batch_rows, "rows long").collect()]
    assert sum(sizes) == 1000 and max(sizes) == 20


def test_python_workers_keep_the_memory_they_free(spark):
    """Sessions built by ingest start Python workers with Arrow's allocator and glibc's malloc told not
    to hand freed memory back to the OS between batches (`ingest.spark.session.DEFAULT_CONF`)."""

    names = ("MIMALLOC_PURGE_DELAY", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")

    def allocator_settings(batches):
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"v": pa.array([",".join(str(os.environ.get(n)) for n in names)])})

    values = {r["v"] for r in spark.range(4).repartition(2).mapInArrow(allocator_settings, "v string").collect()}
    assert values == {f"-1,{32 << 20},{1 << 30}"}


def test_the_sink_learns_the_rows_width_and_restores_the_session(spark, tmp_path):
    """After its first batch the sink knows the Arrow bytes per row and writes later batches with the
    byte bound as a row bound (here a few rows per Arrow batch); the session's own settings are back
    after every batch, and the table is exact."""
    options = options_for(tmp_path / "table", "bucket", "log")
    model = TableModel(event_time=True)
    keys = {"spark.sql.adaptive.enabled": "true", ARROW_MAX_BYTES: "512b", ARROW_MAX_RECORDS: "10000"}
    with session_conf(spark, keys), HudiSink(options, spark=spark, small_batch_rows=5) as sink:
        for batch_id in range(3):
            ops = [Op(f"k-{(i * 7 + batch_id) % 60}", f"p{i % 3}", batch_id + 1, values={"fare": float(i)})
                   for i in range(50)]
            for op in ops:
                op.values = model_values(op, True, batch_id)
            frame = spark_frame(spark, to_table(ops, True, batch_id))
            sink(frame, batch_id)
            model.apply(ops)
            width = frame.toArrow().nbytes / len(ops)
            assert 0.5 * width < sink.row_bytes < 3 * width, (sink.row_bytes, width)
            assert {k: spark.conf.get(k) for k in keys} == keys
            # Later batches reach Python in Arrow batches of a few rows each.
            assert int(arrow_batch_settings(spark, sink.row_bytes)[ARROW_MAX_RECORDS]) < len(ops) // 2
    table = HudiTable.open(str(tmp_path / "table"))
    assert our_rows(read_snapshot(table)) == expected_rows(model)


# -- Hudi-written tables ------------------------------------------------------------------------

FIXTURE_SETTINGS = {
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
}
TRIP_SCHEMA = "ts LONG, uuid STRING, rider STRING, driver STRING, fare DOUBLE, city STRING"


@pytest.mark.parametrize("fixture", ["v6_trips_8i1u", "v6_trips_8i3d"])
def test_continue_a_table_hudi_wrote(spark, hudi_table_copy, fixture):
    hudi = pytest.importorskip("hudi")
    path = hudi_table_copy(fixture)
    before = {r["uuid"]: r for r in read_snapshot(HudiTable.open(str(path))).to_pylist()}
    options = WriteOptions(table_path=str(path), table_name=fixture, hudi=FIXTURE_SETTINGS,
                           index=IndexOptions(type=IndexType.KEY, shards=2))
    e_uuid, f_uuid = "1dced545-862b-4ceb-8b43-d2a568f6616b", "e3cf430c-889d-4015-bc98-59bdce1e530c"
    i_uuid = "3eeb61f7-c2b0-4636-99bd-5d7a5a1d2c04"
    updates = spark.createDataFrame([
        (1695332066205, e_uuid, "rider-E", "driver-O", 11.0, "san_francisco"),       # update (base file row)
        (1695516137017, f_uuid, "rider-F", "driver-P", 12.0, "sao_paulo"),           # update
        (1700000000000, "new-1", "rider-X", "driver-X", 13.0, "chennai"),            # insert, existing partition
        (1700000000001, "new-2", "rider-Y", "driver-Y", 14.0, "bengaluru"),          # insert, new partition
    ], TRIP_SCHEMA)
    deletes = spark.createDataFrame([(1700000000002, i_uuid, None, None, None, "chennai")], TRIP_SCHEMA) \
        .withColumn("_hoodie_is_deleted", F.lit(True))
    with HudiSink(options, spark=spark) as sink:
        sink.write(updates)
        sink.write(deletes)

    expected = dict(before)
    expected[e_uuid] = {**before[e_uuid], "fare": 11.0, "ts": 1695332066205}
    expected[f_uuid] = {**before[f_uuid], "fare": 12.0, "ts": 1695516137017}
    expected["new-1"] = {"uuid": "new-1", "rider": "rider-X", "fare": 13.0, "city": "chennai", "ts": 1700000000000}
    expected["new-2"] = {"uuid": "new-2", "rider": "rider-Y", "fare": 14.0, "city": "bengaluru", "ts": 1700000000001}
    expected.pop(i_uuid)

    def view(rows):
        return {r["uuid"]: (r["ts"], r["rider"], r["fare"], r["city"]) for r in rows}

    ours = read_snapshot(HudiTable.open(str(path))).to_pylist()
    assert view(ours) == view(expected.values())
    theirs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()).to_pylist()
    # hudi-rs does not read file groups that have only log files yet: the new keys may sit in one.
    assert view(theirs) == {k: v for k, v in view(expected.values()).items() if k in view(theirs)}
    assert set(view(expected.values())) - set(view(theirs)) <= {"new-1", "new-2"}
    assert e_uuid in view(theirs) and i_uuid not in view(theirs)


def test_bucket_index_refuses_a_table_it_did_not_write(spark, hudi_table_copy):
    path = hudi_table_copy("v6_trips_8i1u")
    options = WriteOptions(table_path=str(path), table_name="v6_trips_8i1u", hudi=FIXTURE_SETTINGS,
                           index=IndexOptions(type=IndexType.BUCKET, bucket_count=2))
    df = spark.createDataFrame([(1, "x", "r", "d", 1.0, "chennai")], TRIP_SCHEMA)
    with HudiSink(options, spark=spark) as sink, pytest.raises(ConfigError, match="continue this table with SIMPLE"):
        sink.write(df)


# -- separate processes: local-cluster and crashes -------------------------------------------------

BATCHES = [
    [("a", "p1", 1, "a1", False), ("b", "p2", 1, "b1", False), ("c", "p1", 1, "c1", False)],
    [("a", "p1", 3, "a3", False), ("a", "p1", 2, "a2", False), ("d", "p2", 1, "d1", False)],
    [("b", "p2", 0, "late", False), ("c", "p1", 5, None, True), ("e", "p3", 1, "e1", False)],
    [("a", "p1", 3, "a3-tie", False), ("f", "p3", 1, "f1", False)],
    [("d", "p2", 9, "d9", False), ("g", "p1", 1, "g1", False)],
]


def expected_after(batches) -> set[tuple]:
    model = TableModel(event_time=True)
    for batch in batches:
        model.apply([Op(k, p, ts, d, {"v": v}) for k, p, ts, v, d in batch])
    return {(r["key"], r["partition"], r["ts"], r["v"]) for r in model.rows()}


def write_source(folder: Path, batches) -> None:
    """One JSON file per micro-batch; Spark's file source takes them in modification-time order."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, batch in enumerate(batches):
        lines = [json.dumps({"id": k, "part": p, "ts": ts, "v": v, "_hoodie_is_deleted": d})
                 for k, p, ts, v, d in batch]
        path = folder / f"batch-{i:03d}.json"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_700_000_000 + 10 * i, 1_700_000_000 + 10 * i))


def run_stream(source: Path, checkpoint: Path, table: Path, *extra: str, crash_at: str | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("INGEST_CRASH_AT", None)
    if crash_at:
        env["INGEST_CRASH_AT"] = crash_at
    return subprocess.run(
        [sys.executable, str(REPO / "tests" / "stream_job.py"), str(source), str(checkpoint), str(table), *extra],
        env=env, capture_output=True, text=True, timeout=timeout,
    )


def table_rows(path: Path) -> set[tuple]:
    return {(r["id"], r["part"], r["ts"], r["v"]) for r in read_snapshot(HudiTable.open(str(path))).to_pylist()}


@pytest.mark.slow
@pytest.mark.cluster
def test_separate_executor_processes_write_the_same_table(tmp_path):
    source = tmp_path / "source"
    write_source(source, BATCHES)
    result = run_stream(source, tmp_path / "ckpt", tmp_path / "table", "--master", "local-cluster[2,1,1024]",
                        "--index", "key", "--insert-mode", "base", "--parallelism", "2", timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert table_rows(tmp_path / "table") == expected_after(BATCHES)
    assert len(HudiTable.open(str(tmp_path / "table")).timeline().completed(Action.DELTA_COMMIT)) == len(BATCHES)


@pytest.mark.slow
@pytest.mark.parametrize(("crash_at", "index"), [("after_data_write", "bucket"), ("mid_commit", "bucket"),
                                                 ("after_commit", "bucket"), ("after_data_write", "key")])
def test_writer_killed_during_a_batch_loses_and_duplicates_nothing(tmp_path, crash_at, index):
    source, checkpoint, table = tmp_path / "source", tmp_path / "ckpt", tmp_path / "table"
    write_source(source, BATCHES)
    mode = ("--index", index, "--insert-mode", "log" if index == "bucket" else "base")
    crashed = run_stream(source, checkpoint, table, *mode, crash_at=crash_at)
    assert crashed.returncode == CRASH_EXIT_CODE, crashed.stderr[-3000:]
    # A Hudi writer or hudi-cli may be the next process to open the table, and roll our instant back.
    hudi_invariants.check(table, bucket_index=index == "bucket")
    timeline = HudiTable.open(str(table)).timeline()
    if crash_at == "after_commit":
        assert not timeline.pending()
    else:
        assert timeline.pending(Action.DELTA_COMMIT), "the killed writer left its instant pending"
    resumed = run_stream(source, checkpoint, table, *mode)
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    assert table_rows(table) == expected_after(BATCHES)
    checked = hudi_invariants.check(table, bucket_index=index == "bucket")
    assert checked["schemas"] and (crash_at == "after_commit" or checked["rollbacks"]), checked
    timeline = HudiTable.open(str(table)).timeline()
    assert not timeline.pending()
    assert len(timeline.completed(Action.DELTA_COMMIT)) == len(BATCHES), "each batch committed exactly once"
    if crash_at != "after_commit":
        assert timeline.completed(Action.ROLLBACK), "the interrupted instant was rolled back"


@pytest.mark.parametrize("delta", [False, True])
def test_write_stats_cross_from_the_executors_to_the_driver_whole(delta):
    """Write tasks send their stats to the driver as JSON (`_result_batch`, `_parse_results`): every field
    arrives, `prevBaseFile` too (Hudi 1.x's `HoodieMergeHandle` sets it, and the commit file's JSON at
    version 6, `WriteStat.to_json`, has no such field)."""
    from ingest.hudi.timeline.commit_metadata import RuntimeStats, WriteStat
    from ingest.spark import sink, task_functions
    from ingest.write.tasks import TaskResult

    fields = dict(file_id="f1", path="p/f1-0_1-2-3_20260101000000002.parquet", partition_path="p",
                  prev_commit="20260101000000001", num_writes=3, num_deletes=1, num_update_writes=1, num_inserts=2,
                  total_write_bytes=400, file_size_in_bytes=400, runtime_stats=RuntimeStats(1, 2, 3))
    if delta:
        fields.update(path="p/.f1-0_20260101000000001.log.2_1-2-3", log_version=2, log_offset=0,
                      base_file="f1-0_0-1-2_20260101000000001.parquet", log_files=("a.log.1", "a.log.2"),
                      total_log_records=3, total_log_blocks=1)
    else:
        fields.update(prev_base_file="f1-0_0-1-2_20260101000000001.parquet")
    stat = WriteStat(**fields)
    result = TaskResult((stat,), ("segment",), {"rows_in": 3})
    sent = task_functions.result_batch(result).column("result")[0].as_py()
    assert sink._parse_results([{"result": sent}]).stats == (stat,)
