"""Compaction: merging a file slice's base file and log files into a new base file.

Three steps, as Hudi 0.14/0.15 takes them (`ScheduleCompactionActionExecutor`, `HoodieCompactor`,
`CompactHelpers`):

* schedule: pick the latest slices that have log files (by `hoodie.compaction.strategy`), skipping
  file groups another pending compaction already holds, and write the plan as
  `<t>.compaction.requested` (`HoodieCompactionPlan`, version 2). From then on writers send new log
  blocks of those file groups to a new slice whose base instant is `<t>`, and readers merge that
  slice with the planned one until the compaction completes.
* execute: `<t>.compaction.inflight`, then per operation one new base file
  `<fileId>_<writeToken>_<t>.parquet` holding the slice as the snapshot reader merges it (log blocks
  of instants completed before `<t>`). Records keep their `_hoodie_commit_time` and
  `_hoodie_commit_seqno`; `_hoodie_file_name` names the new file (`HoodieMergeHandle.writeToFile`,
  and the compacted base files of the Hudi-written v8 fixture). A CREATE marker precedes each file.
* complete: `<t>.commit`, JSON commit metadata with `compacted: true`, operation COMPACT and the
  write stats the compactor fills in.

At table versions 8 and 9 (Hudi 1.x) the same steps, in the layout-2 timeline: the plan in 1.x's schema
(`missingSchedulePartitions`), `<t>.compaction.inflight` empty, and the completed compaction a
`<t>_<completion>.commit` holding Avro commit metadata (`ActiveTimelineV2`, `CommitMetadataSerDeV2`).
Slices are cut by completion time (`HoodieFileGroup.getBaseInstantTime`): a log joins the slice of the
latest base instant at or before its deltacommit's completion, so logs completed after `<t>` belong to
the compacted slice once it completes, and readers merge them with the planned slice until then.
The plan holds only logs whose deltacommits completed before `<t>`
(`BaseHoodieCompactionPlanGenerator.generateCompactionPlan`, `CompletionTimeQueryView.isCompletedBefore`):
no write is pending when ingest schedules, and `<t>` comes after every completion time.

Scheduling must not race a writer: a plan names the log files of a slice, and a write planned before
the compaction was requested would still append to them. So scheduling happens only when no write is
pending, under the writer's lease (the caller passes its fence), as Hudi schedules under its lock.
Executing a planned compaction needs no lease: writers already route around it. One executor runs a
compaction at a time (`ExecutionHeartbeat`). A compaction left inflight by a crash is executed again
from its plan after the files of the failed attempt (named by its markers, or listed when a Hudi
executor left none) are removed; the data
writer never rolls it back. (Hudi rolls the inflight compaction back to requested, recording a
rollback instant, before executing it again; the files that remain are the same.) A rollback of it that
a Hudi compactor left pending is finished first, the compaction back to requested with its plan, as
`HoodieTable.rollbackInflightCompaction` would have left it; writers leave such rollbacks alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import TimelineError, UnsupportedTable
from ingest.faults import crash_point
from ingest.hudi.avro import schema as avro
from ingest.hudi.config.service_settings import CompactionSettings, CompactionStrategy, TriggerStrategy
from ingest.hudi.log.data_block import avro_record_count
from ingest.hudi.log.log_block import BlockType
from ingest.hudi.log.log_reader import decode_block, iter_log_blocks
from ingest.hudi.parquet.base_file import BaseFileOptions, encode_base_file, read_base_file
from ingest.hudi.services import rollback
from ingest.hudi.services.compaction_heartbeat import HEARTBEAT_FOLDER as HEARTBEAT_FOLDER
from ingest.hudi.services.compaction_heartbeat import ExecutionHeartbeat
from ingest.hudi.services.compaction_plan import PLAN_VERSION as PLAN_VERSION
from ingest.hudi.services.compaction_plan import (
    TOTAL_IO_MB,
    TOTAL_IO_READ_MB,
    TOTAL_IO_WRITE_MB,
    TOTAL_LOG_FILES,
    TOTAL_LOG_FILES_SIZE,
    CompactionOperation,
    CompactionPlan,
    pending_plans,
    read_plan,
)
from ingest.hudi.table import markers
from ingest.hudi.table.file_names import BaseFileName, make_write_token
from ingest.hudi.table.file_system_view import FileSlice, list_partitions
from ingest.hudi.table.snapshot import ReadContext, read_slice
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import NULL_COMMIT, CommitMetadata, RuntimeStats, WriteStat
from ingest.hudi.timeline.instant import Action, Instant, State, parse_instant
from ingest.hudi.timeline.timeline import Timeline, complete, refuse_pending_restore, request, start
from ingest.storage import Storage

log = logging.getLogger(__name__)

OPERATION_TYPE = "COMPACT"
_MB = 1024 * 1024
_PENDING_WRITES = (Action.DELTA_COMMIT, Action.COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING)


def check_writable(table: HudiTable, service: str = "compaction") -> Timeline:
    """Table services write what writers write (Merge-On-Read), and only at the versions whose plans and
    metadata ingest writes for them (`TableVersion.runs`: today every service at 6, 8 and 9): a table
    opened for reading may be one they must not touch. Nor do they run while a restore is pending, or on
    a table whose schema Hudi evolved on read (`HudiTable.check_no_schema_history`). Returns the timeline
    those were checked against, for the service to decide on."""
    table.config.check_supported(table.base_url, write=True)
    if not table.version.runs(service):
        raise UnsupportedTable(services_refusal(table, service))
    timeline = table.timeline()
    refuse_pending_restore(timeline, table.base_url)
    table.check_no_schema_history(timeline)
    return timeline


def services_refusal(table: HudiTable, service: str) -> str:
    return (f"{table.base_url}: table version {table.version.number}: ingest does not run {service} at this "
            "version; run it with Hudi")



# -- when to schedule -------------------------------------------------------------------------------


def _last_compaction(timeline: Timeline) -> Instant | None:
    """The latest completed compaction (on a MOR timeline, commits are compactions), or at version 6 the
    latest completed replacecommit if later (`TableVersion.replacecommits_end_delta_counts`)."""
    if timeline.version.replacecommits_end_delta_counts:
        return timeline.last_completed(Action.COMPACTION, Action.COMMIT, Action.REPLACE_COMMIT)
    return timeline.last_completed(Action.COMPACTION, Action.COMMIT)


def _delta_commits(timeline: Timeline) -> list[Instant]:
    """Hudi's delta commit timeline: a completed log compaction is a `.deltacommit` there, and counts."""
    return [i for i in timeline if i.timeline_action is Action.DELTA_COMMIT]


