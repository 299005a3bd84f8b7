"""Compaction and cleaning at table versions 8 and 9 (Hudi 1.x), on tables ingest writes and on tables
Hudi wrote, read back by hudi-rs and by us as the reference model says.

Each test names in its docstring the Hudi (Java) class and method whose rule it checks; the Avro
checks state what they compare (record names, field names and order, types, defaults) and against what
(Hudi 1.2's `.avsc` texts pinned in tests/hudi_avsc.py, or the schema Hudi 1.x embedded in a fixture).
"""

from __future__ import annotations

import io
import logging
import random
from pathlib import Path

import fastavro
import hudi_invariants
import pytest
from hudi_avsc import CLEAN_METADATA_1_2, CLEANER_PLAN_1_2, COMPACTION_PLAN_1_2, decode_strict
from hudi_avsc import shape as _shape
from model import Op
from service_tables import (
    CITIES,
    FixtureWriter,
    ModelWriter,
    data_files,
    hudi_rs_rows,
    our_rows,
    random_batch,
)
from test_read_any_table import unzip
from test_services_crash import run_service
from test_write_versions import _fixture_commit_schema, _hudi_shape

from ingest import services
from ingest.cli import main
from ingest.faults import CRASH_EXIT_CODE
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.services import compaction
from ingest.hudi.table import markers
from ingest.hudi.table.file_names import BaseFileName
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action, State

hudi = pytest.importorskip("hudi")

VERSIONS = (8, 9)
RETAIN_2 = ServiceSettings.from_mapping({"hoodie.cleaner.commits.retained": "2"})


def timeline_dir(path: Path | str) -> Path:
    return Path(path) / ".hoodie" / "timeline"


def rows_match(w: ModelWriter) -> None:
    expected = w.expected()
    rs = hudi_rs_rows(w.path)
    assert sorted(rs) == sorted(expected) and len(rs) == len(set(rs)), "hudi-rs"
    assert our_rows(w.path) == expected, "our reader"


def slices_match_hudi_rs(path: Path | str) -> None:
    """Our latest file slices (base instant, base file, log files) are the ones hudi-rs cuts
    (`FileGroup::add_log_file`: by completion time, as `HoodieFileGroup.getBaseInstantTime`)."""
    rs = sorted((s.partition_path, s.file_id, s.creation_instant_time, s.base_file_name, tuple(sorted(s.log_file_names)))
                for s in hudi.HudiTableBuilder.from_base_uri(str(path)).build().get_file_slices())
    ours = sorted((s.partition_path, s.file_id, s.base_instant, s.base_file.name.name if s.base_file else "",
                   tuple(sorted(lf.name.name for lf in s.log_files)))
                  for s in HudiTable.open(str(path)).view().latest_file_slices())
    assert ours == rs


def lifecycle(path: Path, version: int) -> tuple[ModelWriter, str, str]:
    """Five deltacommits, a compaction, three deltacommits, a clean keeping two commits: the model
    checked by both readers after each step. Returns the writer, the compaction and the clean instant."""
    w = ModelWriter(path, buckets=2, version=version)
    rng = random.Random(version)
    for n in range(1, 6):
        w.write(random_batch(rng, n, keys=12, size=7))
    groups = w.table.view().file_groups()
    assert groups and all(s.base_file is None for g in groups for s in g.slices), "log-only file groups"
    rows_match(w)
    run = services.compact(w.path, RETAIN_2)
    assert run.scheduled and run.executed == (run.scheduled,)
    rows_match(w)
    for n in range(6, 9):
        w.write(random_batch(rng, n, keys=12, size=7))
    rows_match(w)
    slices_match_hudi_rs(w.path)
    cleans = services.clean(w.path, RETAIN_2)
    assert len(cleans) == 1 and cleans[0].deleted and not cleans[0].failed
    rows_match(w)
    slices_match_hudi_rs(w.path)
    return w, run.scheduled, cleans[0].instant


