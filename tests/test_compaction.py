"""Compaction: plans as Hudi writes them, merged base files, the writer routing around pending plans,
asynchronous compaction interleaved with writes, Spark execution, and the service settings."""

from __future__ import annotations

import io
import random
import shutil
from datetime import datetime, timedelta, timezone

import fastavro
import pyarrow.parquet as pq
import pytest
from hudi_avsc import hudi_schema
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from model import Op
from service_tables import (
    CITIES,
    ModelWriter,
    abandon,
    data_files,
    hudi_rs_rows,
    options_for,
    our_rows,
    random_batch,
    to_table,
)

from ingest.errors import ConcurrentWriterError, ConfigError, TimelineError
from ingest.hudi.avro import avro_models
from ingest.hudi.avro import schema as avro
from ingest.hudi.config.service_settings import (
    CleanerPolicy,
    CompactionSettings,
    CompactionStrategy,
    ServiceSettings,
    TriggerStrategy,
)
from ingest.hudi.parquet.base_file import read_base_file
from ingest.hudi.services import archiver, cleaner, compaction
from ingest.hudi.table import markers
from ingest.hudi.table.file_names import BaseFileName
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action, State, format_instant
from ingest.hudi.timeline.timeline import Timeline, read_instant
from ingest.write.batch import open_table
from ingest.write.commit import abort, begin
from ingest.write.plan import build_plan

V8_PLAN = "v8_trips_8i3u1d/.hoodie/timeline/20251220210129235.compaction.requested"


def write_batches(path, n: int, seed: int = 7, buckets: int = 2) -> ModelWriter:
    rng = random.Random(seed)
    w = ModelWriter(path, buckets)
    for i in range(n):
        w.write(random_batch(rng, i))
    return w


def base_rows(table: HudiTable, path: str) -> list[dict]:
    return read_base_file(table.storage, path).to_pylist()


# -- settings ---------------------------------------------------------------------------------------


def test_settings_defaults_are_hudis():
    s = ServiceSettings.from_mapping({})
    assert (s.compaction.inline, s.compaction.schedule_inline, s.compaction.max_delta_commits) == (False, False, 5)
    assert s.compaction.trigger is TriggerStrategy.NUM_COMMITS
    assert s.compaction.strategy is CompactionStrategy.LOG_FILE_SIZE
    assert (s.compaction.max_delta_seconds, s.compaction.log_file_size_threshold) == (3600, 0)
    assert (s.clean.automatic, s.clean.policy, s.clean.commits_retained, s.clean.file_versions_retained) == (
        True, CleanerPolicy.KEEP_LATEST_COMMITS, 10, 3)
    assert (s.archive.automatic, s.archive.min_commits, s.archive.max_commits) == (True, 20, 30)


def test_settings_parse_hudi_keys():
    s = ServiceSettings.from_mapping({
        "hoodie.compact.inline": "TRUE",
        "hoodie.compact.inline.trigger.strategy": "num_or_time",
        "hoodie.compaction.strategy": "org.apache.hudi.table.action.compact.strategy.LogFileNumBasedCompactionStrategy",
        "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
        "hoodie.keep.min.commits": "5", "hoodie.keep.max.commits": "6",
        "unrelated.key": "whatever",
    })
    assert s.compaction.inline and s.compaction.trigger is TriggerStrategy.NUM_OR_TIME
    assert s.compaction.strategy is CompactionStrategy.LOG_FILE_NUM
    assert s.clean.policy is CleanerPolicy.KEEP_LATEST_FILE_VERSIONS  # commits retained no longer bounds keep.min
    assert ServiceSettings.from_mapping({"hoodie.compaction.strategy": "UnBoundedCompactionStrategy"}) \
        .compaction.strategy is CompactionStrategy.UNBOUNDED


