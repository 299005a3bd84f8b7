"""One catalog sync of a table, as `HiveSyncTool.syncHoodieTable` runs it for each registered table.

Per table (`_ro`, `_rt` and the snapshot under the table's name): the database is created when missing
(`auto_create_database`); the table is created from the latest commit's schema, or its columns, serde
and table parameters are brought up to date (`syncSchema`, `syncProperties`); then partitions. When the
catalog has no `last_commit_time_sync`, or it is older than the start of the active timeline (archived),
every partition on storage is compared with the catalog's (`syncAllPartitions`, `getPartitionEvents`):
missing ones are added, moved ones updated, the catalog's others dropped. Otherwise only the partitions
written by the commits since (`TimelineUtils.getCommitsTimelineAfter`: after the last synced instant,
plus "hollow" ones before it that completed after the last synced completion time) are looked at: each
is dropped if it was dropped since (`TimelineUtils.getDroppedPartitions`), else added or updated.
Locations are compared without scheme and authority, as Hudi compares them. Last,
`last_commit_time_sync` and `last_commit_completion_time_sync` record the latest completed commit and
the latest completion time of the commits timeline (`updateLastCommitTimeSynced`, which also points a
metastore table's location and serde `path` at the base path). A table the catalog holds at another
location (compared without scheme) is replaced and all its partitions synced again
(`recreateAndSyncHiveTable`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Protocol
from urllib.parse import urlparse

from ingest.catalog.registration import (
    LAST_COMMIT_COMPLETION_TIME_SYNC,
    LAST_COMMIT_TIME_SYNC,
    PartitionDefinition,
    TableDefinition,
    partition_definition,
    table_definitions,
)
from ingest.catalog.settings import SyncSettings
from ingest.hudi.avro import avro_models
from ingest.hudi.avro import schema as avro
from ingest.hudi.table.file_system_view import list_partitions
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import decode_metadata
from ingest.hudi.timeline.instant import WRITE_ACTIONS, Action, Instant, format_instant
from ingest.hudi.timeline.timeline import Timeline, read_instant

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class CatalogTable:
    """What the catalog holds for a table: enough to tell what changed."""

    columns: tuple[tuple[str, str], ...]
    parameters: dict[str, str]
    serde_parameters: dict[str, str]
    location: str


class CatalogClient(Protocol):
    description: str

    def database_exists(self, database: str) -> bool: ...
    def create_database(self, database: str) -> None: ...
    def get_table(self, database: str, name: str) -> CatalogTable | None: ...
    def create_table(self, database: str, table: TableDefinition) -> None: ...
    def replace_table(self, database: str, table: TableDefinition) -> None: ...
    def update_table(self, database: str, table: TableDefinition, parameters: dict[str, str]) -> None: ...
    # Sets `parameters` (the sync stamps) over the table parameters the catalog holds.
    def set_parameters(self, database: str, table: TableDefinition, parameters: dict[str, str]) -> None: ...
    def partitions(self, database: str, name: str) -> dict[tuple[str, ...], str]: ...
    def add_partitions(self, database: str, table: TableDefinition, parts: Sequence[PartitionDefinition]) -> None: ...
    def update_partitions(self, database: str, table: TableDefinition,
                          parts: Sequence[PartitionDefinition]) -> None: ...
    def drop_partitions(self, database: str, table: TableDefinition, parts: Sequence[PartitionDefinition]) -> None: ...
    def close(self) -> None: ...


@dataclass
class SyncResult:
    catalog: str
    database: str
    tables: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    recreated: list[str] = field(default_factory=list)  # registered at another location before
    schema_updated: list[str] = field(default_factory=list)
    added: int = 0
    updated: int = 0
    dropped: int = 0
    last_commit: str | None = None
    seconds: float = 0.0
    tool: str = ""                  # the Hudi sync tool class this sync stands for

    def text(self) -> str:
        what = []
        if self.created:
            what.append(f"created {','.join(self.created)}")
        if self.recreated:
            what.append(f"recreated at the table's location {','.join(self.recreated)}")
        if self.schema_updated:
            what.append(f"schema of {','.join(self.schema_updated)}")
        what.append(f"partitions +{self.added} ~{self.updated} -{self.dropped}")
        return (f"synced {self.database}.{{{','.join(self.tables)}}} to {self.catalog} up to {self.last_commit}: "
                f"{', '.join(what)} in {self.seconds:.2f}s")


def _batches(items: Sequence, size: int) -> Iterable[Sequence]:
    for i in range(0, len(items), max(1, size)):
        yield items[i:i + size]


def completion_time(table: HudiTable, timeline: Timeline, instant: Instant) -> str:
    """The instant's completion time: recorded at layout 2, else the file's modification time, as the
    0.x timeline reads it (`HoodieInstant(FileStatus)`)."""
    if instant.completion_time:
        return instant.completion_time
    modified = table.storage.modified(timeline.layout.path(instant))
    return format_instant(datetime.fromtimestamp(modified, timezone.utc), timeline.zone)


class Commits:
    """The completed commits timeline (`HoodieSyncClient.getActiveTimeline`: commits, delta commits,
    replace commits and completed compactions); completion times and metadata are read once per sync."""

    def __init__(self, table: HudiTable, timeline: Timeline):
        self.table, self.timeline = table, timeline
        self.instants = timeline.completed(*WRITE_ACTIONS)
        self._completions: dict[str, str] = {}
        self._metadata: dict[str, dict] = {}
        self._cleaned: dict[str, str] | None = None

    def completion(self, instant: Instant) -> str:
        if instant.timestamp not in self._completions:
            self._completions[instant.timestamp] = completion_time(self.table, self.timeline, instant)
        return self._completions[instant.timestamp]

    @property
    def last(self) -> Instant | None:
        return self.instants[-1] if self.instants else None

    def latest_completion(self) -> str | None:
        """`getLatestCompletionTime`: the last completion among them, whichever instant it was."""
        return max((self.completion(i) for i in self.instants), default=None)

    def after(self, since: str, since_completion: str | None) -> list[Instant]:
        """`TimelineUtils.getCommitsTimelineAfter`: commits after `since`, and the hollow ones before it
        that completed after `since_completion`."""
        out = [i for i in self.instants if i.timestamp > since]
        if since_completion:
            out += [i for i in self.instants if i.timestamp < since and self.completion(i) > since_completion]
        return sorted(out)

    def metadata(self, instant: Instant) -> dict:
        if instant.timestamp not in self._metadata:
            raw = read_instant(self.table.storage, instant, self.timeline.layout)
            self._metadata[instant.timestamp] = decode_metadata(raw)
        return self._metadata[instant.timestamp]

    def cleaned_partitions(self) -> dict[str, str]:
        """Partitions a completed clean on the active timeline deleted whole, with the latest such clean."""
        if self._cleaned is None:
            self._cleaned = {}
            for clean in self.timeline.completed(Action.CLEAN):
                meta = avro_models.deserialize(read_instant(self.table.storage, clean, self.timeline.layout))
                for partition, m in (meta.get("partitionMetadata") or {}).items():
                    if m.get("isPartitionDeleted"):
                        self._cleaned[partition] = clean.timestamp
        return self._cleaned


def written_partitions(commits: Commits, instants: Sequence[Instant]) -> set[str]:
    """`TimelineUtils.getWrittenPartitions`: partitions of the write stats (and replaced file groups)."""
    out: set[str] = set()
    for instant in instants:
        raw = commits.metadata(instant)
        out.update((raw.get("partitionToWriteStats") or {}).keys())
        out.update((raw.get("partitionToReplaceFileIds") or {}).keys())
    out.discard("")
    return out


def dropped_partitions(commits: Commits, instants: Sequence[Instant]) -> set[str]:
    """`TimelineUtils.getDroppedPartitions`: partitions a DELETE_PARTITION among `instants` replaced, or a
    clean anywhere on the active timeline deleted whole, unless a commit among `instants` wrote them at or
    after that delete."""
    deleted: dict[str, str] = {}
    for instant in instants:
        if instant.action is Action.REPLACE_COMMIT:
            raw = commits.metadata(instant)
            if raw.get("operationType") == "DELETE_PARTITION":
                deleted.update(dict.fromkeys((raw.get("partitionToReplaceFileIds") or {}).keys(), instant.timestamp))
    deleted.update(commits.cleaned_partitions())
    if not deleted:
        return set()
    earliest = min(deleted.values())
    written: dict[str, str] = {}
    for instant in instants:
        if instant.timestamp >= earliest:
            written.update(dict.fromkeys((commits.metadata(instant).get("partitionToWriteStats") or {}).keys(),
                                         instant.timestamp))
    return {p for p, ts in deleted.items() if p and (p not in written or ts > written[p])}


def temp_table_name(name: str) -> str:
    """`HoodieSyncClient.generateTempTableName`: where a replacing table is created first."""
    return f"{name}_temp{int(time.time())}"


def path_only(url: str) -> str:
    """`Path.getPathWithoutSchemeAndAuthority(...).toUri().getPath()`: how Hudi compares partition locations."""
    path = urlparse(url).path if ("://" in url or url.startswith("file:")) else url
    return path.rstrip("/") or "/"


def _before_timeline_starts(timeline: Timeline, ts: str) -> bool:
    first = timeline.first_write_timestamp
    return first is not None and ts < first


def sync_table(table: HudiTable, settings: SyncSettings, client: CatalogClient) -> SyncResult:
    """Register `table` in one catalog; idempotent."""
    started = time.monotonic()
    timeline = table.timeline()
    commits = Commits(table, timeline)
    last = commits.last
    result = SyncResult(client.description, settings.database)
    if last is None:
        result.seconds = time.monotonic() - started
        return result  # nothing committed: nothing to register yet
    schema = table.schema(timeline)
    definitions = table_definitions(settings, table.base_url, avro.with_meta_fields(schema))
    if not client.database_exists(settings.database):
        if not settings.auto_create_database:
            raise RuntimeError(f"database {settings.database} does not exist and "
                               "hoodie.datasource.hive_sync.auto_create_database is false")
        client.create_database(settings.database)
    stamp = {LAST_COMMIT_TIME_SYNC: last.timestamp}
    latest_completion = commits.latest_completion()
    if latest_completion is not None:
        stamp[LAST_COMMIT_COMPLETION_TIME_SYNC] = latest_completion
    for definition in definitions:
        result.tables.append(definition.name)
        existing = client.get_table(settings.database, definition.name)
        if existing is None:
            client.create_table(settings.database, definition)
            result.created.append(definition.name)
            synced = (None, None)
        elif not existing.location:
            # Hudi's comparison (`FSUtils.comparePathsWithoutScheme`) fails on a table with no location (a
            # view, say): such a table is not Hudi's to replace.
            raise RuntimeError(f"{settings.database}.{definition.name} exists in {client.description} without a "
                               "location (a view?): not replaced; drop it or sync under another name")
        elif path_only(existing.location) != path_only(definition.location):
            # `HiveSyncTool.syncHoodieTable`: a table registered at another base path ("basepath is
            # updated") is replaced (`recreateAndSyncHiveTable`) and all its partitions synced again.
            client.replace_table(settings.database, definition)
            result.recreated.append(definition.name)
            synced = (None, None)
        else:
            synced = (existing.parameters.get(LAST_COMMIT_TIME_SYNC),
                      existing.parameters.get(LAST_COMMIT_COMPLETION_TIME_SYNC))
            wanted = {**existing.parameters, **definition.parameters}
            columns_differ = comparable_columns(existing.columns) != comparable_columns(definition.columns)
            if (columns_differ or wanted != existing.parameters
                    or existing.serde_parameters != dict(definition.serde_parameters)):
                if columns_differ:
                    result.schema_updated.append(definition.name)
                client.update_table(settings.database, definition, wanted)
        _sync_partitions(commits, settings, client, definition, synced, result)
        client.set_parameters(settings.database, definition, stamp)
    result.last_commit = last.timestamp
    result.seconds = time.monotonic() - started
    return result


def comparable_columns(columns: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Columns as Hudi's sync compares them (`HiveSchemaUtil.getSchemaDifference`): names in lower case, as
    a metastore keeps them, and types ignoring case (`equalsIgnoreCase`). Compared as written, a column
    named in capitals would alter both tables, and every partition with them (CASCADE), at every sync."""
    return [(name.lower(), kind.replace(" ", "").lower()) for name, kind in columns]