@pytest.mark.parametrize("version", VERSIONS)
def test_compaction_and_cleaning_read_as_the_model(tmp_path, version):
    """`ScheduleCompactionActionExecutor` / `BaseHoodieCompactionPlanGenerator.generateCompactionPlan` at
    8/9 on file groups of log files only (`HoodieFileGroup.getBaseInstantTime`: the slice is the first
    log's instant, later logs join it by completion time), `RunCompactionActionExecutor` writing one base
    file per operation named with the compaction instant (`HoodieMergeHandle`/`HoodieCreateHandle`), and
    `CompactHelpers.completeInflightCompaction` completing it as `<t>_<completion>.commit`
    (`ActiveTimelineV2.transitionCompactionInflightToComplete`); then `CleanPlanner` (KEEP_LATEST_COMMITS,
    slices by base instant) and `CleanActionExecutor`. hudi-rs and our reader return the model's rows
    before and after the compaction and after the clean; logs written after the compaction join its
    slice, and our latest slices are the ones hudi-rs cuts; every timeline file name parses with hudi-rs's
    rules (`hudi_invariants.check_timeline`)."""
    w, compacted, cleaned = lifecycle(tmp_path / "t", version)
    table = w.table
    timeline = table.timeline()
    done = timeline.get(compacted)
    assert done.action is Action.COMPACTION and done.is_completed and done.completion_time > compacted
    names = sorted(p.name for p in timeline_dir(w.path).iterdir() if p.is_file())
    assert [n for n in names if n.startswith(compacted)] == [
        f"{compacted}.compaction.inflight", f"{compacted}.compaction.requested",
        f"{compacted}_{done.completion_time}.commit"]
    assert (timeline_dir(w.path) / f"{compacted}.compaction.inflight").stat().st_size == 0
    stats = table.commit_metadata(done).all_write_stats()
    written = {f for f in data_files(w.path) if f.endswith(f"_{compacted}.parquet")}
    assert written == {s.path for s in stats} and len(written) == len(stats) > 0
    assert all(BaseFileName.parse(Path(p).name).instant == compacted for p in written)
    for group in table.view().file_groups():
        latest = group.latest_slice
        if latest.base_file is not None:
            assert latest.base_instant == compacted
            assert all(lf.name.base_instant > compacted for lf in latest.log_files)
    clean = timeline.get(cleaned)
    assert clean.is_completed
    inflight = (timeline_dir(w.path) / f"{cleaned}.clean.inflight").read_bytes()
    # 1.0 repeats the plan there (`CleanActionExecutor.runClean`), 1.1 writes nothing (HUDI-9330).
    assert inflight == ((timeline_dir(w.path) / f"{cleaned}.clean.requested").read_bytes() if version == 8 else b"")
    counts = hudi_invariants.check(w.path, bucket_index=True)
    assert counts["timeline"] == len(names) and counts["schemas"] > 0


@pytest.mark.parametrize("version", VERSIONS)
def test_plans_and_metadata_carry_hudi_1_2_schemas(tmp_path, version):
    """`TimelineMetadataUtils.serializeAvroMetadata` (one record in an Avro container) of
    `HoodieCompactionPlan` (`.compaction.requested`), `HoodieCleanerPlan` (`.clean.requested`) and
    `HoodieCleanMetadata` (`<t>_<c>.clean`), read by Hudi with `deserializeAvroMetadata`: the writer schema
    embedded in each file has the record full names, field names and order, field types (unions in
    order) and defaults of Hudi 1.2's avsc (`hudi_avsc.COMPACTION_PLAN_1_2`, `CLEANER_PLAN_1_2`,
    `CLEAN_METADATA_1_2`), and Apache Avro's own reader (the `avro` package) decodes the file with that
    text as reader schema. The completed compaction's `HoodieCommitMetadata` has the shape Hudi 1.x
    embedded in the v9 fixture's commits (`CommitMetadataSerDeV2`)."""
    w, compacted, cleaned = lifecycle(tmp_path / "t", version)
    decoded = service_files(w.path, (compacted, cleaned), _shape(_fixture_commit_schema(tmp_path)))
    plan = decoded["HoodieCompactionPlan"]
    assert plan["missingSchedulePartitions"] == [] and plan["extraMetadata"] == {}
    assert plan["version"] == 2 and plan["operations"]
    assert decoded["HoodieCleanerPlan"]["policy"] == "KEEP_LATEST_COMMITS"
    assert decoded["HoodieCleanerPlan"]["filePathsToBeDeletedPerPartition"]
    assert decoded["HoodieCleanMetadata"]["totalFilesDeleted"] > 0
    assert decoded["HoodieCleanMetadata"]["earliestCommitToRetain"]
    # `CleanPlanActionExecutor.prepareExtraMetadata` (no savepoint: an empty map), copied into the metadata
    # by `CleanerUtils.convertCleanMetadata`.
    assert decoded["HoodieCleanerPlan"]["extraMetadata"] == {} == decoded["HoodieCleanMetadata"]["extraMetadata"]