@pytest.mark.parametrize(("key", "value"), [
    ("hoodie.compact.inline", "yes"),
    ("hoodie.compact.inline.max.delta.commits", "0"),
    ("hoodie.compact.inline.trigger.strategy", "SOMETIMES"),
    ("hoodie.compaction.strategy", "DayBasedCompactionStrategy"),
    ("hoodie.cleaner.commits.retained", "ten"),
    ("hoodie.cleaner.policy", "KEEP_ALL"),
])
def test_settings_name_the_bad_key(key, value):
    with pytest.raises(ConfigError) as e:
        ServiceSettings.from_mapping({key: value}, source="pipeline.yaml")
    assert key in str(e.value) and "pipeline.yaml" in str(e.value)
    assert e.value.key == key or key in str(e.value)


def test_settings_cross_key_rules():
    with pytest.raises(ConfigError, match="hoodie.keep.max.commits"):
        ServiceSettings.from_mapping({"hoodie.keep.min.commits": "30", "hoodie.keep.max.commits": "30"})
    with pytest.raises(ConfigError, match="hoodie.keep.min.commits"):
        ServiceSettings.from_mapping({"hoodie.cleaner.commits.retained": "20"})


# -- triggers and strategies --------------------------------------------------------------------------


def _timeline(*names: str) -> Timeline:
    return Timeline.from_file_names(names)


@pytest.mark.parametrize(("trigger", "deltas", "seconds", "expected"), [
    (TriggerStrategy.NUM_COMMITS, 5, 0, True),
    (TriggerStrategy.NUM_COMMITS, 4, 99999, False),
    (TriggerStrategy.TIME_ELAPSED, 1, 3600, True),
    (TriggerStrategy.TIME_ELAPSED, 9, 3599, False),
    (TriggerStrategy.NUM_OR_TIME, 1, 3600, True),
    (TriggerStrategy.NUM_OR_TIME, 5, 0, True),
    (TriggerStrategy.NUM_OR_TIME, 4, 10, False),
    (TriggerStrategy.NUM_AND_TIME, 5, 3600, True),
    (TriggerStrategy.NUM_AND_TIME, 5, 10, False),
])
def test_trigger_counts_delta_commits_since_last_compaction(trigger, deltas, seconds, expected):
    # A compaction completed at 10:00:00.000; `deltas` delta commits after it.
    names = ["20250101095900000.deltacommit", "20250101100000000.compaction.requested",
             "20250101100000000.compaction.inflight", "20250101100000000.commit"]
    names += [f"2025010110000{i}100.deltacommit" for i in range(deltas)]
    now = format_instant(datetime(2025, 1, 1, 10, tzinfo=timezone.utc) + timedelta(seconds=seconds))
    s = CompactionSettings(trigger=trigger)
    assert compaction.needs_compaction(_timeline(*names), s, now) is expected


def test_trigger_without_compaction_counts_from_first_delta_commit():
    names = [f"2025010110000{i}000.deltacommit" for i in range(5)]
    info = compaction.delta_commits_since_compaction(_timeline(*names))
    assert info == (5, "20250101100000000")
    assert compaction.earliest_instant_to_retain(_timeline(*names), CompactionSettings(max_delta_commits=3)) \
        == "20250101100002000"
    assert compaction.earliest_instant_to_retain(_timeline(*names), CompactionSettings(max_delta_commits=9)) \
        == "20250101100000000"


def test_a_replacecommit_restarts_the_delta_commit_count_at_version_6_only():
    """`CompactionUtils.getDeltaCommitsSinceLatestCompaction` counts from the latest completed instant of
    `getCommitTimeline()`: commits and replacecommits in Hudi 0.14/0.15 (`HoodieDefaultTimeline`), commits
    only in 1.x. So after a clustering, a version-6 table waits for as many delta commits again."""
    from ingest.hudi.config.table_version import V6, V8
    from ingest.hudi.timeline.timeline_layout import TimelineLayout

    times = ["20250101100000000", "20250101100001000", "20250101100002000", "20250101100003000",
             "20250101100004000"]
    kinds = ["deltacommit", "deltacommit", "replacecommit", "deltacommit", "deltacommit"]
    v6 = Timeline.from_file_names([f"{t}.{k}" for t, k in zip(times, kinds, strict=True)], version=V6)
    assert compaction.delta_commits_since_compaction(v6) == (2, times[2])
    layout = TimelineLayout(2, ".hoodie/timeline", ".hoodie/timeline/history")
    v8 = Timeline.from_file_names([f"{t}_{t[:-3]}500.{k}" for t, k in zip(times, kinds, strict=True)], layout,
                                  version=V8)
    assert compaction.delta_commits_since_compaction(v8) == (4, times[0])


