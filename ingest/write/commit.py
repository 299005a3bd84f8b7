"""One commit, seen from the driver: begin, then complete (or roll back).

`begin` decides everything against one timeline snapshot: whether this batch is a replay of one
already committed (then nothing is written), which crashed instants to roll back first, the writer
schema, and the new instant time (requested, then inflight). Executors then write files under that
instant. `complete` removes what failed task attempts left behind (files with markers but no write
stat), writes partition metadata for new partitions, and publishes the commit file in one atomic
write: until that write the instant is invisible to every reader, after it, fully visible.

While the instant is in flight its heartbeat (`.hoodie/.heartbeat/<t>`, `heartbeat.py`) is kept fresh,
as Hudi's `BaseHoodieWriteClient.startCommit` does, so Hudi writers with lazy failed-write cleaning
leave it alone. In turn, recovery rolls back a Hudi-left pending write only once its heartbeat has
expired (`HoodieHeartbeatUtils.isHeartbeatExpired`); one ingest left is rolled back at once, since
the writer lease already tells that its writer is gone, except under LAZY failed-write cleaning
(several writers), where it too waits for its heartbeat to expire, as in Hudi.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingest import __version__
from ingest.errors import ConcurrentWriterError
from ingest.hudi.avro import schema as avro
from ingest.hudi.services import rollback
from ingest.hudi.table import markers, metadata_table, partition_metadata
from ingest.hudi.table.file_system_view import FileSystemView
from ingest.hudi.table.listing_sync import ListingSync
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline import heartbeat
from ingest.hudi.timeline.commit_metadata import CommitMetadata, WriteStat, decode_metadata
from ingest.hudi.timeline.heartbeat import HeartbeatSettings, InstantHeartbeat
from ingest.hudi.timeline.instant import Action, Instant, InstantTimeGenerator, State
from ingest.hudi.timeline.timeline import (
    REQUEST_ATTEMPTS,
    InstantTaken,
    Timeline,
    complete,
    read_instant,
    refuse_pending_restore,
    request,
    start,
)
from ingest.index import key_state as ks
from ingest.storage import Storage
from ingest.write import conflicts, fence
from ingest.write.file_group_writer import cut_back

log = logging.getLogger(__name__)

SINK_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"  # Hudi's HoodieStreamingSink key
WRITER_KEY = "ingest.writer"


@dataclass(frozen=True)
class BatchId:
    """A streaming micro-batch: the query's checkpoint identifier and Spark's batch id; for a Kafka stream
    of one topic, also where the batch ends in Hudi's streamer checkpoint form (`topic,0:n,1:m`), and the
    `--checkpoint` Hudi's streamer last recorded as started with, kept so that it does not reset to it."""

    checkpoint_id: str
    batch_id: int
    source_position: str | None = None
    streamer_reset: str | None = None


@dataclass(frozen=True)
class Transaction:
    table: HudiTable
    timeline: Timeline
    instant: Instant
    schema: avro.AvroSchema  # writer schema, no meta fields
    view: FileSystemView
    operation: str
    batch: BatchId | None = None
    rolled_back: tuple[str, ...] = ()
    existing_partitions: frozenset[str] = field(default=frozenset())
    heartbeat: InstantHeartbeat | None = None
    lazy: bool = False  # LAZY failed-writes cleaning: other writers roll back instants whose heartbeat expired
    listings: ListingSync | None = None  # the writer's partition listings, told what the commit wrote

    @property
    def instant_time(self) -> str:
        return self.instant.timestamp

    @property
    def writer_schema(self) -> avro.AvroSchema:
        return avro.with_meta_fields(self.schema)


def committed_batch(table: HudiTable, timeline: Timeline, checkpoint_id: str) -> tuple[int, Instant] | None:
    """The newest batch id committed under `checkpoint_id`, as Hudi's streaming sink records it."""
    for instant in reversed(timeline.completed(Action.DELTA_COMMIT, Action.COMMIT)):
        raw = table.commit_metadata(instant).extra_metadata.get(SINK_CHECKPOINT_KEY)
        if not raw:
            continue
        try:
            value = json.loads(raw).get(checkpoint_id)
        except (ValueError, AttributeError):
            continue
        if value is not None:
            return int(value), instant
    return None


def roll_back(storage: Storage, timeline: Timeline, failed_ts: str) -> Instant:
    """Roll back a pending write: its key-index segments (ours, without markers) first, then its data
    files as Hudi does. A crash in between leaves the instant pending, to be rolled back again."""
    ks.discard_instant(storage, failed_ts)
    return rollback.rollback(storage, timeline, failed_ts)