_HUDI_1_2 = {"HoodieCompactionPlan": COMPACTION_PLAN_1_2, "HoodieCleanerPlan": CLEANER_PLAN_1_2,
             "HoodieCleanMetadata": CLEAN_METADATA_1_2}


def service_files(path: Path | str, instants: tuple[str, ...], commit_shape) -> dict[str, dict]:
    """Every non-empty timeline file of `instants`, by record: its embedded writer schema shaped as Hudi
    1.2's text (or, for commit metadata, as `commit_shape`), and the plans and clean metadata decoded by
    the `avro` package with that text as reader schema. All four records must be there."""
    decoded: dict[str, dict] = {}
    for f in sorted(p for p in timeline_dir(path).iterdir() if p.is_file() and p.name.startswith(instants)):
        data = f.read_bytes()
        if not data:
            continue
        writer_schema = fastavro.reader(io.BytesIO(data)).writer_schema
        record = writer_schema["name"].rsplit(".", 1)[-1]
        if record == "HoodieCommitMetadata":
            assert _shape(writer_schema) == commit_shape, f.name
            decoded[record] = {}
        else:
            assert _shape(writer_schema) == _hudi_shape(_HUDI_1_2[record]), f.name
            decoded[record] = decode_strict(data, _HUDI_1_2[record])
    assert sorted(decoded) == ["HoodieCleanMetadata", "HoodieCleanerPlan", "HoodieCommitMetadata",
                               "HoodieCompactionPlan"], sorted(decoded)
    return decoded


def test_a_strategy_that_leaves_slices_records_their_partitions(tmp_path):
    """`CompactionStrategy.orderAndFilter` / `HoodieCompactionPlanGenerator.getCompactionPlan` (1.x):
    the partitions of the slices the strategy filtered out are the plan's `missingSchedulePartitions`
    (incremental table services pick them up next time); the slices it kept are the operations."""
    w = ModelWriter(tmp_path / "t", buckets=2, version=9)
    w.write([Op(f"key-{k}", CITIES[k % 3], 1, False, {"fare": 1.0}) for k in range(12)])
    for n in range(2, 5):  # chennai's file groups get three more log files each
        w.write([Op(f"key-{k}", "chennai", n, False, {"fare": float(n)}) for k in range(1, 12, 3)])
    settings = ServiceSettings.from_mapping({
        "hoodie.compaction.strategy": "org.apache.hudi.table.action.compact.strategy.LogFileNumBasedCompactionStrategy",
        "hoodie.compaction.logfile.num.threshold": "4"})
    instant = compaction.schedule(w.table, settings.compaction, force=True)
    plan = compaction.read_plan(w.table.storage, instant, w.table.layout)
    decoded = decode_strict((timeline_dir(w.path) / f"{instant}.compaction.requested").read_bytes(), COMPACTION_PLAN_1_2)
    kept = {op.partition_path for op in plan.operations}
    slices = [g.latest_slice for g in w.table.view().file_groups()]
    left = {s.partition_path for s in slices if 0 < len(s.log_files) < 4}
    assert kept and left and all(len(op.delta_files) >= 4 for op in plan.operations)
    assert kept == {"city=chennai"} and left == {"city=san_francisco", "city=sao_paulo"}
    assert set(decoded["missingSchedulePartitions"]) == left == set(plan.missing_partitions)


# -- Hudi-written tables continued ------------------------------------------------------------------------

CONTINUED = [
    ("tables", "v8_trips_8i3u1d", "uuid", "city", "ts"),
    ("tables-v9", "v9_txns_simple_nometa", "txn_id", "region", "txn_ts"),
]


