"""The active timeline: the instants whose files are under `.hoodie/` (`.hoodie/timeline/` in layout 2).

A `Timeline` is an immutable snapshot taken with one listing; every decision of a commit (what is
completed, what is pending, what to roll back, which instant time comes next) is made against one
snapshot. Transitions write files through `Storage`: requested and inflight files may be rewritten,
the completed file is written once and atomically, and its presence is what makes an instant
complete for every reader.

Reading and transitions follow the table's `TimelineLayout`: layout 1 (version 6), or layout 2
(versions 8 and 9), where the completed file also names the instant's completion time, taken when
it completes, as `ActiveTimelineV2.transitionStateToComplete` (`createCompleteFileInMetaPath`) takes a
new instant time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ingest.errors import TimelineError
from ingest.hudi.config.table_version import DEFAULT_WRITE_VERSION, TableVersion
from ingest.hudi.config.timeline_zone import UTC
from ingest.hudi.timeline.instant import (
    DEFAULT_MILLIS,
    INSTANT_LENGTH,
    WRITE_ACTIONS,
    Action,
    Instant,
    InstantTimeGenerator,
    State,
    comparable_action,
    format_instant,
    instant_after,
)
from ingest.hudi.timeline.timeline_layout import LAYOUT_1, METAFOLDER, TimelineLayout
from ingest.storage import Storage

ARCHIVE_FOLDER = f"{METAFOLDER}/archived"
TEMP_FOLDER = f"{METAFOLDER}/.temp"
AUX_FOLDER = f"{METAFOLDER}/.aux"


UPGRADE_FOLDER = "timeline"  # where an upgrade to layout 2 moves the instant files (`hoodie.timeline.path`)


def _refuse_half_upgraded(storage: Storage) -> None:
    """A layout-1 table whose instants are partly in `.hoodie/timeline/` is mid-upgrade: its layout-1
    timeline is incomplete, and writing or reading against it would miss the moved instants."""
    moved = [e.name for e in storage.list(f"{METAFOLDER}/{UPGRADE_FOLDER}") if not e.is_dir and e.name[:1].isdigit()]
    if moved:
        raise TimelineError(f"{storage.base_url}: an upgrade to table version 8 or 9 was interrupted ({len(moved)} "
                            f"instant file(s) already in {METAFOLDER}/{UPGRADE_FOLDER}, hoodie.properties still at "
                            "version 6); run `ingest upgrade` again to finish it")


# A completed log compaction is a deltacommit to Hudi's readers: its compacted blocks are read in place of
# the blocks they merged (`compacted_blocks`). It is no write of new rows otherwise.
VISIBLE_WHEN_COMPLETED = WRITE_ACTIONS | {Action.LOG_COMPACTION}


def instant_path(instant: Instant) -> str:
    return f"{METAFOLDER}/{instant.file_name}"


@dataclass(frozen=True)
class CompletedInstants:
    """Membership of "completed as of a time": the explicit completed writes, plus anything older
    than the active timeline's first write, which Hudi readers also count as committed
    (`containsOrBeforeTimelineStarts`). Iterating yields only the explicit ones."""

    timestamps: frozenset[str]
    archived_before: str | None = None
    as_of: str | None = None

    def __contains__(self, timestamp: object) -> bool:
        if timestamp in self.timestamps:
            return True
        return (
            isinstance(timestamp, str) and self.archived_before is not None and timestamp < self.archived_before
            and (self.as_of is None or timestamp <= self.as_of)
        )

    def __iter__(self):
        return iter(self.timestamps)

    def __len__(self) -> int:
        return len(self.timestamps)


@dataclass(frozen=True)
class Timeline:
    """Instants by (requested) time; each carries its most advanced state (requested < inflight < completed).

    `zone` is the table's `hoodie.table.timeline.timezone` (UTC or LOCAL), which new instant times follow.
    """

    instants: tuple[Instant, ...]
    files: frozenset[str] = field(default=frozenset(), repr=False)
    layout: TimelineLayout = LAYOUT_1
    zone: str = UTC
    version: TableVersion = DEFAULT_WRITE_VERSION

    @classmethod
    def load(cls, storage: Storage, layout: TimelineLayout = LAYOUT_1, zone: str = UTC,
             version: TableVersion = DEFAULT_WRITE_VERSION) -> Timeline:
        entries = storage.list(layout.folder)
        if not layout.has_completion_times and any(e.is_dir and e.name == UPGRADE_FOLDER for e in entries):
            _refuse_half_upgraded(storage)
        names = [e.name for e in entries if not e.is_dir]
        return cls.from_file_names(names, layout, zone, version)

    def reload(self, storage: Storage) -> Timeline:
        """A fresh snapshot of the same table's timeline."""
        return Timeline.load(storage, self.layout, self.zone, self.version)

    @classmethod
    def from_file_names(cls, names: Iterable[str], layout: TimelineLayout = LAYOUT_1, zone: str = UTC,
                        version: TableVersion = DEFAULT_WRITE_VERSION) -> Timeline:
        """One instant per time and action family, as Hudi groups a listing (`HoodieInstant.getComparableAction`):
        a savepoint shares its commit's time and is an instant of its own; a compaction's `.commit`, a log
        compaction's `.deltacommit` and a clustering's `.replacecommit` complete the instant they requested."""
        by_key: dict[tuple[str, Action], list[Instant]] = {}
        files = set()
        for name in names:
            instant = layout.parse(name)
            if instant is None:
                continue
            files.add(name)
            by_key.setdefault((instant.timestamp, comparable_action(instant.action)), []).append(instant)
        merged = []
        for (ts, _), found in sorted(by_key.items(), key=lambda kv: (kv[0][0], kv[0][1] is Action.SAVEPOINT)):
            state = max((i.state for i in found), key=lambda s: s.rank)
            # A completed compaction is a `.commit` next to its `.compaction.*` files: keep the action
            # that was requested so the timeline knows it is a compaction.
            pending_actions = [i.action for i in found if i.state is not State.COMPLETED]
            action = pending_actions[0] if pending_actions else found[0].action
            completion = next((i.completion_time for i in found if i.is_completed), None)
            merged.append(Instant(ts, action, state, completion))
        return cls(tuple(merged), frozenset(files), layout, zone, version)

    # -- queries --------------------------------------------------------------------------------

    def __iter__(self):
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def get(self, timestamp: str) -> Instant | None:
        """The instant of a time; where a savepoint shares it, the commit it saved (listed first)."""
        for instant in self.instants:
            if instant.timestamp == timestamp:
                return instant
        return None

    def filter(self, *, actions: Iterable[Action] | None = None, states: Iterable[State] | None = None) -> list[Instant]:
        acts = set(actions) if actions is not None else None
        sts = set(states) if states is not None else None
        return [
            i for i in self.instants
            if (acts is None or i.action in acts) and (sts is None or i.state in sts)
        ]

    def completed(self, *actions: Action) -> list[Instant]:
        return self.filter(actions=actions or None, states=[State.COMPLETED])

    def pending(self, *actions: Action) -> list[Instant]:
        return self.filter(actions=actions or None, states=[State.REQUESTED, State.INFLIGHT])

    def last_completed(self, *actions: Action) -> Instant | None:
        done = self.completed(*actions)
        return done[-1] if done else None

    def completed_write_timestamps(self, as_of: str | None = None) -> CompletedInstants:
        """Instants whose files and log blocks are visible: completed writes on this timeline, and
        every instant older than its first write (those were archived, and archival moves only
        completed instants)."""
        return CompletedInstants(
            frozenset(
                i.timestamp for i in self.instants
                if i.is_completed and i.action in VISIBLE_WHEN_COMPLETED and (as_of is None or i.timestamp <= as_of)
            ),
            self.first_write_timestamp,
            as_of,
        )

    @property
    def first_write_timestamp(self) -> str | None:
        """The oldest write instant on the active timeline, whatever its state."""
        for instant in self.instants:
            if instant.action in WRITE_ACTIONS:
                return instant.timestamp
        return None

    def is_completed(self, timestamp: str) -> bool:
        instant = self.get(timestamp)
        return instant is not None and instant.is_completed

    @property
    def latest_timestamp(self) -> str | None:
        return self.instants[-1].timestamp if self.instants else None

    def new_instant_time(self) -> str:
        """An instant time in the table's zone after every instant on this timeline, pending ones included:
        Hudi's writers check that a new write comes after the latest pending compaction
        (`BaseHoodieWriteClient.startCommit`) and a compaction after every write
        (`ScheduleCompactionActionExecutor`). In layout 2 also after every completion time: Hudi 1.x takes
        both from one generator, and a compaction plans only logs completed before its instant
        (`BaseHoodieCompactionPlanGenerator`, `CompletionTimeQueryView.isCompletedBefore`)."""
        latest = max((t for i in self.instants for t in (i.timestamp, i.completion_time) if t), default=None)
        return InstantTimeGenerator.new(after=latest, zone=self.zone)

    def files_of(self, instant: Instant) -> list[str]:
        """Every timeline file of one instant (requested, inflight, completed), not those of another
        action at the same time (a savepoint's beside its commit's)."""
        family = comparable_action(instant.action)
        return sorted(f for f in self.files if f.startswith((f"{instant.timestamp}.", f"{instant.timestamp}_"))
                      and comparable_action(self.layout.parse(f).action) is family)


