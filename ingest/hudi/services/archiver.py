"""Archival: moving old completed instants out of the active timeline, as Hudi 0.14/0.15 does
(at table versions 8 and 9 into the LSM history instead: `lsm_archival`, same choice of instants).

When the active timeline holds more than `hoodie.keep.max.commits` completed commits, the oldest are
archived until `hoodie.keep.min.commits` remain (`HoodieTimelineArchiver`). Every timeline file of an
archived instant becomes one `HoodieArchivedMetaEntry` (the file's content converted to its Avro
record: commit metadata, cleaner plan or clean metadata, rollback metadata, compaction plan, as
`MetadataConversionUtils.createMetaWrapper`), written in AVRO_DATA blocks of
`hoodie.commits.archival.batch` entries whose header carries only the schema, into a log file
`.hoodie/archived/.commits_.archive.<n>_1-0-1`. Then the instants' files are deleted: requested and
inflight files first, completed ones in time order, so a crash never leaves a hole in the timeline.

What is kept, as Hudi keeps it: everything from the latest completed commit before the oldest pending
write on (so Hudi readers, which count instants older than the first completed commit as committed,
never take a pending write for committed); savepoints and after; enough delta commits for the
compaction trigger to fire; the first replacecommit or clustering at or after the last clean's earliest
commit to retain, the groups it replaced perhaps not cleaned yet (`ClusteringUtils.
getOldestInstantToRetainForClustering`); and, beyond Hudi, everything from the oldest pending instant of
any kind and from the earliest commit the last clean retained (incremental cleaning reads those commits).

One deliberate difference: Hudi archives clean and rollback instants on their own count. Here exactly
a prefix of the timeline is archived — every completed instant older than the first one kept,
whatever its action — so the active timeline's first instant is older than nothing that is not
archived. Readers here and the writer's key index count what lies before the active timeline as
committed; a prefix keeps that true. Each run writes a new archive file (object stores cannot append;
Hudi rolls to a new version there too); entries already written by an interrupted run are not
written again.

A Hudi writer with `hoodie.archive.merge.enable` merges small archive files into one named as the next
version, after writing `.hoodie/archived/mergeArchivePlan` (`mergeArchiveFilesIfNecessary`). A merge cut
short leaves the plan, and Hudi's next archival settles it first (`verifyLastMergeArchiveFilesIfNecessary`):
while every candidate exists it deletes the merged file. ingest's next archive file would have that very
name, so before writing one ingest settles the plan the same way.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ingest.faults import crash_point
from ingest.hudi.avro import avro_models
from ingest.hudi.avro import schema as avro
from ingest.hudi.config.service_settings import CleanerPolicy, ServiceSettings
from ingest.hudi.log.data_block import decode_avro_content, encode_avro_records
from ingest.hudi.log.log_block import BlockType, HeaderKey, LogBlock, encode_blocks
from ingest.hudi.log.log_reader import iter_log_blocks
from ingest.hudi.services import lsm_archival
from ingest.hudi.services.cleaner import REPLACE_ACTIONS, SAVEPOINTED_TIMESTAMPS
from ingest.hudi.services.compaction import earliest_instant_to_retain
from ingest.hudi.table import markers
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import (
    ARCHIVE_FOLDER,
    METAFOLDER,
    Timeline,
    completion_time,
    read_instant,
    refuse_pending_restore,
)
from ingest.hudi.timeline.timeline_layout import TimelineLayout
from ingest.storage import FileInfo, Storage

log = logging.getLogger(__name__)

ARCHIVE_FILE_ID = "commits"          # HoodieArchivedTimeline's archive log name
ARCHIVE_WRITE_TOKEN = "1-0-1"        # HoodieLogFormat.UNKNOWN_WRITE_TOKEN
MERGE_ARCHIVE_PLAN_NAME = "mergeArchivePlan"  # HoodieArchivedTimeline.MERGE_ARCHIVE_PLAN_NAME
MERGE_ARCHIVE_PLAN = f"{ARCHIVE_FOLDER}/{MERGE_ARCHIVE_PLAN_NAME}"
# HoodieArchivedTimeline.ARCHIVE_FILE_PATTERN: the write token is optional (Hudi releases before write
# tokens named archive files `.commits_.archive.<n>`); Hudi reads those and counts their versions too.
_ARCHIVE_FILE_RE = re.compile(r"^\.commits_\.archive\.([0-9]+).*")
COMMIT_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION)
# Actions whose timeline files this archiver can convert; an instant of another kind stops the prefix.
_CONVERTIBLE = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION,
                          Action.CLEAN, Action.ROLLBACK, Action.SAVEPOINT})


@dataclass(frozen=True)
class ArchiveResult:
    archived: tuple[str, ...] = ()       # instant times moved out of the active timeline
    file: str | None = None              # the archive file written (None if nothing new to write)
    entries: int = 0


# -- what to archive ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LastClean:
    """What the last completed clean retained: its earliest commit to retain, and the earliest savepoint
    it kept files for (its plan's `savepointed_timestamps`, copied into its metadata)."""

    timestamp: str
    earliest_commit_to_retain: str | None = None
    earliest_savepoint: str | None = None

    @classmethod
    def read(cls, table: HudiTable, timeline: Timeline) -> _LastClean | None:
        last_clean = timeline.last_completed(Action.CLEAN)
        if last_clean is None:
            return None
        data = read_instant(table.storage, last_clean, timeline.layout)
        if not data:
            return cls(last_clean.timestamp)
        metadata = avro_models.deserialize(data, avro_models.CLEAN_METADATA)
        savepoints = ((metadata.get("extraMetadata") or {}).get(SAVEPOINTED_TIMESTAMPS) or "").split(",")
        return cls(last_clean.timestamp, metadata.get("earliestCommitToRetain") or None,
                   min((t for t in savepoints if t), default=None))


def _earliest_to_retain_for_replaced_groups(timeline: Timeline, last_clean: _LastClean | None,
                                            policy: CleanerPolicy) -> str | None:
    """`ClusteringUtils.getOldestInstantToRetainForClustering` (1.x: `getEarliestInstantToRetainForClustering`):
    the first replacecommit or clustering not older than what the last clean retained (its earliest commit to
    retain; the clean itself when there is none, as under KEEP_LATEST_FILE_VERSIONS), the first of all when
    nothing was cleaned. The groups it replaced may still have files; archived, it would no longer tell readers
    they are replaced. A savepoint may have kept a replaced group's files past the earliest commit to retain:
    then the clean's earliest savepoint is the bound (`getEarliestReplacedSavepointInClean`), until a clean
    after the savepoint's removal deletes them."""
    replaces = timeline.filter(actions=[Action.REPLACE_COMMIT, Action.CLUSTERING])
    if not replaces:
        return None
    if last_clean is None:
        return replaces[0].timestamp
    lower = last_clean.earliest_commit_to_retain or last_clean.timestamp
    savepoint, ectr = last_clean.earliest_savepoint, last_clean.earliest_commit_to_retain
    if (policy is not CleanerPolicy.KEEP_LATEST_FILE_VERSIONS and savepoint and ectr and ectr > savepoint
            and any(savepoint <= i.timestamp <= ectr for i in timeline.completed(*REPLACE_ACTIONS))):
        lower = savepoint
    return next((i.timestamp for i in replaces if i.timestamp >= lower), None)


def instants_to_archive(table: HudiTable, timeline: Timeline, settings: ServiceSettings) -> list[Instant]:
    """The completed instants to archive now: a prefix of the timeline, possibly empty."""
    commits = timeline.completed(*COMMIT_ACTIONS)
    if len(commits) <= settings.archive.max_commits:
        return []
    bounds = []
    pending_writes = timeline.pending(*COMMIT_ACTIONS, Action.CLUSTERING, Action.LOG_COMPACTION)
    if pending_writes:
        oldest = pending_writes[0].timestamp
        before = [c.timestamp for c in commits if c.timestamp < oldest]
        bounds.append(before[-1] if before else oldest)
    pending = timeline.pending()
    if pending:
        bounds.append(pending[0].timestamp)
    savepoints = timeline.completed(Action.SAVEPOINT)
    if savepoints:
        bounds.append(savepoints[0].timestamp)
    for_compaction = earliest_instant_to_retain(timeline, settings.compaction)
    if for_compaction is not None:
        bounds.append(for_compaction)
    last_clean = _LastClean.read(table, timeline)  # one read of the last clean's metadata
    horizon = last_clean.earliest_commit_to_retain if last_clean else None
    if settings.clean.policy is CleanerPolicy.KEEP_LATEST_COMMITS and horizon is not None:
        bounds.append(horizon)
    for_replaced = _earliest_to_retain_for_replaced_groups(timeline, last_clean, settings.clean.policy)
    if for_replaced is not None:
        bounds.append(for_replaced)
    unconvertible = [i.timestamp for i in timeline if i.action not in _CONVERTIBLE]
    if unconvertible:
        bounds.append(unconvertible[0])
    cut = min(bounds) if bounds else None
    eligible = [c for c in commits if cut is None or c.timestamp < cut]
    eligible = eligible[: len(commits) - settings.archive.min_commits]
    if not eligible:
        return []
    boundary = eligible[-1].timestamp
    return [i for i in timeline if i.timestamp <= boundary]


# -- entries ------------------------------------------------------------------------------------------


def _named_types(node: Any, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(node, list):
        for n in node:
            _named_types(n, out)
    elif isinstance(node, dict):
        if node.get("type") == "record":
            out.setdefault(node["name"], node)
            for f in node["fields"]:
                _named_types(f["type"], out)
        else:
            for k in ("type", "items", "values"):
                if k in node:
                    _named_types(node[k], out)
    return out


_NAMED = _named_types(avro_models.ARCHIVED_META_ENTRY, {})


def json_to_avro(value: Any, schema: Any) -> Any:
    """A JSON value shaped to an Avro schema, field by field (what Jackson's `convertValue` from Hudi's
    JSON commit metadata to its Avro record does): unknown properties dropped, missing ones null."""
    if isinstance(schema, str):
        if schema in _NAMED:
            return json_to_avro(value, _NAMED[schema])
        if value is None:
            return None
        return {"long": int, "int": int, "double": float, "float": float, "boolean": bool, "string": str}.get(
            schema, lambda v: v)(value)
    if isinstance(schema, list):
        if value is None:
            return None
        branch = next(b for b in schema if b != "null")
        return json_to_avro(value, branch)
    kind = schema.get("type")
    if kind == "record":
        value = value or {}
        return {f["name"]: json_to_avro(value.get(f["name"]), f["type"]) if f["name"] in value else f.get("default")
                for f in schema["fields"]}
    if kind == "map":
        return None if value is None else {k: json_to_avro(v, schema["values"]) for k, v in value.items()}
    if kind == "array":
        return None if value is None else [json_to_avro(v, schema["items"]) for v in value]
    return json_to_avro(value, kind)


def _commit_metadata(data: bytes, replace: bool = False) -> dict:
    raw = json.loads(data.decode("utf-8")) if data.strip() else {}
    if "partitionToWriteStats" in raw:
        raw["partitionToWriteStats"] = {k: v for k, v in (raw["partitionToWriteStats"] or {}).items() if k is not None}
    if not raw:  # HoodieCommitMetadata.fromBytes of an empty file: an empty commit
        raw = {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {}, "operationType": "UNKNOWN"}
    schema = avro_models.REPLACE_COMMIT_METADATA if replace else avro_models.COMMIT_METADATA
    return json_to_avro(raw, schema)


def _avro_or_none(data: bytes, schema: dict) -> dict | None:
    return avro_models.deserialize(data, schema) if data else None


def _read_if_present(storage: Storage, rel: str) -> bytes:
    return storage.read(rel) if storage.exists(rel) else b""


def archived_entry(storage: Storage, file_name: str, zone: str) -> dict:
    """The `HoodieArchivedMetaEntry` of one timeline file; `zone` is the table's timeline zone."""
    instant = Instant.parse(file_name)
    if instant is None:
        raise ValueError(f"{file_name} is not a timeline file")
    data = storage.read(f"{METAFOLDER}/{file_name}")
    completed_compaction = instant.action is Action.COMPACTION and instant.is_completed
    action = Action.COMMIT if completed_compaction else instant.action
    entry: dict[str, Any] = {f["name"]: f.get("default") for f in avro_models.ARCHIVED_META_ENTRY["fields"]}
    entry.update(commitTime=instant.timestamp, actionState=instant.state.value, actionType=action.value,
                 stateTransitionTime=completion_time(storage, f"{METAFOLDER}/{file_name}", zone, instant.timestamp))
    if instant.is_completed and not data:
        return entry  # an empty completed file (a crash on HDFS): recorded without content
    if action in (Action.COMMIT, Action.DELTA_COMMIT):
        entry["hoodieCommitMetadata"] = _commit_metadata(data)
    elif action is Action.CLEAN:
        if instant.is_completed:
            entry["hoodieCleanMetadata"] = _avro_or_none(data, avro_models.CLEAN_METADATA)
        else:
            entry["hoodieCleanerPlan"] = _avro_or_none(data, avro_models.CLEANER_PLAN)
    elif action is Action.ROLLBACK:
        if instant.is_completed:
            entry["hoodieRollbackMetadata"] = _avro_or_none(data, avro_models.ROLLBACK_METADATA)
    elif action is Action.COMPACTION:
        # 0.14/0.15 read the plan by timestamp (the requested file) for the requested and the inflight
        # state alike; only 1.x keeps it to the requested entry.
        requested = f"{METAFOLDER}/{instant.to(State.REQUESTED).file_name}"
        plan = data if instant.state is State.REQUESTED else _read_if_present(storage, requested)
        entry["hoodieCompactionPlan"] = _avro_or_none(plan, avro_models.COMPACTION_PLAN)
    elif action is Action.REPLACE_COMMIT:
        if instant.is_completed:
            entry["hoodieReplaceCommitMetadata"] = _commit_metadata(data, replace=True)
        elif instant.state is State.INFLIGHT and data:
            entry["HoodieInflightReplaceMetadata"] = _commit_metadata(data)
        elif data:
            entry["hoodieRequestedReplaceMetadata"] = avro_models.deserialize(
                data, avro_models.REQUESTED_REPLACE_METADATA)
    elif action is Action.SAVEPOINT:
        entry["hoodieSavePointMetadata"] = _avro_or_none(data, avro_models.SAVEPOINT_METADATA)
    return entry


def _ordered_files(timeline: Timeline, instant: Instant) -> list[str]:
    """An instant's files: requested, inflight, completed."""
    def rank(name: str) -> int:
        parsed = Instant.parse(name)
        return parsed.state.rank if parsed else 3
    return sorted(timeline.files_of(instant), key=rank)


def _entry_key(entry: Mapping) -> tuple:
    return entry.get("commitTime"), entry.get("actionType"), entry.get("actionState")


# -- archive files --------------------------------------------------------------------------------------


def _archive_files_of(listing: list[FileInfo]) -> list[tuple[int, str]]:
    out = []
    for entry in listing:
        m = _ARCHIVE_FILE_RE.match(entry.name)
        if m and not entry.is_dir:
            out.append((int(m.group(1)), entry.path))
    return sorted(out)


def archive_files(storage: Storage) -> list[tuple[int, str]]:
    """(version, path) of the archive log files, oldest first."""
    return _archive_files_of(storage.list(ARCHIVE_FOLDER))


@dataclass(frozen=True)
class MergePlan:
    """A `HoodieMergeArchiveFilePlan`, its files as table-relative paths."""

    candidates: tuple[str, ...]
    merged: str | None

    @classmethod
    def read(cls, storage: Storage) -> MergePlan | None:
        """The plan, or None if it does not decode (torn while Hudi wrote it). Candidates are named by
        full path (`fs.getPath().toString()`); one outside this table's folder (the table was copied)
        is taken by its name in `.hoodie/archived`, where Hudi listed it."""
        try:
            record = avro_models.deserialize(storage.read(MERGE_ARCHIVE_PLAN), avro_models.MERGE_ARCHIVE_FILE_PLAN)
        except Exception:  # whatever does not decode, as Hudi catches its IOException
            return None
        candidates = tuple(storage.relative(c) or posixpath.join(ARCHIVE_FOLDER, posixpath.basename(c))
                           for c in record.get("candidate") or ())
        merged = record.get("mergedArchiveFileName")
        return cls(candidates, posixpath.join(ARCHIVE_FOLDER, merged) if merged else None)


def _holds_only(storage: Storage, path: str, others: tuple[str, ...]) -> bool:
    """Whether every entry of archive file `path` is in one of `others` (a torn file: whatever decodes)."""
    try:
        keys = {_entry_key(e) for e in read_archive_file(storage, path)}
    except Exception:  # a merge's output cut short mid-record
        return True
    for other in others:
        keys -= {_entry_key(e) for e in read_archive_file(storage, other)}
    return not keys


def settle_interrupted_merge(storage: Storage) -> list[tuple[int, str]]:
    """`HoodieTimelineArchiver.verifyLastMergeArchiveFilesIfNecessary`: undo or finish a merge of archive
    files that Hudi left with its plan, then delete the plan. All candidates there: the merged file (torn
    or whole, its entries all in the candidates) is deleted. Some gone: the merged file was complete, so
    the candidates left are deleted. An unreadable plan is only deleted (the merge never began).
    One step beyond Hudi: a "merged" file holding an entry no candidate holds is not the merge's output
    but an archive file an ingest release before this one wrote under the plan's name; it is kept (Hudi
    would delete it, and the instants archived into it with it). Returns the archive files after that,
    as `archive_files` does."""
    listing = storage.list(ARCHIVE_FOLDER)
    if not any(e.name == MERGE_ARCHIVE_PLAN_NAME and not e.is_dir for e in listing):
        return _archive_files_of(listing)
    listed = {e.path for e in listing if not e.is_dir}
    plan = MergePlan.read(storage)
    if plan is not None:
        merged_exists = plan.merged is not None and plan.merged in listed
        if all(c in listed for c in plan.candidates):
            if merged_exists and _holds_only(storage, plan.merged, plan.candidates):
                log.info("reverting Hudi's interrupted archive merge: deleting %s", plan.merged)
                storage.delete(plan.merged)
            elif merged_exists:
                log.warning("%s holds instants its merge plan's candidates do not: kept", plan.merged)
        elif merged_exists:
            log.info("finishing Hudi's interrupted archive merge into %s", plan.merged)
            for candidate in plan.candidates:
                storage.delete(candidate)
    storage.delete(MERGE_ARCHIVE_PLAN)
    return archive_files(storage)


def read_archive_file(storage: Storage, path: str, reader_schema: dict | None = None) -> list[dict]:
    """The entries of one archive file, decoded with the schema each block names (archive blocks carry
    no instant time, so they are decoded here rather than as table log blocks). Torn blocks are
    skipped, as Hudi's archived timeline reader skips them."""
    entries: list[dict] = []
    for block in iter_log_blocks(storage, path):
        if block.block_type == BlockType.AVRO_DATA and block.schema is not None:
            entries.extend(decode_avro_content(block.content, block.schema, reader_schema))
    return entries


def _archived_entries(storage: Storage, reader_schema: dict | None = None) -> list[dict]:
    """`HoodieArchivedTimeline.loadInstants`: the entries of every archive file, each instant in each
    state once (Hudi collects them into a set of `HoodieInstant`s), the first read kept. An instant is
    in two files while a merge's candidates and merged file both exist, or after an archival cut short
    before deleting what it archived. A file that does not read is skipped only if it is the merged
    file a merge plan names (left torn by the merge); otherwise the error stands."""
    listing = storage.list(ARCHIVE_FOLDER)
    has_plan = any(e.name == MERGE_ARCHIVE_PLAN_NAME and not e.is_dir for e in listing)
    seen: set[tuple] = set()
    out: list[dict] = []
    for _, path in _archive_files_of(listing):
        try:
            entries = read_archive_file(storage, path, reader_schema)
        except Exception:
            plan = MergePlan.read(storage) if has_plan else None
            if plan is None or path != plan.merged:
                raise
            log.warning("skipping %s: the torn file of an interrupted archive merge", path)
            continue
        for entry in entries:
            key = _entry_key(entry)
            if key not in seen:
                seen.add(key)
                out.append(entry)
    return out


def read_archived_timeline(storage: Storage) -> list[dict]:
    """Every archived entry once, in archive file order (`_archived_entries`)."""
    return _archived_entries(storage)


def convert_to_lsm_history(storage: Storage, layout: TimelineLayout, batch: int = 10) -> list[str]:
    """Upgrade to version 8 or 9: this table's `.hoodie/archived` instants written into the LSM history
    of `layout`, `batch` instants a file (`SevenToEightUpgradeHandler.upgradeToLSMTimeline`); resumable.
    Returns the history files written."""
    entries = _archived_entries(storage, avro_models.ARCHIVED_META_ENTRY)
    return lsm_archival.convert_legacy_archive(storage, layout, entries, batch)


def archived_commit_metadata(table: HudiTable) -> list[dict]:
    """The commit metadata of the archived instants, from the archive of the table's version (entries
    of other actions give an empty dict at version 6)."""
    if table.version.lsm_history:
        return list(lsm_archival.archived_commit_metadata(table.storage, table.layout))
    return [e.get("hoodieCommitMetadata") or {} for e in read_archived_timeline(table.storage)]


def _archive_block(entries: list[dict]) -> LogBlock:
    schema = avro_models.ARCHIVED_META_ENTRY
    content = encode_avro_records(entries, schema)
    return LogBlock(BlockType.AVRO_DATA, ((HeaderKey.SCHEMA, avro.to_json(schema)),), content)


def _write_archive_file(storage: Storage, entries: list[dict], batch: int,
                        existing: list[tuple[int, str]]) -> str:
    blocks = [_archive_block(entries[i:i + batch]) for i in range(0, len(entries), batch)]
    data = encode_blocks(blocks)
    version = existing[-1][0] + 1 if existing else 1
    while True:
        path = posixpath.join(ARCHIVE_FOLDER, f".{ARCHIVE_FILE_ID}_.archive.{version}_{ARCHIVE_WRITE_TOKEN}")
        if storage.create(path, data):
            return path
        version += 1


# -- archiving -----------------------------------------------------------------------------------------


def archive(table: HudiTable, settings: ServiceSettings, *, fence: Callable[[], None] | None = None) -> ArchiveResult:
    """Archive what `instants_to_archive` picks; run it holding the writer lease (`fence` its check)."""
    table.config.check_supported(table.base_url, write=True)  # every version ingest writes
    storage = table.storage
    timeline = table.timeline()
    refuse_pending_restore(timeline, table.base_url)
    table.check_no_schema_history(timeline)
    instants = instants_to_archive(table, timeline, settings)
    if not instants:
        return ArchiveResult()
    if table.version.lsm_history:
        path, written = lsm_archival.archive_into_history(storage, timeline, instants, fence)
        lsm_archival.compact_history(storage, timeline.layout, settings.archive.timeline_compaction_batch)
        log.info("archived %d instants (%s .. %s) into the LSM history (%s)", len(instants), instants[0].timestamp,
                 instants[-1].timestamp, path)
        return ArchiveResult(tuple(i.timestamp for i in instants), path, written)
    files = [(i, name) for i in instants for name in _ordered_files(timeline, i)]
    entries = [archived_entry(storage, name, timeline.zone) for _, name in files]
    if fence is not None:
        fence()
    existing = settle_interrupted_merge(storage)  # before taking the name Hudi's merge plan may hold
    already = {_entry_key(e) for e in read_archive_file(storage, existing[-1][1])} if existing else set()
    fresh = [e for e in entries if _entry_key(e) not in already]
    path = _write_archive_file(storage, fresh, settings.archive.batch, existing) if fresh else None
    for instant in instants:
        markers.delete_all(storage, instant.timestamp)
    # Requested and inflight files first: a completed instant stays completed until its last file goes.
    pending_files = [name for _, name in files if not Instant.parse(name).is_completed]
    completed_files = [name for _, name in files if Instant.parse(name).is_completed]
    for n, name in enumerate(pending_files + completed_files):
        storage.delete(f"{METAFOLDER}/{name}")
        if n == 0:
            crash_point("mid_archive")
    log.info("archived %d instants (%s .. %s) into %s", len(instants), instants[0].timestamp,
             instants[-1].timestamp, path)
    return ArchiveResult(tuple(i.timestamp for i in instants), path, len(fresh))