@pytest.mark.parametrize("folder, name, key, part, order", CONTINUED, ids=[c[1] for c in CONTINUED])
def test_hudi_written_tables_are_compacted_and_cleaned(tmp_path, folder, name, key, part, order):
    """A Hudi 1.x table (its metadata table first removed, `HoodieTable.maybeDeleteMetadataTable`)
    continued at its own version: three deltacommits of upserts, deletes and inserts into other
    partitions, a compaction of every slice with logs (Hudi's base files and ours, the slices cut by
    completion time, `HoodieFileGroup.getBaseInstantTime`; file groups a clustering replaced left out,
    `AbstractTableFileSystemView.isFileGroupReplaced`), three more deltacommits, a clean
    (`CleanPlanner.getFilesToCleanKeepingLatestCommits`). hudi-rs and our reader return exactly the
    model's rows after each step; our plans and metadata carry Hudi 1.2's schemas (`service_files`),
    Hudi's own plans stay readable next to ours. A merged slice's write stat
    names the base file it merged (`prevBaseFile`, set by 1.x's `HoodieMergeHandle`)."""
    path = unzip(folder, name, tmp_path)
    w = FixtureWriter(path, key, part, order)
    hudi_compactions = {i.timestamp for i in w.table.timeline().completed(Action.COMPACTION)}
    for _ in range(3):
        w.write_round()
    assert w.ours() == w.expected() and w.hudi_rs() == w.expected()
    log_only = {(g.partition_path, g.file_id) for g in w.table.view().file_groups() if g.latest_slice.base_file is None}
    run = services.compact(w.path, RETAIN_2)
    assert run.scheduled and run.executed == (run.scheduled,)
    assert w.ours() == w.expected() and w.hudi_rs() == w.expected()
    compacted = {(g.partition_path, g.file_id) for g in w.table.view().file_groups()
                 if g.latest_slice.base_instant == run.scheduled and g.latest_slice.base_file is not None}
    assert log_only <= compacted, "file groups of log files only (the v9 table's new inserts) compacted too"
    plan = {(op.partition_path, op.file_id): op for op in
            compaction.read_plan(w.table.storage, run.scheduled, w.table.layout).operations}
    merged = [s for s in w.table.commit_metadata(w.table.timeline().get(run.scheduled)).all_write_stats()
              if plan[(s.partition_path, s.file_id)].data_file is not None]
    assert merged and all(s.prev_base_file == plan[(s.partition_path, s.file_id)].data_file for s in merged), \
        "HoodieMergeHandle names the base file it merged (prevBaseFile)"
    for _ in range(3):
        w.write_round()
    cleans = services.clean(w.path, RETAIN_2)
    assert len(cleans) == 1 and cleans[0].deleted
    assert w.ours() == w.expected() and w.hudi_rs() == w.expected()
    w.write_round()  # the key index finds its file groups in the cleaned table
    assert w.ours() == w.expected() and w.hudi_rs() == w.expected()
    timeline = w.table.timeline()
    assert {i.timestamp for i in timeline.completed(Action.COMPACTION)} == hudi_compactions | {run.scheduled}
    service_files(path, (run.scheduled, cleans[0].instant), _shape(_fixture_commit_schema(tmp_path)))
    # The key index puts inserts into base files at 8/9 too (Hudi's SIMPLE index finds keys only there).
    counts = hudi_invariants.check(path, bucket_index=False)
    assert counts["timeline"] > 0 and counts["schemas"] > 0 and counts["keys_in_base_files"] > 0


def test_a_compaction_hudi_left_inflight_is_finished(tmp_path):
    """A compaction a Hudi 1.x executor left inflight (its base files written, no markers: Hudi's default
    timeline-server markers are gone with the server) is invisible to readers; a writer goes on around it
    (`HoodieFileGroup.getBaseInstantTime`: its log completes after the compaction instant), and the next
    `ingest compact` removes the attempt's files by listing (`ListingBasedRollbackStrategy`, as
    `HoodieTable.rollbackInflightCompaction` rolls a compaction back before `RunCompactionActionExecutor`
    runs it again) and completes it from its plan as `<t>_<completion>.commit`. hudi-rs then reads the
    model's rows, and every base file of the instant is one the commit names."""
    path = unzip("tables", "v8_trips_8i3u1d", tmp_path)
    folder = timeline_dir(path)
    done = next(folder.glob("*_*.commit"))
    instant = done.name.split("_")[0]
    hudi_files = {f for f in data_files(path) if f.endswith(f"_{instant}.parquet")}
    done.unlink()  # the executor died before completing
    w = FixtureWriter(path, "uuid", "city", "ts")
    assert hudi_files and not markers.list_markers(w.table.storage, instant)
    assert w.table.timeline().get(instant).state is State.INFLIGHT
    assert w.ours() == w.expected() and w.hudi_rs() == w.expected()
    w.write_round()
    assert w.ours() == w.expected() and w.hudi_rs() == w.expected()
    run = services.compact(w.path, ServiceSettings())
    assert instant in run.executed
    timeline = w.table.timeline()
    completed = timeline.get(instant)
    assert completed.is_completed and (folder / f"{instant}_{completed.completion_time}.commit").is_file()
    committed = {s.path for s in w.table.commit_metadata(completed).all_write_stats()}
    on_disk = {f for f in data_files(path) if f.endswith(f"_{instant}.parquet")}
    assert on_disk == committed and not on_disk & hudi_files, "Hudi's attempt removed, the plan run again"
    assert w.ours() == w.expected() and w.hudi_rs() == w.expected()
    hudi_invariants.check(path, bucket_index=True)