def delta_commits_since_compaction(timeline: Timeline) -> tuple[int, str] | None:
    """(delta commits after the latest completed compaction, the instant they count from), as
    `CompactionUtils.getDeltaCommitsSinceLatestCompaction`; None when there is no delta commit."""
    deltas = _delta_commits(timeline)
    last = _last_compaction(timeline)
    if last is not None:
        return sum(1 for d in deltas if d.timestamp > last.timestamp), last.timestamp
    if deltas:
        return len(deltas), deltas[0].timestamp
    return None


def needs_compaction(timeline: Timeline, settings: CompactionSettings, instant_time: str) -> bool:
    """Whether the trigger strategy calls for a compaction at `instant_time`."""
    info = delta_commits_since_compaction(timeline)
    if info is None:
        return False
    count, since = info
    by_count = count >= settings.max_delta_commits
    elapsed = (parse_instant(instant_time) - parse_instant(since)).total_seconds()
    by_time = elapsed >= settings.max_delta_seconds
    trigger = settings.trigger
    if trigger is TriggerStrategy.NUM_COMMITS:
        return by_count
    if trigger is TriggerStrategy.TIME_ELAPSED:
        return by_time
    if trigger is TriggerStrategy.NUM_OR_TIME:
        return by_count or by_time
    return by_count and by_time


def earliest_instant_to_retain(timeline: Timeline, settings: CompactionSettings) -> str | None:
    """The oldest instant archival must keep so the count trigger can still fire
    (`CompactionUtils.getEarliestInstantToRetainForCompaction`)."""
    if settings.trigger not in (TriggerStrategy.NUM_COMMITS, TriggerStrategy.NUM_AND_TIME):
        return None
    info = delta_commits_since_compaction(timeline)
    if info is None:
        return None
    count, since = info
    if count < settings.max_delta_commits:
        return since
    last = _last_compaction(timeline)
    deltas = [d.timestamp for d in _delta_commits(timeline) if last is None or d.timestamp > last.timestamp]
    return deltas[count - settings.max_delta_commits]


