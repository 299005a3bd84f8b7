"""Fencing the tasks of a write whose instant another writer rolled back while they ran.

A writer that stalls past its lease or its heartbeat's expiry is taken for failed: another writer rolls
its instant back (`BaseRollbackActionExecutor`: plan from the markers, delete files, append command
blocks, remove the instant) and goes on. The stalled writer's Spark tasks do not stall with its driver,
and whatever they write after the rollback listed their markers stays behind. Hudi's readers take the
files and log blocks of an instant that is no longer on the timeline for committed once it is older
than the timeline's first instant (`HoodieTimeline.containsOrBeforeTimelineStarts`, which
`AbstractHoodieLogRecordReader.scanInternal` and `HoodieFileGroup.isFileSliceCommitted` ask), so those
files would come back as data once archival passed them.

So a write task checks its instant before it writes (`check`) and again after (`take_back_if_rolled_back`).
Once a rollback names the instant, or the instant has left the timeline, the task takes back what it
wrote: files it created, key-index segments and (once the rollback is done with them) the instant's
markers are deleted; blocks it appended to a log file are cut
off when only its own blocks follow, are left where a rollback command block for the instant follows
them (the reader drops the instant's earlier blocks when it meets one), and otherwise get such a block
appended after them, as the rollback itself writes it (`HoodieCommandBlock`, ROLLBACK_BLOCK, with the
rollback's instant). The driver checks once more before it publishes the commit
(`commit.complete_transaction`). A task that looked before the rollback's plan was recorded left its
marker before then: ingest's rollback lists the markers again when it carries the plan out
(`rollback._late_requests`); Hudi's lists them once, so beside a Hudi writer's rollback such a task's
files stay. So does a commit whose driver stalls between its last check and its commit file.
"""

from __future__ import annotations

import logging
import posixpath

from ingest.errors import ConcurrentWriterError
from ingest.hudi.log.log_block import BlockType
from ingest.hudi.log.log_reader import blocks_between
from ingest.hudi.log.log_writer import append_log_blocks, rollback_block
from ingest.hudi.services.rollback import rollback_of
from ingest.hudi.table import markers
from ingest.hudi.table.file_names import LogFileName
from ingest.hudi.timeline.commit_metadata import WriteStat
from ingest.hudi.timeline.instant import Instant
from ingest.hudi.timeline.timeline import Timeline
from ingest.hudi.timeline.timeline_layout import TimelineLayout
from ingest.storage import Storage

log = logging.getLogger(__name__)

FENCED = "was rolled back while its tasks ran"


class InstantRolledBackError(ConcurrentWriterError):
    """The instant a task writes for was rolled back by another writer."""


def rolled_back(storage: Storage, layout: TimelineLayout, instant: str) -> tuple[str | None, Instant | None]:
    """(why `instant` is no longer a live write, the rollback that names it if one does) or (None, None).

    Live: on the timeline (pending, or completed by its own writer) and named by no rollback."""
    return _rolled_back(storage, Timeline.load(storage, layout), instant)


def _rolled_back(storage: Storage, timeline: Timeline, instant: str) -> tuple[str | None, Instant | None]:
    rollback = rollback_of(storage, timeline, instant)
    if rollback is not None:
        state = "completed" if rollback.is_completed else "pending"
        return f"instant {instant} {FENCED}: rollback {rollback.timestamp} ({state}) names it", rollback
    if timeline.get(instant) is None:
        return f"instant {instant} {FENCED}: it is no longer on the timeline", None
    return None, None


def check(storage: Storage, layout: TimelineLayout, instant: str) -> Timeline:
    """Refuse to write for an instant that is no longer live; the timeline it read, where it is."""
    timeline = Timeline.load(storage, layout)
    why, _ = _rolled_back(storage, timeline, instant)
    if why is not None:
        raise InstantRolledBackError(f"{storage.base_url}: {why}; writing nothing")
    return timeline


def take_back_if_rolled_back(storage: Storage, layout: TimelineLayout, instant: str,
                             stats: tuple[WriteStat, ...], segments: tuple[str, ...]) -> None:
    """After a task's writes: if its instant is no longer live, take them back and fail the task."""
    why, rollback = rolled_back(storage, layout, instant)
    if why is None:
        return
    taken = [take_back(storage, stat, instant, rollback.timestamp if rollback else None) for stat in stats]
    for path in segments:
        storage.delete(path)
    if rollback is None or rollback.is_completed:
        # The rollback is done with the instant's markers (it deletes them last, `finishRollback`):
        # those this task made since would stay behind for good. A pending rollback still reads them.
        markers.delete_all(storage, instant)
    log.warning("%s: %s; took back %d file(s) and %d key-index segment(s) this task wrote: %s",
                storage.base_url, why, len(stats), len(segments), "; ".join(taken[:5]))
    raise InstantRolledBackError(f"{storage.base_url}: {why}; the files this task wrote are taken back")


def take_back(storage: Storage, stat: WriteStat, instant: str, rollback_ts: str | None) -> str:
    """Undo one file write of `instant`; says what was done."""
    path = stat.path or ""
    if LogFileName.parse(posixpath.basename(path)) is None:
        storage.delete(path)  # a base file: named with this instant, nobody else's
        return f"deleted {path}"
    offset = stat.log_offset or 0
    try:
        size = storage.size(path)
    except FileNotFoundError:
        return f"{path} is gone (the rollback deleted it)"
    if size <= offset:
        return f"{path} holds nothing past {offset} bytes"  # never truncate upwards: that would add zeros
    blocks = blocks_between(storage, path, offset, size)
    if all(b.instant_time == instant and b.block_type is not BlockType.COMMAND for b in blocks):
        if offset == 0:
            storage.delete(path)
            return f"deleted {path}"
        storage.truncate(path, offset)
        return f"cut {path} back to {offset} bytes"
    if any(b.block_type is BlockType.COMMAND and b.target_instant_time == instant for b in blocks):
        return f"left {path}: a rollback command block after this task's blocks drops them"
    # Another writer appended after these blocks: cutting would lose its blocks, so the blocks are
    # rolled back where they are, by the rollback that named the instant.
    append_log_blocks(storage, path, [rollback_block(rollback_ts or instant, instant)])
    return f"appended a rollback command block for {instant} to {path}"