# -- crashes ----------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_a_crash_mid_compaction_then_the_next_run(tmp_path, version):
    """An executor killed after its first base file (`mid_compaction`) leaves `<t>.compaction.inflight`
    and a CREATE marker per file written; readers still see the model (the base file of a compaction
    that has not completed is no slice's, `HoodieFileGroup.isFileSliceCommitted`), a writer goes on
    meanwhile (its logs, completed after `<t>`, join the compacted slice once it completes), and the next
    run removes the attempt's file through its marker and completes the compaction
    (`RunCompactionActionExecutor` after `HoodieTable.rollbackInflightCompaction`, whose files are the
    same). hudi-rs then reads the model's rows, every base file on disk belongs to a slice, and our latest
    slices are hudi-rs's, with the compaction pending and after it."""
    path = tmp_path / "t"
    w = ModelWriter(path, buckets=2, version=version)
    rng = random.Random(21)
    for n in range(1, 5):
        w.write(random_batch(rng, n, keys=12, size=8))
    instant = compaction.schedule(w.table, ServiceSettings().compaction, force=True)
    assert len(compaction.read_plan(w.table.storage, instant, w.table.layout).operations) >= 2
    assert run_service(path, "compaction", "mid_compaction", instant) == CRASH_EXIT_CODE
    assert w.table.timeline().get(instant).state is State.INFLIGHT
    half = [m.data_file_path for m in markers.list_markers(w.table.storage, instant)]
    assert len(half) == 1 and w.table.storage.exists(half[0])
    listed = services.pending_services(w.table)
    assert [(p.instant, p.action, p.state) for p in listed] == [(instant, "compaction", "INFLIGHT")]
    rows_match(w)
    assert hudi_invariants.check(path, bucket_index=True)["markers"] == 1
    w.write(random_batch(rng, 50, keys=12, size=8))
    rows_match(w)
    slices_match_hudi_rs(path)

    assert run_service(path, "compaction", None, instant) == 0
    timeline = w.table.timeline()
    assert timeline.get(instant).is_completed
    committed = {s.path for s in w.table.commit_metadata(timeline.get(instant)).all_write_stats()}
    assert {f for f in data_files(path) if f.endswith(f"_{instant}.parquet")} == committed
    visible = {p for g in w.table.view(timeline).file_groups() for s in g.slices for p in s.paths}
    assert {f for f in data_files(path) if f.endswith(".parquet") or ".log." in f} == visible
    rows_match(w)
    w.write(random_batch(rng, 60, keys=12, size=8))
    rows_match(w)
    slices_match_hudi_rs(path)
    hudi_invariants.check(path, bucket_index=True)


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_a_crash_mid_clean_then_clean_again(tmp_path, version):
    """A cleaner killed after its first delete (`mid_clean`) leaves the clean inflight (its plan at 8, as
    Hudi 1.0's `CleanActionExecutor.runClean` writes it, empty at 9 as 1.1 writes it); the next clean
    executes it again from the plan in its requested file (`CleanActionExecutor.runPendingClean`), files
    already gone reported as failed deletes. hudi-rs reads the model's rows throughout."""
    path = tmp_path / "t"
    w = ModelWriter(path, buckets=2, version=version)
    rng = random.Random(22)
    for n in range(1, 4):
        w.write(random_batch(rng, n, keys=12, size=8))
    services.compact(w.path, RETAIN_2)
    for n in range(4, 6):
        w.write(random_batch(rng, n, keys=12, size=8))
    assert run_service(path, "clean", "mid_clean") == CRASH_EXIT_CODE
    pending = w.table.timeline().pending(Action.CLEAN)
    assert [i.state for i in pending] == [State.INFLIGHT]
    inflight = (timeline_dir(path) / f"{pending[0].timestamp}.clean.inflight").read_bytes()
    assert inflight == ((timeline_dir(path) / f"{pending[0].timestamp}.clean.requested").read_bytes()
                        if version == 8 else b"")
    rows_match(w)
    assert run_service(path, "clean", None) == 0
    timeline = w.table.timeline()
    assert timeline.get(pending[0].timestamp).is_completed and not timeline.pending()
    rows_match(w)
    hudi_invariants.check(path, bucket_index=True)