# -- what to compact ----------------------------------------------------------------------------------


def capture_metrics(slice_: FileSlice, settings: CompactionSettings) -> dict[str, float]:
    """`CompactionStrategy.captureMetrics`: IO estimates (whole MB) and log totals of a slice."""
    log_size = sum(lf.size for lf in slice_.log_files if lf.size >= 0)
    base_size = slice_.base_file.size if slice_.base_file else 0
    io_read = (base_size + log_size) // _MB
    io_write = (base_size if slice_.base_file else settings.parquet_max_file_size) // _MB
    return {
        TOTAL_IO_READ_MB: float(io_read),
        TOTAL_IO_WRITE_MB: float(io_write),
        TOTAL_IO_MB: float(io_read + io_write),
        TOTAL_LOG_FILES_SIZE: float(log_size),
        TOTAL_LOG_FILES: float(len(slice_.log_files)),
    }


def order_and_filter(operations: Sequence[CompactionOperation], settings: CompactionSettings) -> list[CompactionOperation]:
    """The strategy's choice: filter by threshold, order, then bound the total IO."""
    strategy = settings.strategy
    if strategy is CompactionStrategy.UNBOUNDED:
        return list(operations)
    ops = list(operations)
    if strategy is CompactionStrategy.LOG_FILE_SIZE:
        ops = sorted((op for op in ops if op.log_size >= settings.log_file_size_threshold),
                     key=lambda op: -op.log_size)
    elif strategy is CompactionStrategy.LOG_FILE_NUM:
        ops = sorted((op for op in ops if len(op.delta_files) >= settings.log_file_num_threshold),
                     key=lambda op: -len(op.delta_files))
    chosen = []
    remaining = float(settings.target_io_mb)
    for op in ops:  # BoundedIOCompactionStrategy: take, then stop once the budget is spent
        remaining -= op.io_mb
        chosen.append(op)
        if remaining <= 0:
            break
    return chosen


def generate_plan(table: HudiTable, timeline: Timeline, settings: CompactionSettings) -> CompactionPlan:
    """The operations a compaction scheduled now would carry (possibly none)."""
    held = set()
    for plan in pending_plans(table.storage, timeline).values():
        held |= plan.file_groups
    candidates = []
    for group in table.view(timeline).file_groups():
        slice_ = group.latest_slice
        if slice_ is None or not slice_.log_files or (group.partition_path, group.file_id) in held:
            continue
        candidates.append(CompactionOperation(
            partition_path=slice_.partition_path,
            file_id=slice_.file_id,
            base_instant=slice_.base_instant,
            data_file=slice_.base_file.name.name if slice_.base_file else None,
            delta_files=tuple(lf.name.name for lf in slice_.log_files),
            metrics=capture_metrics(slice_, settings),
        ))
    chosen = order_and_filter(candidates, settings)
    if not table.version.plans_of_1x:
        return CompactionPlan(tuple(chosen))
    # 1.x (`HoodieCompactionPlanGenerator`, `CompactionStrategy.orderAndFilter`): an empty extra metadata
    # map, and the partitions of the slices the strategy left out, for incremental table services.
    left_out = dict.fromkeys(op.partition_path for op in candidates if op not in chosen)
    return CompactionPlan(tuple(chosen), extra_metadata={}, missing_partitions=tuple(left_out))


def schedule(
    table: HudiTable,
    settings: CompactionSettings,
    *,
    force: bool = False,
    fence: Callable[[], None] | None = None,
) -> str | None:
    """Request a compaction if the trigger (or `force`) says so and there is work; its instant or None.

    Call it holding the writer lease and pass the lease's `check` as `fence`: it runs just before the
    plan is published, so a writer that lost its lease never schedules.
    """
    timeline = check_writable(table)
    pending_writes = timeline.pending(*_PENDING_WRITES)
    if pending_writes:
        log.info("not scheduling a compaction: %s pending (a failed write is rolled back by the next writer; "
                 "a clustering completes with Hudi)", [f"{i.action.value} {i.timestamp}" for i in pending_writes])
        return None
    instant_time = timeline.new_instant_time()
    if not force and not needs_compaction(timeline, settings, instant_time):
        return None
    plan = generate_plan(table, timeline, settings)
    if not plan.operations:
        return None
    if fence is not None:
        fence()
    instant_time = request(table.storage, instant_time, Action.COMPACTION, plan.to_bytes(table.version), table.layout,
                           zone=timeline.zone).timestamp
    log.info("scheduled compaction %s of %d file groups", instant_time, len(plan.operations))
    return instant_time


