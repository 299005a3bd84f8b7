"""A Hudi table on storage: its config, a timeline snapshot, its schema and its file system view.

This is the handle that readers, writers, table services and CLI commands open. It holds no cached
file listing of its own: `timeline()` and `view()` take fresh snapshots, so every caller decides
explicitly which snapshot its decisions are made against.

Tables of version 6, 8 and 9, Merge-On-Read or Copy-On-Write, open for reading (`open`); Merge-On-Read
tables of those versions open for writing (`open_or_create`), each at its own version: a new table is
created at the version asked for, an existing one is never upgraded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ingest.errors import TableConfigConflict, TableNotFound, TimelineError, UnsupportedTable
from ingest.hudi.avro import schema as avro
from ingest.hudi.config import properties_file
from ingest.hudi.config.table_config import PROPERTIES_PATH, TableConfig, TableConfigKey
from ingest.hudi.config.table_version import DEFAULT_WRITE_VERSION, TableVersion
from ingest.hudi.table.file_system_view import FileSystemView
from ingest.hudi.timeline.commit_metadata import CommitMetadata, decode_metadata
from ingest.hudi.timeline.instant import Action, Instant
from ingest.hudi.timeline.timeline import AUX_FOLDER, METAFOLDER, TEMP_FOLDER, Timeline, read_instant
from ingest.hudi.timeline.timeline_layout import TimelineLayout
from ingest.storage import FileInfo, Storage

SCHEMA_KEY = "schema"
# Completed instants whose metadata may say the table's schema.
_SCHEMA_WRITES = (Action.DELTA_COMMIT, Action.COMMIT, Action.COMPACTION, Action.REPLACE_COMMIT, Action.CLUSTERING)
# Hudi's schema-on-read (`hoodie.schema.on.read.enable`): the InternalSchema history folder
# (`FileBasedInternalSchemaStorageManager.SCHEMA_NAME`) and the commit metadata key of the latest one
# (`SerDeHelper.LATEST_SCHEMA`).
SCHEMA_HISTORY_FOLDER = f"{METAFOLDER}/.schema"
BUCKET_INDEX_FOLDER = f"{METAFOLDER}/.bucket_index"
BUCKET_INDEX_METADATA = {"partition_bucket_index_meta": "bucket numbers by partition",
                         "consistent_hashing_metadata": "consistent hashing"}
LATEST_SCHEMA_KEY = "latest_schema"
# `WriteOperationType.canUpdateSchema`: table services rewrite data under the schema they were given,
# so their commits never say the table's schema (`getLastCommitMetadataWithValidSchema` skips them).
_SERVICE_OPERATIONS = frozenset({"COMPACT", "CLUSTER", "LOG_COMPACT", "INDEX"})
T = TypeVar("T")



class _CreatedConcurrently(TableConfigConflict):
    """Another writer created the table's properties between our look and our write."""