# -- inline services and commands -------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_inline_services_compact_clean_and_archive(tmp_path, version, caplog):
    """`BaseHoodieWriteClient.postCommit` at 8/9: inline compaction (`hoodie.compact.inline`, every two
    deltacommits), then automatic cleaning (`autoCleanOnCommit`), then archival into the LSM history
    (`autoArchiveOnCommit`, `TimelineArchiverV2`) after a writer's commits, none skipped; the compactions
    and cleans they archive leave the active timeline whole (their requested, inflight and completed
    files go together). hudi-rs reads the model's rows; the invariant suite passes."""
    w = ModelWriter(tmp_path / "t", buckets=2, version=version)
    settings = ServiceSettings.from_mapping({"hoodie.compact.inline": "true",
                                             "hoodie.compact.inline.max.delta.commits": "2",
                                             "hoodie.cleaner.commits.retained": "1",
                                             "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4"})
    rng = random.Random(31)
    runs = []
    with caplog.at_level(logging.WARNING, logger="ingest.services"):
        for n in range(1, 9):
            w.write(random_batch(rng, n, keys=12, size=6))
            runs.append(services.run_inline_services(w.table, settings))
    assert sum(len(r.compacted) for r in runs) >= 3 and any(r.cleaned for r in runs)
    archived = {i for r in runs for i in r.archived}
    assert archived and not [r for r in caplog.records if "does not run" in r.getMessage()]
    timeline = w.table.timeline()
    assert not archived & {i.timestamp for i in timeline}
    for instant in timeline:
        names = timeline.files_of(instant)
        assert instant.state is not State.COMPLETED or any("_" in n for n in names), names
    rows_match(w)
    hudi_invariants.check(w.path, bucket_index=True)


def test_compact_and_clean_commands_at_9(tmp_path, capsys):
    """`ingest compact` and `ingest clean` (Hudi's `HoodieCompactor` / `HoodieCleaner` utilities) on a
    version-9 table: the compaction is scheduled and executed, the clean deletes the slices it replaced."""
    w = ModelWriter(tmp_path / "t", buckets=2, version=9)
    rng = random.Random(41)
    for n in range(1, 4):
        w.write(random_batch(rng, n, keys=12, size=6))
    assert main(["compact", "--path", w.path]) == 0
    out = capsys.readouterr().out
    scheduled = w.table.timeline().last_completed(Action.COMPACTION)
    assert scheduled is not None and f"executed: {scheduled.timestamp}" in out
    for n in range(4, 6):
        w.write(random_batch(rng, n, keys=12, size=6))
    assert main(["clean", "--path", w.path, "--set", "hoodie.cleaner.commits.retained=1"]) == 0
    assert w.table.timeline().completed(Action.CLEAN)
    rows_match(w)


def test_the_sink_runs_compaction_on_executors_at_9(spark, tmp_path):
    """The streaming sink's inline services (`InlineServices`, Hudi's `postCommit`) at 9: compaction
    operations run on Spark executors (`SparkCompactionRunner`, as `HoodieSparkMergeOnReadTableCompactor`
    runs them) and complete as `<t>_<c>.commit`; hudi-rs reads the model's rows."""
    from ingest.pipeline.inline_services import InlineServices
    from ingest.write.batch import CommitResult

    w = ModelWriter(tmp_path / "t", buckets=2, version=9)
    rng = random.Random(51)
    after_commit = InlineServices(w.path, {}, {"hoodie.compact.inline": "true",
                                               "hoodie.compact.inline.max.delta.commits": "3"}, spark, lambda: None)
    for n in range(1, 4):
        after_commit(CommitResult(w.write(random_batch(rng, n, keys=12, size=6))))
    assert after_commit.last is not None and len(after_commit.last.compacted) == 1
    done = w.table.timeline().get(after_commit.last.compacted[0])
    plan = compaction.read_plan(w.table.storage, done.timestamp, w.table.layout)
    assert sum(op.io_mb for op in plan.operations) >= after_commit.runner.local_below_mb, "run on executors"
    assert done.is_completed and (timeline_dir(w.path) / f"{done.timestamp}_{done.completion_time}.commit").is_file()
    rows_match(w)
