"""Table services for writers and jobs: compaction, cleaning, archival, in the order Hudi runs them.

`run_inline_services` is what a writer calls after each commit, still holding its lease: compaction
(scheduled when due; executed here too when `hoodie.compact.inline`), then cleaning, then archival
(Hudi's `postCommit`: inline table services, `autoCleanOnCommit`, `autoArchiveOnCommit`).

Who may do what while a writer runs:

* anything that creates an instant or removes timeline files — scheduling a compaction, cleaning,
  archiving, rolling back — runs under the writer's lease: by the writer itself (inline), or by a job
  that takes the lease when no writer holds it. Instant times stay unique and ordered, no plan is made
  against log files a running write still appends to, and no reader of the timeline loses an instant
  it just listed to a concurrent archival.
* executing a compaction that is already planned needs no lease (`compact(..., schedule=False)`, the
  `--execute` path of `ingest compact` and `jobs/compact.py`): writers route around a planned
  compaction, and executing it again after a crash is idempotent. A heartbeat keeps a second
  executor away from a compaction a live one is running (it is skipped, not failed).

Each service reads only the timeline and the latest slices (cleaning in incremental mode: the
partitions written since its last horizon; archival: the files of the instants it moves), so its cost
follows what changed since it last ran, not the table's history.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ingest.errors import ConcurrentWriterError, IngestError, TimelineError
from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.services import archiver, cleaner, compaction
from ingest.hudi.table import metadata_table
from ingest.hudi.table.lock_provider import LockSettings
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.heartbeat import HeartbeatSettings
from ingest.hudi.timeline.instant import Action, Instant, State, check_instant_time
from ingest.hudi.timeline.timeline import read_instant, refuse_pending_restore
from ingest.write import commit
from ingest.write.index_bootstrap import Manifest, refuse_unmergeable_writes
from ingest.write.lock import WriterLock

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServicesRun:
    """What one round of table services did."""

    scheduled_compaction: str | None = None
    compacted: tuple[str, ...] = ()
    cleaned: tuple[str, ...] = ()
    files_deleted: int = 0
    archived: tuple[str, ...] = ()
    durations: Mapping[str, float] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        return bool(self.scheduled_compaction or self.compacted or self.cleaned or self.archived)

    def log_line(self) -> str:
        timing = " ".join(f"{k}={v:.2f}s" for k, v in self.durations.items())
        return (f"services: scheduled={self.scheduled_compaction or '-'} compacted={list(self.compacted)} "
                f"cleaned={list(self.cleaned)} files_deleted={self.files_deleted} "
                f"archived={len(self.archived)} {timing}")


def _execute_pending(table: HudiTable, runner: compaction.Runner | None,
                     held: list[str] | None = None) -> list[str]:
    """Execute pending compactions, oldest first, leaving those another live executor runs (their
    messages go to `held`, so a command can say so instead of reporting the work done)."""
    done = []
    for instant in table.timeline().pending(Action.COMPACTION):
        try:
            compaction.execute(table, instant.timestamp, runner=runner)
        except ConcurrentWriterError as e:
            log.info("%s", e)
            if held is not None:
                held.append(str(e))
            continue
        done.append(instant.timestamp)
    return done


_SKIPPED: set[tuple[str, str]] = set()  # (table, service) ingest does not run at its version, said once


def _runs(table: HudiTable, service: str) -> bool:
    """Whether ingest runs `service` at the table's version; if not, say so once per table and process."""
    if table.version.runs(service):
        return True
    if (table.base_url, service) not in _SKIPPED:
        log.warning("%s; not running it after its commits", compaction.services_refusal(table, service))
        _SKIPPED.add((table.base_url, service))
    return False


def run_inline_services(
    table: HudiTable,
    settings: ServiceSettings,
    *,
    lock: WriterLock | None = None,
    runner: compaction.Runner | None = None,
) -> ServicesRun:
    """The services due after a commit, run by the writer that made it (holding `lock`, if shared).

    `runner` executes compaction operations (e.g. on Spark executors); by default, in this process.
    """
    fence = lock.check if lock is not None else None
    durations: dict[str, float] = {}
    scheduled = None
    compacted: list[str] = []
    t0 = time.monotonic()
    if settings.compaction.schedules_inline and _runs(table, "compaction"):
        scheduled = compaction.schedule(table, settings.compaction, fence=fence)
    if settings.compaction.inline and _runs(table, "compaction"):
        compacted = _execute_pending(table, runner)
    durations["compaction"] = time.monotonic() - t0

    cleaned: list[str] = []
    deleted = 0
    t1 = time.monotonic()
    if settings.clean.automatic and _runs(table, "cleaning"):
        for result in cleaner.clean(table, settings.clean, fence=fence):
            cleaned.append(result.instant)
            deleted += len(result.deleted)
    durations["clean"] = time.monotonic() - t1

    archived: tuple[str, ...] = ()
    t2 = time.monotonic()
    if settings.archive.automatic and _runs(table, "archival"):
        archived = archiver.archive(table, settings, fence=fence).archived
    durations["archive"] = time.monotonic() - t2
    return ServicesRun(scheduled, tuple(compacted), tuple(cleaned), deleted, archived, durations)


