"""`hoodie.properties`: the table's identity and its merge rules, typed in one place.

Every key we read or write is a member of `TableConfigKey` with its default and parser, so nothing
else in the code base spells a property name. Keys we do not know are kept untouched: other engines
put their own settings there, and rewriting the file must not lose them.

The file is read, repaired and rewritten with Hudi's recovery protocol (`HoodieTableConfig`
`fetchConfigs`, `recoverIfNeeded`, `modify`; see `properties_file.py`): a reader falls back to
`hoodie.properties.backup` when the file is missing or its checksum is wrong, so a rewrite that dies
midway never loses the table's config, and never makes us mistake a table for a missing one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ingest.errors import TableConfigConflict, UnsupportedTable
from ingest.hudi.config import properties_file
from ingest.hudi.config.properties_file import PROPERTIES_PATH, checksum
from ingest.hudi.config.table_version import (
    DEFAULT_WRITE_VERSION,
    READABLE_VERSIONS,
    WRITABLE_VERSIONS,
    TableVersion,
)
from ingest.hudi.config.timeline_zone import TIMELINE_ZONES, UTC
from ingest.storage import Storage

__all__ = ["PROPERTIES_PATH", "checksum", "TableConfig", "TableConfigKey"]
TABLE_VERSION = DEFAULT_WRITE_VERSION.number  # the version new tables get unless told otherwise
WRITTEN_TABLE_TYPE = "MERGE_ON_READ"
READABLE_TABLE_TYPES = ("MERGE_ON_READ", "COPY_ON_WRITE")


def writes_version(version: int) -> bool:
    """Whether ingest writes into a table of this `hoodie.table.version` (jobs, services, rollback)."""
    return version in WRITABLE_VERSIONS

DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
OVERWRITE_WITH_LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
EVENT_TIME_PAYLOAD = "org.apache.hudi.common.model.EventTimeAvroPayload"
MERGE_PROPERTY_PREFIX = "hoodie.record.merge.property."  # `HoodieTableConfig.RECORD_MERGE_PROPERTY_PREFIX`
BUILT_IN_PAYLOADS = (DEFAULT_PAYLOAD, OVERWRITE_WITH_LATEST_PAYLOAD, EVENT_TIME_PAYLOAD)
DEFAULT_MERGER_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
# Payloads that keep the record with the larger ordering value across commits (event-time ordering).
EVENT_TIME_PAYLOADS = frozenset({
    DEFAULT_PAYLOAD,
    "org.apache.hudi.common.model.PartialUpdateAvroPayload",
    EVENT_TIME_PAYLOAD,
})

# Hudi 1.x's `HoodieRecordMerger` strategy ids (`hoodie.record.merge.strategy.id`, table version 8).
EVENT_TIME_MERGE_STRATEGY = DEFAULT_MERGER_STRATEGY
COMMIT_TIME_MERGE_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
PAYLOAD_BASED_MERGE_STRATEGY = "00000000-0000-0000-0000-000000000000"


class RecordMergeMode(str, Enum):
    """`hoodie.record.merge.mode` (table version 8): how versions of one key are merged."""

    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"  # the larger ordering value wins
    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"  # the later write wins
    CUSTOM = "CUSTOM"  # a payload class or merger implementation decides


def _bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"expected true or false, got {raw!r}")
    return value == "true"


def _list(raw: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in raw.split(",") if p.strip())


@dataclass(frozen=True)
class ConfigKey:
    """A setting's name, default and parser: the single place that knows how to read it."""

    key: str
    default: str | None = None
    parse: Callable[[str], Any] = str
    doc: str = ""
    alternatives: tuple[str, ...] = ()

    def normalize(self, raw: str) -> Any:
        """The comparable form of a raw value (so `True` and `true` do not conflict)."""
        try:
            return self.parse(raw)
        except ValueError:
            return raw