def _op(file_id: str, log_size: int, logs: int, io: float) -> compaction.CompactionOperation:
    return compaction.CompactionOperation("p", file_id, "1", None, tuple(f".{file_id}_1.log.{i + 1}_0-0-0" for i in range(logs)),
                                          {compaction.TOTAL_LOG_FILES_SIZE: float(log_size), compaction.TOTAL_IO_MB: io})


def test_strategies_filter_order_and_bound():
    ops = [_op("a", 10, 3, 100.0), _op("b", 500, 1, 100.0), _op("c", 50, 2, 100.0)]
    by_size = compaction.order_and_filter(ops, CompactionSettings(log_file_size_threshold=20))
    assert [o.file_id for o in by_size] == ["b", "c"]
    by_num = compaction.order_and_filter(ops, CompactionSettings(strategy=CompactionStrategy.LOG_FILE_NUM))
    assert [o.file_id for o in by_num] == ["a", "c", "b"]
    bounded = compaction.order_and_filter(ops, CompactionSettings(target_io_mb=150))  # take, then stop when spent
    assert [o.file_id for o in bounded] == ["b", "c"]
    unbounded = compaction.order_and_filter(ops, CompactionSettings(strategy=CompactionStrategy.UNBOUNDED, target_io_mb=1))
    assert [o.file_id for o in unbounded] == ["a", "b", "c"]


# -- the plan file ----------------------------------------------------------------------------------


def test_plan_reads_with_hudis_schema_and_hudis_plan_reads_with_ours(tmp_path, fixture_tables):
    w = write_batches(tmp_path / "t", 3)
    table = w.table
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    ours = read_instant(table.storage, table.timeline().get(instant).to(State.REQUESTED))
    fixture_plan = (fixture_tables["v8_trips_8i3u1d"].parent / V8_PLAN).read_bytes()
    theirs_schema = avro_models.writer_schema(fixture_plan)
    # Ours, read with the schema Hudi embedded in the plan it wrote.
    plan = next(iter(fastavro.reader(io.BytesIO(ours), reader_schema=fastavro.parse_schema(theirs_schema))))
    assert plan["version"] == 2 and plan["preserveHoodieMetadata"] is False and plan["strategy"] is None
    op = plan["operations"][0]
    assert set(op["metrics"]) == {"TOTAL_IO_READ_MB", "TOTAL_IO_WRITE_MB", "TOTAL_IO_MB", "TOTAL_LOG_FILES_SIZE",
                                  "TOTAL_LOG_FILES"}
    assert all("/" not in p for p in op["deltaFilePaths"]) and op["dataFilePath"] is None
    assert op["metrics"]["TOTAL_IO_WRITE_MB"] == 120.0  # no base file: the max parquet size, as Hudi estimates
    # Theirs, read with ours.
    hudi_plan = compaction.CompactionPlan.from_bytes(fixture_plan)
    assert len(hudi_plan.operations) == 3 and hudi_plan.version == 2
    first = hudi_plan.operations[0]
    assert first.data_file == "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_2-986-2794_20251220210108078.parquet"
    assert first.delta_files[0].startswith(".6e1d5cc4") and first.log_size == 2117
    resolved = avro_models.deserialize(fixture_plan, avro_models.COMPACTION_PLAN)
    assert resolved["extraMetadata"] == {"_hoodie.spark.sql.writes.prepped": "true"}
    # Field names, order and types match Hudi's where both have them.
    ours_fields = [f["name"] for f in avro_models.COMPACTION_PLAN["fields"]]
    theirs_fields = [f["name"] for f in theirs_schema["fields"]]
    assert theirs_fields[: len(ours_fields)] == ours_fields
    their_op = theirs_schema["fields"][0]["type"][1]["items"]["fields"]
    assert [f["name"] for f in their_op] == [f["name"] for f in avro_models.COMPACTION_OPERATION["fields"]]
    if hudi_schema("HoodieCompactionPlan") is not None:
        again = next(iter(fastavro.reader(io.BytesIO(ours),
                                          reader_schema=fastavro.parse_schema(hudi_schema("HoodieCompactionPlan")))))
        assert again["operations"] == plan["operations"]


