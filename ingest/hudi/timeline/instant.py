"""Instants: the points of a table's timeline, and the times that name them.

An instant time is `yyyyMMddHHmmssSSS`; times compare as strings, and a new one must be greater
than every instant already on the timeline (completed, pending or rolled back), or readers would
order commits wrongly. The file name of an instant encodes its action and state; a `commit` that is
in flight is the historical `<ts>.inflight`, every other action is `<ts>.<action>.inflight`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from enum import Enum

from ingest.errors import InvalidInstant
from ingest.hudi.config.timeline_zone import UTC

INSTANT_FORMAT = "%Y%m%d%H%M%S"
INSTANT_LENGTH = 17
SECONDS_INSTANT_LENGTH = 14
DEFAULT_MILLIS = "999"  # what Hudi appends to a time without milliseconds (`DEFAULT_MILLIS_EXT`)
QUERY_FORMATS = "yyyyMMddHHmmssSSS, yyyyMMddHHmmss, 'yyyy-MM-dd HH:mm:ss[.SSS]' or yyyy-MM-dd"


class Action(str, Enum):
    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    REPLACE_COMMIT = "replacecommit"
    CLUSTERING = "clustering"
    RESTORE = "restore"
    INDEXING = "indexing"
    SCHEMA_COMMIT = "schemacommit"


class State(str, Enum):
    REQUESTED = "REQUESTED"
    INFLIGHT = "INFLIGHT"
    COMPLETED = "COMPLETED"

    @property
    def rank(self) -> int:
        return {"REQUESTED": 0, "INFLIGHT": 1, "COMPLETED": 2}[self.value]


# Actions that write data files (the rest are table services' bookkeeping). CLUSTERING exists only on
# layout-2 timelines (table version 8), where a clustering is requested as `.clustering.requested` and
# completes as a `.replacecommit`; version 6 plans clustering as a `replacecommit` itself.
WRITE_ACTIONS = frozenset({
    Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION, Action.CLUSTERING,
})

# Hudi's `HoodieInstant.getComparableAction` (`COMPARABLE_ACTIONS`): the action an instant completes as where
# its requested action differs, so a listing's files group into instants by time and comparable action.
COMPLETED_AS = {
    Action.COMPACTION: Action.COMMIT,
    Action.LOG_COMPACTION: Action.DELTA_COMMIT,
    Action.CLUSTERING: Action.REPLACE_COMMIT,  # layout 2 only
}


def comparable_action(action: Action) -> Action:
    return COMPLETED_AS.get(action, action)


@dataclass(frozen=True, order=True)
class Instant:
    """One state of one action at one time, as named by a file under `.hoodie/`.

    `completion_time` is known only for completed instants of a layout-2 timeline (table version 8),
    whose file names carry it; it is an attribute, not part of the instant's identity or order.
    """

    timestamp: str
    action: Action
    state: State
    completion_time: str | None = field(default=None, compare=False)

    @property
    def file_name(self) -> str:
        ts, action = self.timestamp, self.action
        if self.state is State.COMPLETED:
            return f"{ts}.{comparable_action(action).value}"  # a compaction completes as a commit, ...
        if self.state is State.INFLIGHT:
            if action is Action.COMMIT:
                return f"{ts}.inflight"
            return f"{ts}.{action.value}.inflight"
        return f"{ts}.{action.value}.requested"

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def timeline_action(self) -> Action:
        """The action Hudi's timeline gives this instant in its state: once completed, a compaction is a
        commit, a log compaction a deltacommit and a clustering a replacecommit (`COMPARABLE_ACTIONS`)."""
        return comparable_action(self.action) if self.is_completed else self.action

    def to(self, state: State) -> Instant:
        return Instant(self.timestamp, self.action, state)

    @classmethod
    def parse(cls, file_name: str) -> Instant | None:
        """The instant a timeline file names, or None for files that are not instants."""
        parts = file_name.split(".")
        ts = parts[0]
        if len(parts) < 2 or not ts.isdigit():
            return None
        rest = parts[1:]
        try:
            if rest == ["inflight"]:
                return cls(ts, Action.COMMIT, State.INFLIGHT)
            if len(rest) == 1:
                return cls(ts, Action(rest[0]), State.COMPLETED)
            if len(rest) == 2 and rest[1] in ("requested", "inflight"):
                state = State.REQUESTED if rest[1] == "requested" else State.INFLIGHT
                return cls(ts, Action(rest[0]), state)
        except ValueError:
            return None
        return None


def check_instant_time(text: str) -> str:
    """`text` if it is an instant time, `yyyyMMddHHmmssSSS` or the older `yyyyMMddHHmmss`, else fail.

    Hudi's `HoodieInstantTimeGenerator.parseDateFromInstantTime`: a 14-digit time is completed with
    `DEFAULT_MILLIS_EXT` (`fixInstantTimeCompatibility`) and both must be a real date and time."""
    if not (text.isascii() and text.isdigit() and len(text) in (SECONDS_INSTANT_LENGTH, INSTANT_LENGTH)):
        raise InvalidInstant(f"{text!r} is not an instant time (yyyyMMddHHmmssSSS or yyyyMMddHHmmss)")
    try:
        datetime.strptime(text[:SECONDS_INSTANT_LENGTH], INSTANT_FORMAT)
    except ValueError:
        raise InvalidInstant(f"{text!r} is not an instant time: no such date and time") from None
    return text


def query_instant(text: str) -> str:
    """The instant time a user's query time stands for, as Hudi's `HoodieSqlCommonUtils.formatQueryInstant`
    reads it: `yyyy-MM-dd HH:mm:ss[.SSS]` (without milliseconds, `.999`:
    `HoodieInstantTimeGenerator.getInstantForDateString`), `yyyyMMddHHmmss[SSS]` as given once valid,
    and `yyyy-MM-dd` as its midnight. Anything else fails, naming the formats."""
    text = text.strip()
    try:
        if len(text) in (19, 23):
            moment = datetime.strptime(text if len(text) == 23 else f"{text}.{DEFAULT_MILLIS}", "%Y-%m-%d %H:%M:%S.%f")
            return moment.strftime(INSTANT_FORMAT) + f"{moment.microsecond // 1000:03d}"
        if len(text) == 10:
            return datetime.strptime(text, "%Y-%m-%d").strftime(INSTANT_FORMAT) + "000"
        if len(text) in (SECONDS_INSTANT_LENGTH, INSTANT_LENGTH):
            return check_instant_time(text)
    except (ValueError, InvalidInstant):
        pass
    raise InvalidInstant(f"{text!r} is not an instant time; Hudi's formats are {QUERY_FORMATS}")


def format_instant(moment: datetime, zone: str = UTC) -> str:
    """`moment` as an instant time on a timeline kept in `zone`: UTC, or LOCAL, the writer's own zone
    (`HoodieInstantTimeGenerator.formatDateWitTimeZone`)."""
    moment = moment.astimezone(timezone.utc if zone == UTC else None)
    return moment.strftime(INSTANT_FORMAT) + f"{moment.microsecond // 1000:03d}"


def parse_instant(ts: str) -> datetime:
    """An instant time's wall-clock reading, marked UTC for arithmetic: right for UTC timelines (the
    ones we create); on a LOCAL one only differences are meaningful, as in Hudi."""
    base = datetime.strptime(ts[:14], INSTANT_FORMAT).replace(tzinfo=timezone.utc)
    millis = int(ts[14:17] or 0)
    return base + timedelta(milliseconds=millis)


def instant_after(ts: str) -> str:
    """The smallest instant time strictly after `ts`."""
    return format_instant(parse_instant(ts) + timedelta(milliseconds=1))


class InstantTimeGenerator:
    """Strictly increasing instant times: never equal within a millisecond, never behind the table.

    `HoodieInstantTimeGenerator.createNewInstantTime` keeps one last time per JVM; here there is one
    per zone, so writing a LOCAL table does not push a UTC table's times ahead of the clock."""

    _lock = threading.Lock()
    _last: dict[str, str] = {}

    @classmethod
    def new(cls, after: str | None = None, zone: str = UTC) -> str:
        with cls._lock:
            candidate = format_instant(datetime.now(timezone.utc), zone)
            floor = max(cls._last.get(zone, ""), after or "")
            if candidate <= floor:
                candidate = instant_after(floor)
            cls._last[zone] = candidate
            return candidate