# -- one service at a time (CLI, jobs) ----------------------------------------------------------------


def open_table(path: str, storage_options: Mapping[str, Any] | None = None, *,
               service: str | None = "compaction") -> HudiTable:
    """The table `service` writes, refused at a version where ingest does not run it; rolling back
    (`service=None`) is done at every writable version."""
    return _checked(HudiTable.open(path, storage_options), service)


def _checked(table: HudiTable, service: str | None) -> HudiTable:
    if service is not None:
        compaction.check_writable(table, service)
    else:
        table.config.check_supported(table.base_url, write=True)
        refuse_pending_restore(table.timeline(), table.base_url)  # its rollbacks are the restore's to finish
    return table


Target = HudiTable | str  # an open table, or the path or URL of one (the CLI and config files give paths)


def _table(target: Target, storage_options: Mapping[str, Any] | None, service: str | None) -> HudiTable:
    """The table a service writes to; a metadata table would go stale, so it goes first. Compaction
    reads the slices' log blocks: one it cannot merge (another writer's partial update) refuses the
    table before anything changes, as it refuses a writer (`refuse_unmergeable_writes`)."""
    table = _checked(target, service) if isinstance(target, HudiTable) else open_table(
        target, storage_options, service=service)
    if service == "compaction":
        refuse_unmergeable_writes(table, table.timeline(), Manifest.read(table))
    metadata_table.remove(table)
    return table


def _lease(table: HudiTable, expiry_seconds: float, hudi_lock: LockSettings | None = None) -> WriterLock:
    """The writer lease, with Hudi's lock too when Hudi writers share the table (`ingest.hudi.table.lock_provider`)."""
    return WriterLock(table.storage, expiry_seconds, description="ingest table service", hudi_lock=hudi_lock)


@dataclass(frozen=True)
class CompactionRun:
    scheduled: str | None = None
    executed: tuple[str, ...] = ()
    note: str | None = None
    held: tuple[str, ...] = ()  # pending compactions left to another executor whose heartbeat is fresh


def compact(
    target: Target,
    settings: ServiceSettings,
    *,
    schedule: bool = True,
    execute: bool = True,
    instant: str | None = None,
    runner: compaction.Runner | None = None,
    lease_expiry_seconds: float = 60.0,
    storage_options: Mapping[str, Any] | None = None,
    hudi_lock: LockSettings | None = None,
) -> CompactionRun:
    """Compact now: schedule a compaction of every slice with logs (the strategy permitting) under the
    writer lease, then execute the pending compactions, oldest first. With `instant`, execute just
    that one. Scheduling is skipped, with a note, while a writer holds the lease: a running writer
    schedules its own compactions (`hoodie.compact.schedule.inline`), which this then executes."""
    table = _table(target, storage_options, "compaction")
    if instant is not None:
        compaction.execute(table, check_instant_time(instant), runner=runner)
        return CompactionRun(executed=(instant,))
    scheduled, note = None, None
    if schedule:
        try:
            with _lease(table, lease_expiry_seconds, hudi_lock) as lock:
                scheduled = compaction.schedule(table, settings.compaction, force=True, fence=lock.check)
        except ConcurrentWriterError as e:
            note = f"not scheduling: {e}"
            log.info(note)
    held: list[str] = []
    executed = _execute_pending(table, runner, held) if execute else []
    return CompactionRun(scheduled, tuple(executed), note, tuple(held))


def clean(target: Target, settings: ServiceSettings, *, lease_expiry_seconds: float = 60.0,
          storage_options: Mapping[str, Any] | None = None,
          hudi_lock: LockSettings | None = None) -> list[cleaner.CleanResult]:
    """Finish interrupted cleans and run one now if there is anything to delete (under the lease)."""
    table = _table(target, storage_options, "cleaning")
    with _lease(table, lease_expiry_seconds, hudi_lock) as lock:
        return cleaner.clean(table, settings.clean, force=True, fence=lock.check)