# -- compaction end to end ------------------------------------------------------------------------------


@pytest.mark.slow
def test_log_only_table_over_many_commits_compacts_to_the_model(tmp_path):
    path = tmp_path / "t"
    w = write_batches(path, 32, seed=3)
    table = w.table
    assert all(s.base_file is None for s in table.view().latest_file_slices()), "log-only before compaction"
    assert our_rows(path) == w.expected()
    before_rs = hudi_rs_rows(path)

    instant = compaction.schedule(table, ServiceSettings.from_mapping({}).compaction)
    assert instant is not None, "32 delta commits trigger the default NUM_COMMITS (5) strategy"
    compaction.execute(table, instant)

    timeline = table.timeline()
    assert timeline.get(instant).is_completed and (table.storage.exists(f".hoodie/{instant}.commit"))
    slices = table.view(timeline).latest_file_slices()
    assert slices and all(s.base_file is not None and s.base_instant == instant and not s.log_files for s in slices)
    assert our_rows(path) == w.expected()
    after_rs = hudi_rs_rows(path)
    assert sorted(after_rs) == sorted(w.expected()), "hudi-rs reads exactly the model after compaction"
    assert len(after_rs) == len(set(after_rs))
    # hudi-rs 0.5 already reads these log-only groups; what it read then is what the model says too.
    assert set(before_rs) == w.expected()
    assert not table.storage.exists(markers.marker_folder(instant))


def test_compacted_records_keep_commit_time_and_seqno(tmp_path):
    w = write_batches(tmp_path / "t", 6)
    table = w.table
    before = {r[avro.RECORD_KEY]: r for r in read_snapshot(table).to_pylist()}
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    compaction.execute(table, instant)
    for s in table.view().latest_file_slices():
        name = s.base_file.name.name
        assert BaseFileName.parse(name).instant == instant and BaseFileName.parse(name).file_id == s.file_id
        rows = base_rows(table, s.base_file.path)
        assert [r[avro.RECORD_KEY] for r in rows] == sorted(r[avro.RECORD_KEY] for r in rows)
        for r in rows:
            old = before[r[avro.RECORD_KEY]]
            assert r[avro.COMMIT_TIME] == old[avro.COMMIT_TIME] and r[avro.COMMIT_SEQNO] == old[avro.COMMIT_SEQNO]
            assert r[avro.FILE_NAME] == name
            assert r[avro.PARTITION_PATH] == s.partition_path


