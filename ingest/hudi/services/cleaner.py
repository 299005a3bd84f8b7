"""Cleaning: deleting file slices no reader needs any more, as Hudi 0.14/0.15's cleaner does.

Policies (`CleanPlanner`):

* KEEP_LATEST_COMMITS (default): keep what reads as of the last `hoodie.cleaner.commits.retained`
  commits need. The earliest commit to retain is the N-th latest completed commit (never later than
  the earliest pending one, `CleanerUtils.getEarliestCommitToRetain`); in each file group a slice
  older than it goes, except the latest slice and the newest slice before it (the one a query
  reading as of that commit still uses).
* KEEP_LATEST_FILE_VERSIONS: keep the newest `hoodie.cleaner.fileversions.retained` slices of each
  file group.

Under both, file groups a completed replacecommit (insert overwrite, clustering) retired are deleted
whole once it is older than the earliest commit to retain (every one under KEEP_LATEST_FILE_VERSIONS),
listed in the plan and metadata like any other file (`CleanPlanner.getReplacedFilesEligibleToClean`);
until then the archiver keeps the replacecommit, which is what tells readers they are replaced. Slices a
pending compaction needs (its planned slice and the one it opened) stay, as do those a pending log
compaction reads, and the latest slice of every group (where writes append) is never deleted. Nor is a
slice a savepoint names (any of its base or log files,
`CleanPlanner.isFileSliceExistInSavepointedFiles`), replaced or not: a restore to that savepoint reads
it. With incremental mode (Hudi's default) only partitions written since the previous clean's horizon are
listed, so a clean costs what changed, not the table's size; the plan records the savepoints it kept
(`savepointed_timestamps`), and once one of them is gone the next clean looks at every partition, as
1.x's `CleanPlanner` does (0.15 looks at the removed savepoint's partitions).

Protocol (`CleanPlanActionExecutor`, `CleanActionExecutor`): a plan with files to delete is written as
`<t>.clean.requested` (`HoodieCleanerPlan`); `<t>.clean.inflight` repeats it; files are deleted; then
`<t>.clean` records `HoodieCleanMetadata`. A plan without files is not written at all. A clean a crash
interrupted is executed again from its plan (deleting is idempotent; files already gone are reported
as failed deletes, as Hudi reports them).

At table versions 8 and 9 the same records in the layout-2 timeline (Hudi 1.2's schemas of the two are
0.15's): `<t>.clean.inflight` repeats the plan at 8 and is empty at 9 (as Hudi 1.0 and 1.1 write it),
and the completed clean is `<t>_<completion>.clean`. Slices are
those of the completion-time view, and the rules above compare their base instants (requested times),
as 1.x's `CleanPlanner` and `CleanerUtils.getEarliestCommitToRetain` do.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ingest.errors import TimelineError
from ingest.faults import crash_point
from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import CleanerPolicy, CleanSettings
from ingest.hudi.services.compaction import check_writable, pending_plans
from ingest.hudi.table.file_system_view import FileGroup, FileSlice, FileSystemView
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import Timeline, complete, read_instant, request, start
from ingest.storage import Storage

log = logging.getLogger(__name__)

PLAN_VERSION = 2        # CleanPlanner.LATEST_CLEAN_PLAN_VERSION
METADATA_VERSION = 2    # CleanerUtils.LATEST_CLEAN_METADATA_VERSION
COMMIT_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION)
# `getCommitsAndCompactionTimeline` (1.x's; 0.x's has no clustering action, which layout 1 never holds).
_COMMITS_AND_COMPACTIONS = frozenset({*COMMIT_ACTIONS, Action.CLUSTERING})
REPLACE_ACTIONS = (Action.REPLACE_COMMIT, Action.CLUSTERING)  # a 1.x clustering completes as a replacecommit
SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"  # CleanerUtils.SAVEPOINTED_TIMESTAMPS, in a plan's extraMetadata


@dataclass(frozen=True)
class ActionInstant:
    """`HoodieActionInstant`: an instant as Hudi's timeline names it (a completed compaction is a
    `commit`, a completed log compaction a `deltacommit`, a completed clustering a `replacecommit`)."""

    timestamp: str
    action: str
    state: str

    @classmethod
    def of(cls, instant: Instant) -> ActionInstant:
        return cls(instant.timestamp, instant.timeline_action.value, instant.state.value)


@dataclass(frozen=True)
class CleanerPlan:
    """`HoodieCleanerPlan`: what one clean deletes, per partition (paths relative to the table)."""

    policy: CleanerPolicy
    files: Mapping[str, tuple[str, ...]]
    earliest_instant_to_retain: ActionInstant | None = None
    last_completed_commit: str = ""
    version: int = PLAN_VERSION
    extra_metadata: Mapping[str, str] | None = None  # 1.x: {} (no savepoints); copied into the metadata
    # Files the plan names outside this table (a plan made through a relative path elsewhere): never
    # deleted, reported as failed deletes. As the plan names them, per partition.
    outside: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def file_count(self) -> int:
        return sum(len(f) for f in self.files.values()) + sum(len(f) for f in self.outside.values())

    def to_bytes(self, storage: Storage) -> bytes:
        ectr = self.earliest_instant_to_retain
        return avro_models.serialize(avro_models.CLEANER_PLAN, {
            "earliestInstantToRetain": None if ectr is None else {
                "timestamp": ectr.timestamp, "action": ectr.action, "state": ectr.state,
            },
            "lastCompletedCommitTimestamp": self.last_completed_commit,
            "policy": self.policy.value,
            "filesToBeDeletedPerPartition": {},
            "version": self.version,
            "filePathsToBeDeletedPerPartition": {
                p: [{"filePath": storage.url(f), "isBootstrapBaseFile": False} for f in files]
                for p, files in self.files.items()
            },
            "partitionsToBeDeleted": [],
            "extraMetadata": dict(self.extra_metadata) if self.extra_metadata is not None else None,
        })

    @classmethod
    def from_bytes(cls, storage: Storage, data: bytes) -> CleanerPlan:
        d = avro_models.deserialize(data, avro_models.CLEANER_PLAN)
        ectr = d.get("earliestInstantToRetain")
        files: dict[str, tuple[str, ...]] = {}
        outside: dict[str, tuple[str, ...]] = {}
        for p, infos in (d.get("filePathsToBeDeletedPerPartition") or {}).items():
            files[p], elsewhere = storage.resolve_locations([f["filePath"] for f in infos if f.get("filePath")])
            if elsewhere:
                outside[p] = elsewhere
        if not files and d.get("filesToBeDeletedPerPartition"):  # version 1: file names per partition
            files = {
                p: tuple(posixpath.join(p, n) if p else n for n in names)
                for p, names in d["filesToBeDeletedPerPartition"].items()
            }
        return cls(
            policy=CleanerPolicy(d["policy"]),
            files=files,
            earliest_instant_to_retain=None if ectr is None else ActionInstant(
                ectr["timestamp"], ectr["action"], ectr["state"]),
            last_completed_commit=d.get("lastCompletedCommitTimestamp") or "",
            version=int(d.get("version") or 1),
            extra_metadata=d.get("extraMetadata"),
            outside=outside,
        )


@dataclass(frozen=True)
class CleanResult:
    instant: str
    deleted: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    partitions: Mapping[str, Mapping] = field(default_factory=dict)


# -- planning -------------------------------------------------------------------------------------


def earliest_commit_to_retain(timeline: Timeline, settings: CleanSettings) -> Instant | None:
    """`CleanerUtils.getEarliestCommitToRetain` for KEEP_LATEST_COMMITS, over `getCommitsAndCompactionTimeline`
    (1.x's holds clusterings too: a pending one caps it, as any pending write does)."""
    if settings.policy is not CleanerPolicy.KEEP_LATEST_COMMITS:
        return None
    commits = _commits(timeline)
    done = [i for i in commits if i.is_completed]
    if len(done) <= settings.commits_retained:
        return None
    nth = done[len(done) - settings.commits_retained]
    pending = [i for i in commits if not i.is_completed]
    if pending and nth.timestamp > pending[0].timestamp:
        before = [i for i in done if i.timestamp < pending[0].timestamp]
        return before[-1] if before else None
    return nth


def _commits(timeline: Timeline) -> list[Instant]:
    """The instants of Hudi's commits-and-compaction timeline, as its timeline names them: a completed log
    compaction is a deltacommit there, a completed 1.x clustering a replacecommit; a pending log compaction is
    not one."""
    return [i for i in timeline if i.timeline_action in _COMMITS_AND_COMPACTIONS]


def _completed_commits(timeline: Timeline) -> list[Instant]:
    """Hudi's completed commits timeline (`getCompletedCommitsTimeline`)."""
    return [i for i in _commits(timeline) if i.is_completed]


def commits_since_last_clean(table: HudiTable, timeline: Timeline) -> int:
    """Completed commits after the last clean's `lastCompletedCommitTimestamp` (Hudi's trigger count)."""
    done = _completed_commits(timeline)
    last_clean = timeline.last_completed(Action.CLEAN)
    if last_clean is None:
        return len(done)
    data = read_instant(table.storage, last_clean, timeline.layout)
    if not data:
        return len(done)
    since = avro_models.deserialize(data, avro_models.CLEAN_METADATA).get("lastCompletedCommitTimestamp") or ""
    return sum(1 for i in done if i.timestamp > since)


def _partitions_since(table: HudiTable, timeline: Timeline, start: str, end: str) -> list[str]:
    """Partitions that completed commits in [start, end) wrote (CleanPlanner's incremental mode)."""
    out: set[str] = set()
    for instant in _completed_commits(timeline):
        if start <= instant.timestamp < end:
            out.update(table.commit_metadata(instant).partition_to_write_stats)
            if instant.action in REPLACE_ACTIONS:  # `getPartitionsForInstants`: the replaced groups' too
                out.update(table.replaced_by(instant, timeline.layout))
    return sorted(out)


def _partitions_to_clean(table: HudiTable, timeline: Timeline, settings: CleanSettings,
                         ectr: Instant | None, tracked: tuple[str, ...]) -> list[str] | None:
    """Partitions to look at; None for every partition, [] for none (too few commits to clean)."""
    if settings.policy is CleanerPolicy.KEEP_LATEST_FILE_VERSIONS:
        return None
    if ectr is None:
        return []
    last_clean = timeline.last_completed(Action.CLEAN)
    if settings.incremental and last_clean is not None:
        data = read_instant(table.storage, last_clean, timeline.layout)
        metadata = avro_models.deserialize(data, avro_models.CLEAN_METADATA) if data else {}
        previous = metadata.get("earliestCommitToRetain")
        first = timeline.first_write_timestamp
        if previous and first is not None and previous >= first:
            if _savepoint_removed(metadata.get("extraMetadata"), tracked):
                return None  # what it kept may go now, in partitions written long ago
            return _partitions_since(table, timeline, previous, ectr.timestamp)
    return None


def _slice_files(slice_: FileSlice) -> list[str]:
    return ([slice_.base_file.path] if slice_.base_file else []) + [lf.path for lf in slice_.log_files]


def savepointed_files(table: HudiTable, timeline: Timeline) -> frozenset[str]:
    """`CleanPlanner.getSavepointedDataFiles` over every savepoint: the names of the base and log files
    of the slices each one keeps (`HoodieSavepointMetadata.partitionMetadata[*].savepointDataFile`)."""
    names: set[str] = set()
    for savepoint in timeline.completed(Action.SAVEPOINT):
        data = read_instant(table.storage, savepoint, timeline.layout)
        metadata = avro_models.deserialize(data, avro_models.SAVEPOINT_METADATA)
        for partition in (metadata.get("partitionMetadata") or {}).values():
            names.update(partition.get("savepointDataFile") or ())
    return frozenset(names)


def _savepointed(slice_: FileSlice, savepointed: frozenset[str]) -> bool:
    """`CleanPlanner.isFileSliceExistInSavepointedFiles`: the slice's base file or any log file is named."""
    if slice_.base_file is not None and slice_.base_file.name.name in savepointed:
        return True
    return any(lf.name.name in savepointed for lf in slice_.log_files)


def _tracked_savepoints(table: HudiTable, timeline: Timeline) -> tuple[str, ...]:
    """`CleanPlanner.savepointedTimestamps`: the savepoints a plan records, for partitioned tables only."""
    if not table.config.partition_fields:
        return ()
    return tuple(i.timestamp for i in timeline.completed(Action.SAVEPOINT))


def _savepoint_removed(previous: Mapping[str, str] | None, tracked: tuple[str, ...]) -> bool:
    """`CleanPlanner.isAnySavepointDeleted`: a savepoint the last clean recorded is gone."""
    recorded = [t for t in ((previous or {}).get(SAVEPOINTED_TIMESTAMPS) or "").split(",") if t]
    return any(t not in tracked for t in recorded)


def _extra_metadata(table: HudiTable, tracked: tuple[str, ...]) -> dict[str, str] | None:
    """`CleanPlanActionExecutor.prepareExtraMetadata`: the tracked savepoints, joined by commas; with none,
    an empty map (1.x) or no map at all (what 0.14/0.15 leave)."""
    if tracked:
        return {SAVEPOINTED_TIMESTAMPS: ",".join(tracked)}
    return {} if table.version.plans_of_1x else None


def _needed_by_compaction(slice_: FileSlice, pending_ops: Mapping[tuple[str, str], str]) -> bool:
    base = pending_ops.get((slice_.partition_path, slice_.file_id))
    return base is not None and slice_.base_instant >= base


def _files_keeping_versions(group: FileGroup, keep: int, pending_ops: Mapping[tuple[str, str], str],
                            savepointed: frozenset[str]) -> list[str]:
    newest_first = [s for s in reversed(group.slices) if not _needed_by_compaction(s, pending_ops)]
    if (group.partition_path, group.file_id) in pending_ops:
        keep -= 1  # the slice the compaction reads is kept already
    return [f for s in newest_first[max(keep, 0):] if not _savepointed(s, savepointed) for f in _slice_files(s)]


def _files_keeping_commits(group: FileGroup, ectr: str, pending_ops: Mapping[tuple[str, str], str],
                           savepointed: frozenset[str]) -> list[str]:
    if not group.slices:
        return []
    newest_first = list(reversed(group.slices))
    last_version = newest_first[0].base_instant
    before_ectr = next((s.base_instant for s in newest_first if s.base_instant < ectr), None)
    out = []
    for s in newest_first:
        if s.base_instant in (last_version, before_ectr):
            continue
        if s.base_instant < ectr and not _needed_by_compaction(s, pending_ops) and not _savepointed(s, savepointed):
            out.extend(_slice_files(s))
    return out


def plan_clean(table: HudiTable, timeline: Timeline, settings: CleanSettings) -> CleanerPlan:
    """What a clean planned now would delete (possibly nothing)."""
    ectr = earliest_commit_to_retain(timeline, settings)
    done = _completed_commits(timeline)
    last = done[-1] if done else None
    tracked = _tracked_savepoints(table, timeline)
    extra = _extra_metadata(table, tracked)
    empty = CleanerPlan(settings.policy, {}, ActionInstant.of(ectr) if ectr else None, last.timestamp if last else "",
                        extra_metadata=extra)
    partitions = _partitions_to_clean(table, timeline, settings, ectr, tracked)
    if partitions == []:
        return empty
    view = FileSystemView.load(table.storage, timeline, partitions)  # replaced groups included
    replaced = table.replaced_file_groups(timeline)
    # `getReplacedFilesEligibleToClean`: every slice of a group replaced before the earliest commit to
    # retain (of every replaced group under KEEP_LATEST_FILE_VERSIONS) goes; the rest are not cleaned yet.
    eligible = replaced if ectr is None else table.replaced_file_groups(timeline, before=ectr.timestamp)
    # `CleanPlanner.isFileSliceNeededForPendingMajorOrMinorCompaction`: log compactions' plans too.
    plans = [*pending_plans(table.storage, timeline).values(),
             *pending_plans(table.storage, timeline, Action.LOG_COMPACTION).values()]
    pending_ops = {(op.partition_path, op.file_id): op.base_instant for plan in plans for op in plan.operations}
    savepointed = savepointed_files(table, timeline)
    files: dict[str, list[str]] = {}
    for group in view.file_groups():
        gid = (group.partition_path, group.file_id)
        if gid in replaced:
            doomed = [f for s in group.slices if not _savepointed(s, savepointed)
                      for f in _slice_files(s)] if gid in eligible else []
        elif ectr is None:
            doomed = _files_keeping_versions(group, settings.file_versions_retained, pending_ops, savepointed)
        else:
            doomed = _files_keeping_commits(group, ectr.timestamp, pending_ops, savepointed)
        if doomed:
            files.setdefault(group.partition_path, []).extend(doomed)
    return CleanerPlan(settings.policy, {p: tuple(f) for p, f in files.items()},
                       empty.earliest_instant_to_retain, empty.last_completed_commit, extra_metadata=extra)


def schedule(table: HudiTable, settings: CleanSettings, *, force: bool = False,
             fence: Callable[[], None] | None = None) -> str | None:
    """Request a clean when the trigger (or `force`) says so and there are files to delete."""
    timeline = check_writable(table, "cleaning")
    if not force and commits_since_last_clean(table, timeline) < settings.max_commits:
        return None
    plan = plan_clean(table, timeline, settings)
    if not plan.file_count:
        return None
    instant_time = timeline.new_instant_time()
    if fence is not None:
        fence()
    instant_time = request(table.storage, instant_time, Action.CLEAN, plan.to_bytes(table.storage), table.layout,
                           zone=timeline.zone).timestamp
    log.info("scheduled clean %s of %d files", instant_time, plan.file_count)
    return instant_time


# -- execution ------------------------------------------------------------------------------------


def read_plan(table: HudiTable, timestamp: str) -> CleanerPlan:
    requested = Instant(timestamp, Action.CLEAN, State.REQUESTED)
    return CleanerPlan.from_bytes(table.storage, read_instant(table.storage, requested, table.layout))


def _partition_stat(partitions: dict[str, dict], partition: str, policy: CleanerPolicy) -> dict:
    """`HoodieCleanPartitionMetadata` of `partition`, made on first use."""
    return partitions.setdefault(partition, {
        "partitionPath": partition, "policy": policy.value, "deletePathPatterns": [],
        "successDeleteFiles": [], "failedDeleteFiles": [], "isPartitionDeleted": False,
    })


def execute(table: HudiTable, instant_time: str) -> CleanResult:
    """Run the clean `instant_time` (requested, or inflight after a crash) to completion."""
    storage = table.storage
    started = time.monotonic()
    instant = check_writable(table, "cleaning").get(instant_time)
    if instant is None or instant.action is not Action.CLEAN:
        raise TimelineError(f"{table.base_url}: no clean {instant_time} on the timeline")
    if instant.is_completed:
        return CleanResult(instant_time)
    layout = table.layout
    plan_bytes = read_instant(storage, instant.to(State.REQUESTED), layout)
    plan = CleanerPlan.from_bytes(storage, plan_bytes)
    # 0.x and 1.0 repeat the plan in the inflight file; 1.1 leaves it empty (`transitionCleanRequestedToInflight`).
    inflight_bytes = plan_bytes if table.version.clean_plan_in_inflight else b""
    inflight = start(storage, instant, inflight_bytes, layout) if instant.state is State.REQUESTED else instant
    partitions: dict[str, dict] = {}
    deleted, failed = [], []
    for partition, paths in plan.files.items():
        meta = _partition_stat(partitions, partition, plan.policy)
        for path in paths:
            name = posixpath.basename(path)
            meta["deletePathPatterns"].append(name)
            if storage.delete(path):
                meta["successDeleteFiles"].append(name)
                deleted.append(path)
            else:
                meta["failedDeleteFiles"].append(name)
                failed.append(path)
            crash_point("mid_clean")
    for partition, locations in plan.outside.items():
        meta = _partition_stat(partitions, partition, plan.policy)
        for location in locations:
            log.warning("clean %s: not deleting %s, outside the table %s", instant_time, location, table.base_url)
            meta["deletePathPatterns"].append(posixpath.basename(location))
            meta["failedDeleteFiles"].append(posixpath.basename(location))
            failed.append(location)
    ectr = plan.earliest_instant_to_retain
    metadata = {
        "startCleanTime": instant_time,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": len(deleted),
        "earliestCommitToRetain": ectr.timestamp if ectr else "",
        "lastCompletedCommitTimestamp": plan.last_completed_commit,
        "partitionMetadata": partitions,
        "version": METADATA_VERSION,
        "bootstrapPartitionMetadata": {},
        "extraMetadata": dict(plan.extra_metadata) if plan.extra_metadata is not None else None,  # the plan's
    }
    complete(storage, inflight, avro_models.serialize(avro_models.CLEAN_METADATA, metadata), timeline=table.timeline())
    log.info("completed clean %s: %d files deleted, %d already gone", instant_time, len(deleted), len(failed))
    return CleanResult(instant_time, tuple(deleted), tuple(failed), partitions)


def clean(table: HudiTable, settings: CleanSettings, *, force: bool = False,
          fence: Callable[[], None] | None = None) -> list[CleanResult]:
    """Finish cleans a crash interrupted, then plan and run a new one if due."""
    results = [execute(table, i.timestamp) for i in table.timeline().pending(Action.CLEAN)]
    instant_time = schedule(table, settings, force=force, fence=fence)
    if instant_time is not None:
        results.append(execute(table, instant_time))
    return results
