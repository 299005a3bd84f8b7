"""The file system view: partitions, file groups and their file slices, as of an instant.

A file slice is a base file (or none, for a file group that so far has only logs) plus the log files
written on top of it, all sharing one base instant. Visibility follows Hudi's view:

* a base file counts only if the instant that wrote it is completed (and not after the as-of time);
* a slice counts only if its base instant is completed, except a slice opened by a pending
  compaction: logs written after a compaction was planned belong to the compaction's instant, and
  until it completes readers merge them with the previous slice;
* blocks inside log files are filtered later, by the reader, against the same completed instants.

Which slice a log file belongs to depends on the timeline layout. In layout 1 (table version 6) a log
file's name carries its slice's base instant. In layout 2 (table version 8) it carries the instant of
the deltacommit that wrote it, and the log belongs to the slice with the largest base instant at or
before that deltacommit's completion time: the slice that was current when the write became visible
(Hudi's `HoodieFileGroup.getBaseInstantTime`, hudi-rs `FileGroup::add_log_file`); a deltacommit archived
into the LSM history has its completion time read from there (`CompletionTimeQueryViewV2` loads the
archived timeline), when a later base instant of its file group makes it matter. Logs of deltacommits
that have not completed are left out, as are base files of pending compactions; a completed compaction
is a base instant like any other, so it opens a new slice.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace

from ingest.hudi.table.file_names import PARTITION_METADATA, BaseFileName, LogFileName
from ingest.hudi.timeline.instant import Action, State
from ingest.hudi.timeline.lsm_history import LSMHistory
from ingest.hudi.timeline.timeline import METAFOLDER, VISIBLE_WHEN_COMPLETED, Timeline
from ingest.storage import FileInfo, Storage


@dataclass(frozen=True)
class BaseFile:
    partition_path: str
    name: BaseFileName
    size: int

    @property
    def path(self) -> str:
        return _join(self.partition_path, self.name.name)


@dataclass(frozen=True)
class LogFile:
    partition_path: str
    name: LogFileName
    size: int

    @property
    def path(self) -> str:
        return _join(self.partition_path, self.name.name)


@dataclass(frozen=True)
class FileSlice:
    partition_path: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None = None
    log_files: tuple[LogFile, ...] = ()

    @property
    def paths(self) -> list[str]:
        return ([self.base_file.path] if self.base_file else []) + [lf.path for lf in self.log_files]

    @property
    def latest_log_file(self) -> LogFile | None:
        return self.log_files[-1] if self.log_files else None

    @property
    def total_size(self) -> int:
        return (self.base_file.size if self.base_file else 0) + sum(lf.size for lf in self.log_files)


@dataclass(frozen=True)
class FileGroup:
    partition_path: str
    file_id: str
    slices: tuple[FileSlice, ...] = field(default=())

    @property
    def latest_slice(self) -> FileSlice | None:
        return self.slices[-1] if self.slices else None


def _join(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


def list_partitions(storage: Storage) -> list[str]:
    """Every folder holding a `.hoodie_partition_metadata` (the table root itself for "")."""
    return sorted(partition_listings(storage))


def partition_listings(storage: Storage) -> dict[str, list[FileInfo]]:
    """Every partition's folder listing, from the one walk that finds the partitions (a view needs
    both; listing each partition again cost a request per partition on object stores)."""
    found: dict[str, list[FileInfo]] = {}
    level = {"": storage.list("")}
    while level:  # a level of folders at a time, listed side by side on object stores
        below = []
        for rel, entries in level.items():
            if any(not e.is_dir and e.name == PARTITION_METADATA for e in entries):
                found[rel] = entries
            below += [e.path for e in entries
                      if e.is_dir and not e.name.startswith(".") and not (rel == "" and e.name == METAFOLDER)]
        level = dict(zip(below, storage.map(storage.list, below), strict=True))
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class FileSystemView:
    """All file groups of the listed partitions, filtered against one timeline snapshot."""

    timeline: Timeline
    groups: tuple[FileGroup, ...]
    partitions: tuple[str, ...]

    @classmethod
    def load(
        cls,
        storage: Storage,
        timeline: Timeline,
        partitions: Iterable[str] | None = None,
        replaced: frozenset[tuple[str, str]] = frozenset(),
        listing: dict[str, list[FileInfo]] | None = None,
    ) -> FileSystemView:
        """`listing`: every partition's listing where the caller has it (`listing_sync`)."""
        if listing is None and partitions is None:
            listing = partition_listings(storage)
        elif listing is None:
            partitions = list(partitions)
            listing = dict(zip(partitions, storage.map(storage.list, partitions), strict=True))
        history = timeline.layout.history
        archived = LSMHistory(storage, history).completion_times if history else None
        return cls.from_listing(timeline, listing, replaced, archived)

    @classmethod
    def from_listing(
        cls,
        timeline: Timeline,
        listing: dict[str, list[FileInfo]],
        replaced: frozenset[tuple[str, str]] = frozenset(),
        archived: Callable[[Collection[str]], Mapping[str, str]] | None = None,
    ) -> FileSystemView:
        """`replaced`: (partition, file id) of groups that completed replacecommits retired; `archived`:
        the completion times of instants in the LSM history (layout 2)."""
        if timeline.layout.has_completion_times:
            return cls._from_listing_by_completion_time(timeline, listing, replaced, archived)
        completed = timeline.completed_write_timestamps()
        pending_compactions = {
            i.timestamp for i in timeline.filter(actions=[Action.COMPACTION], states=[State.REQUESTED, State.INFLIGHT])
        }
        groups: list[FileGroup] = []
        for partition, entries in sorted(listing.items()):
            bases: dict[str, dict[str, BaseFile]] = {}
            logs: dict[str, dict[str, list[LogFile]]] = {}
            for e in entries:
                if e.is_dir:
                    continue
                base = BaseFileName.parse(e.name)
                if base is not None:
                    if base.instant in completed:
                        bases.setdefault(base.file_id, {})[base.instant] = BaseFile(partition, base, e.size)
                    continue
                log = LogFileName.parse(e.name)
                if log is not None and log.extension == "log" and not log.cdc:
                    if log.base_instant in completed or log.base_instant in pending_compactions:
                        logs.setdefault(log.file_id, {}).setdefault(log.base_instant, []).append(
                            LogFile(partition, log, e.size)
                        )
            for file_id in sorted(set(bases) | set(logs)):
                if (partition, file_id) in replaced:
                    continue
                instants = sorted(set(bases.get(file_id, {})) | set(logs.get(file_id, {})))
                slices = tuple(
                    FileSlice(
                        partition,
                        file_id,
                        ts,
                        bases.get(file_id, {}).get(ts),
                        tuple(sorted(logs.get(file_id, {}).get(ts, []), key=lambda lf: lf.name)),
                    )
                    for ts in instants
                )
                groups.append(FileGroup(partition, file_id, slices))
        return cls(timeline, tuple(groups), tuple(sorted(listing)))

    @classmethod
    def _from_listing_by_completion_time(
        cls,
        timeline: Timeline,
        listing: dict[str, list[FileInfo]],
        replaced: frozenset[tuple[str, str]],
        archived: Callable[[Collection[str]], Mapping[str, str]] | None = None,
    ) -> FileSystemView:
        """Layout 2: slices keyed by committed base instants, logs attached by completion time."""
        completed = timeline.completed_write_timestamps()
        # A legacy instant's file name does not say when it completed: its own time stands in for the
        # completion time. Of the writes only (`CompletionTimeQueryViewV2` maps a write's own time): a
        # savepoint shares its commit's time but completed later.
        completion = {
            i.timestamp: i.completion_time or i.timestamp for i in timeline.instants
            if i.timestamp in completed and i.action in VISIBLE_WHEN_COMPLETED
        }
        found: list[tuple[str, str, dict[str, BaseFile], list[LogFile]]] = []
        for partition, entries in sorted(listing.items()):
            bases: dict[str, dict[str, BaseFile]] = {}
            logs: dict[str, list[LogFile]] = {}
            for e in entries:
                if e.is_dir:
                    continue
                base = BaseFileName.parse(e.name)
                if base is not None:
                    if base.instant in completed:
                        bases.setdefault(base.file_id, {})[base.instant] = BaseFile(partition, base, e.size)
                    continue
                log = LogFileName.parse(e.name)
                if log is not None and log.extension == "log" and not log.cdc and log.base_instant in completed:
                    logs.setdefault(log.file_id, []).append(LogFile(partition, log, e.size))
            for file_id in sorted(set(bases) | set(logs)):
                if (partition, file_id) not in replaced:
                    found.append((partition, file_id, bases.get(file_id, {}), logs.get(file_id, [])))
        # An instant no longer on the active timeline: its completion time is in the LSM history. It
        # matters only where a base instant of the group is later than the log's own instant.
        unknown = {log.name.base_instant for _, _, group_bases, group_logs in found for log in group_logs
                   if log.name.base_instant not in completion and any(ts > log.name.base_instant for ts in group_bases)}
        if unknown and archived is not None:
            completion.update(archived(unknown))
        groups = [FileGroup(partition, file_id, _slices_by_completion_time(partition, file_id, group_bases,
                                                                            group_logs, completion))
                  for partition, file_id, group_bases, group_logs in found]
        return cls(timeline, tuple(groups), tuple(sorted(listing)))

    def file_groups(self, partition: str | None = None) -> list[FileGroup]:
        return [g for g in self.groups if partition is None or g.partition_path == partition]

    def latest_file_slices(self, as_of: str | None = None, partition: str | None = None) -> list[FileSlice]:
        """The slice each file group has as of `as_of` (default: latest), for readers.

        A slice opened by a compaction that has not completed (as of `as_of`) is merged with the slice
        before it: same base file, the logs of both.
        """
        completed = self.timeline.completed_write_timestamps(as_of)
        out = []
        for group in self.file_groups(partition):
            merged = _merged_latest_slice(group, completed, as_of)
            if merged is not None:
                out.append(merged)
        return out

    def latest_writer_slices(self, partition: str | None = None) -> list[FileSlice]:
        """The newest slice of each file group, pending compaction slices included (for writers)."""
        return [g.latest_slice for g in self.file_groups(partition) if g.latest_slice is not None]

    def all_files(self) -> list[str]:
        return [p for g in self.groups for s in g.slices for p in s.paths]