def refuse_pending_restore(timeline: Timeline, base_url: str) -> None:
    """`BaseHoodieWriteClient.startCommit`: nothing is written while a restore to a savepoint is pending.
    The restore rolls back every instant after the savepoint from its plan, so a write or a table service
    in between would be kept or half undone, and its resumption fails on the extra instant."""
    pending = [i.timestamp for i in timeline.pending(Action.RESTORE)]
    if pending:
        raise TimelineError(f"{base_url}: Found pending restore in active timeline. Please complete the restore "
                            "fully before proceeding (with Hudi: the restore command again). As of now, table "
                            f"could be in an inconsistent state. Pending restores: {pending}")


# -- transitions ------------------------------------------------------------------------------


def completion_time(storage: Storage, rel: str, zone: str, requested: str) -> str:
    """A layout-1 completed instant's completion time: its file's modification time, and at least one
    millisecond after the instant's own time `requested` (Hudi completes an instant after requesting it)."""
    floor = instant_after(requested if len(requested) == INSTANT_LENGTH else requested + DEFAULT_MILLIS)
    return max(format_instant(datetime.fromtimestamp(storage.modified(rel), timezone.utc), zone), floor)


def read_instant(storage: Storage, instant: Instant, layout: TimelineLayout = LAYOUT_1) -> bytes:
    """The content of an instant's file (layout 2: a completed instant needs its completion time)."""
    path = layout.path(instant)
    try:
        return storage.read(path)
    except FileNotFoundError as e:
        raise TimelineError(f"instant file {path} is missing") from e