def test_commit_metadata_is_hudis_compaction_commit(tmp_path):
    w = write_batches(tmp_path / "t", 6)
    table = w.table
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    plan = compaction.read_plan(table.storage, instant)
    compaction.execute(table, instant)
    timeline = table.timeline()
    meta = table.commit_metadata(timeline.get(instant))
    assert meta.compacted and meta.operation_type == "COMPACT" and meta.schema == avro.to_json(table.schema(timeline))
    stats = {s.file_id: s for s in meta.all_write_stats()}
    assert set(stats) == {op.file_id for op in plan.operations}
    for op in plan.operations:
        stat = stats[op.file_id]
        assert stat.log_files is None and stat.prev_commit == "null"  # log-only slice: HoodieCreateHandle
        assert stat.total_log_files_compacted == len(op.delta_files)
        assert stat.total_log_size_compacted == op.log_size > 0
        assert stat.total_log_records >= stat.num_writes and stat.total_log_blocks >= 1
        assert stat.num_writes == pq.read_metadata(table.storage.full_path(stat.path)).num_rows
        assert stat.file_size_in_bytes == table.storage.size(stat.path)
    raw = read_instant(table.storage, timeline.get(instant))
    assert b'"compacted" : true' in raw and b'"totalLogFilesCompacted"' in raw
    # A second compaction merges base files with logs: stats of HoodieMergeHandle.
    rng = random.Random(11)
    for i in range(6, 9):
        w.write(random_batch(rng, i))
    second = compaction.schedule(table, CompactionSettings(), force=True)
    compaction.execute(table, second)
    stats2 = table.commit_metadata(table.timeline().get(second)).all_write_stats()
    assert stats2 and all(s.prev_commit == instant for s in stats2)
    assert sum(s.num_update_writes + s.num_inserts for s in stats2) >= 1
    assert our_rows(tmp_path / "t") == w.expected()


def test_writes_during_a_pending_compaction_go_to_its_slice(tmp_path):
    path = tmp_path / "t"
    w = write_batches(path, 5)
    table = w.table
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    plan = compaction.read_plan(table.storage, instant)
    groups = plan.file_groups
    # The writer's plan routes every planned file group to the compaction's slice.
    incoming = [Op("key-1", CITIES[1], 100, False, {"fare": 1.0})]
    options = options_for(path)
    txn = begin(open_table(options, to_table(incoming).schema), w.table.schema(), "upsert")
    write_plan = build_plan(txn, options)
    for key in groups:
        assert write_plan.targets[key].base_instant == instant and write_plan.targets[key].latest_log is None
    abort(txn)
    rng = random.Random(5)
    for i in range(5, 9):
        w.write(random_batch(rng, i))
        assert our_rows(path) == w.expected(), "readers merge the compaction's slice with the planned one"
    new_logs = [lf for s in table.view().latest_writer_slices() if s.base_instant == instant for lf in s.log_files]
    assert new_logs, "writes after scheduling opened slices at the compaction instant"
    execution = compaction.start_execution(table, instant)
    stats = compaction.run_locally(execution.job, execution.plan.operations)
    w.write(random_batch(rng, 9))  # between writing base files and completing
    assert our_rows(path) == w.expected()
    compaction.complete_execution(table, execution, stats)
    assert our_rows(path) == w.expected()
    assert sorted(hudi_rs_rows(path)) == sorted(w.expected())
    # No new plan takes a group another pending compaction holds.
    second = compaction.schedule(table, CompactionSettings(), force=True)
    assert second is not None
    held = compaction.read_plan(table.storage, second).file_groups
    third = compaction.schedule(table, CompactionSettings(), force=True)
    assert third is None or not (compaction.read_plan(table.storage, third).file_groups & held)


def test_schedule_refuses_while_a_write_is_pending(tmp_path):
    path = tmp_path / "t"
    w = write_batches(path, 3)
    from service_tables import options_for, to_table
    options = options_for(path)
    ops = [Op("key-2", CITIES[2], 50, False, {"fare": 2.0})]
    txn = begin(open_table(options, to_table(ops).schema), w.table.schema(), "upsert")
    assert txn.instant.state is State.INFLIGHT
    assert compaction.schedule(w.table, CompactionSettings(), force=True) is None
    assert not w.table.timeline().pending(Action.COMPACTION)


def test_fence_runs_before_the_plan_is_published(tmp_path):
    w = write_batches(tmp_path / "t", 3)

    def lost_lease() -> None:
        raise RuntimeError("lease lost")

    with pytest.raises(RuntimeError):
        compaction.schedule(w.table, CompactionSettings(), force=True, fence=lost_lease)
    assert not w.table.timeline().pending(Action.COMPACTION)