def _sync_partitions(commits: Commits, settings: SyncSettings, client: CatalogClient, definition: TableDefinition,
                     synced: tuple[str | None, str | None], result: SyncResult) -> None:
    if not settings.partition_fields:
        return
    table, timeline = commits.table, commits.timeline
    last_synced, last_completion = synced
    in_catalog = {values: path_only(loc) for values, loc in client.partitions(settings.database,
                                                                              definition.name).items()}
    base = table.base_url
    if last_synced is None or _before_timeline_starts(timeline, last_synced):
        candidates = [partition_definition(settings, base, p) for p in list_partitions(table.storage) if p]
        present = {p.values for p in candidates}
        dropped = [PartitionDefinition("", values, loc) for values, loc in in_catalog.items() if values not in present]
    else:
        since = commits.after(last_synced, last_completion)
        written = written_partitions(commits, since)
        gone = dropped_partitions(commits, since) & written
        candidates = [partition_definition(settings, base, p) for p in sorted(written - gone)]
        dropped = [d for d in (partition_definition(settings, base, p) for p in sorted(gone)) if d.values in in_catalog]
    added = [p for p in candidates if p.values not in in_catalog]
    updated = [p for p in candidates if p.values in in_catalog and in_catalog[p.values] != path_only(p.location)]
    for batch in _batches(added, settings.batch_num):
        client.add_partitions(settings.database, definition, batch)
    for batch in _batches(updated, settings.batch_num):
        client.update_partitions(settings.database, definition, batch)
    if dropped:
        client.drop_partitions(settings.database, definition, dropped)
    result.added += len(added)
    result.updated += len(updated)
    result.dropped += len(dropped)