class TableConfigKey(Enum):
    NAME = ConfigKey("hoodie.table.name", doc="Table name; also names the Avro record.")
    DATABASE_NAME = ConfigKey("hoodie.database.name", "default", doc="Database the table is registered in.")
    TABLE_TYPE = ConfigKey("hoodie.table.type", "COPY_ON_WRITE", doc="MERGE_ON_READ for tables we write.")
    VERSION = ConfigKey("hoodie.table.version", str(TABLE_VERSION), int, "On-disk format version.")
    TIMELINE_LAYOUT_VERSION = ConfigKey("hoodie.timeline.layout.version", "1", int)
    RECORD_KEY_FIELDS = ConfigKey("hoodie.table.recordkey.fields", None, _list)
    PARTITION_FIELDS = ConfigKey("hoodie.table.partition.fields", None, _list)
    PRECOMBINE_FIELD = ConfigKey("hoodie.table.precombine.field", None, str, "Ordering field.")
    ORDERING_FIELDS = ConfigKey(
        "hoodie.table.ordering.fields", None, _list, "Ordering fields: Hudi 1.1's name for the precombine field."
    )
    RECORD_MERGE_MODE = ConfigKey(
        "hoodie.record.merge.mode", None, str, "Table version 8: EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING or CUSTOM."
    )
    RECORD_MERGE_STRATEGY_ID = ConfigKey(
        "hoodie.record.merge.strategy.id", None, str, "Table version 8: id of the record merger strategy."
    )
    INITIAL_VERSION = ConfigKey("hoodie.table.initial.version", None, int, "The version the table was created at.")
    TIMELINE_HISTORY_PATH = ConfigKey(
        "hoodie.timeline.history.path", "history", str, "Timeline layout 2: folder of the LSM history."
    )
    KEY_GENERATOR_TYPE = ConfigKey("hoodie.table.keygenerator.type", doc="Table version 8: the key generator type.")
    PARTIAL_UPDATE_MODE = ConfigKey(
        "hoodie.table.partial.update.mode", "NONE", str, "Table version 9: how partial records merge (NONE: they are not)."
    )
    LEGACY_PAYLOAD_CLASS = ConfigKey(
        "hoodie.table.legacy.payload.class", doc="Table version 9: the payload class a merge mode replaced."
    )
    TIMELINE_PATH = ConfigKey(
        "hoodie.timeline.path", "timeline", str, "Timeline layout 2: folder of the instant files under .hoodie."
    )
    KEY_GENERATOR_CLASS = ConfigKey("hoodie.table.keygenerator.class")
    BOOTSTRAP_INDEX_CLASS = ConfigKey("hoodie.bootstrap.index.class", doc="Bootstrap index class (tables bootstrapped).")
    BOOTSTRAP_INDEX_TYPE = ConfigKey("hoodie.bootstrap.index.type", doc="Table version 8: the bootstrap index type.")
    INDEX_DEFINITIONS_PATH = ConfigKey("hoodie.table.index.defs.path", doc="Table version 8: metadata index definitions.")
    HIVE_STYLE_PARTITIONING = ConfigKey("hoodie.datasource.write.hive_style_partitioning", "false", _bool)
    URL_ENCODE_PARTITIONING = ConfigKey("hoodie.datasource.write.partitionpath.urlencode", "false", _bool)
    DROP_PARTITION_COLUMNS = ConfigKey("hoodie.datasource.write.drop.partition.columns", "false", _bool)
    SLASH_SEPARATED_DATE_PARTITIONING = ConfigKey(
        "hoodie.datasource.write.slash.separated.date.partitioning", "false", _bool,
        "Hudi 1.2: a yyyy-MM-dd partition value written as the folders yyyy/MM/dd.")
    PAYLOAD_CLASS = ConfigKey("hoodie.compaction.payload.class", OVERWRITE_WITH_LATEST_PAYLOAD)
    RECORD_MERGER_STRATEGY = ConfigKey("hoodie.compaction.record.merger.strategy", DEFAULT_MERGER_STRATEGY)
    ARCHIVELOG_FOLDER = ConfigKey("hoodie.archivelog.folder", "archived")
    CDC_ENABLED = ConfigKey("hoodie.table.cdc.enabled", "false", _bool, "Change-data-capture log files per write.")
    BOOTSTRAP_BASE_PATH = ConfigKey("hoodie.bootstrap.base.path", doc="Where a bootstrapped table's source files are.")
    CREATE_SCHEMA = ConfigKey("hoodie.table.create.schema", doc="Avro schema at creation, no meta fields.")
    BASE_FILE_FORMAT = ConfigKey("hoodie.table.base.file.format", "PARQUET")
    TABLE_FORMAT = ConfigKey("hoodie.table.format", "native", doc="Table version 9: native, or another format's.")
    LOG_FILE_FORMAT = ConfigKey("hoodie.table.log.file.format", "HOODIE_LOG")
    POPULATE_META_FIELDS = ConfigKey("hoodie.populate.meta.fields", "true", _bool)
    TIMELINE_TIMEZONE = ConfigKey("hoodie.table.timeline.timezone", "LOCAL")
    METADATA_PARTITIONS = ConfigKey("hoodie.table.metadata.partitions", "", _list)
    METADATA_PARTITIONS_INFLIGHT = ConfigKey("hoodie.table.metadata.partitions.inflight", "", _list)
    CHECKSUM = ConfigKey("hoodie.table.checksum", None, int)

    @property
    def key(self) -> str:
        return self.value.key

    @classmethod
    def by_key(cls, key: str) -> TableConfigKey | None:
        for member in cls:
            if member.value.key == key or key in member.value.alternatives:
                return member
        return None