@dataclass(frozen=True)
class HudiTable:
    storage: Storage
    config: TableConfig
    # Completed instants parsed through this handle, by file and builder: a completed instant's file is
    # written once and never changed (`HoodieActiveTimeline.transitionState` creates it with
    # `createImmutableFileInPath`), so one commit's steps share one parse of it.
    _completed_parsed: dict[tuple[str, Any], Any] = field(default_factory=dict, init=False, repr=False,
                                                          compare=False)

    # -- opening and creating -------------------------------------------------------------------

    @classmethod
    def open(cls, url: str, storage_options: Mapping[str, Any] | None = None) -> HudiTable:
        storage = Storage(url, storage_options)
        return cls(storage, TableConfig.load(storage))

    @classmethod
    def exists(cls, url: str, storage_options: Mapping[str, Any] | None = None) -> bool:
        return properties_file.present(Storage(url, storage_options))

    @classmethod
    def create(
        cls,
        url: str,
        settings: Mapping[str, str],
        schema: avro.AvroSchema | None = None,
        storage_options: Mapping[str, Any] | None = None,
        version: TableVersion = DEFAULT_WRITE_VERSION,
    ) -> HudiTable:
        """Create the table's `.hoodie` folder and properties (fails if a table is already there)."""
        storage = Storage(url, storage_options)
        given = dict(settings)
        if schema is not None:
            given[TableConfigKey.CREATE_SCHEMA.key] = avro.to_json(avro.without_meta_fields(schema))
        config = TableConfig.build(given, version)
        config.check_compatible(url, settings)  # what the writer asked for, before any file is written
        layout = TimelineLayout.of(config)
        # Layout 2: the timeline folder and its LSM history folder, as `HoodieTableMetaClient.initTableAndGetMetaClient`.
        folders = (layout.folder, f"{layout.folder}/{config.raw(TableConfigKey.TIMELINE_HISTORY_PATH)}") \
            if version.has_completion_times else (f"{METAFOLDER}/archived",)
        for folder in (METAFOLDER, *folders, AUX_FOLDER, TEMP_FOLDER):
            storage.makedirs(folder)
        if not storage.create(PROPERTIES_PATH, config.to_bytes()):
            raise _CreatedConcurrently(url, [("hoodie.properties", "exists", "new table")])
        return cls(storage, config)

    @classmethod
    def open_or_create(
        cls,
        url: str,
        settings: Mapping[str, str],
        schema: avro.AvroSchema | None = None,
        storage_options: Mapping[str, Any] | None = None,
        version: TableVersion = DEFAULT_WRITE_VERSION,
    ) -> HudiTable:
        """Open the table for writing, checking the given settings agree with it; create it at `version`
        if absent (an existing table keeps its own version).

        Absent means no `.hoodie` folder, or one with no file in it: a `.hoodie` holding a timeline but
        neither `hoodie.properties` nor its backup raises instead (`properties_file.fetch`)."""
        try:
            table = cls.open(url, storage_options)
        except TableNotFound:
            try:
                return cls.create(url, settings, schema, storage_options, version)
            except _CreatedConcurrently:
                table = cls.open(url, storage_options)  # created concurrently: validate below
        return table.checked_for_write(settings)

    def checked_for_write(self, settings: Mapping[str, str]) -> HudiTable:
        """This table, once a writer with `settings` may write it (else UnsupportedTable or
        TableConfigConflict naming what differs)."""
        self.config.check_supported(self.base_url, write=True)
        self.config.check_keyed_records(self.base_url)
        self.config.check_compatible(self.base_url, settings)
        return self

    # -- snapshots ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def base_url(self) -> str:
        return self.storage.base_url

    @property
    def version(self) -> TableVersion:
        return self.config.table_version

    @property
    def layout(self) -> TimelineLayout:
        return TimelineLayout.of(self.config)

    def timeline(self) -> Timeline:
        return Timeline.load(self.storage, self.layout, self.config.timeline_zone, self.version)

    def view(self, timeline: Timeline | None = None, as_of: str | None = None,
             listing: dict[str, list[FileInfo]] | None = None) -> FileSystemView:
        """The file groups, less those replaced (as of `as_of`: a later replace does not hide a group);
        `listing`: every partition's files, where the caller keeps them (`listing_sync`)."""
        timeline = timeline or self.timeline()
        return FileSystemView.load(self.storage, timeline, replaced=self.replaced_file_groups(timeline, as_of),
                                   listing=listing)

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        return self._parsed(instant, self.layout, CommitMetadata.from_json)

    def _parsed(self, instant: Instant, layout: TimelineLayout, build: Callable[[dict[str, Any]], T]) -> T:
        """An instant's metadata, or one TimelineError naming its file and what is wrong with it
        (a truncated or corrupt file is no commit anyone can read: `HoodieCommitMetadata.fromBytes`
        fails on it too, and writing on top of it would build on a commit whose content is lost).

        A completed instant is read and parsed once per handle (see `_completed_parsed`); a handle
        lives for one commit or one command, so a later one still lists the timeline afresh."""
        key = (layout.path(instant), build)
        if instant.is_completed and key in self._completed_parsed:
            return self._completed_parsed[key]
        data = read_instant(self.storage, instant, layout)
        try:
            parsed = build(decode_metadata(data))
        except (ValueError, KeyError, TypeError, AttributeError, EOFError, IndexError) as e:
            detail = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise TimelineError(f"{self.storage.url(layout.path(instant))}: {instant.action.value} {instant.timestamp} "
                                f"cannot be parsed ({len(data)} bytes; truncated or corrupt?): {detail}") from e
        if instant.is_completed:
            self._completed_parsed[key] = parsed
        return parsed

    def check_no_schema_history(self, timeline: Timeline, schema_folder: list[FileInfo] | None = None) -> None:
        """Refuse writing a table whose schema Hudi evolved on read (renames, drops, type changes): its
        readers then map old files' columns by field id from the InternalSchema history
        (`TableSchemaResolver.getTableInternalSchemaFromCommitMetadata`, `InternalSchemaCache`), and take the
        latest schema-changing commit's `latest_schema`. A commit without one (as ingest writes them) drops
        that mapping, so renamed columns read as null, and writers that follow assign field ids anew.
        `schema_folder`: the listing of `.hoodie/.schema`, where the caller has it (`schema_folder_listing`)."""
        listed = self.schema_folder_listing() if schema_folder is None else schema_folder
        found = next((e.name for e in listed if not e.is_dir), None)
        marker = f"{SCHEMA_HISTORY_FOLDER}/{found}" if found else None
        if marker is None:
            for instant in reversed(timeline.completed(*_SCHEMA_WRITES)):
                metadata = self.commit_metadata(instant)
                if metadata.operation_type in _SERVICE_OPERATIONS:
                    continue
                if LATEST_SCHEMA_KEY in metadata.extra_metadata:
                    marker = f"{instant.action.value} {instant.timestamp} carries {LATEST_SCHEMA_KEY}"
                if marker or metadata.schema:
                    break
        if marker:
            raise UnsupportedTable(f"{self.base_url}: its schema is kept by Hudi's schema on read ({marker}): Hudi's "
                                   "readers map its columns by field id, which ingest's commits do not carry (renamed "
                                   "or dropped columns would be misread after them); not written")

    def schema_folder_listing(self) -> list[FileInfo]:
        return self.storage.list(SCHEMA_HISTORY_FOLDER)

    def bucket_index_folder_listing(self) -> list[FileInfo]:
        return self.storage.list(BUCKET_INDEX_FOLDER)

    def check_no_bucket_index_metadata(self, listing: list[FileInfo] | None = None) -> None:
        """Refuse writing a table whose bucket index Hudi keeps metadata for (`HoodieTableMetaClient`'s
        `.hoodie/.bucket_index`): partition-level bucket numbers (`PARTITION_BUCKET_INDEX_HASHING_FOLDER`,
        which Hudi's writers then apply, `NumBucketsFunction`) or consistent hashing
        (`HASHING_METADATA_FOLDER_NAME`). ingest hashes every key into `hoodie.bucket.index.num.buckets`,
        so keys would go to other buckets."""
        found = sorted(e.name for e in (self.bucket_index_folder_listing() if listing is None else listing)
                       if e.is_dir and e.name in BUCKET_INDEX_METADATA)
        if found:
            raise UnsupportedTable(f"{self.base_url}: Hudi keeps bucket index metadata for it ({BUCKET_INDEX_FOLDER}/"
                                   f"{found[0]}: {BUCKET_INDEX_METADATA[found[0]]}), which ingest does not follow: "
                                   "its keys would go to other buckets than Hudi's writers send them to; not written")

    def replaced_file_groups(self, timeline: Timeline, as_of: str | None = None,
                             before: str | None = None) -> frozenset[tuple[str, str]]:
        """Groups retired by completed replacecommits at or before `as_of` (Hudi's
        `isFileGroupReplacedBeforeOrOn`) and strictly before `before` (`isFileGroupReplacedBefore`, what
        the cleaner may delete), every one when both are None."""
        out = set()
        # A version-8 clustering is a `clustering` instant that completes as a replacecommit.
        for instant in timeline.completed(Action.REPLACE_COMMIT, Action.CLUSTERING):
            if as_of is not None and instant.timestamp > as_of:
                continue
            if before is not None and instant.timestamp >= before:
                continue
            for partition, file_ids in self.replaced_by(instant, timeline.layout).items():
                out.update((partition, f) for f in file_ids)
        return frozenset(out)

    def replaced_by(self, instant: Instant, layout: TimelineLayout | None = None) -> dict[str, list[str]]:
        """A replacecommit's `partitionToReplaceFileIds` (empty for other instants)."""
        raw = self._parsed(instant, layout or self.layout, dict)
        return {p: list(ids or ()) for p, ids in (raw.get("partitionToReplaceFileIds") or {}).items()
                if p is not None}

    def schema(self, timeline: Timeline | None = None, as_of: str | None = None) -> avro.AvroSchema | None:
        """The table's Avro schema (no meta fields): from the latest commit as of `as_of` that wrote records
        (`getLastCommitMetadataWithValidSchema`: not a compaction's, clustering's or log compaction's, whose
        writer may have held an older schema), else at creation."""
        timeline = timeline or self.timeline()
        for instant in reversed(timeline.completed(*_SCHEMA_WRITES)):
            if as_of is not None and instant.timestamp > as_of:
                continue
            metadata = self.commit_metadata(instant)
            text = metadata.schema if metadata.operation_type not in _SERVICE_OPERATIONS else None
            if text:
                return avro.without_meta_fields(avro.parse(text))
        created = self.config.create_schema
        return avro.without_meta_fields(avro.parse(created)) if created else None
