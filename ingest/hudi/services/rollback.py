"""Rolling back an instant that never completed, as Hudi 0.14/0.15 does (`BaseRollbackActionExecutor`).

Plan (`BaseRollbackPlanActionExecutor.requestRollback`, `<r>.rollback.requested` = `HoodieRollbackPlan`):
from the failed instant's markers, DIRECT or timeline-server-based (`MarkerBasedRollbackStrategy`): a
base file is deleted; a log file that opened its file slice (base instant = the failed instant) is
deleted; a log file appended to an older slice gets a rollback COMMAND block, planned as
`{log file name: its size}`. With no markers at all, by listing (`ListingBasedRollbackStrategy`): every
base file of the failed instant and every log file of a slice it opened is deleted, and each file
group its commit metadata says it updated gets a command block. (Hudi lists only with
`hoodie.rollback.using.markers=false`, `BaseRollbackPlanActionExecutor.getRollbackStrategy`; with
markers on and none found its plan is empty and the failed blocks would count as committed once
archival passes them, so listing is the safe choice here.) A requested-only instant wrote nothing and
has an empty plan.

Execution (`BaseRollbackHelper.maybeDeleteAndCollectStats`): the command block goes to the latest log
file of the file slice, appended where the storage can append, else in the next log version named
with the writer's roll-over token `1-0-1` (`HoodieLogFormat.UNKNOWN_WRITE_TOKEN`; the helper sets no
token of its own). Then, in `finishRollback`'s order: the failed instant's timeline files are removed,
the completed `<r>.rollback` (`HoodieRollbackMetadata`) is written, and the markers are deleted. A
crash anywhere leaves either the failed instant (rolled back again) or a pending rollback (finished
from its plan; a command block already appended is not appended twice).

Table versions 8 and 9 (`TableVersion.rollback_appends_command_blocks` false): every log file a
deltacommit wrote is named with its instant, so its rollback deletes files and appends nothing (Hudi
1.x's `MarkerBasedRollbackStrategy`); plan and metadata are the same Avro records
(`HoodieRollbackPlan`, `HoodieRollbackMetadata`), in the layout-2 timeline, the completed rollback
named with its completion time.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Iterable
from dataclasses import dataclass

from ingest.errors import TimelineError
from ingest.faults import crash_point
from ingest.hudi.avro import avro_models
from ingest.hudi.log.log_reader import iter_log_blocks
from ingest.hudi.log.log_writer import append_log_blocks, create_log_file, rollback_block
from ingest.hudi.services.clustering_plan import pending_clustering_groups
from ingest.hudi.table import markers
from ingest.hudi.table.file_names import BaseFileName, LogFileName
from ingest.hudi.table.file_system_view import FileSlice, FileSystemView, list_partitions
from ingest.hudi.timeline import heartbeat
from ingest.hudi.timeline.commit_metadata import NULL_COMMIT, CommitMetadata
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import (
    Timeline,
    complete,
    read_instant,
    remove_pending,
    revert_to_requested,
)
from ingest.hudi.timeline.timeline_layout import LAYOUT_1, TimelineLayout
from ingest.storage import Storage

log = logging.getLogger(__name__)

ROLLOVER_WRITE_TOKEN = "1-0-1"  # HoodieLogFormat.UNKNOWN_WRITE_TOKEN


@dataclass(frozen=True)
class RollbackRequest:
    """`HoodieRollbackRequest`: files to delete (relative paths here, full paths in the plan), or log
    blocks to neutralise (keyed as Hudi keys them: a log file name, or a full path when listing)."""

    partition_path: str
    file_id: str
    latest_base_instant: str
    files_to_delete: tuple[str, ...] = ()
    log_blocks_to_delete: tuple[tuple[str, int], ...] = ()
    outside: tuple[str, ...] = ()  # files a plan names outside the table: never deleted, reported failed

    def to_avro(self, storage: Storage) -> dict:
        return {
            "partitionPath": self.partition_path,
            "fileId": self.file_id,
            "latestBaseInstant": self.latest_base_instant,
            "filesToBeDeleted": [storage.url(p) for p in self.files_to_delete],
            "logBlocksToBeDeleted": dict(self.log_blocks_to_delete),
        }

    @classmethod
    def from_avro(cls, storage: Storage, d: dict) -> RollbackRequest:
        inside, outside = storage.resolve_locations(d.get("filesToBeDeleted") or [])
        return cls(
            partition_path=d["partitionPath"],
            file_id=d.get("fileId") or "",
            latest_base_instant=d.get("latestBaseInstant") or "",
            files_to_delete=inside,
            log_blocks_to_delete=tuple((k, int(v)) for k, v in (d.get("logBlocksToBeDeleted") or {}).items()),
            outside=outside,
        )


def _delete_request(partition: str, path: str, file_id: str = "", base_instant: str = "") -> RollbackRequest:
    return RollbackRequest(partition, file_id, base_instant, (path,))


# -- planning -------------------------------------------------------------------------------------


def _from_marker(storage: Storage, failed: str, marker: markers.Marker) -> RollbackRequest | None:
    """`MarkerBasedRollbackStrategy.getRollbackRequests` for one marker."""
    path = marker.data_file_path
    if not markers.names_data_file(marker.partition_path, marker.file_name):
        # Left by ingest before its own files stopped getting markers; never a Hudi data file.
        log.warning("ignoring marker of %s in the rollback of %s: not a base or log file", path, failed)
        return None
    created_log = LogFileName.parse(marker.file_name) if marker.io_type is markers.IOType.CREATE else None
    if created_log is not None:  # table version 8+: a log file it created (`createRollbackRequestForCreateAndMerge`)
        return _delete_request(marker.partition_path, path, created_log.file_id, failed)
    if marker.io_type is not markers.IOType.APPEND:
        base = BaseFileName.parse(marker.file_name)
        if base is None:
            raise ValueError(f"{marker.io_type.value} marker of {path}: only base and log files are created")
        return _delete_request(marker.partition_path, path, base.file_id, base.instant)
    name = LogFileName.parse(marker.file_name)
    if name is None:
        raise ValueError(f"APPEND marker of {path}: not a log file")
    if not storage.exists(path):
        return RollbackRequest(marker.partition_path, name.file_id, name.base_instant)
    if name.base_instant == failed:  # the log file opened its file group's slice
        return _delete_request(marker.partition_path, path)
    return RollbackRequest(marker.partition_path, name.file_id, name.base_instant,
                           log_blocks_to_delete=((marker.file_name, storage.size(path)),))


def _merge_by_file_group(requests: Iterable[RollbackRequest]) -> list[RollbackRequest]:
    """One command block per file slice however many log files of it were appended to
    (`BaseRollbackHelper.groupSerializableRollbackRequestsBasedOnFileGroup`)."""
    out: list[RollbackRequest] = []
    appends: dict[tuple[str, str, str], dict[str, int]] = {}
    for req in requests:
        if req.files_to_delete or not req.log_blocks_to_delete:
            out.append(req)
        else:
            appends.setdefault((req.partition_path, req.file_id, req.latest_base_instant), {}).update(
                req.log_blocks_to_delete)
    for (partition, file_id, base), blocks in appends.items():
        out.append(RollbackRequest(partition, file_id, base, (), tuple(sorted(blocks.items()))))
    return out


def _slice_as_of(view: FileSystemView, partition: str, file_id: str, instant: str) -> FileSlice | None:
    """The newest slice of a file group opened at or before `instant`, pending compactions included
    (`getLatestFileSlicesBeforeOrOn(partition, instant, true)`)."""
    for group in view.file_groups(partition):
        if group.file_id == file_id:
            older = [s for s in group.slices if s.base_instant <= instant]
            return older[-1] if older else None
    return None


def files_of_instant(storage: Storage, partition: str, instant: str, base_only: bool = False) -> list[str]:
    """Base files written by `instant`, and log files of slices it opened, in one partition
    (`ListingBasedRollbackStrategy` path filter)."""
    out = []
    for entry in storage.list(partition):
        if entry.is_dir:
            continue
        base = BaseFileName.parse(entry.name)
        if base is not None and base.instant == instant:
            out.append(entry.path)
            continue
        name = None if base_only else LogFileName.parse(entry.name)
        if name is not None and name.base_instant == instant:
            out.append(entry.path)
    return out


def _by_listing(storage: Storage, timeline: Timeline, failed: Instant) -> list[RollbackRequest]:
    """`ListingBasedRollbackStrategy.getRollbackRequests` for a deltacommit or a compaction."""
    partitions = list_partitions(storage)
    base_only = failed.action is Action.COMPACTION
    requests = [_delete_request(p, path) for p in partitions for path in files_of_instant(
        storage, p, failed.timestamp, base_only)]
    if failed.action is not Action.DELTA_COMMIT or not timeline.version.rollback_appends_command_blocks:
        return requests
    metadata = CommitMetadata.from_bytes(read_instant(storage, failed, timeline.layout))
    view = FileSystemView.load(storage, timeline, list(metadata.partition_to_write_stats))
    for partition, stats in metadata.partition_to_write_stats.items():
        for stat in stats:
            if not stat.file_id or stat.prev_commit in (None, NULL_COMMIT):
                continue  # inserts into new file groups: their files were deleted above
            slice_ = _slice_as_of(view, partition, stat.file_id, failed.timestamp)
            if slice_ is None or slice_.base_instant >= failed.timestamp:
                continue
            # An inflight's workload profile has no path: `constructAbsolutePath(basePath, null)` is the
            # table root. The block goes to the slice's latest log file either way.
            key = storage.url(stat.path or "")
            size = stat.total_write_bytes if stat.total_write_bytes > 0 else 1
            requests.append(RollbackRequest(partition, stat.file_id, slice_.base_instant, (), ((key, size),)))
    return requests


def plan_rollback(storage: Storage, timeline: Timeline, failed: Instant) -> list[RollbackRequest]:
    if failed.state is State.REQUESTED:
        return []  # nothing was written before the instant went inflight
    found = markers.list_markers(storage, failed.timestamp)
    if not found:
        return _merge_by_file_group(_by_listing(storage, timeline, failed))
    requests = (_from_marker(storage, failed.timestamp, m) for m in found)
    return _merge_by_file_group(r for r in requests if r is not None)


def _late_requests(storage: Storage, failed: Instant, planned: list[RollbackRequest]) -> list[RollbackRequest]:
    """Requests for markers of the failed write that its plan does not cover: a writer stalled past its
    lease may still have tasks running, which created them after the plan listed the markers. Those tasks
    look for this rollback after they write (`ingest.write.fence`): a task that looked before the plan was
    recorded left its marker before this second listing, which comes after. (Beyond Hudi, whose rollback
    lists markers once; the metadata then lists these files too.)"""
    covered = {posixpath.basename(p) for r in planned for p in r.files_to_delete}
    covered.update(posixpath.basename(k) for r in planned for k, _ in r.log_blocks_to_delete)
    late = [m for m in markers.list_markers(storage, failed.timestamp) if m.file_name not in covered]
    requests = [r for r in (_from_marker(storage, failed.timestamp, m) for m in late)
                if r is not None and (r.files_to_delete or r.log_blocks_to_delete)]
    if requests:
        log.warning("rollback of %s: files of %d marker(s) that appeared after its plan was made are rolled "
                    "back too: %s", failed.timestamp, len(requests), ", ".join(m.data_file_path for m in late[:5]))
    return _merge_by_file_group(requests)


# -- execution ------------------------------------------------------------------------------------


def _latest_log(storage: Storage, partition: str, file_id: str, base_instant: str) -> LogFileName | None:
    names = [LogFileName.parse(e.name) for e in storage.list(partition) if not e.is_dir]
    mine = [n for n in names if n is not None and n.file_id == file_id and n.base_instant == base_instant
            and n.extension == "log" and not n.cdc]
    return max(mine) if mine else None


def _ends_with_rollback_of(storage: Storage, path: str, target: str) -> bool:
    last = None
    for block in iter_log_blocks(storage, path):
        last = block
    return last is not None and last.target_instant_time == target


def _append_command_block(storage: Storage, req: RollbackRequest, rollback_ts: str, target: str) -> tuple[str, int]:
    """The rollback block, in the latest log file of the slice or the next version; (file, its size)."""
    def join(name: LogFileName) -> str:
        return posixpath.join(req.partition_path, name.name) if req.partition_path else name.name

    latest = _latest_log(storage, req.partition_path, req.file_id, req.latest_base_instant)
    if latest is not None and _ends_with_rollback_of(storage, join(latest), target):
        return join(latest), storage.size(join(latest))  # an interrupted attempt already wrote it
    block = rollback_block(rollback_ts, target)
    if latest is not None and storage.can_append:
        result = append_log_blocks(storage, join(latest), [block])
        return result.path, result.size
    name = latest.next_version(ROLLOVER_WRITE_TOKEN) if latest else LogFileName(
        req.file_id, req.latest_base_instant, 1, ROLLOVER_WRITE_TOKEN)
    result = create_log_file(storage, join(name), [block])
    return result.path, result.size


def _execute(storage: Storage, rollback_ts: str, failed: Instant, requests: list[RollbackRequest]) -> dict:
    partitions: dict[str, dict] = {}
    for i, req in enumerate(requests):
        meta = partitions.setdefault(req.partition_path, {
            "partitionPath": req.partition_path, "successDeleteFiles": [], "failedDeleteFiles": [],
            "rollbackLogFiles": {}, "logFilesFromFailedCommit": {},
        })
        for path in req.files_to_delete:
            outcome = "successDeleteFiles" if storage.delete(path) else "failedDeleteFiles"
            meta[outcome].append(storage.url(path))
        for location in req.outside:
            log.warning("rollback of %s: not deleting %s, outside the table %s", failed.timestamp, location,
                        storage.base_url)
            meta["failedDeleteFiles"].append(location)
        if req.log_blocks_to_delete:
            written, size = _append_command_block(storage, req, rollback_ts, failed.timestamp)
            meta["rollbackLogFiles"][storage.url(written)] = size
            # Only keys naming a log file (BaseRollbackHelper drops keys that name no file).
            meta["logFilesFromFailedCommit"].update(
                (k, v) for k, v in req.log_blocks_to_delete if LogFileName.parse(posixpath.basename(k)))
        if i == 0:
            crash_point("mid_rollback")
    return partitions


def rollback(storage: Storage, timeline: Timeline, failed_ts: str, rollback_ts: str | None = None) -> Instant:
    """Roll back the pending instant `failed_ts`; returns the completed rollback instant."""
    started = time.monotonic()
    requested, failed, requests = request_rollback(storage, timeline, failed_ts, rollback_ts)
    return _finish(storage, timeline, requested, failed, requests, started)


def request_rollback(storage: Storage, timeline: Timeline, failed_ts: str,
                     rollback_ts: str | None = None) -> tuple[Instant, Instant, list[RollbackRequest]]:
    """Plan the rollback of the pending instant `failed_ts` and record the plan (`<r>.rollback.requested`):
    (the requested rollback, the failed instant, the plan's requests). `resume` carries a plan out."""
    failed = timeline.get(failed_ts)
    if failed is None:
        raise ValueError(f"no instant {failed_ts} on the timeline")
    if failed.is_completed:
        raise ValueError(f"instant {failed_ts} is completed; only pending instants are rolled back")
    rollback_ts = rollback_ts or timeline.new_instant_time()
    requests = plan_rollback(storage, timeline, failed)
    plan = {
        "instantToRollback": {"commitTime": failed.timestamp, "action": failed.action.value},
        "RollbackRequests": [r.to_avro(storage) for r in requests],
        "version": 1,
    }
    requested = Instant(rollback_ts, Action.ROLLBACK, State.REQUESTED)
    storage.write(timeline.layout.path(requested), avro_models.serialize(avro_models.ROLLBACK_PLAN, plan))
    return requested, failed, requests


def target_of(storage: Storage, pending_rollback: Instant, layout: TimelineLayout = LAYOUT_1) -> Instant:
    """The instant a pending rollback rolls back, from its plan."""
    plan = avro_models.deserialize(read_instant(storage, pending_rollback.to(State.REQUESTED), layout))
    target = plan["instantToRollback"]
    return Instant(target["commitTime"], Action(target["action"]), State.INFLIGHT)


def rolled_back_time(storage: Storage, instant: Instant, layout: TimelineLayout = LAYOUT_1) -> str | None:
    """The time of the instant a rollback (in any state) rolls back: from its plan while pending, from its
    metadata once completed; None if its file says nothing (an empty requested file)."""
    try:
        data = read_instant(storage, instant if instant.is_completed else instant.to(State.REQUESTED), layout)
    except TimelineError:
        return None  # gone since the listing (a rollback finishing), or never requested
    if not instant.is_completed:
        return avro_models.deserialize(data)["instantToRollback"]["commitTime"] if data else None
    rolled = avro_models.deserialize(data, avro_models.ROLLBACK_METADATA).get("commitsRollback") if data else None
    return rolled[0] if rolled else None


def rollback_of(storage: Storage, timeline: Timeline, timestamp: str) -> Instant | None:
    """The rollback, pending or completed, that rolls back instant `timestamp`. Only a rollback requested
    after it can: a rollback's time is new when it is planned (`BaseHoodieTableServiceClient.rollback`
    takes `createNewInstantTime()`), so only those few plans are read."""
    for instant in timeline.instants:
        if instant.action is Action.ROLLBACK and instant.timestamp > timestamp \
                and rolled_back_time(storage, instant, timeline.layout) == timestamp:
            return instant
    return None


# What `HoodieTable.rollbackInflightCompaction`, `rollbackInflightLogCompaction` and `rollbackInflightClustering`
# roll back: with `deleteInstants` false (`rollbackInflightInstant`), so the instant is not removed but put back to
# requested once the rollback completed (`revertInstantFromInflightToRequested`), and runs again from its plan.
_PLAN_KEEPING = (Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING)


def keeps_plan(storage: Storage, timeline: Timeline, target: Instant) -> bool:
    """Whether a rollback of `target` keeps its plan: a compaction, log compaction or clustering (at table
    version 6 a replacecommit whose requested plan is a clustering's), not a write."""
    if target.action in _PLAN_KEEPING:
        return True
    return target.action is Action.REPLACE_COMMIT and \
        target.timestamp in pending_clustering_groups(storage, timeline).values()


def resume(storage: Storage, timeline: Timeline, pending_rollback: Instant) -> Instant:
    """Finish a rollback that a crash interrupted, from its recorded plan. Refused, deleting nothing, where its
    target completed since (a compactor that finished the compaction a rollback was meant to undo)."""
    started = time.monotonic()
    requested = pending_rollback.to(State.REQUESTED)
    plan = avro_models.deserialize(read_instant(storage, requested, timeline.layout))
    requests = [RollbackRequest.from_avro(storage, r) for r in plan.get("RollbackRequests") or []]
    target = target_of(storage, pending_rollback, timeline.layout)
    now = timeline.get(target.timestamp)
    if now is not None and now.is_completed:
        raise TimelineError(f"{storage.base_url}: rollback {pending_rollback.timestamp} rolls back "
                            f"{target.action.value} {target.timestamp}, which has completed since; its plan is not "
                            "carried out (it would delete a completed instant's files)")
    return _finish(storage, timeline, requested, target, requests, started)


def _finish(storage: Storage, timeline: Timeline, requested: Instant, failed: Instant,
            requests: list[RollbackRequest], started: float) -> Instant:
    inflight = requested.to(State.INFLIGHT)
    if not storage.exists(timeline.layout.path(inflight)):
        storage.write(timeline.layout.path(inflight), b"")
    requests = [*requests, *_late_requests(storage, failed, requests)]
    partitions = _execute(storage, requested.timestamp, failed, requests)
    metadata = {
        "startRollbackTime": requested.timestamp,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": sum(len(p["successDeleteFiles"]) for p in partitions.values()),
        "commitsRollback": [failed.timestamp],
        "partitionMetadata": partitions,
        "version": 1,
        "instantsRollback": [{"commitTime": failed.timestamp, "action": failed.action.value}],
    }
    # BaseRollbackActionExecutor.finishRollback: the failed instant leaves the timeline first, then
    # the rollback completes; the markers go last (runRollback). A table service's instant stays, and goes
    # back to requested once the rollback completed (`rollbackInflightInstant`).
    keep = keeps_plan(storage, timeline, failed)
    if not keep:
        remove_pending(storage, timeline.reload(storage), failed.timestamp)
    crash_point("before_rollback_complete")
    done = complete(storage, inflight, avro_models.serialize(avro_models.ROLLBACK_METADATA, metadata),
                    timeline=timeline)
    if keep:
        revert_to_requested(storage, timeline.reload(storage), failed.timestamp)
    markers.delete_all(storage, failed.timestamp)
    heartbeat.delete(storage, failed.timestamp)  # a rolled-back instant has no writer left
    return done