def archive(target: Target, settings: ServiceSettings, *, lease_expiry_seconds: float = 60.0,
            storage_options: Mapping[str, Any] | None = None,
            hudi_lock: LockSettings | None = None) -> archiver.ArchiveResult:
    """Archive what the settings allow (under the lease), at every version ingest writes."""
    table = _table(target, storage_options, "archival")
    with _lease(table, lease_expiry_seconds, hudi_lock) as lock:
        return archiver.archive(table, settings, fence=lock.check)


def rollback_instant(target: Target, instant_time: str, *, lease_expiry_seconds: float = 60.0,
                     storage_options: Mapping[str, Any] | None = None, heartbeat: HeartbeatSettings | None = None,
                     hudi_lock: LockSettings | None = None) -> Instant:
    """Roll back a pending write (or finish an interrupted rollback); refuse anything else. A Hudi write is
    judged live by its heartbeat under `heartbeat` (its writers' `hoodie.client.heartbeat.*`), and with
    `hudi_lock` it is made under Hudi's lock, as Hudi's completes under it (`BaseRollbackActionExecutor.finishRollback`)."""
    check_instant_time(instant_time)
    table = _table(target, storage_options, None)
    with _lease(table, lease_expiry_seconds, hudi_lock):
        timeline = table.timeline()
        instant = timeline.get(instant_time)
        if instant is None:
            raise TimelineError(f"{table.base_url}: no instant {instant_time} on the active timeline")
        kind = instant.action.value
        if instant.is_completed:
            raise IngestError(
                f"{table.base_url}: {kind} {instant_time} is completed; undoing a completed instant means "
                "restoring the table to before it (Hudi's restore), which ingest does not do. Only pending "
                "writes are rolled back."
            )
        if instant.action is Action.ROLLBACK:
            return commit.resume_rollback(table.storage, timeline, instant)
        if instant.action is Action.COMPACTION:
            raise IngestError(
                f"{table.base_url}: compaction {instant_time} is pending; writers already route new data "
                f"around it, so it is finished, not rolled back: run `ingest compact {table.base_url} "
                f"--execute {instant_time}`"
            )
        if instant.action is Action.CLEAN:
            raise IngestError(f"{table.base_url}: clean {instant_time} is pending; finish it with "
                              f"`ingest clean {table.base_url}`")
        if instant.action not in (Action.DELTA_COMMIT, Action.COMMIT):
            raise IngestError(f"{table.base_url}: a pending {kind} is not rolled back by ingest")
        if not commit.written_by_ingest(table, instant):
            commit.check_not_live(table, instant, heartbeat or HeartbeatSettings())  # a Hudi writer may still run it
        return commit.roll_back(table.storage, timeline, instant_time)


# -- pending services (for `ingest inspect table`) -------------------------------------------------------


@dataclass(frozen=True)
class PendingService:
    instant: str
    action: str                 # compaction | clean | rollback
    state: str                  # REQUESTED | INFLIGHT
    plan_bytes: int             # size of the plan file
    items: int                  # file groups to compact, files to delete, rollback requests
    description: str


def pending_services(table: HudiTable) -> list[PendingService]:
    """Pending compactions, cleans and rollbacks, with the size of their plans."""
    storage = table.storage
    out = []
    for instant in table.timeline().pending(Action.COMPACTION, Action.CLEAN, Action.ROLLBACK):
        requested = Instant(instant.timestamp, instant.action, State.REQUESTED)
        data = read_instant(storage, requested, table.layout)
        if instant.action is Action.COMPACTION:
            plan = compaction.CompactionPlan.from_bytes(data)
            items = len(plan.operations)
            logs = sum(len(op.delta_files) for op in plan.operations)
            text = f"{items} file group(s), {logs} log file(s)"
        elif instant.action is Action.CLEAN:
            clean_plan = cleaner.CleanerPlan.from_bytes(storage, data)
            items = clean_plan.file_count
            text = f"{items} file(s) in {len(clean_plan.files)} partition(s), policy {clean_plan.policy.value}"
        else:
            raw = avro_models.deserialize(data) if data else {}
            target = (raw.get("instantToRollback") or {}).get("commitTime", "?")
            items = len(raw.get("RollbackRequests") or [])
            text = f"rolls back {target}: {items} request(s)"
        out.append(PendingService(instant.timestamp, instant.action.value, instant.state.value, len(data), items, text))
    return out