# How many instant times a request tries when each was just requested by another writer.
REQUEST_ATTEMPTS = 5


class InstantTaken(TimelineError):
    """Another writer has requested the same action at the same instant time."""


def request(storage: Storage, timestamp: str, action: Action, content: bytes = b"",
            layout: TimelineLayout = LAYOUT_1, *, zone: str | None = None) -> Instant:
    """Write the requested file of a new instant; returns it (its time may be later than `timestamp`).

    `HoodieActiveTimeline.createNewInstant` creates the file only if it is absent (`createFileInMetaPath`
    with overwrite off: `createImmutableFileInPath`, `fs.create(path, false)`), so two writers that took
    the same millisecond never share an instant: a Hudi 0.14/0.15 writer takes its instant time without
    the lock, after ingest listed the timeline. Here the file is created exclusively too; when it exists,
    with a `zone` a later instant time is taken (up to `REQUEST_ATTEMPTS` times), without one
    `InstantTaken` is raised. A file holding exactly this (non-empty) plan is this writer's own, whose
    create reached the store though its answer did not (a retried conditional PUT is refused): kept.
    An empty one (a deltacommit's) cannot be told apart from another writer's, so it is never adopted."""
    attempt = 1
    while True:
        instant = Instant(timestamp, action, State.REQUESTED)
        rel = layout.path(instant)
        if storage.create(rel, content) or (content and _content_or_none(storage, rel) == content):
            return instant
        if zone is None or attempt == REQUEST_ATTEMPTS:
            raise InstantTaken(f"{storage.base_url}: instant {rel} was requested by another writer "
                               f"(tried {attempt} instant time(s))")
        attempt += 1
        timestamp = InstantTimeGenerator.new(after=timestamp, zone=zone)


def _content_or_none(storage: Storage, rel: str) -> bytes | None:
    try:
        return storage.read(rel)
    except FileNotFoundError:
        return None


def start(storage: Storage, instant: Instant, content: bytes = b"", layout: TimelineLayout = LAYOUT_1) -> Instant:
    """Move a requested instant to inflight (the requested file stays, as in Hudi)."""
    if instant.state is not State.REQUESTED:
        raise TimelineError(f"cannot start {instant.file_name}: it is {instant.state.value}")
    inflight = instant.to(State.INFLIGHT)
    storage.write(layout.path(inflight), content)
    return inflight


def complete(storage: Storage, instant: Instant, content: bytes, *, crash_point: str | None = None,
             timeline: Timeline | None = None) -> Instant:
    """Write the completed file: one atomic write that makes the instant visible to readers. On a
    layout-2 `timeline` the file is named with a completion time after every instant on it."""
    if instant.state is not State.INFLIGHT:
        raise TimelineError(f"cannot complete {instant.file_name}: it is {instant.state.value}")
    layout = timeline.layout if timeline is not None else LAYOUT_1
    completion = timeline.new_instant_time() if layout.has_completion_times else None
    done = Instant(instant.timestamp, instant.action, State.COMPLETED, completion)
    storage.write(layout.path(done), content, crash_point=crash_point)
    return done


def revert_to_requested(storage: Storage, timeline: Timeline, timestamp: str) -> None:
    """`HoodieActiveTimeline.revertInstantFromInflightToRequested`: a pending instant's inflight file goes and
    its requested file, holding its plan, stays (a rolled-back compaction or clustering runs again)."""
    instant = timeline.get(timestamp)
    if instant is None or instant.is_completed or instant.state is State.REQUESTED:
        return
    storage.delete(timeline.layout.path(instant.to(State.INFLIGHT)))


def remove_pending(storage: Storage, timeline: Timeline, timestamp: str) -> None:
    """Delete the requested/inflight files of an instant that never completed (after its rollback)."""
    instant = timeline.get(timestamp)
    if instant is not None and instant.is_completed:
        raise TimelineError(f"instant {timestamp} is completed; it is rolled back, not removed")
    # Inflight first, then requested: a crash in between leaves a requested instant, which the next
    # writer rolls back again (a no-op) rather than an inflight one without its request.
    if instant is None:
        return
    for name in sorted(timeline.files_of(instant), key=lambda n: n.endswith(".requested")):
        storage.delete(f"{timeline.layout.folder}/{name}")
