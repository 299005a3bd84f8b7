"""Savepoints and restores that Hudi's tools leave on a table (`hudi-cli savepoint create`, `call
create_savepoint`, `rollback_to_savepoint`): the timeline keeps a savepoint beside the commit it saved,
the cleaner never deletes a file it names, archival stops at it, and nothing is written while a restore
is pending. Hudi's `SavepointActionExecutor` cannot run here; `savepoint` below writes what it writes."""

from __future__ import annotations

import io
import random

import fastavro
import pyarrow as pa
import pytest
from service_tables import ModelWriter, data_files, hudi_rs_rows, our_rows, random_batch

from ingest import services
from ingest.errors import TimelineError
from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import (
    CleanerPolicy,
    CleanSettings,
    CompactionSettings,
    ServiceSettings,
)
from ingest.hudi.services import archiver, cleaner, compaction
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import Timeline, complete, read_instant
from ingest.hudi.timeline.timeline_layout import LAYOUT_1, TimelineLayout
from ingest.write import index_bootstrap

# Hudi's `HoodieRestorePlan.avsc`, as `RestorePlanActionExecutor` writes it to `<t>.restore.requested`.
RESTORE_PLAN = {"type": "record", "name": "HoodieRestorePlan", "namespace": "org.apache.hudi.avro.model", "fields": [
    {"name": "instantsToRollback", "default": [], "type": {"type": "array", "items": {
        "type": "record", "name": "HoodieInstantInfo", "fields": [
            {"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}]}}},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "savepointToRestoreTimestamp", "type": ["null", "string"], "default": None},
]}
CLEAN = CleanSettings(policy=CleanerPolicy.KEEP_LATEST_COMMITS, commits_retained=2)


def savepoint(table: HudiTable, timestamp: str) -> set[str]:
    """What `SavepointActionExecutor.execute` leaves for a completed commit `timestamp`: an empty
    `<t>.savepoint.inflight`, then the completed savepoint, a `HoodieSavepointMetadata` naming per partition
    the base and log files of every latest slice as of `t` (`getLatestFileSlicesBeforeOrOn`, file names).
    Returns their paths in the table."""
    timeline = table.timeline()
    assert timeline.is_completed(timestamp)
    partitions: dict[str, list[str]] = {}
    paths = set()
    for s in table.view(timeline).latest_file_slices(as_of=timestamp):
        files = ([s.base_file] if s.base_file else []) + list(s.log_files)
        partitions.setdefault(s.partition_path, []).extend(f.name.name for f in files)
        paths.update(f.path for f in files)
    inflight = Instant(timestamp, Action.SAVEPOINT, State.INFLIGHT)
    table.storage.write(timeline.layout.path(inflight), b"")
    complete(table.storage, inflight, avro_models.serialize(avro_models.SAVEPOINT_METADATA, {
        "savepointedBy": "hudi", "savepointedAt": 1_700_000_000_000, "comments": "before the backfill",
        "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": names} for p, names in partitions.items()},
        "version": 1,
    }), timeline=timeline)
    return paths


def delete_savepoint(table: HudiTable, timestamp: str) -> None:
    """`SavepointHelpers.deleteSavepoint`: the completed and the inflight savepoint files go."""
    timeline = table.timeline()
    (instant,) = [i for i in timeline.completed(Action.SAVEPOINT) if i.timestamp == timestamp]
    for name in timeline.files_of(instant):
        table.storage.delete(f"{timeline.layout.folder}/{name}")


def grow(w: ModelWriter, rng: random.Random, start: int, n: int, every: int = 3) -> None:
    for i in range(start, start + n):
        w.write(random_batch(rng, i, keys=8, size=6))
        if (i + 1) % every == 0:
            compaction.execute(w.table, compaction.schedule(w.table, CompactionSettings(), force=True))


@pytest.mark.parametrize("reverse", [False, True])
def test_a_savepoint_is_an_instant_of_its_own_beside_its_commit(reverse):
    """Hudi groups a listing by time and comparable action (`HoodieInstant.getComparableAction`,
    `COMPARABLE_ACTIONS`: compaction -> commit, logcompaction -> deltacommit), and a savepoint always shares
    its commit's time (`SavepointActionExecutor`: "Could not savepoint non-existing commit"). Whatever
    order the storage lists them in, both are instants: the commit stays a completed write."""
    names = ["100.deltacommit.requested", "100.deltacommit.inflight", "100.deltacommit",
             "100.savepoint.inflight", "100.savepoint",
             "200.compaction.requested", "200.compaction.inflight", "200.commit",
             "300.logcompaction.requested", "300.logcompaction.inflight", "300.deltacommit"]
    timeline = Timeline.from_file_names(reversed(names) if reverse else names)
    assert [(i.timestamp, i.action, i.state) for i in timeline] == [
        ("100", Action.DELTA_COMMIT, State.COMPLETED), ("100", Action.SAVEPOINT, State.COMPLETED),
        ("200", Action.COMPACTION, State.COMPLETED), ("300", Action.LOG_COMPACTION, State.COMPLETED)]
    assert "100" in timeline.completed_write_timestamps()
    assert timeline.get("100").action is Action.DELTA_COMMIT
    assert timeline.files_of(timeline.completed(Action.SAVEPOINT)[0]) == ["100.savepoint", "100.savepoint.inflight"]
    assert timeline.files_of(timeline.get("100")) == [
        "100.deltacommit", "100.deltacommit.inflight", "100.deltacommit.requested"]

    layout2 = TimelineLayout(2, ".hoodie/timeline")
    names2 = ["100.deltacommit.requested", "100.deltacommit.inflight", "100_150.deltacommit",
              "100.savepoint.inflight", "100_400.savepoint"]
    timeline2 = Timeline.from_file_names(reversed(names2) if reverse else names2, layout2)
    assert [(i.action, i.completion_time) for i in timeline2] == [
        (Action.DELTA_COMMIT, "150"), (Action.SAVEPOINT, "400")]
    assert LAYOUT_1.parse("100.savepoint") == Instant("100", Action.SAVEPOINT, State.COMPLETED)


@pytest.mark.parametrize("version", [6, 8, 9])
def test_the_cleaner_never_deletes_a_file_a_savepoint_names(tmp_path, version):
    """`CleanPlanner.getFilesToCleanKeepingLatestCommits` / `...KeepingLatestVersions`: "do not clean up a
    savepoint data file" (`isFileSliceExistInSavepointedFiles`: its base file or any of its log files). The
    plan records the savepoints it kept (`CleanPlanActionExecutor.prepareExtraMetadata`,
    `savepointed_timestamps`); once the savepoint is deleted, the next clean plans every partition
    (`CleanPlanner.isAnySavepointDeleted`) and the files go."""
    rng = random.Random(3)
    w = ModelWriter(tmp_path / "t", version=version)
    grow(w, rng, 0, 4)
    saved_at = w.write(random_batch(rng, 4, keys=8, size=6))
    kept = savepoint(w.table, saved_at)
    grow(w, rng, 5, 10)
    assert kept <= data_files(w.path)

    results = cleaner.clean(w.table, CLEAN, force=True)
    assert results and results[0].deleted  # the clean ran and deleted older slices
    assert kept <= data_files(w.path)
    plan = cleaner.read_plan(w.table, results[0].instant)
    assert plan.extra_metadata == {"savepointed_timestamps": saved_at}
    # An older slice that no savepoint names does go: the savepoint kept exactly its own.
    assert not any(f in kept for f in results[0].deleted)
    assert our_rows(w.path) == w.expected()
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())

    delete_savepoint(w.table, saved_at)
    # No commit since: an incremental clean would look at no partition at all.
    (after,) = cleaner.clean(w.table, CLEAN, force=True)
    latest = {p for s in w.table.view().latest_file_slices() for p in s.paths}
    assert kept - latest and kept - latest <= set(after.deleted)  # with the slices' later log files
    assert cleaner.read_plan(w.table, after.instant).extra_metadata == ({} if version >= 8 else None)
    assert our_rows(w.path) == w.expected()


def test_keep_latest_file_versions_keeps_savepointed_slices_too(tmp_path):
    """`getFilesToCleanKeepingLatestVersions`: past the retained versions, a savepointed slice stays."""
    rng = random.Random(4)
    w = ModelWriter(tmp_path / "t")
    grow(w, rng, 0, 3)
    kept = savepoint(w.table, w.write(random_batch(rng, 3, keys=8, size=6)))
    grow(w, rng, 4, 9)
    (result,) = cleaner.clean(w.table, CleanSettings(policy=CleanerPolicy.KEEP_LATEST_FILE_VERSIONS,
                                                     file_versions_retained=1), force=True)
    assert result.deleted and kept <= data_files(w.path)
    assert our_rows(w.path) == w.expected()


@pytest.mark.parametrize("version", [6, 8])
def test_archival_stops_at_the_first_savepoint(tmp_path, version):
    """`HoodieTimelineArchiver.getCommitInstantsToArchive` (1.x `TimelineArchiverV2`), by default
    (`hoodie.archive.beyond.savepoint=false`): "stop at first savepoint commit". The savepoint and the
    commit it saved stay on the active timeline, as `rollback_to_savepoint` needs them."""
    rng = random.Random(5)
    w = ModelWriter(tmp_path / "t", version=version)
    grow(w, rng, 0, 3)
    saved_at = w.write(random_batch(rng, 3, keys=8, size=6))
    savepoint(w.table, saved_at)
    grow(w, rng, 4, 12)
    settings = ServiceSettings.from_mapping({"hoodie.cleaner.commits.retained": "2", "hoodie.keep.min.commits": "4",
                                             "hoodie.keep.max.commits": "6"})
    result = archiver.archive(w.table, settings)
    assert result.archived and max(result.archived) < saved_at
    timeline = w.table.timeline()
    assert [i.timestamp for i in timeline.completed(Action.SAVEPOINT)] == [saved_at]
    assert timeline.get(saved_at).action is Action.DELTA_COMMIT and timeline.is_completed(saved_at)
    read_instant(w.table.storage, timeline.completed(Action.SAVEPOINT)[0], timeline.layout)
    assert our_rows(w.path) == w.expected()


def test_archival_keeps_a_replacecommit_whose_groups_a_savepoint_kept():
    """`ClusteringUtils.getEarliestReplacedSavepointInClean`: when the last clean's earliest commit to retain
    is past its earliest savepoint and a replacecommit completed in between, the groups it replaced may
    still have files the savepoint kept; archival keeps replacecommits from that savepoint on."""
    names = ["100.deltacommit", "200.deltacommit", "200.savepoint", "300.replacecommit.requested",
             "300.replacecommit.inflight", "300.replacecommit", "400.deltacommit", "500.deltacommit"]
    timeline = Timeline.from_file_names(names)
    policy = CleanerPolicy.KEEP_LATEST_COMMITS
    guarded = archiver._LastClean("600", earliest_commit_to_retain="400", earliest_savepoint="200")
    assert archiver._earliest_to_retain_for_replaced_groups(timeline, guarded, policy) == "300"
    unguarded = archiver._LastClean("600", earliest_commit_to_retain="400")
    assert archiver._earliest_to_retain_for_replaced_groups(timeline, unguarded, policy) is None
    file_versions = CleanerPolicy.KEEP_LATEST_FILE_VERSIONS
    assert archiver._earliest_to_retain_for_replaced_groups(timeline, guarded, file_versions) is None


def test_a_pending_restore_is_named_before_an_unreadable_index_manifest(tmp_path):
    """The checks before the lease read the timeline, `.hoodie/.schema` and the index's manifest side by
    side, and still refuse in the order they check: the pending restore, whatever the manifest holds."""
    rng = random.Random(6)
    w = ModelWriter(tmp_path / "t", version=9)
    grow(w, rng, 0, 2)
    storage = w.table.storage
    assert storage.exists(index_bootstrap.MANIFEST)
    storage.write(index_bootstrap.MANIFEST, b"{not json")
    storage.write(f"{w.table.layout.folder}/{w.table.timeline().new_instant_time()}.restore.requested", b"")
    with pytest.raises(TimelineError, match="Found pending restore"):
        w.write(random_batch(rng, 9, keys=8, size=6))


@pytest.mark.parametrize("version, state", [(6, "requested"), (6, "inflight"), (8, "inflight"), (9, "requested")])
def test_nothing_is_written_while_a_restore_is_pending(tmp_path, version, state):
    """`BaseHoodieWriteClient.startCommit`: "Found pending restore in active timeline. Please complete the
    restore fully before proceeding". A restore rolls back every instant after its savepoint from its plan
    (`RestorePlanActionExecutor`); a write, compaction, clean or archival in between is refused, and no file
    changes."""
    rng = random.Random(6)
    w = ModelWriter(tmp_path / "t", version=version)
    grow(w, rng, 0, 5)
    saved_at = w.table.timeline().completed(Action.DELTA_COMMIT)[1].timestamp
    savepoint(w.table, saved_at)
    restore_at = w.table.timeline().new_instant_time()
    plan = io.BytesIO()
    fastavro.writer(plan, RESTORE_PLAN, [{
        "instantsToRollback": [{"commitTime": i.timestamp, "action": i.action.value}
                               for i in reversed(w.table.timeline().completed()) if i.timestamp > saved_at
                               and i.action is not Action.SAVEPOINT],
        "version": 2, "savepointToRestoreTimestamp": saved_at}])
    plan = plan.getvalue()
    storage = w.table.storage
    folder = w.table.layout.folder
    storage.write(f"{folder}/{restore_at}.restore.requested", plan)
    if state == "inflight":
        storage.write(f"{folder}/{restore_at}.restore.inflight", b"")
    storage.write(".hoodie/metadata/.hoodie/hoodie.properties", b"hoodie.table.name=trips_metadata\n")
    before = (data_files(w.path), sorted(e.name for e in storage.list(folder)))

    with pytest.raises(TimelineError, match="Found pending restore in active timeline.*" + restore_at):
        w.write(random_batch(rng, 9, keys=8, size=6))
    with pytest.raises(TimelineError, match="pending restore"):
        compaction.schedule(w.table, CompactionSettings(), force=True)
    with pytest.raises(TimelineError, match="pending restore"):
        cleaner.clean(w.table, CLEAN, force=True)
    with pytest.raises(TimelineError, match="pending restore"):
        archiver.archive(w.table, ServiceSettings.from_mapping({"hoodie.cleaner.commits.retained": "1",
                                                                 "hoodie.keep.min.commits": "2",
                                                                 "hoodie.keep.max.commits": "3"}))
    pending_write = w.table.timeline().completed(Action.DELTA_COMMIT)[-1].timestamp
    with pytest.raises(TimelineError, match="pending restore"):  # `ingest rollback`: the restore's to finish
        services.rollback_instant(w.path, pending_write)
    assert (data_files(w.path), sorted(e.name for e in storage.list(folder))) == before
    assert storage.exists(".hoodie/metadata/.hoodie/hoodie.properties")  # no metadata table removed either


@pytest.mark.parametrize("version", [8, 9])
def test_a_savepoint_moves_no_log_file_between_slices(tmp_path, version):
    """At 8 and 9 a log file belongs to the slice current when its deltacommit completed
    (`CompletionTimeQueryViewV2`, keyed by the write's own time). A savepoint of that deltacommit completes
    later under the same time; the log file stays where it was."""
    rng = random.Random(7)
    w = ModelWriter(tmp_path / "t", version=version)
    saved_at = w.write(random_batch(rng, 0, keys=8, size=6))
    grow(w, rng, 1, 8)

    def slices():
        return sorted((g.partition_path, g.file_id, tuple((s.base_instant, tuple(lf.name.name for lf in s.log_files))
                                                          for s in g.slices)) for g in w.table.view().file_groups())

    before = slices()
    savepoint(w.table, saved_at)
    assert slices() == before
    assert our_rows(w.path) == w.expected()


def test_the_key_index_is_rebuilt_after_a_restore_or_a_rollback_of_a_write_it_covers(tmp_path):
    """`rollback_to_savepoint` (`BaseRestoreActionExecutor`) and `hudi-cli commit rollback` undo completed
    writes: the key index's segments of them, or the base segments stamped with the latest of them, no longer
    show, and the versions those writes replaced are live again. A rollback of a write that never completed
    (every writer's recovery) changes no key and rebuilds nothing."""
    rng = random.Random(8)
    w = ModelWriter(tmp_path / "t")
    instants = [w.write(random_batch(rng, n, keys=8, size=6)) for n in range(3)]
    table = w.table
    manifest = index_bootstrap.Manifest.read(table)
    assert manifest.as_of == instants[-1]

    def rollback_of(target: str, action: str = "deltacommit") -> str:
        timeline = table.timeline()
        at = timeline.new_instant_time()
        table.storage.write(f".hoodie/{at}.rollback.requested", b"")
        table.storage.write(f".hoodie/{at}.rollback.inflight", b"")
        complete(table.storage, Instant(at, Action.ROLLBACK, State.INFLIGHT), avro_models.serialize(
            avro_models.ROLLBACK_METADATA, {"startRollbackTime": at, "timeTakenInMillis": 1, "totalFilesDeleted": 0,
                                            "commitsRollback": [target], "partitionMetadata": {}, "version": 1,
                                            "instantsRollback": [{"commitTime": target, "action": action}]}),
                 timeline=timeline)
        return at

    failed = rollback_of(table.timeline().new_instant_time())  # a write after the index's, never completed
    # `HoodieTable.rollbackInflightCompaction`, before Hudi retries a compaction from its plan.
    rollback_of(instants[0], "compaction")
    assert index_bootstrap.undone_writes(table, table.timeline(), manifest) == []
    undone = rollback_of(instants[1])
    assert index_bootstrap.undone_writes(table, table.timeline(), manifest) == [undone]
    assert failed < undone
    restore = table.timeline().new_instant_time()
    table.storage.write(f".hoodie/{restore}.restore", b"")
    assert index_bootstrap.undone_writes(table, table.timeline(), manifest) == [undone, restore]
    options, ordering = w.writer.options, pa.int64()
    assert index_bootstrap.ensure(table, table.timeline(), options, ordering)  # rebuilt
    assert not index_bootstrap.ensure(table, table.timeline(), options, ordering)  # once: it covers the restore