def resume_rollback(storage: Storage, timeline: Timeline, pending: Instant) -> Instant:
    """Finish an interrupted rollback, its target's key-index segments first."""
    ks.discard_instant(storage, rollback.target_of(storage, pending, timeline.layout).timestamp)
    return rollback.resume(storage, timeline, pending)


def written_by_ingest(table: HudiTable, instant: Instant) -> bool:
    """True when the inflight file names ingest as its writer (`begin` records it there)."""
    if instant.state is not State.INFLIGHT:
        return False
    try:
        data = read_instant(table.storage, instant, table.layout)
        return WRITER_KEY in ((decode_metadata(data) or {}).get("extraMetadata") or {}) if data.strip() else False
    except (FileNotFoundError, ValueError):
        return False


def check_not_live(table: HudiTable, instant: Instant, settings: HeartbeatSettings) -> None:
    """Refuse to roll back a Hudi writer's pending instant while its heartbeat is fresh."""
    left = heartbeat.expires_in(table.storage, instant.timestamp, settings)
    if left > 0:
        raise ConcurrentWriterError(
            f"{table.base_url}: {instant.action.value} {instant.timestamp} is {instant.state.value.lower()} with a "
            f"live heartbeat ({heartbeat.path(instant.timestamp)}): another writer is running it; not rolling it "
            f"back (its heartbeat expires in {left:.0f}s if that writer has stopped)")


_SWEPT: set[str] = set()  # tables whose orphan segments this process already deleted (one walk each)


def recover(table: HudiTable, timeline: Timeline, settings: HeartbeatSettings | None = None,
            lazy: bool = False) -> tuple[Timeline, tuple[str, ...]]:
    """Finish interrupted rollbacks, roll back writes that never completed (not live Hudi writers'),
    and (once per process) delete key-index segments of instants a Hudi writer rolled back.

    `lazy` (Hudi's LAZY failed-writes cleaning, as with optimistic concurrency control): a pending
    write with a live heartbeat is left to its writer, ingest's or Hudi's, as Hudi rolls back only
    expired ones (`BaseHoodieTableServiceClient.getInstantsToRollback`); a writer that gave its write up
    deleted the heartbeat, so that write is rolled back at once. Otherwise (EAGER, one ingest writer at
    a time) a Hudi writer's live write is refused, and an ingest writer's is rolled back at once:
    ingest writers hold the lease from begin to commit, so the lease this writer just took tells that
    write's writer stopped (or lost the lease, and will not commit)."""
    storage = table.storage
    settings = settings or HeartbeatSettings()
    rolled = []
    for pending in timeline.pending(Action.ROLLBACK):
        target = rollback.target_of(storage, pending, timeline.layout)
        if rollback.keeps_plan(storage, timeline, target):
            # A compactor's or clusterer's own rollback (`rollbackInflightCompaction`): it finishes it before
            # it runs the service again; a write need not wait for it, nor race a live one.
            log.info("leaving rollback %s of %s %s to the service that runs it", pending.timestamp,
                     target.action.value, target.timestamp)
            continue
        resume_rollback(storage, timeline, pending)
        timeline = table.timeline()
    for pending in timeline.pending(Action.DELTA_COMMIT, Action.COMMIT):
        if lazy and heartbeat.expires_in(storage, pending.timestamp, settings) > 0:
            log.info("leaving %s %s to the writer running it (its heartbeat is live)",
                     pending.action.value, pending.timestamp)
            continue
        if not written_by_ingest(table, pending):
            check_not_live(table, pending, settings)
        log.warning("rolling back instant %s left %s by a writer that stopped", pending.timestamp,
                    pending.state.value.lower())
        roll_back(storage, timeline, pending.timestamp)
        rolled.append(pending.timestamp)
        timeline = table.timeline()
    if storage.base_url not in _SWEPT:
        removed = ks.discard_orphans(storage, (i.timestamp for i in timeline), timeline.first_write_timestamp)
        if removed:
            log.warning("deleted %d key-index segment(s) of rolled-back instants: %s", len(removed), removed[:5])
        _SWEPT.add(storage.base_url)
    return timeline, tuple(rolled)


