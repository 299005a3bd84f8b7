"""One catalog sync of a table, as `HiveSyncTool.syncHoodieTable` runs it for each registered table.

Per table (`_ro` and `_rt`): the database is created when missing (`auto_create_database`); the
table is created from the latest commit's schema, or its columns, serde and table parameters are
brought up to date (`syncSchema`, `syncProperties`); then partitions. When the catalog has no
`last_commit_time_sync`, or it is older than the start of the active timeline (archived), every
partition on storage is compared with the catalog's (`syncAllPartitions`); otherwise only the
partitions written by commits completed since, and those dropped since (`getWrittenPartitionsSince`,
`getDroppedPartitionsSince`). A partition missing from the catalog is added, one whose location
differs is updated, a dropped one is dropped (`getPartitionEvents`), in batches of `batch_num`.
Last, `last_commit_time_sync` and `last_commit_completion_time_sync` record the latest completed
commit (`updateLastCommitTimeSynced`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Protocol

from ingest.catalog.registration import (
    LAST_COMMIT_COMPLETION_TIME_SYNC,
    LAST_COMMIT_TIME_SYNC,
    PartitionDefinition,
    TableDefinition,
    partition_definition,
    table_definitions,
)
from ingest.catalog.settings import SyncSettings
from ingest.hudi import avro_models
from ingest.hudi import schema as avro
from ingest.hudi.commit_metadata import decode_metadata
from ingest.hudi.file_system_view import list_partitions
from ingest.hudi.instant import Action, Instant, format_instant
from ingest.hudi.table import HudiTable
from ingest.hudi.timeline import Timeline, read_instant

log = logging.getLogger(__name__)

WRITE_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)


@dataclass(frozen=True)
class CatalogTable:
    """What the catalog holds for a table: enough to tell what changed."""

    columns: tuple[tuple[str, str], ...]
    parameters: dict[str, str]
    serde_parameters: dict[str, str]


class CatalogClient(Protocol):
    description: str

    def database_exists(self, database: str) -> bool: ...
    def create_database(self, database: str) -> None: ...
    def get_table(self, database: str, name: str) -> CatalogTable | None: ...
    def create_table(self, database: str, table: TableDefinition) -> None: ...
    def update_table(self, database: str, table: TableDefinition, parameters: dict[str, str]) -> None: ...
    def set_parameters(self, database: str, name: str, parameters: dict[str, str]) -> None: ...
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
    schema_updated: list[str] = field(default_factory=list)
    added: int = 0
    updated: int = 0
    dropped: int = 0
    last_commit: str | None = None
    seconds: float = 0.0

    def text(self) -> str:
        what = []
        if self.created:
            what.append(f"created {','.join(self.created)}")
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


def written_partitions_since(table: HudiTable, timeline: Timeline, since: str) -> set[str]:
    """Partitions of the write stats (and replaced file groups) of commits after `since`."""
    out: set[str] = set()
    for instant in timeline.completed(*WRITE_ACTIONS):
        if instant.timestamp <= since:
            continue
        raw = decode_metadata(read_instant(table.storage, instant, timeline.layout))
        out.update((raw.get("partitionToWriteStats") or {}).keys())
        out.update((raw.get("partitionToReplaceFileIds") or {}).keys())
    return out


def dropped_partitions_since(table: HudiTable, timeline: Timeline, since: str) -> set[str]:
    """`TimelineUtils.getDroppedPartitions`: partitions a clean deleted whole, or a DELETE_PARTITION replaced."""
    out: set[str] = set()
    for instant in timeline.completed(Action.CLEAN):
        if instant.timestamp <= since:
            continue
        meta = avro_models.deserialize(read_instant(table.storage, instant, timeline.layout))
        out.update(p for p, m in (meta.get("partitionMetadata") or {}).items() if m.get("isPartitionDeleted"))
    for instant in timeline.completed(Action.REPLACE_COMMIT):
        if instant.timestamp <= since:
            continue
        raw = decode_metadata(read_instant(table.storage, instant, timeline.layout))
        if raw.get("operationType") == "DELETE_PARTITION":
            out.update((raw.get("partitionToReplaceFileIds") or {}).keys())
    return out


def _before_timeline_starts(timeline: Timeline, ts: str) -> bool:
    first = timeline.first_write_timestamp
    return first is not None and ts < first


def sync_table(table: HudiTable, settings: SyncSettings, client: CatalogClient) -> SyncResult:
    """Register `table` in one catalog; idempotent."""
    started = time.monotonic()
    timeline = table.timeline()
    last = timeline.last_completed(*WRITE_ACTIONS)
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
    stamp = {LAST_COMMIT_TIME_SYNC: last.timestamp, LAST_COMMIT_COMPLETION_TIME_SYNC: completion_time(table, timeline, last)}
    for definition in definitions:
        result.tables.append(definition.name)
        existing = client.get_table(settings.database, definition.name)
        if existing is None:
            client.create_table(settings.database, definition)
            result.created.append(definition.name)
            last_synced = None
        else:
            last_synced = existing.parameters.get(LAST_COMMIT_TIME_SYNC)
            wanted = {**existing.parameters, **definition.parameters}
            if (existing.columns != definition.columns or wanted != existing.parameters
                    or existing.serde_parameters != dict(definition.serde_parameters)):
                if existing.columns != definition.columns:
                    result.schema_updated.append(definition.name)
                client.update_table(settings.database, definition, wanted)
        _sync_partitions(table, timeline, settings, client, definition, last_synced, result)
        current = client.get_table(settings.database, definition.name)
        client.set_parameters(settings.database, definition.name, {**(current.parameters if current else {}), **stamp})
    result.last_commit = last.timestamp
    result.seconds = time.monotonic() - started
    return result


def _sync_partitions(table: HudiTable, timeline: Timeline, settings: SyncSettings, client: CatalogClient,
                     definition: TableDefinition, last_synced: str | None, result: SyncResult) -> None:
    if not settings.partition_fields:
        return
    in_catalog = client.partitions(settings.database, definition.name)
    base = table.base_url
    if last_synced is None or _before_timeline_starts(timeline, last_synced):
        on_storage = [partition_definition(settings, base, p) for p in list_partitions(table.storage)]
        present = {p.values for p in on_storage}
        dropped = [PartitionDefinition("", values, loc) for values, loc in in_catalog.items() if values not in present]
        candidates = on_storage
    else:
        written = written_partitions_since(table, timeline, last_synced)
        gone = dropped_partitions_since(table, timeline, last_synced)
        candidates = [partition_definition(settings, base, p) for p in sorted(written - gone)]
        dropped = [d for d in (partition_definition(settings, base, p) for p in sorted(gone)) if d.values in in_catalog]
    added = [p for p in candidates if p.values not in in_catalog]
    updated = [p for p in candidates if p.values in in_catalog and in_catalog[p.values] != p.location]
    for batch in _batches(added, settings.batch_num):
        client.add_partitions(settings.database, definition, batch)
    for batch in _batches(updated, settings.batch_num):
        client.update_partitions(settings.database, definition, batch)
    if dropped:
        client.drop_partitions(settings.database, definition, dropped)
    result.added += len(added)
    result.updated += len(updated)
    result.dropped += len(dropped)