# -- execution --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompactionJob:
    """What every operation of one compaction needs; small and picklable, for executors."""

    instant: str
    read: ReadContext
    base_file_options: BaseFileOptions = BaseFileOptions()

    @property
    def storage(self) -> Storage:
        return self.read.storage

    @property
    def writer_schema(self) -> avro.AvroSchema:
        return self.read.reader_schema


Runner = Callable[[CompactionJob, Sequence[CompactionOperation]], list[WriteStat]]


@dataclass(frozen=True)
class _LogStats:
    files: int = 0
    records: int = 0
    blocks: int = 0
    corrupt: int = 0
    rollbacks: int = 0
    deleted_keys: frozenset[str] = frozenset()


def _log_stats(job: CompactionJob, slice_: FileSlice) -> _LogStats:
    """What the compactor's log scanner counts: records and blocks read, rollbacks, corrupt blocks."""
    storage, completed = job.storage, job.read.completed
    candidates, rolled_back = [], set()
    corrupt = rollbacks = 0
    for log_file in slice_.log_files:
        for block in iter_log_blocks(storage, log_file.path):
            if block.is_corrupt:
                corrupt += 1
            elif block.block_type == BlockType.COMMAND:
                rollbacks += 1
                rolled_back.add(block.target_instant_time)
            elif block.instant_time in completed:
                candidates.append(block)
    records = blocks = 0
    deleted: set[str] = set()
    for block in candidates:
        if block.instant_time in rolled_back:
            continue
        blocks += 1
        if block.block_type == BlockType.AVRO_DATA:
            records += avro_record_count(block.content)
            continue
        decoded = decode_block(block, job.read.reader_schema)
        if decoded.deletes is not None:
            records += len(decoded.deletes)
            deleted.update(d.record_key for d in decoded.deletes)
        elif decoded.records is not None:
            records += len(decoded.records)
    return _LogStats(len(slice_.log_files), records, blocks, corrupt, rollbacks, frozenset(deleted))


def _count(mask: pa.Array) -> int:
    return int(pc.sum(mask.cast(pa.int64())).as_py() or 0)