def begin(
    table: HudiTable,
    incoming_schema: avro.AvroSchema,
    operation: str,
    batch: BatchId | None = None,
    heartbeat_settings: HeartbeatSettings | None = None,
    lazy: bool = False,
    keyed_fields: Iterable[str] = (),
    nested_additions: bool = False,
    listings: ListingSync | None = None,
) -> Transaction | None:
    """Start a commit; None when `batch` was already committed (a replay after a restart).
    `keyed_fields` (the fields keys, partition paths and bucket hashes are made of) and `nested_additions`
    (fields added to nested records are accepted): how the schema evolves (`avro.evolve`). `listings`:
    the writer's partition listings, kept from its previous commit (`listing_sync`)."""
    timeline = table.timeline()
    refuse_pending_restore(timeline, table.base_url)  # as checked before the lease, but under it
    metadata_table.remove(table)  # it would go stale: Hudi's readers would miss what we write
    if batch is not None:
        done = committed_batch(table, timeline, batch.checkpoint_id)
        if done is not None and batch.batch_id <= done[0]:
            log.info("batch %s of %s is already committed in %s; skipping the replay",
                     batch.batch_id, batch.checkpoint_id, done[1].timestamp)
            return None
    settings = heartbeat_settings or HeartbeatSettings()
    timeline, rolled = recover(table, timeline, settings, lazy)
    current = table.schema(timeline)
    incoming_schema = avro.without_null_fields(avro.without_meta_fields(incoming_schema))
    schema = avro.evolve(current, incoming_schema, keyed_fields, nested_additions=nested_additions) \
        if current is not None else incoming_schema
    layout = table.layout
    requested, beat = request_delta_commit(table, timeline, settings)
    try:
        inflight = start(table.storage, requested, CommitMetadata(
            operation_type=operation.upper(), extra_metadata={WRITER_KEY: f"ingest {__version__}"},
        ).encode(table.version), layout)
        timeline = table.timeline()
        listing = listings.listing(table.storage, timeline, inflight.timestamp) if listings is not None else None
        view = table.view(timeline, listing=listing)
    except BaseException:
        beat.stop()
        raise
    return Transaction(
        table=table,
        timeline=timeline,
        instant=inflight,
        schema=schema,
        view=view,
        operation=operation.upper(),
        batch=batch,
        rolled_back=rolled,
        existing_partitions=frozenset(view.partitions),
        heartbeat=beat,
        lazy=lazy,
        listings=listings,
    )


def request_delta_commit(table: HudiTable, timeline: Timeline,
                          settings: HeartbeatSettings) -> tuple[Instant, InstantHeartbeat]:
    """The requested deltacommit of a new write, and its heartbeat, started first as
    `BaseHoodieWriteClient.startCommit` starts it. The requested file is created only if absent
    (`HoodieActiveTimeline.createNewInstant`): when another writer requested the same instant time, the
    write takes a later one. The heartbeat of the time given up is left as it is: that writer beats it
    too, and deleting it would let its instant be rolled back."""
    instant_time = timeline.new_instant_time()
    attempt = 1
    while True:
        beat = InstantHeartbeat(table.storage, instant_time, settings).start()
        try:
            return request(table.storage, instant_time, Action.DELTA_COMMIT, layout=table.layout), beat
        except InstantTaken:
            beat.abandon()
            if attempt == REQUEST_ATTEMPTS:
                raise
        except BaseException:
            beat.stop()
            raise
        log.info("instant %s was requested by another writer; taking a later one", instant_time)
        attempt += 1
        instant_time = InstantTimeGenerator.new(after=instant_time, zone=timeline.zone)


def reconcile(txn: Transaction, stats: Iterable[WriteStat], extra_files: Iterable[str] = (),
              planned_sizes: Mapping[str, int] | None = None,
              found: list[markers.Marker] | None = None) -> list[str]:
    """Remove what failed or duplicate task attempts wrote: files with a marker but no write stat.

    A file the instant created is deleted; a pre-existing log file that a failed attempt appended to
    is cut back to the size the plan recorded (local disks; object stores never append). `found`: the
    instant's markers, where the caller listed them once its tasks had ended.
    """
    storage = txn.table.storage
    kept = {s.path for s in stats if s.path} | set(extra_files)
    planned_sizes = planned_sizes or {}
    removed = []
    for marker in markers.list_markers(storage, txn.instant_time) if found is None else found:
        path = marker.data_file_path
        if path in kept or not storage.exists(path):
            continue
        if path in planned_sizes:
            current = storage.size(path) if storage.can_append else 0
            if current > planned_sizes[path]:
                cut_back(storage, path, planned_sizes[path], current, txn.instant_time)
                removed.append(path)
            continue
        storage.delete(path)
        removed.append(path)
    return removed