def _slices_by_completion_time(
    partition: str,
    file_id: str,
    bases: Mapping[str, BaseFile],
    logs: Iterable[LogFile],
    completion: Mapping[str, str],
) -> tuple[FileSlice, ...]:
    """A log joins the slice with the largest base instant <= its deltacommit's completion time.

    Logs are taken in deltacommit order, as Hudi adds them: a log no slice is old enough for (a file
    group without base files, say) opens a slice at its own instant, which later logs then join.
    """
    slice_logs: dict[str, list[LogFile]] = {ts: [] for ts in bases}
    for log in sorted(logs, key=lambda lf: lf.name):
        completed_at = completion.get(log.name.base_instant, log.name.base_instant)
        owners = [ts for ts in slice_logs if ts <= completed_at]
        slice_logs.setdefault(max(owners) if owners else log.name.base_instant, []).append(log)
    return tuple(
        FileSlice(partition, file_id, ts, bases.get(ts), tuple(sorted(slice_logs[ts], key=lambda lf: lf.name)))
        for ts in sorted(slice_logs)
    )


def _merged_latest_slice(group: FileGroup, completed: frozenset[str], as_of: str | None) -> FileSlice | None:
    visible = [s for s in group.slices if as_of is None or s.base_instant <= as_of]
    if not visible:
        return None
    latest = visible[-1]
    if latest.base_instant in completed:
        return latest
    # Opened by a compaction that is pending as of `as_of`: merge into the previous committed slice.
    earlier = [s for s in visible[:-1] if s.base_instant in completed]
    if not earlier:
        return None
    prev = earlier[-1]
    return replace(prev, log_files=prev.log_files + latest.log_files)
