"""Rolling back an instant that never completed, as Hudi's marker-based rollback does.

The failed instant's markers list every file it may have touched. A file it created is deleted; a
log file it appended to (one that also holds earlier, committed blocks) gets a rollback COMMAND
block so every reader drops the failed instant's blocks there. Plan and result are recorded as
`<r>.rollback.requested` (`HoodieRollbackPlan`) and `<r>.rollback` (`HoodieRollbackMetadata`); only then
are the failed instant's own timeline files removed. A crash anywhere leaves either the failed
instant (rolled back again next time) or a pending rollback (re-executed from its plan); both steps
are idempotent.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass

from ingest.faults import crash_point
from ingest.hudi import avro_models, heartbeat, markers
from ingest.hudi.file_names import LogFileName
from ingest.hudi.instant import Action, Instant, State
from ingest.hudi.log_reader import iter_log_blocks
from ingest.hudi.log_writer import append_log_blocks, create_log_file, rollback_block
from ingest.hudi.timeline import Timeline, instant_path, read_instant, remove_pending
from ingest.storage import Storage


@dataclass(frozen=True)
class RollbackRequest:
    partition_path: str
    file_id: str
    latest_base_instant: str
    files_to_delete: tuple[str, ...] = ()
    log_blocks_to_delete: tuple[tuple[str, int], ...] = ()  # (log file path, size before)

    def to_avro(self, storage: Storage) -> dict:
        return {
            "partitionPath": self.partition_path,
            "fileId": self.file_id,
            "latestBaseInstant": self.latest_base_instant,
            "filesToBeDeleted": [storage.url(p) for p in self.files_to_delete],
            "logBlocksToBeDeleted": {storage.url(p): size for p, size in self.log_blocks_to_delete} or None,
        }

    @classmethod
    def from_avro(cls, storage: Storage, d: dict) -> RollbackRequest:
        def rel(url: str) -> str:
            prefix = storage.base_url.rstrip("/") + "/"
            return url[len(prefix):] if url.startswith(prefix) else url

        return cls(
            partition_path=d["partitionPath"],
            file_id=d.get("fileId") or "",
            latest_base_instant=d.get("latestBaseInstant") or "",
            files_to_delete=tuple(rel(u) for u in d.get("filesToBeDeleted") or []),
            log_blocks_to_delete=tuple((rel(u), int(s)) for u, s in (d.get("logBlocksToBeDeleted") or {}).items()),
        )


def _written_only_by(storage: Storage, path: str, instant: str) -> bool:
    """True when every readable block of the log file belongs to `instant` (the file is its own)."""
    for block in iter_log_blocks(storage, path):
        if not block.is_corrupt and block.instant_time != instant:
            return False
    return True


def plan_rollback(storage: Storage, failed: Instant) -> list[RollbackRequest]:
    requests = []
    for marker in markers.list_markers(storage, failed.timestamp):
        path = marker.data_file_path
        if not storage.exists(path):
            continue
        log = LogFileName.parse(marker.file_name)
        if marker.io_type is markers.IOType.APPEND and log is not None:
            if _written_only_by(storage, path, failed.timestamp):
                requests.append(RollbackRequest(marker.partition_path, log.file_id, log.base_instant, (path,)))
            else:
                requests.append(RollbackRequest(
                    marker.partition_path, log.file_id, log.base_instant,
                    log_blocks_to_delete=((path, storage.size(path)),),
                ))
        else:
            # Base files, and key-index segments the writer records with CREATE markers.
            requests.append(RollbackRequest(marker.partition_path, "", "", (path,)))
    return requests


def _execute(storage: Storage, rollback_ts: str, failed: Instant, requests: list[RollbackRequest]) -> dict:
    partitions: dict[str, dict] = {}
    deleted = 0
    for i, req in enumerate(requests):
        meta = partitions.setdefault(req.partition_path, {
            "partitionPath": req.partition_path, "successDeleteFiles": [], "failedDeleteFiles": [],
            "rollbackLogFiles": None, "writtenLogFiles": None,
        })
        for path in req.files_to_delete:
            storage.delete(path)
            meta["successDeleteFiles"].append(storage.url(path))
            deleted += 1
        for path, _size in req.log_blocks_to_delete:
            block = rollback_block(rollback_ts, failed.timestamp)
            if storage.can_append:
                result = append_log_blocks(storage, path, [block])
                written = path
            else:
                # No append: a new log file version of the same slice carries the command block.
                name = LogFileName.parse(posixpath.basename(path))
                new_name = name.next_version(f"0-0-{rollback_ts}") if name else None
                written = posixpath.join(req.partition_path, new_name.name) if new_name else path
                result = create_log_file(storage, written, [block])
            rolled = dict(meta["rollbackLogFiles"] or {})
            rolled[storage.url(written)] = result.size
            meta["rollbackLogFiles"] = rolled
        if i == 0:
            crash_point("mid_rollback")
    return {"partitions": partitions, "deleted": deleted}


def rollback(storage: Storage, timeline: Timeline, failed_ts: str, rollback_ts: str | None = None) -> Instant:
    """Roll back the pending instant `failed_ts`; returns the completed rollback instant."""
    failed = timeline.get(failed_ts)
    if failed is None:
        raise ValueError(f"no instant {failed_ts} on the timeline")
    if failed.is_completed:
        raise ValueError(f"instant {failed_ts} is completed; only pending instants are rolled back")
    started = time.monotonic()
    rollback_ts = rollback_ts or timeline.new_instant_time()
    requests = plan_rollback(storage, failed)
    plan = {
        "instantToRollback": {"commitTime": failed.timestamp, "action": failed.action.value},
        "RollbackRequests": [r.to_avro(storage) for r in requests],
        "version": 1,
    }
    requested = Instant(rollback_ts, Action.ROLLBACK, State.REQUESTED)
    storage.write(instant_path(requested), avro_models.serialize(avro_models.ROLLBACK_PLAN, plan))
    return _finish(storage, timeline, requested, failed, requests, started)


def resume(storage: Storage, timeline: Timeline, pending_rollback: Instant) -> Instant:
    """Finish a rollback that a crash interrupted, from its recorded plan."""
    started = time.monotonic()
    requested = pending_rollback.to(State.REQUESTED)
    plan = avro_models.deserialize(read_instant(storage, requested))
    target = plan["instantToRollback"]
    failed = Instant(target["commitTime"], Action(target["action"]), State.INFLIGHT)
    requests = [RollbackRequest.from_avro(storage, r) for r in plan.get("RollbackRequests") or []]
    # Appends already made by the interrupted attempt must not be repeated.
    requests = [_without_done_appends(storage, r, failed.timestamp) for r in requests]
    return _finish(storage, timeline, requested, failed, requests, started)


def _without_done_appends(storage: Storage, req: RollbackRequest, target: str) -> RollbackRequest:
    remaining = []
    for path, size in req.log_blocks_to_delete:
        if storage.exists(path) and storage.size(path) > size and _ends_with_rollback_of(storage, path, target):
            continue
        remaining.append((path, size))
    return RollbackRequest(req.partition_path, req.file_id, req.latest_base_instant,
                           req.files_to_delete, tuple(remaining))


def _ends_with_rollback_of(storage: Storage, path: str, target: str) -> bool:
    last = None
    for block in iter_log_blocks(storage, path):
        last = block
    return last is not None and last.target_instant_time == target


def _finish(storage: Storage, timeline: Timeline, requested: Instant, failed: Instant,
            requests: list[RollbackRequest], started: float) -> Instant:
    inflight = requested.to(State.INFLIGHT)
    if not storage.exists(instant_path(inflight)):
        storage.write(instant_path(inflight), b"")
    result = _execute(storage, requested.timestamp, failed, requests)
    metadata = {
        "startRollbackTime": requested.timestamp,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": result["deleted"],
        "commitsRollback": [failed.timestamp],
        "partitionMetadata": result["partitions"],
        "version": 1,
        "instantsRollback": [{"commitTime": failed.timestamp, "action": failed.action.value}],
    }
    done = requested.to(State.COMPLETED)
    storage.write(instant_path(done), avro_models.serialize(avro_models.ROLLBACK_METADATA, metadata))
    # The failed instant disappears from the timeline only after the rollback is recorded.
    remove_pending(storage, Timeline.load(storage), failed.timestamp)
    markers.delete_all(storage, failed.timestamp)
    heartbeat.delete(storage, failed.timestamp)  # a rolled-back instant has no writer left
    return done
