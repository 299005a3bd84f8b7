"""Archival at table versions 8 and 9: archived instants go into the LSM history, as Hudi 1.2's
`TimelineArchiverV2.archiveIfRequired` does; and a version-6 archive converted into it, as
`SevenToEightUpgradeHandler.upgradeToLSMTimeline` (with `LegacyArchivedMetaEntryReader`) does.

One history row per instant (`ActiveAction`: its requested, inflight and completed files), made as
`MetadataConversionUtils.createLSMTimelineInstant` makes it: the completed file's action and
completion time, its bytes as `metadata` (none when empty), and as `plan` the cleaner plan (clean), the
compaction or log-compaction plan (the `.requested` file), or for a replacecommit or clustering the
requested file's bytes, replaced by the inflight file's when that is not empty.

Order, as Hudi's: markers of each instant deleted, the history file written and committed
(`LSMHistory.write`), the instants' files deleted (requested and inflight first, then completed ones in
time order), then the history compacted and cleaned. Which instants go is `archiver.instants_to_archive`
(the same prefix as at version 6). One addition: instants the history already holds are not written
again, so a rerun after a crash between the history's commit and the end of the deletions, whose
prefix is then shorter, leaves each instant in the history once (Hudi would write them a second time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ingest.faults import crash_point
from ingest.hudi.avro import avro_models
from ingest.hudi.table import markers
from ingest.hudi.timeline.commit_metadata import decode_metadata
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.lsm_history import LSM_INSTANT_VERSION, LSMHistory
from ingest.hudi.timeline.timeline import Timeline
from ingest.hudi.timeline.timeline_layout import TimelineLayout
from ingest.storage import Storage

log = logging.getLogger(__name__)

_REPLACE_ACTIONS = (Action.REPLACE_COMMIT, Action.CLUSTERING)
_PLAN_FILE_ACTIONS = (Action.COMPACTION, Action.LOG_COMPACTION)
COMMIT_METADATA_ACTIONS = frozenset({Action.COMMIT.value, Action.DELTA_COMMIT.value, Action.REPLACE_COMMIT.value})


def history_of(storage: Storage, layout: TimelineLayout) -> LSMHistory:
    if layout.history is None:
        raise ValueError(f"timeline layout {layout.version} has no LSM history")
    return LSMHistory(storage, layout.history)


def lsm_instant(storage: Storage, layout: TimelineLayout, files: Sequence[str]) -> dict[str, Any]:
    """The `HoodieLSMTimelineInstant` of one completed instant, from its timeline files."""
    by_state: dict[State, tuple[Instant, str]] = {}
    for name in files:
        parsed = layout.parse(name)
        if parsed is not None:
            by_state[parsed.state] = (parsed, name)
    if State.COMPLETED not in by_state:
        raise ValueError(f"only completed instants are archived: {list(files)}")

    def read(state: State) -> bytes | None:
        if state not in by_state:
            return None
        return storage.read(f"{layout.folder}/{by_state[state][1]}") or None

    completed = by_state[State.COMPLETED][0]
    pending = by_state.get(State.REQUESTED, by_state.get(State.INFLIGHT, by_state[State.COMPLETED]))[0]
    plan = None
    if pending.action is Action.CLEAN:
        plan = read(State.REQUESTED if State.REQUESTED in by_state else State.INFLIGHT)
    elif pending.action in _REPLACE_ACTIONS:
        plan = read(State.INFLIGHT) or read(State.REQUESTED)
    elif pending.action in _PLAN_FILE_ACTIONS:
        requested = f"{layout.folder}/{Instant(completed.timestamp, pending.action, State.REQUESTED).file_name}"
        plan = storage.read(requested) if storage.exists(requested) else None
    return {
        "instantTime": completed.timestamp,
        "completionTime": completed.completion_time,
        "action": completed.action.value,
        "metadata": read(State.COMPLETED),
        "plan": plan,
        "version": LSM_INSTANT_VERSION,
    }


def archive_into_history(storage: Storage, timeline: Timeline, instants: Sequence[Instant],
                         fence: Callable[[], None] | None = None) -> tuple[str | None, int]:
    """Move `instants` (completed, oldest first) from the active timeline into the LSM history.
    Returns the history file written (None if all were there already) and how many rows it holds."""
    layout = timeline.layout
    history = history_of(storage, layout)
    already = history.instant_times(instants[0].timestamp, instants[-1].timestamp)
    fresh = [i for i in instants if i.timestamp not in already]
    if fence is not None:
        fence()
    written = None
    if fresh:
        rows = []
        for instant in fresh:
            markers.delete_all(storage, instant.timestamp)  # TimelineArchiverV2.deleteAnyLeftOverMarkers
            rows.append(lsm_instant(storage, layout, timeline.files_of(instant)))
        written = history.write(rows)
    files = [(name, layout.parse(name)) for i in instants for name in timeline.files_of(i)]
    pending = [name for name, parsed in files if parsed is not None and not parsed.is_completed]
    completed = [name for name, parsed in files if parsed is not None and parsed.is_completed]
    for n, name in enumerate(pending + completed):
        storage.delete(f"{layout.folder}/{name}")
        if n == 0:
            crash_point("mid_archive")
    return written, len(fresh)


def compact_history(storage: Storage, layout: TimelineLayout, batch: int) -> list[str]:
    """`LSMTimelineWriter.compactAndClean`, run after every archival."""
    return history_of(storage, layout).compact_and_clean(batch)


def archived_commit_metadata(storage: Storage, layout: TimelineLayout) -> Iterator[dict[str, Any]]:
    """The commit metadata (as JSON-shaped dicts) of the archived commits, oldest first."""
    for row in history_of(storage, layout).read():
        if row.get("action") in COMMIT_METADATA_ACTIONS and row.get("metadata"):
            yield decode_metadata(row["metadata"])


# -- a version-6 archive into the LSM history (the upgrade) ------------------------------------------

# LegacyArchivedMetaEntryReader.getMetadataKey: the entry field carrying an action's details.
_LEGACY_KEYS = {
    "clean": ("hoodieCleanMetadata", avro_models.CLEAN_METADATA),
    "commit": ("hoodieCommitMetadata", avro_models.COMMIT_METADATA),
    "deltacommit": ("hoodieCommitMetadata", avro_models.COMMIT_METADATA),
    "rollback": ("hoodieRollbackMetadata", avro_models.ROLLBACK_METADATA),
    "savepoint": ("hoodieSavePointMetadata", avro_models.SAVEPOINT_METADATA),
    "compaction": ("hoodieCompactionPlan", avro_models.COMPACTION_PLAN),
    "logcompaction": ("hoodieCompactionPlan", avro_models.COMPACTION_PLAN),
    "replacecommit": ("hoodieReplaceCommitMetadata", avro_models.REPLACE_COMMIT_METADATA),
    "clustering": ("hoodieReplaceCommitMetadata", avro_models.REPLACE_COMMIT_METADATA),
}


def _legacy_details(entry: dict[str, Any]) -> bytes | None:
    """`LegacyArchivedMetaEntryReader.readInstant`: the record under the action's key, as an Avro file
    (`HoodieAvroUtils.avroToFileBytes`); absent when the entry has none there."""
    key, schema = _LEGACY_KEYS.get(entry.get("actionType"), (None, None))
    value = entry.get(key) if key else None
    return avro_models.serialize(schema, value) if value is not None else None


def legacy_lsm_instants(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """History rows of archived `HoodieArchivedMetaEntry`s, grouped per instant
    (`ActiveActionWithDetails.fromInstantAndDetails`) and made as `createLSMTimelineInstant` makes
    them from those details. Instants without a completed entry (never written by an archiver) are skipped."""
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in entries:
        groups.setdefault(entry["commitTime"], {})[entry.get("actionState") or State.COMPLETED.value] = entry
    rows = []
    for instant_time in sorted(groups):
        states = groups[instant_time]
        completed = states.get(State.COMPLETED.value)
        if completed is None:
            log.warning("archived instant %s has no completed entry; not converted", instant_time)
            continue
        requested, inflight = states.get(State.REQUESTED.value), states.get(State.INFLIGHT.value)
        pending_action = (requested or inflight or completed).get("actionType")
        plan = None
        if pending_action in ("clean", "compaction", "logcompaction"):
            plan = _legacy_details(requested) if requested else None
        elif pending_action in ("replacecommit", "clustering"):
            plan = (_legacy_details(inflight) if inflight else None) or (_legacy_details(requested) if requested else None)
        rows.append({
            "instantTime": instant_time,
            # An entry without a state transition time (archived by ingest before it recorded them):
            # its instant time, as Hudi's completion-time view takes for an instant without one
            # (`CompletionTimeQueryViewV2.setCompletionTime`); a null here would fail its `readCompletionTime`.
            "completionTime": completed.get("stateTransitionTime") or instant_time,
            "action": completed.get("actionType"),
            "metadata": _legacy_details(completed),
            "plan": plan,
            "version": LSM_INSTANT_VERSION,
        })
    return rows


def convert_legacy_archive(storage: Storage, layout: TimelineLayout, entries: Sequence[dict[str, Any]],
                           batch: int) -> list[str]:
    """Write a version-6 archive's instants into the LSM history, `batch` instants a file, without
    compaction (`upgradeToLSMTimeline`); the `.hoodie/archived` files stay, as Hudi leaves them.
    Rerun after a crash, instants already in the history are not written again. Returns files written."""
    history = history_of(storage, layout)
    rows = legacy_lsm_instants(entries)
    if not rows:
        return []
    already = history.instant_times(rows[0]["instantTime"], rows[-1]["instantTime"])
    fresh = [r for r in rows if r["instantTime"] not in already]
    written = []
    for start in range(0, len(fresh), batch):
        name = history.write(fresh[start:start + batch])
        if name is not None:
            written.append(name)
    return written