@dataclass(frozen=True)
class TableConfig:
    """The parsed `hoodie.properties`, in file order, unknown keys included."""

    props: Mapping[str, str] = field(default_factory=dict)

    def raw(self, key: TableConfigKey) -> str | None:
        spec = key.value
        for name in (spec.key, *spec.alternatives):
            if name in self.props:
                return self.props[name]
        return spec.default

    def get(self, key: TableConfigKey) -> Any:
        raw = self.raw(key)
        return None if raw is None else key.value.parse(raw)

    # -- typed accessors used across the code base ---------------------------------------------

    @property
    def name(self) -> str:
        return self.get(TableConfigKey.NAME)

    @property
    def version(self) -> int:
        return self.get(TableConfigKey.VERSION)

    @property
    def table_version(self) -> TableVersion:
        return TableVersion.of(self.version)

    @property
    def record_key_fields(self) -> tuple[str, ...]:
        return self.get(TableConfigKey.RECORD_KEY_FIELDS) or ()

    @property
    def partition_fields(self) -> tuple[str, ...]:
        return self.get(TableConfigKey.PARTITION_FIELDS) or ()

    @property
    def precombine_field(self) -> str | None:
        """The ordering field; from version 8 on, Hudi 1.1's `hoodie.table.ordering.fields` is read too."""
        if self.table_version.merge_mode_in_properties:
            fields = self._ordering_fields()
            return fields[0] if fields else None
        value = self.get(TableConfigKey.PRECOMBINE_FIELD)
        return value or None

    def _ordering_fields(self) -> tuple[str, ...]:
        """Version 8: comma-separated ordering fields, under either name."""
        return self.get(TableConfigKey.ORDERING_FIELDS) or _list(self.raw(TableConfigKey.PRECOMBINE_FIELD) or "")

    @property
    def payload_class(self) -> str:
        return self.get(TableConfigKey.PAYLOAD_CLASS)

    @property
    def event_time_ordering(self) -> bool:
        """True when the larger ordering value wins across commits (else the latest commit wins)."""
        if self.table_version.merge_mode_in_properties:
            mode = self.record_merge_mode
            if mode is RecordMergeMode.CUSTOM:
                # Payload-based: the payload class decides, as in version 6.
                return self.precombine_field is not None and self.props.get(
                    TableConfigKey.PAYLOAD_CLASS.key
                ) in EVENT_TIME_PAYLOADS
            # Event-time ordering without an ordering field falls back to commit time, as in Hudi.
            return mode is RecordMergeMode.EVENT_TIME_ORDERING and self.precombine_field is not None
        return self.precombine_field is not None and self.payload_class in EVENT_TIME_PAYLOADS

    @property
    def log_versions_by_ordering(self) -> bool:
        """True when a file slice's log records are merged by ordering value and the result laid over the
        base file whatever its ordering value: Hudi 0.14/0.15 on a table whose payload is
        `OverwriteWithLatestAvroPayload` and that has an ordering field (see `TableVersion`)."""
        return (self.table_version.overwrite_payload_orders_logs and not self.event_time_ordering
                and self.precombine_field is not None and self.payload_class == OVERWRITE_WITH_LATEST_PAYLOAD)

    @property
    def record_merge_mode(self) -> RecordMergeMode:
        """The merge mode of a version-8 table: as set, else inferred as Hudi 1.x infers it.

        Inference (`HoodieTableConfig.inferMergingConfigsForPreV9Table`): from the merge strategy id,
        else from the payload class, else event time when there is an ordering field.
        """
        raw = self.raw(TableConfigKey.RECORD_MERGE_MODE)
        if raw:
            try:
                return RecordMergeMode(raw.strip().upper())
            except ValueError as e:
                raise UnsupportedTable(f"{TableConfigKey.RECORD_MERGE_MODE.key}={raw} is not a merge mode") from e
        strategy = self.raw(TableConfigKey.RECORD_MERGE_STRATEGY_ID)
        if strategy:
            if strategy == EVENT_TIME_MERGE_STRATEGY:
                return RecordMergeMode.EVENT_TIME_ORDERING
            if strategy == COMMIT_TIME_MERGE_STRATEGY:
                return RecordMergeMode.COMMIT_TIME_ORDERING
            return RecordMergeMode.CUSTOM
        payload = self.props.get(TableConfigKey.PAYLOAD_CLASS.key)
        if payload:
            if payload in (DEFAULT_PAYLOAD, "org.apache.hudi.common.model.EventTimeAvroPayload"):
                return RecordMergeMode.EVENT_TIME_ORDERING
            if payload == OVERWRITE_WITH_LATEST_PAYLOAD:
                return RecordMergeMode.COMMIT_TIME_ORDERING
            return RecordMergeMode.CUSTOM
        if self.precombine_field is not None:
            return RecordMergeMode.EVENT_TIME_ORDERING
        return RecordMergeMode.COMMIT_TIME_ORDERING

    @property
    def hive_style(self) -> bool:
        return self.get(TableConfigKey.HIVE_STYLE_PARTITIONING)

    @property
    def url_encode(self) -> bool:
        return self.get(TableConfigKey.URL_ENCODE_PARTITIONING)

    @property
    def timeline_zone(self) -> str:
        """UTC or LOCAL (`HoodieTableConfig.getTimelineTimezone`: LOCAL, the writer's zone, when unset)."""
        raw = self.get(TableConfigKey.TIMELINE_TIMEZONE)
        if raw not in TIMELINE_ZONES:
            raise UnsupportedTable(f"{TableConfigKey.TIMELINE_TIMEZONE.key}={raw}: Hudi's timeline zones are "
                                   + " and ".join(TIMELINE_ZONES))
        return raw

    @property
    def create_schema(self) -> str | None:
        return self.raw(TableConfigKey.CREATE_SCHEMA)

    # -- persistence ----------------------------------------------------------------------------

    @classmethod
    def load(cls, storage: Storage) -> TableConfig:
        """The table's config, from `hoodie.properties` or, failing that, its backup (as Hudi reads it)."""
        config = cls(properties_file.fetch(storage))
        config.check_supported(storage.base_url)
        return config

    def check_supported(self, where: str, *, write: bool = False) -> None:
        """Refuse tables this library cannot read or, for `write`, write (`check_writable`).

        Reading: versions 6, 8 and 9, Merge-On-Read and Copy-On-Write (a Copy-On-Write table is a
        Merge-On-Read table whose slices never have log files), parquet base files, Hudi's own table
        format. Writing: versions 6, 8 and 9 (`table_version.WRITABLE_VERSIONS`), Merge-On-Read only.
        """
        if write:
            self.check_writable(where)
        version = self.get(TableConfigKey.VERSION)
        table_type = self.raw(TableConfigKey.TABLE_TYPE)
        if version not in READABLE_VERSIONS:
            raise UnsupportedTable(
                f"{where}: {TableConfigKey.VERSION.key}={version}: table version {version} is neither read nor "
                f"written (only versions {', '.join(map(str, READABLE_VERSIONS))} "
                "are supported)"
            )
        if table_type not in READABLE_TABLE_TYPES:
            raise UnsupportedTable(f"{where}: table type {table_type} (only {' and '.join(READABLE_TABLE_TYPES)} "
                                   "are supported)")
        for key, supported in ((TableConfigKey.TABLE_FORMAT, "native"), (TableConfigKey.BASE_FILE_FORMAT, "PARQUET")):
            value = self.get(key)
            if value.upper() != supported.upper():
                raise UnsupportedTable(f"{where}: {key.key}={value} (only {supported} is read)")
        if TableVersion.of(version).merge_mode_in_properties:
            self._check_readable_merge(where)

    def check_writable(self, where: str) -> None:
        """Refuse, naming the property, a table ingest cannot write into: another table version, a
        copy-on-write table, or one without meta fields (`HoodieTableConfig.populateMetaFields`:
        such tables find records by their key fields; ingest's index and reader need the meta fields)."""
        version = self.get(TableConfigKey.VERSION)
        if not writes_version(version):
            raise UnsupportedTable(
                f"{where}: {TableConfigKey.VERSION.key}={version}: table version {version} cannot be written "
                f"(ingest writes version {', '.join(map(str, WRITABLE_VERSIONS))}; reads "
                f"{', '.join(map(str, READABLE_VERSIONS))})"
            )
        self._check_table_type(where)
        self._check_files_written(where)
        partial = self.get(TableConfigKey.PARTIAL_UPDATE_MODE)
        if partial.upper() != "NONE":
            # `HoodieTableConfig.PARTIAL_UPDATE_MODE`: with IGNORE_DEFAULTS or FILL_UNAVAILABLE, Hudi's readers
            # would merge the full records ingest writes as partial ones.
            raise UnsupportedTable(f"{where}: {TableConfigKey.PARTIAL_UPDATE_MODE.key}={partial} cannot be written "
                                   "(ingest writes whole records: NONE)")
        self._check_merge_written(where)
        if not self.get(TableConfigKey.POPULATE_META_FIELDS):
            raise UnsupportedTable(f"{where}: {TableConfigKey.POPULATE_META_FIELDS.key}="
                                   f"{self.raw(TableConfigKey.POPULATE_META_FIELDS)}: ingest writes tables with "
                                   "meta fields only")

    def check_keyed_records(self, where: str) -> None:
        """Refuse writing records into a table whose record keys Hudi generated: `HoodieWriterUtils
        .validateTableConfig` refuses a record key field there ("if incoming record key is non empty, table
        config should also be non empty"); Hudi 0.14+ leaves `hoodie.table.recordkey.fields` out for such
        tables, and no keyed update or delete would match their records. Table services, which take keys
        from the meta fields, may still run."""
        if not self.raw(TableConfigKey.RECORD_KEY_FIELDS):
            raise UnsupportedTable(f"{where}: {TableConfigKey.RECORD_KEY_FIELDS.key} is not set: the table's records "
                                   "carry keys Hudi generated (no record key field), which no keyed write matches")

    def _check_files_written(self, where: str) -> None:
        """Refuse, naming the property, a table whose files Hudi's writers write differently from ingest:
        with change-data-capture log files beside every write (`HoodieTableConfig.CDC_ENABLED`,
        `HoodieCDCLogger`; CDC queries would miss ingest's changes), bootstrapped from files elsewhere
        (`BOOTSTRAP_BASE_PATH`: skeleton base files joined with the source's at read time), without the
        partition columns in its data files (`DROP_PARTITION_COLUMNS`), with date partition values split into
        `yyyy/MM/dd` folders (Hudi 1.2's `SLASH_SEPARATED_DATE_PARTITIONING`), or archiving into another folder
        than `.hoodie/archived` at version 6 (`ARCHIVELOG_FOLDER`; Hudi would not find what ingest archived)."""
        refusals = []
        if self.get(TableConfigKey.CDC_ENABLED):
            refusals.append((TableConfigKey.CDC_ENABLED, "ingest writes no change-data-capture log files"))
        if self.raw(TableConfigKey.BOOTSTRAP_BASE_PATH):
            refusals.append((TableConfigKey.BOOTSTRAP_BASE_PATH, "ingest does not read or write bootstrapped "
                                                                 "tables' skeleton files"))
        if self.get(TableConfigKey.DROP_PARTITION_COLUMNS):
            refusals.append((TableConfigKey.DROP_PARTITION_COLUMNS, "ingest writes the partition columns into "
                                                                    "the data files"))
        if self.get(TableConfigKey.SLASH_SEPARATED_DATE_PARTITIONING):
            # Hudi 1.2's key generators turn a `yyyy-MM-dd` partition value into `yyyy/MM/dd` folders.
            refusals.append((TableConfigKey.SLASH_SEPARATED_DATE_PARTITIONING, "ingest writes a partition value "
                                                                               "as one folder"))
        folder = self.raw(TableConfigKey.ARCHIVELOG_FOLDER)
        if not self.table_version.lsm_history and folder not in (None, "", "archived"):
            refusals.append((TableConfigKey.ARCHIVELOG_FOLDER, "ingest archives into .hoodie/archived"))
        if refusals:
            key, why = refusals[0]
            raise UnsupportedTable(f"{where}: {key.key}={self.raw(key)} cannot be written ({why})")

    def _check_merge_written(self, where: str) -> None:
        """Refuse a table whose records Hudi merges in a way ingest's writes and compactions do not: a
        payload class other than the built-in three (`AWSDmsAvroPayload` deletes on `Op = 'D'`,
        `PartialUpdateAvroPayload` keeps old values for null fields, ...), and at 9 the merge properties
        Hudi 1.1 records for them (`inferMergingConfigsForV9TableCreation`: delete keys and markers,
        `getTableMergeProperties`). At 9 a payload Hudi does not deprecate stays in
        `hoodie.compaction.payload.class`, with merge mode CUSTOM (CASE 2 there, and
        `EightToNineUpgradeHandler.reconcilePayloadClassConfig`), so both keys are looked at."""
        keys = [TableConfigKey.PAYLOAD_CLASS]
        if self.table_version.legacy_payload_key:
            keys.insert(0, TableConfigKey.LEGACY_PAYLOAD_CLASS)
        for key in keys:
            payload = self.props.get(key.value.key)
            if payload and payload not in BUILT_IN_PAYLOADS:
                names = ", ".join(p.rsplit(".", 1)[1] for p in BUILT_IN_PAYLOADS)
                raise UnsupportedTable(f"{where}: {key.value.key}={payload} cannot be written (ingest merges records "
                                       f"as {names} do)")
        merge_properties = sorted(k for k in self.props if k.startswith(MERGE_PROPERTY_PREFIX))
        if merge_properties:
            first = merge_properties[0]
            raise UnsupportedTable(f"{where}: {first}={self.props[first]} cannot be written (Hudi's readers merge by "
                                   "these properties; ingest writes and merges whole records without them)")

    def _check_table_type(self, where: str) -> None:
        table_type = self.raw(TableConfigKey.TABLE_TYPE)
        if table_type != WRITTEN_TABLE_TYPE:
            raise UnsupportedTable(f"{where}: {TableConfigKey.TABLE_TYPE.key}={table_type}: ingest writes "
                                   "MERGE_ON_READ tables only")

    def _check_readable_merge(self, where: str) -> None:
        mode = self.record_merge_mode
        strategy = self.raw(TableConfigKey.RECORD_MERGE_STRATEGY_ID)
        if mode is RecordMergeMode.CUSTOM and strategy not in (None, PAYLOAD_BASED_MERGE_STRATEGY):
            raise UnsupportedTable(f"{where}: custom record merger strategy {strategy} is not supported")
        fields = self._ordering_fields()
        if len(fields) > 1 and mode is not RecordMergeMode.COMMIT_TIME_ORDERING:
            raise UnsupportedTable(f"{where}: ordering on several fields ({', '.join(fields)}) is not supported")

    def to_bytes(self) -> bytes:
        return properties_file.encode(self.props, "Properties saved on " + _now_iso())

    @classmethod
    def update(cls, storage: Storage, updates: Mapping[str, str]) -> TableConfig:
        """Set `updates` in the table's `hoodie.properties` with Hudi's backup protocol; the new config."""
        return cls(properties_file.modify(storage, updates))

    def with_updates(self, updates: Mapping[str, str]) -> TableConfig:
        merged = dict(self.props)
        merged.update(updates)
        table = merged.get(TableConfigKey.NAME.key, "")
        merged[TableConfigKey.CHECKSUM.key] = str(checksum(merged.get(TableConfigKey.DATABASE_NAME.key), table))
        return TableConfig(merged)

    @classmethod
    def build(cls, settings: Mapping[str, str], version: TableVersion = DEFAULT_WRITE_VERSION) -> TableConfig:
        """A new table's properties at `version`: the given settings over the defaults tables we write
        always carry, with the merge rule in the keys that version reads it from (as Hudi 1.x's
        `HoodieTableMetaClient.TableBuilder` records it; see the v8 and v9 fixtures)."""
        base = {
            TableConfigKey.TABLE_TYPE.key: "MERGE_ON_READ",
            TableConfigKey.VERSION.key: str(version.number),
            TableConfigKey.TIMELINE_LAYOUT_VERSION.key: str(version.timeline_layout),
            TableConfigKey.DATABASE_NAME.key: "default",
            TableConfigKey.ARCHIVELOG_FOLDER.key: "archived",
            TableConfigKey.HIVE_STYLE_PARTITIONING.key: "false",
            TableConfigKey.URL_ENCODE_PARTITIONING.key: "false",
            TableConfigKey.DROP_PARTITION_COLUMNS.key: "false",
            # Version 6's merger strategy key; from 8 on the merge mode and strategy id say it.
            TableConfigKey.RECORD_MERGER_STRATEGY.key: DEFAULT_MERGER_STRATEGY,
            TableConfigKey.TIMELINE_TIMEZONE.key: UTC,  # explicit: Hudi reads an absent zone as LOCAL
            # No metadata table, as a Hudi writer with hoodie.metadata.enable=false leaves the key.
            TableConfigKey.METADATA_PARTITIONS.key: "",
        }
        if version.merge_mode_in_properties:
            del base[TableConfigKey.RECORD_MERGER_STRATEGY.key]
        if version.has_completion_times:
            base[TableConfigKey.INITIAL_VERSION.key] = str(version.number)
            base[TableConfigKey.TIMELINE_PATH.key] = TableConfigKey.TIMELINE_PATH.value.default
            base[TableConfigKey.TIMELINE_HISTORY_PATH.key] = TableConfigKey.TIMELINE_HISTORY_PATH.value.default
        base.update({k: v for k, v in settings.items() if v is not None})
        ordering = base.get(TableConfigKey.PRECOMBINE_FIELD.key)
        payload_given = TableConfigKey.PAYLOAD_CLASS.key in base
        if not payload_given:
            base[TableConfigKey.PAYLOAD_CLASS.key] = DEFAULT_PAYLOAD if ordering else OVERWRITE_WITH_LATEST_PAYLOAD
        if version.merge_mode_in_properties:
            _merge_properties(base, version, payload_given)
        if not base.get(TableConfigKey.NAME.key):
            raise ValueError(f"{TableConfigKey.NAME.key} is required to create a table")
        if version.table_format_key:
            base.setdefault(TableConfigKey.TABLE_FORMAT.key, TableConfigKey.TABLE_FORMAT.value.default)
        return cls({}).with_updates(base)

    def conflicts_with(self, given: Mapping[str, str]) -> list[tuple[str, str | None, str | None]]:
        """(key, table value, given value) for every given setting the table contradicts."""
        out = []
        for key, value in given.items():
            member = TableConfigKey.by_key(key)
            existing = self._writer_setting(member) if member else self.props.get(key)
            if existing is None or value is None:
                continue
            spec = member.value if member else ConfigKey(key)
            if member is TableConfigKey.PRECOMBINE_FIELD:
                existing, value = ",".join(_list(existing)), ",".join(_list(value))  # as a list from 8 on
            elif member is TableConfigKey.PARTITION_FIELDS:
                existing, value = _comparable_partition_fields(existing, value)
            if spec.normalize(existing) != spec.normalize(value):
                out.append((key, existing, value))
        return out

    def _writer_setting(self, member: TableConfigKey) -> str | None:
        """The table's value of a setting a writer gives, from where this version keeps it
        (`HoodieWriterUtils.validateTableConfig` with `getKeyInTableConfig`): the ordering field in
        `hoodie.table.ordering.fields` too from 8 on, the payload class in the legacy key at 9 (a table
        that records none does not contradict a writer's)."""
        version = self.table_version
        if member is TableConfigKey.PRECOMBINE_FIELD and version.merge_mode_in_properties:
            return ",".join(self._ordering_fields()) or None
        if member is TableConfigKey.PAYLOAD_CLASS and version.legacy_payload_key:
            return self.props.get(TableConfigKey.LEGACY_PAYLOAD_CLASS.key)
        return self.raw(member)

    def check_compatible(self, table_path: str, given: Mapping[str, str]) -> None:
        conflicts = self.conflicts_with(given)
        if conflicts:
            raise TableConfigConflict(table_path, conflicts)