def compact_operation(job: CompactionJob, op: CompactionOperation, write_token: str) -> WriteStat:
    """Write the new base file of one operation; runs wherever the engine puts it."""
    storage = job.storage
    started = time.monotonic()
    slice_ = op.file_slice()
    rows = read_slice(job.read, slice_)
    logs = _log_stats(job, slice_)
    scan_ms = int((time.monotonic() - started) * 1000)

    name = BaseFileName(op.file_id, write_token, job.instant).name
    path = op.path_of(name)
    # Rows a log version won carry the file id as file name (as Hudi's log records do); rows kept
    # from the base file carry its name. Keys are unique among the merged rows.
    live_keys = rows.column(avro.RECORD_KEY).combine_chunks()
    base_keys = pa.array([], pa.string())
    log_keys = live_keys
    if slice_.base_file is not None:
        base = read_base_file(storage, slice_.base_file.path, columns=[avro.RECORD_KEY])
        base_keys = base.column(avro.RECORD_KEY).combine_chunks()
        from_log = pc.not_equal(rows.column(avro.FILE_NAME), slice_.base_file.name.name)
        log_keys = rows.filter(from_log).column(avro.RECORD_KEY).combine_chunks()
    deleted_keys = pa.array(sorted(logs.deleted_keys), pa.string())
    updates = _count(pc.is_in(log_keys, value_set=base_keys))
    gone = pc.unique(pa.concat_arrays([base_keys, deleted_keys]))
    touched = pc.unique(pa.concat_arrays([log_keys, deleted_keys]))

    rows = rows.set_column(rows.schema.get_field_index(avro.FILE_NAME), avro.FILE_NAME,
                           pa.array([name] * rows.num_rows, pa.string()))
    rows = rows.sort_by(avro.RECORD_KEY)
    data, _ = encode_base_file(rows, job.writer_schema, job.base_file_options, path=path)
    markers.create(storage, job.instant, op.partition_path, name, markers.IOType.CREATE)
    if not storage.create(path, data):
        raise FileExistsError(f"base file {storage.url(path)} already exists")
    write_ms = int((time.monotonic() - started) * 1000) - scan_ms
    has_base = slice_.base_file is not None
    return WriteStat(
        file_id=op.file_id,
        path=path,
        partition_path=op.partition_path,
        # HoodieMergeHandle records the merged base file's instant; HoodieCreateHandle (a slice of
        # logs only) records none.
        prev_commit=op.base_instant if has_base else NULL_COMMIT,
        prev_base_file=slice_.base_file.name.name if has_base else None,
        num_writes=rows.num_rows,
        num_deletes=len(gone) - _count(pc.is_in(gone, value_set=live_keys)),
        num_update_writes=updates,
        num_inserts=len(log_keys) - updates,
        total_write_bytes=len(data),
        file_size_in_bytes=len(data),
        total_log_records=logs.records,
        total_log_files_compacted=logs.files,
        total_log_size_compacted=op.log_size,
        total_updated_records_compacted=len(touched),
        total_log_blocks=logs.blocks,
        total_corrupt_log_block=logs.corrupt,
        total_rollback_blocks=logs.rollbacks,
        runtime_stats=RuntimeStats(
            total_scan_time=scan_ms,
            total_create_time=0 if has_base else write_ms,
            total_upsert_time=write_ms if has_base else 0,
        ),
    )


def run_locally(job: CompactionJob, operations: Sequence[CompactionOperation]) -> list[WriteStat]:
    """Every operation in this process, one after the other."""
    stats = []
    for index, op in enumerate(operations):
        stats.append(compact_operation(job, op, make_write_token(index, 0, 0)))
        crash_point("mid_compaction")
    return stats


def _undo_attempt(storage: Storage, instant: str) -> list[str]:
    """Remove what an interrupted attempt wrote: every file its markers name (DIRECT or, from a Hudi
    executor, timeline-server-based), or with no markers every base file of the instant, as
    `ListingBasedRollbackStrategy` rolls back a compaction outside a restore."""
    found = [m.data_file_path for m in markers.list_markers(storage, instant)]
    if not found:
        found = [p for part in list_partitions(storage) for p in rollback.files_of_instant(
            storage, part, instant, base_only=True)]
    removed = [path for path in found if storage.delete(path)]
    markers.delete_all(storage, instant)
    return removed


def job_for(table: HudiTable, timeline: Timeline, instant_time: str,
            base_file_options: BaseFileOptions | None = None) -> CompactionJob:
    schema = table.schema(timeline)
    if schema is None:
        raise TimelineError(f"{table.base_url}: compaction {instant_time} has no table schema to write with")
    completed = timeline.completed_write_timestamps(as_of=instant_time)
    read = ReadContext.of(table, schema, completed)
    return CompactionJob(instant_time, read, base_file_options or BaseFileOptions())




@dataclass(frozen=True)
class Execution:
    """A compaction between its inflight transition and its completion."""

    inflight: Instant
    plan: CompactionPlan
    job: CompactionJob
    heartbeat: ExecutionHeartbeat
    rollbacks: frozenset[str] = frozenset()  # the rollback instants on the timeline when it started


