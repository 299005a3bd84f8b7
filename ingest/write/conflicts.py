"""Write conflicts with what other writers did while a write ran, checked before it commits.

Mirrors `SimpleConcurrentFileWritesConflictResolutionStrategy`, the conflict check every Hudi writer
under optimistic concurrency control runs before it commits:

* the candidates (`getCandidateInstants`): the commits, deltacommits, replacecommits and compactions that
  completed since the write read the timeline, and the compactions and clusterings scheduled since that
  are still pending;
* a candidate conflicts when it changed, or plans to change, a file group the write changed
  (`hasConflict` on the (partition, file id) pairs `ConcurrentOperation.init` takes from write stats and
  replaced file groups, from a compaction plan's operations, or from a clustering plan's input slices);
* a conflict with a compaction requested before the write's instant is resolved (the write's log files
  belong to the slice that compaction opens); any other fails the write (`resolveConflict`, which throws
  `HoodieWriteConflictException`).

Writers of ingest take turns under the lease, so the candidates are Hudi's: a clustering that replaced a
file group while ingest appended to it, or that planned to, would leave ingest's rows in a file group no
reader reads once it completes. The write fails instead, before anything is published, and is written
again from a fresh timeline.
"""

from __future__ import annotations

from collections.abc import Iterable

from ingest.errors import WriteConflict
from ingest.hudi.services.clustering_plan import pending_clustering_groups
from ingest.hudi.services.compaction_plan import pending_plans
from ingest.hudi.timeline.commit_metadata import WriteStat, decode_metadata
from ingest.hudi.timeline.instant import Action, Instant
from ingest.hudi.timeline.timeline import Timeline, read_instant
from ingest.storage import Storage

# `HoodieActiveTimeline.getCommitsTimeline`: what completed writes and table services complete as.
_COMPLETED_WRITES = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION,
                     Action.CLUSTERING, Action.LOG_COMPACTION)

FileGroups = frozenset[tuple[str, str]]


def changed_groups(stats: Iterable[WriteStat]) -> FileGroups:
    """The (partition, file id) pairs a write's stats name (`CommitUtils.getPartitionAndFileIdWithoutSuffix`)."""
    return frozenset((s.partition_path or "", s.file_id) for s in stats if s.file_id)


def check(storage: Storage, before: Timeline, after: Timeline, instant_time: str, changed: FileGroups) -> None:
    """Fail when an instant that completed or was scheduled between `before` (the timeline the write was
    planned from) and `after` (read just before committing) shares a file group with `changed`."""
    if not changed:
        return
    for other, groups in _candidates(storage, before, after):
        if other.action is Action.COMPACTION and other.timestamp < instant_time:
            continue  # resolveConflict: a compaction earlier than the write
        both = sorted(changed & groups)
        if both:
            partition, file_id = both[0]
            raise WriteConflict(
                f"{storage.base_url}: Cannot resolve conflicts for overlapping writes between first operation = "
                f"{{actionType=deltacommit, instantTime={instant_time}}}, second operation = "
                f"{{actionType={other.action.value}, instantTime={other.timestamp}, actionState={other.state.value}}}: "
                f"{len(both)} file group(s) changed by both, the first file {file_id!r} in partition "
                f"{partition!r}; nothing of this write is committed")


def _candidates(storage: Storage, before: Timeline, after: Timeline) -> Iterable[tuple[Instant, FileGroups]]:
    known = {(i.timestamp, i.action) for i in before.instants}
    completed_before = {(i.timestamp, i.action) for i in before.instants if i.is_completed}
    for instant in after.completed(*_COMPLETED_WRITES):
        if (instant.timestamp, instant.action) not in completed_before:
            yield instant, _groups_of(decode_metadata(read_instant(storage, instant, after.layout)))
    new = [i for i in after.pending(Action.COMPACTION, Action.REPLACE_COMMIT, Action.CLUSTERING)
           if (i.timestamp, i.action) not in known]
    if not new:
        return
    plans = pending_plans(storage, after)
    clustering = pending_clustering_groups(storage, after)
    for instant in new:
        if instant.action is Action.COMPACTION:
            yield instant, plans[instant.timestamp].file_groups
        else:  # a clustering; an insert overwrite's pending replacecommit plans no groups
            yield instant, frozenset(g for g, ts in clustering.items() if ts == instant.timestamp)


def _groups_of(metadata: dict) -> FileGroups:
    """`ConcurrentOperation.init` of a completed instant: its write stats' file groups, and the groups it
    replaced (`CommitUtils.flattenPartitionToReplaceFileIds`)."""
    out = set()
    for partition, stats in (metadata.get("partitionToWriteStats") or {}).items():
        out.update((partition or "", s["fileId"]) for s in stats or () if s and s.get("fileId"))
    for partition, file_ids in (metadata.get("partitionToReplaceFileIds") or {}).items():
        out.update((partition or "", f) for f in file_ids or ())
    return frozenset(out)