def _comparable_partition_fields(a: str, b: str) -> tuple[str, str]:
    """Two `hoodie.table.partition.fields` values as they can be compared: a CustomKeyGenerator's types
    upper-cased (Hudi records the writer's own text, `region:simple`), and left out when one side
    records none (version 6, or a table an earlier ingest created)."""
    typed = ":" in a and ":" in b

    def form(text: str) -> str:
        fields = [f.partition(":") for f in _list(text)]
        return ",".join(f"{n.strip()}:{t.strip().upper()}" if typed and t else n.strip() for n, _, t in fields)

    return form(a), form(b)


def _merge_properties(props: dict[str, str], version: TableVersion, payload_given: bool) -> None:
    """Versions 8 and 9: the merge mode the payload class implies (`inferMergingConfigsForPreV9Table`:
    event time for `DefaultHoodieRecordPayload` and `EventTimeAvroPayload` even without an ordering
    field, which then only makes Hudi merge by commit time), with its strategy id at 8, where Hudi's
    readers refuse a payload and a strategy id of different modes. At 9 the ordering field moves to
    `hoodie.table.ordering.fields`; a payload class the writer gave is kept as the legacy payload with
    the strategy id (`inferMergingConfigsForV9TableCreation`, CASE 3), while the default one goes, the
    merge mode describing it wholly (CASE 1, as Hudi 1.1's Spark SQL records it)."""
    ordering = props.get(TableConfigKey.PRECOMBINE_FIELD.key)
    payload = props[TableConfigKey.PAYLOAD_CLASS.key]
    if payload not in BUILT_IN_PAYLOADS:
        raise UnsupportedTable(f"payload class {payload} has no merge mode to write at table version {version.number}")
    event_time = payload in EVENT_TIME_PAYLOADS
    mode = RecordMergeMode.EVENT_TIME_ORDERING if event_time else RecordMergeMode.COMMIT_TIME_ORDERING
    strategy = EVENT_TIME_MERGE_STRATEGY if event_time else COMMIT_TIME_MERGE_STRATEGY
    props[TableConfigKey.RECORD_MERGE_MODE.key] = mode.value
    if version.ordering_fields_key:
        props.pop(TableConfigKey.PAYLOAD_CLASS.key)
        if ordering:
            props[TableConfigKey.ORDERING_FIELDS.key] = props.pop(TableConfigKey.PRECOMBINE_FIELD.key)
        if payload_given:
            props[TableConfigKey.LEGACY_PAYLOAD_CLASS.key] = payload
            props[TableConfigKey.RECORD_MERGE_STRATEGY_ID.key] = strategy
    else:
        props[TableConfigKey.RECORD_MERGE_STRATEGY_ID.key] = strategy


def _now_iso() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