def complete_transaction(
    txn: Transaction,
    stats: list[WriteStat],
    extra_metadata: Mapping[str, str] | None = None,
    extra_files: Iterable[str] = (),
    planned_sizes: Mapping[str, int] | None = None,
    lease_check: Callable[[], None] | None = None,
    after_commit: Iterable[Callable[[Instant], None]] = (),
) -> Instant:
    """Publish the commit: after this returns, every reader sees the instant's data.

    `lease_check` (the writer still holds its lease) runs beside the fence's read of the timeline and
    the listing of the instant's markers, and `after_commit` beside deleting the markers and the
    heartbeat: on an object store, requests that do not wait on each other cost one round trip, not
    one each."""
    abort_if_heartbeat_expired(txn)
    storage = txn.table.storage
    # A writer stalled past its lease may find its instant rolled back by the writer that took it over:
    # completing it then would publish files that rollback deleted (`ingest.write.fence`).
    _, after, found = storage.map(_call, [lease_check or _nothing,
                                          lambda: fence.check(storage, txn.timeline.layout, txn.instant_time),
                                          lambda: markers.list_markers(storage, txn.instant_time)])
    # Another writer may have replaced, or planned to replace, a file group this write changed.
    conflicts.check(storage, txn.timeline, after, txn.instant_time, conflicts.changed_groups(stats))
    removed = reconcile(txn, stats, extra_files, planned_sizes, found)
    if removed:
        log.info("removed %d files of failed task attempts: %s", len(removed), removed[:5])
    by_partition: dict[str, list[WriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    for partition in sorted(by_partition):
        if partition not in txn.existing_partitions:
            partition_metadata.ensure(storage, partition, txn.instant_time)
    extra = {"schema": avro.to_json(txn.schema)}
    if txn.batch is not None:
        extra[SINK_CHECKPOINT_KEY] = json.dumps({txn.batch.checkpoint_id: str(txn.batch.batch_id)},
                                                separators=(",", ":"))
        # Where Hudi's streamer resumes (`StreamSync.getCheckpointToResume`) if it takes the table over.
        if txn.batch.source_position:
            extra[txn.table.version.streamer_checkpoint_key] = txn.batch.source_position
        if txn.batch.streamer_reset:
            extra[txn.table.version.streamer_reset_key] = txn.batch.streamer_reset
    extra[WRITER_KEY] = f"ingest {__version__}"
    extra.update(extra_metadata or {})
    metadata = CommitMetadata(
        partition_to_write_stats={p: tuple(s) for p, s in by_partition.items()},
        compacted=False,
        extra_metadata=extra,
        operation_type=txn.operation,
    )
    done = complete(storage, txn.instant, metadata.encode(txn.table.version), crash_point="mid_commit",
                    timeline=txn.timeline)
    storage.map(_call, [lambda: markers.delete_all(storage, txn.instant_time), lambda: release(txn),
                        *(functools.partial(step, done) for step in after_commit)])
    if txn.listings is not None:
        txn.listings.committed(txn.instant_time, by_partition, after)
    return done


def _call(step: Callable[[], Any]) -> Any:
    return step()


def _nothing() -> None:
    return None


def abort_if_heartbeat_expired(txn: Transaction) -> None:
    """`HeartbeatUtils.abortIfHeartbeatExpired`, which `BaseHoodieWriteClient.commitStats` calls before
    committing: under LAZY cleaning an instant whose heartbeat expired may be being rolled back by another
    writer (`getInstantsToRollback` takes it for failed), so committing it could publish deleted files."""
    beat = txn.heartbeat
    if txn.lazy and beat is not None and beat.expired():
        raise ConcurrentWriterError(
            f"{txn.table.base_url}: heartbeat for instant {txn.instant_time} has expired (last heartbeat "
            f"{time.time() - beat.last_beat:.0f}s ago, {beat.settings.max_allowable_s:.0f}s allowed): another "
            "writer may be rolling it back; not committing")


def release(txn: Transaction) -> None:
    """Stop the instant's heartbeat and delete its file: it completed, or this writer gave it up."""
    if txn.heartbeat is not None:
        txn.heartbeat.stop()


def abort(txn: Transaction) -> Instant:
    """Roll back this transaction's instant now (e.g. the write job failed)."""
    timeline = txn.table.timeline()
    current = timeline.get(txn.instant_time)
    if current is None or current.state is State.COMPLETED:
        raise ValueError(f"instant {txn.instant_time} is not pending")
    try:
        return roll_back(txn.table.storage, timeline, txn.instant_time)
    finally:
        release(txn)