def test_crashed_attempt_is_cleared_by_markers_and_executed_again(tmp_path):
    path = tmp_path / "t"
    w = write_batches(path, 5)
    table = w.table
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    execution = compaction.start_execution(table, instant)
    # A failed attempt: one base file written (with its marker), never committed.
    first = compaction.compact_operation(execution.job, execution.plan.operations[0], "7-7-7")
    assert table.storage.exists(first.path) and our_rows(path) == w.expected()
    with pytest.raises(ConcurrentWriterError, match="being executed"):
        compaction.execute(table, instant)  # its executor is alive: keep away
    abandon(execution)
    done = compaction.execute(table, instant)
    assert done.is_completed and not table.storage.exists(first.path)
    base_files = {f for f in data_files(path) if f.endswith(".parquet")}
    assert base_files == {s.base_file.path for s in table.view().latest_file_slices()}
    assert our_rows(path) == w.expected()
    assert compaction.execute(table, instant).is_completed  # completed: nothing more to do


def test_one_executor_at_a_time(tmp_path):
    w = write_batches(tmp_path / "t", 4)
    table = w.table
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    first = compaction.start_execution(table, instant)
    with pytest.raises(ConcurrentWriterError):
        compaction.start_execution(table, instant)
    stats = compaction.run_locally(first.job, first.plan.operations)
    # A second executor took over (the first looked dead): the first must not commit.
    abandon(first)
    second = compaction.start_execution(table, instant)
    with pytest.raises(ConcurrentWriterError, match="took compaction"):
        compaction.complete_execution(table, first, stats)
    compaction.complete_execution(table, second, compaction.run_locally(second.job, second.plan.operations))
    assert not table.storage.exists(second.heartbeat.path)
    assert our_rows(tmp_path / "t") == w.expected()


def test_empty_slice_after_deletes_compacts_to_an_empty_base_file(tmp_path):
    path = tmp_path / "t"
    w = ModelWriter(path, buckets=1)
    w.write([Op("k", CITIES[0], 1, False, {"fare": 1.0})])
    w.write([Op("k", CITIES[0], 2, True)])
    table = w.table
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    compaction.execute(table, instant)
    (stat,) = table.commit_metadata(table.timeline().get(instant)).all_write_stats()
    assert stat.num_writes == 0 and stat.num_deletes == 1
    assert our_rows(path) == w.expected() == set()
    assert hudi_rs_rows(path) == []


# -- Spark ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_spark_execution_writes_the_same_table_as_python(tmp_path, spark):
    from ingest.spark.compaction import SparkCompactionRunner

    local, remote = tmp_path / "local", tmp_path / "spark"
    w = write_batches(local, 8, buckets=3)
    instant = compaction.schedule(w.table, CompactionSettings(), force=True)
    shutil.copytree(local, remote)
    compaction.execute(HudiTable.open(str(local)), instant)
    compaction.execute(HudiTable.open(str(remote)), instant, runner=SparkCompactionRunner(spark, local_below_mb=0))
    assert our_rows(local) == our_rows(remote) == w.expected()

    def files(path):
        t = HudiTable.open(str(path))
        out = {}
        for s in t.view().latest_file_slices():
            rows = read_base_file(t.storage, s.base_file.path).drop_columns([avro.FILE_NAME])
            out[(s.partition_path, s.file_id)] = (s.base_file.name.instant, rows.to_pylist())
        return out

    assert files(local) == files(remote)
    spark_names = [s.base_file.name for s in HudiTable.open(str(remote)).view().latest_file_slices()]
    assert any(n.write_token != "0-0-0" for n in spark_names), "executors name files with their task identity"

    def stats(path):
        t = HudiTable.open(str(path))
        meta = t.commit_metadata(t.timeline().get(instant))
        keep = ("file_id", "partition_path", "prev_commit", "num_writes", "num_deletes", "num_update_writes",
                "num_inserts", "total_log_records", "total_log_files_compacted", "total_log_size_compacted",
                "total_updated_records_compacted", "total_log_blocks")
        return sorted(tuple(getattr(s, k) for k in keep) for s in meta.all_write_stats())

    assert stats(local) == stats(remote)
    assert not HudiTable.open(str(remote)).storage.exists(markers.marker_folder(instant))


