"""Partition listings a writer keeps from one commit to its next, brought up to date from the timeline.

A commit's file system view needs every partition's files, and listing them all costs a request per
folder on an object store: a cost that grows with the table, paid every micro-batch. Hudi's
`IncrementalTimelineSyncFileSystemView` keeps its view between calls instead and applies the
instants completed since (`TimelineDiffHelper.getNewInstantsForIncrementalSync`), falling back to a
full listing when the timeline changed in a way the instants do not describe. This keeps the same
rule, applied to raw listings: the partitions that a newly completed instant's metadata names are
listed again (a commit's `partitionToWriteStats` and `partitionToReplaceFileIds`, a clean's or a
rollback's `partitionMetadata`), the rest are kept.

Kept listings are reused only when nothing else can have changed a partition unseen:

* the listing was taken while no instant but the writer's own was past requested, and none went
  past requested before the writer's commit read the timeline again, after its writes (its last
  fence check): a write under way could have had files listed that its completion does not name,
  such as a failed task attempt's, which `HoodieTable.finalizeWrite` deletes;
* the writer's own instant of then has completed (its partitions are known without reading it back),
  and every other instant pending then is still pending or has completed (one that vanished, such as
  an unscheduled compaction, which renames log files, is Hudi's unsafe case too);
* no instant but the writer's new one is past requested now, and each newly completed instant is a
  write, a clean, a rollback or a savepoint whose metadata can be read;
* the table's timeline layout and version are the same.

Otherwise the table is listed in full, as without this, and the listing is kept when the rules allow.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ingest.errors import TimelineError
from ingest.hudi.table.file_names import PARTITION_METADATA
from ingest.hudi.table.file_system_view import partition_listings
from ingest.hudi.timeline.commit_metadata import decode_metadata
from ingest.hudi.timeline.instant import WRITE_ACTIONS, Action, Instant, State
from ingest.hudi.timeline.timeline import Timeline, read_instant
from ingest.storage import FileInfo, Storage

log = logging.getLogger(__name__)

Listing = dict[str, list[FileInfo]]

_WRITES = WRITE_ACTIONS | {Action.LOG_COMPACTION}  # a completed compaction keeps its requested action
_WITH_PARTITION_METADATA = frozenset({Action.CLEAN, Action.ROLLBACK})


@dataclass(frozen=True)
class _Kept:
    key: tuple
    instants: frozenset[Instant]  # the timeline the listing was taken at
    own: str  # the writer's instant then
    listing: Listing
    own_partitions: frozenset[str] = frozenset()  # what it wrote, once it completed


class ListingSync:
    """One writer's partition listings, for the commits it makes one after another (not thread-safe).

    `full_listings` and `partitions_listed` count what it did, for logs and tests."""

    def __init__(self) -> None:
        self._kept: _Kept | None = None  # a listing the next commit may bring up to date
        self._taken: _Kept | None = None  # the current commit's, kept once it completes
        self.full_listings = 0
        self.partitions_listed = 0

    def listing(self, storage: Storage, timeline: Timeline, own: str) -> Listing:
        """Every partition's listing as of `timeline`, which holds the writer's new instant `own`."""
        kept, self._kept, self._taken = self._kept, None, None
        key = (storage.base_url, timeline.layout, timeline.version)
        changed = _changed_partitions(storage, timeline, kept, own) if kept is not None and kept.key == key else None
        if changed is None:
            listing = partition_listings(storage)
            self.full_listings += 1
        else:
            listing = dict(kept.listing)
            listed = storage.map(storage.list, changed)
            self.partitions_listed += len(changed)
            for partition, entries in zip(changed, listed, strict=True):
                if any(not e.is_dir and e.name == PARTITION_METADATA for e in entries):
                    listing[partition] = entries
                else:  # a partition a clean or a replace deleted whole
                    listing.pop(partition, None)
            listing = dict(sorted(listing.items()))
        if _only_requested_besides(timeline, own):
            self._taken = _Kept(key, frozenset(timeline.instants), own, listing)
        return {p: list(entries) for p, entries in listing.items()}

    def committed(self, own: str, partitions: Iterable[str], after: Timeline) -> None:
        """The writer's instant `own` completed, writing into `partitions`; `after` is a timeline read
        after its writes. The listing is kept if no other instant went past requested meanwhile: one
        that did may have had files listed half-written."""
        taken, self._taken = self._taken, None
        if taken is None or taken.own != own:
            return
        moved = [i for i in after.instants
                 if i.state is not State.REQUESTED and i.timestamp != own and i not in taken.instants]
        if not moved:
            self._kept = replace(taken, own_partitions=frozenset(partitions))


def _only_requested_besides(timeline: Timeline, own: str) -> bool:
    return all(i.state is State.REQUESTED or i.timestamp == own
               for i in timeline.instants if i.state is not State.COMPLETED)


def _changed_partitions(storage: Storage, timeline: Timeline, kept: _Kept, own: str) -> list[str] | None:
    """The partitions to list again, or None where the kept listings cannot be brought up to date."""
    now = {i.timestamp for i in timeline.instants}
    mine_completed = any(i.timestamp == kept.own and i.action is not Action.SAVEPOINT and i.is_completed
                         for i in timeline.instants)  # a savepoint of it shares its time
    if not mine_completed or not _only_requested_besides(timeline, own):
        return None
    for before in kept.instants:
        if before.state is not State.COMPLETED and before.timestamp not in now:
            return None  # a pending instant vanished: rolled back, unscheduled or archived unseen
    new = sorted(i for i in timeline.instants if i.state is State.COMPLETED and i not in kept.instants)
    if any(i.action not in _WRITES | _WITH_PARTITION_METADATA | {Action.SAVEPOINT} for i in new):
        return None
    named = [i for i in new if i.action is not Action.SAVEPOINT and i.timestamp != kept.own]
    try:
        metadata = storage.map(lambda i: decode_metadata(read_instant(storage, i, timeline.layout)), named)
    except (TimelineError, OSError, ValueError, KeyError, TypeError, EOFError) as e:  # archived meanwhile, ...
        log.info("listing every partition: an instant's metadata could not be read: %s", e)
        return None
    return sorted(kept.own_partitions.union(*(partitions_named(i.action, m) for i, m in zip(named, metadata, strict=True))))


def partitions_named(action: Action, metadata: dict) -> set[str]:
    """The partitions a completed instant's metadata says it changed: a write's write stats and replaced
    file groups (`HoodieCommitMetadata`, `HoodieReplaceCommitMetadata`), a clean's or a rollback's
    `partitionMetadata` (`HoodieCleanMetadata`, `HoodieRollbackMetadata`)."""
    if action in _WRITES:
        return set(metadata.get("partitionToWriteStats") or {}) | set(metadata.get("partitionToReplaceFileIds") or {})
    if action in _WITH_PARTITION_METADATA:
        return set(metadata.get("partitionMetadata") or {})
    return set()