def start_execution(table: HudiTable, instant_time: str, base_file_options: BaseFileOptions | None = None,
                    *, heartbeat_expiry_seconds: float = 60.0) -> Execution | None:
    """Claim the compaction and move it inflight (clearing a crashed attempt's files first); None if it
    already completed. Raises ConcurrentWriterError while another live executor runs it."""
    storage = table.storage
    instant = check_writable(table).get(instant_time)
    if instant is None or instant.action is not Action.COMPACTION:
        raise TimelineError(f"{table.base_url}: no compaction {instant_time} on the timeline")
    if instant.is_completed:
        return None
    heartbeat = ExecutionHeartbeat(storage, instant_time, heartbeat_expiry_seconds)
    heartbeat.claim()
    try:
        timeline = table.timeline()
        pending_rollback = next((r for r in timeline.pending(Action.ROLLBACK)
                                 if rollback.rolled_back_time(storage, r, timeline.layout) == instant_time), None)
        if pending_rollback is not None:
            # A compactor stopped inside `HoodieTable.rollbackInflightCompaction`: finish that rollback (the
            # attempt's files go, the compaction back to requested), then run the compaction from its plan.
            log.warning("finishing rollback %s of compaction %s before running it", pending_rollback.timestamp,
                        instant_time)
            rollback.resume(storage, timeline, pending_rollback)
            timeline = table.timeline()
        instant = timeline.get(instant_time)
        if instant is None or instant.is_completed:
            heartbeat.release()
            return None
        plan = read_plan(storage, instant_time, timeline.layout)
        if instant.state is State.REQUESTED:
            inflight = start(storage, instant, layout=timeline.layout)
        else:
            inflight = instant
            removed = _undo_attempt(storage, instant_time)
            log.warning("resuming compaction %s; removed %d file(s) of the interrupted attempt", instant_time,
                        len(removed))
        rollbacks = frozenset(i.timestamp for i in timeline.filter(actions=[Action.ROLLBACK]))
        return Execution(inflight, plan, job_for(table, timeline, instant_time, base_file_options), heartbeat,
                         rollbacks)
    except BaseException:
        heartbeat.release()
        raise


def execute(table: HudiTable, instant_time: str, *, runner: Runner | None = None,
            base_file_options: BaseFileOptions | None = None, heartbeat_expiry_seconds: float = 60.0) -> Instant:
    """Run the compaction `instant_time` to completion (resuming one a crash left inflight)."""
    execution = start_execution(table, instant_time, base_file_options,
                                heartbeat_expiry_seconds=heartbeat_expiry_seconds)
    if execution is None:
        return Instant(instant_time, Action.COMPACTION, State.COMPLETED)
    try:
        stats = (runner or run_locally)(execution.job, execution.plan.operations)
        return complete_execution(table, execution, stats)
    finally:
        execution.heartbeat.release()


def complete_execution(table: HudiTable, execution: Execution, stats: Sequence[WriteStat]) -> Instant:
    """Remove files of failed task attempts, then publish `<t>.commit`."""
    storage = table.storage
    inflight, plan, job = execution.inflight, execution.plan, execution.job
    execution.heartbeat.check()
    # Hudi's compactors roll back any inflight compaction before running it again
    # (`HoodieTable.rollbackInflightCompaction`: a rollback instant, then the instant back to requested, and
    # inflight again as their own run starts), ours included: if one did meanwhile, its base files are gone,
    # and completing would publish a commit of missing files.
    timeline = table.timeline()
    rolled_back = any(rollback.rolled_back_time(storage, i, timeline.layout) == inflight.timestamp
                      for i in timeline.filter(actions=[Action.ROLLBACK]) if i.timestamp not in execution.rollbacks)
    if rolled_back or timeline.get(inflight.timestamp) != inflight:
        raise TimelineError(f"{table.base_url}: compaction {inflight.timestamp} was rolled back by another "
                            "compactor; not completed: it runs again from its plan")
    kept = {s.path for s in stats}
    for marker in markers.list_markers(storage, inflight.timestamp):  # failed or duplicate task attempts
        if marker.data_file_path not in kept:
            storage.delete(marker.data_file_path)
    by_partition: dict[str, list[WriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    extra = {"schema": avro.to_json(job.read.schema)}
    extra.update(plan.extra_metadata or {})
    metadata = CommitMetadata(
        partition_to_write_stats={p: tuple(s) for p, s in by_partition.items()},
        compacted=True,
        extra_metadata=extra,
        operation_type=OPERATION_TYPE,
    )
    # At 8 and 9 the completed file is `<t>_<completion>.commit` holding Avro commit metadata
    # (`ActiveTimelineV2.transitionCompactionInflightToComplete`, `CommitMetadataSerDeV2`).
    done = complete(storage, inflight, metadata.encode(table.version), timeline=timeline)
    markers.delete_all(storage, inflight.timestamp)
    execution.heartbeat.release()
    log.info("completed compaction %s: %d base files", inflight.timestamp, len(stats))
    return done