# -- asynchronous compaction interleaved with ingestion ----------------------------------------------


batch_ops = st.lists(
    st.tuples(st.integers(0, 9), st.booleans(), st.floats(1, 100, allow_nan=False)), min_size=1, max_size=5)
step = st.one_of(
    st.tuples(st.just("write"), batch_ops),
    st.tuples(st.just("write"), batch_ops),
    st.tuples(st.just("schedule"), st.none()),
    st.tuples(st.just("execute"), st.none()),
    st.tuples(st.just("complete"), st.none()),
    st.tuples(st.just("clean"), st.none()),
    st.tuples(st.just("archive"), st.none()),
)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=8, max_size=24), policy=st.sampled_from(list(CleanerPolicy)))
def test_async_services_interleaved_with_writes_lose_and_duplicate_nothing(tmp_path_factory, steps, policy):
    path = tmp_path_factory.mktemp("table")
    svc = ServiceSettings.from_mapping({
        "hoodie.cleaner.policy": policy.value, "hoodie.cleaner.commits.retained": "1",
        "hoodie.cleaner.fileversions.retained": "1", "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
    })
    w = ModelWriter(path)
    w.write([Op("key-0", CITIES[0], 0, False, {"fare": 0.5})])
    executing: dict[str, tuple] = {}
    batch_no = 1
    for kind, payload in steps:
        table = w.table
        if kind == "write":
            ops = []
            for k, delete, fare in payload:
                city = CITIES[k % len(CITIES)]
                ops.append(Op(f"key-{k}", city, batch_no, True) if delete else
                           Op(f"key-{k}", city, batch_no, False, {"fare": fare}))
            w.write(ops)
            batch_no += 1
        elif kind == "schedule":
            compaction.schedule(table, svc.compaction, force=True)
        elif kind == "execute":
            waiting = [i.timestamp for i in table.timeline().pending(Action.COMPACTION) if i.timestamp not in executing]
            if waiting:
                execution = compaction.start_execution(table, waiting[0])
                executing[waiting[0]] = (execution, compaction.run_locally(execution.job, execution.plan.operations))
        elif kind == "complete":
            if executing:
                first = min(executing)
                execution, stats = executing.pop(first)
                if table.timeline().last_completed().timestamp > first:
                    event("compaction completed after later writes")
                compaction.complete_execution(table, execution, stats)
        elif kind == "clean":
            if any(r.deleted for r in cleaner.clean(table, svc.clean, force=True)):
                event("clean deleted files")
        elif archiver.archive(table, svc).archived:
            event("archived instants")
        assert our_rows(path) == w.expected(), f"after {kind}"
    table = w.table
    for instant_time in sorted(executing):
        compaction.complete_execution(table, *executing[instant_time])
    for pending in table.timeline().pending(Action.COMPACTION):
        compaction.execute(table, pending.timestamp)
    last = compaction.schedule(table, svc.compaction, force=True)
    if last is not None:
        compaction.execute(table, last)
    assert our_rows(path) == w.expected()
    assert all(s.base_file is not None for s in table.view().latest_file_slices())
    rs = hudi_rs_rows(path)
    assert sorted(rs) == sorted(w.expected()) and len(rs) == len(set(rs))


def test_pending_plan_round_trips():
    op = compaction.CompactionOperation("city=x", "f-0", "1", "f-0_0-1-2_1.parquet", (".f-0_1.log.1_0-1-2",),
                                        {compaction.TOTAL_LOG_FILES: 1.0})
    plan = compaction.CompactionPlan((op,), {"k": "v"})
    again = compaction.CompactionPlan.from_bytes(plan.to_bytes())
    assert again == plan
    raw = avro_models.deserialize(plan.to_bytes())
    assert raw["operations"][0]["bootstrapFilePath"] is None and raw["preserveHoodieMetadata"] is False


@pytest.mark.parametrize("rerun_started", [False, True])
def test_a_compaction_another_compactor_rolled_back_is_not_completed(tmp_path, rerun_started):
    """Hudi's compactors roll back any inflight compaction before running it (`HoodieTable
    .rollbackInflightCompaction`: a rollback instant, its files deleted, the instant back to requested; then
    inflight again as their run starts), whoever runs it. If one did while ingest was compacting, completing
    would publish a commit of base files that are gone."""
    path = tmp_path / "t"
    w = ModelWriter(path)
    rng = random.Random(3)
    for i in range(3):
        w.write(random_batch(rng, i))
    table = w.table
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    execution = compaction.start_execution(table, instant)
    stats = compaction.run_locally(execution.job, execution.plan.operations)
    at = table.timeline().new_instant_time()  # Hudi's rollback, in between
    table.storage.write(f".hoodie/{at}.rollback.requested", avro_models.serialize(avro_models.ROLLBACK_PLAN, {
        "instantToRollback": {"commitTime": instant, "action": "compaction"}, "RollbackRequests": [], "version": 1}))
    for stat in stats:
        table.storage.delete(stat.path)
    table.storage.delete(f".hoodie/{instant}.compaction.inflight")
    if rerun_started:
        table.storage.write(f".hoodie/{instant}.compaction.inflight", b"")
    with pytest.raises(TimelineError, match=f"compaction {instant} was rolled back by another compactor"):
        compaction.complete_execution(table, execution, stats)
    assert not table.storage.exists(f".hoodie/{instant}.commit")
    execution.heartbeat.release()
    compaction.execute(w.table, instant)  # from its plan again
    assert our_rows(path) == w.expected()


def test_a_compaction_commit_with_an_older_schema_does_not_say_the_tables(tmp_path):
    """`HoodieActiveTimeline.getLastCommitMetadataWithValidSchema` takes the schema of the latest completed
    commit whose operation can change it (`WriteOperationType.canUpdateSchema`: not COMPACT, CLUSTER,
    LOG_COMPACT or INDEX). A Hudi compactor may commit the schema it started with, older than a column a
    later write added; the table's schema stays the write's, and ingest's next commit keeps the column."""
    import json

    import pyarrow as pa

    from ingest import services
    from ingest.write.batch import LocalWriter
    from ingest.write.options import IndexOptions, IndexType, WriteOptions

    path = str(tmp_path / "t")
    hudi = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts"}
    writer = LocalWriter(WriteOptions(path, "t", hudi=hudi, index=IndexOptions(type=IndexType.BUCKET, bucket_count=1)))
    writer.write(pa.table({"id": ["a", "b"], "p": ["x", "x"], "ts": [1, 1]}))
    writer.write(pa.table({"id": ["a"], "p": ["x"], "ts": [2], "tip": [0.5]}))
    done = services.compact(path, ServiceSettings.from_mapping({}))
    commit = tmp_path / "t" / ".hoodie" / f"{done.scheduled}.commit"
    meta = json.loads(commit.read_text())
    assert meta["operationType"] == "COMPACT"
    older = json.loads(meta["extraMetadata"]["schema"])
    older["fields"] = [f for f in older["fields"] if f["name"] != "tip"]
    meta["extraMetadata"]["schema"] = json.dumps(older)
    commit.write_text(json.dumps(meta, indent=2))  # as a compactor holding the first schema commits it

    table = HudiTable.open(path)
    assert table.timeline().completed()[-1].timestamp == done.scheduled
    assert [f["name"] for f in table.schema()["fields"]][-1] == "tip"
    writer.write(pa.table({"id": ["b"], "p": ["x"], "ts": [3]}))  # a batch without the column
    rows = {r["id"]: r["tip"] for r in read_snapshot(HudiTable.open(path)).to_pylist()}
    assert rows == {"a": 0.5, "b": None}
