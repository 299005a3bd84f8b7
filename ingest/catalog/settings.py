"""The sync settings under Hudi's own keys (`HoodieSyncConfig`, `HiveSyncConfigHolder`, `GlueCatalogSyncClientConfig`).

One frozen object from a flat mapping of Hudi keys, so a HoodieStreamer property file carries over.
Defaults and inference follow Hudi 0.14/0.15: the database and table from `hoodie.database.name` and
`hoodie.table.name`, the partition fields from the partition path field (`field:TYPE` forms cut to
the field), the partition value extractor from their number and hive-style partitioning
(`HoodieSyncConfig.META_SYNC_PARTITION_EXTRACTOR_CLASS`'s infer function).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from enum import Enum

from ingest.errors import ConfigError
from ingest.hudi.keygen.partition_path import java_split

HIVE_SYNC_TOOL = "org.apache.hudi.hive.HiveSyncTool"
GLUE_SYNC_TOOL = "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool"
_EXTRACTORS = "org.apache.hudi.hive."


class Catalog(str, Enum):
    HIVE = "hive"
    GLUE = "glue"


class Extractor(str, Enum):
    """`PartitionValueExtractor` implementations: how a partition path becomes partition values."""

    MULTI_PART = _EXTRACTORS + "MultiPartKeysValueExtractor"
    HIVE_STYLE = _EXTRACTORS + "HiveStylePartitionValueExtractor"
    SINGLE_PART = _EXTRACTORS + "SinglePartPartitionValueExtractor"
    NON_PARTITIONED = _EXTRACTORS + "NonPartitionedExtractor"
    SLASH_ENCODED_DAY = _EXTRACTORS + "SlashEncodedDayPartitionValueExtractor"

    def values(self, partition_path: str) -> list[str]:
        """`extractPartitionValuesInPath` of the class, as Hudi's sync runs it (and fails where it fails)."""
        if self is Extractor.NON_PARTITIONED:
            return []
        if self is Extractor.SINGLE_PART:  # one field whose path may have several folders: 2024/01/05
            return [partition_path.replace("/", "-")]
        if self is Extractor.HIVE_STYLE:
            parts = java_split(partition_path, "=")
            if len(parts) != 2:
                raise ValueError(f"Partition path {partition_path} is not in the form partition_key=partition_value.")
            return [parts[1]]
        if self is Extractor.SLASH_ENCODED_DAY:
            return [_slash_encoded_day(partition_path)]
        if partition_path == "":
            return []
        return [_multi_part_value(part) for part in java_split(partition_path, "/")]


def _multi_part_value(folder: str) -> str:
    """`MultiPartKeysValueExtractor`: a folder holding `=` must split into exactly two parts."""
    if "=" not in folder:
        return folder
    parts = java_split(folder, "=")
    if len(parts) != 2:
        raise ValueError(f"Partition Field ({folder}) not in expected format")
    return parts[1]


def _slash_encoded_day(partition_path: str) -> str:
    """`SlashEncodedDayPartitionValueExtractor`: `yyyy/mm/dd` (each maybe `name=`-prefixed) as `yyyy-MM-dd`."""
    parts = java_split(partition_path, "/")
    if len(parts) != 3:
        raise ValueError(f"Partition path {partition_path} is not in the form yyyy/mm/dd ")
    numbers = []
    for part in parts:
        text = java_split(part, "=")[1] if "=" in part else part
        if not re.fullmatch(r"[+-]?[0-9]+", text):  # Integer.parseInt
            raise ValueError(f'For input string: "{text}" (partition path {partition_path})')
        numbers.append(int(text))
    try:
        return date(*numbers).isoformat()
    except ValueError as e:  # ZonedDateTime.of
        raise ValueError(f"partition path {partition_path}: {e}") from None


TOOLS = {HIVE_SYNC_TOOL: Catalog.HIVE, GLUE_SYNC_TOOL: Catalog.GLUE}


def tool_classes(hudi: Mapping[str, object]) -> list[str]:
    """The sync tool classes named (`hoodie.meta.sync.client.tool.class`, comma-separated)."""
    raw = hudi.get(Key.TOOL) or HIVE_SYNC_TOOL
    return [t.strip() for t in str(raw).split(",") if t.strip()]


class Key:
    META_SYNC = "hoodie.datasource.meta.sync.enable"
    HIVE_SYNC = "hoodie.datasource.hive_sync.enable"
    TOOL = "hoodie.meta.sync.client.tool.class"
    MODE = "hoodie.datasource.hive_sync.mode"
    URIS = "hoodie.datasource.hive_sync.metastore.uris"
    DATABASE = "hoodie.datasource.hive_sync.database"
    TABLE = "hoodie.datasource.hive_sync.table"
    PARTITION_FIELDS = "hoodie.datasource.hive_sync.partition_fields"
    EXTRACTOR = "hoodie.datasource.hive_sync.partition_extractor_class"
    SKIP_RO_SUFFIX = "hoodie.datasource.hive_sync.skip_ro_suffix"
    TABLE_STRATEGY = "hoodie.datasource.hive_sync.table.strategy"
    SNAPSHOT_WITH_TABLE_NAME = "hoodie.meta.sync.sync_snapshot_with_table_name"
    AS_DATASOURCE = "hoodie.datasource.hive_sync.sync_as_datasource"
    SUPPORT_TIMESTAMP = "hoodie.datasource.hive_sync.support_timestamp"
    MANAGED = "hoodie.datasource.hive_sync.create_managed_table"
    OMIT_META = "hoodie.datasource.hive_sync.omit_metadata_fields"
    BATCH_NUM = "hoodie.datasource.hive_sync.batch_num"
    AUTO_CREATE_DB = "hoodie.datasource.hive_sync.auto_create_database"
    SCHEMA_THRESHOLD = "hoodie.datasource.hive_sync.schema_string_length_thresh"
    TABLE_PROPERTIES = "hoodie.datasource.hive_sync.table_properties"
    SERDE_PROPERTIES = "hoodie.datasource.hive_sync.serde_properties"
    DECODE_PARTITION = "hoodie.meta.sync.decode_partition"
    SPARK_VERSION = "hoodie.meta_sync.spark.version"
    GLUE_ENDPOINT = "hoodie.aws.glue.endpoint"
    GLUE_REGION = "hoodie.aws.glue.region"
    AWS_ACCESS_KEY = "hoodie.aws.access.key"
    AWS_SECRET_KEY = "hoodie.aws.secret.key"
    AWS_SESSION_TOKEN = "hoodie.aws.session.token"
    GLUE_SKIP_TABLE_ARCHIVE = "hoodie.datasource.meta.sync.glue.skip_table_archive"
    GLUE_CATALOG_ID = "hoodie.datasource.meta.sync.glue.catalogId"


def _bool(value: object) -> bool:
    return str(value).strip().lower() == "true"


TABLE_STRATEGIES = ("ALL", "RO", "RT")


def _strategy(value: object) -> str:
    """`HoodieSyncTableStrategy.valueOf` of the upper-cased setting, as `HiveSyncTool.initTableNameVars` reads it."""
    strategy = str(value).strip().upper()
    if strategy not in TABLE_STRATEGIES:
        raise ConfigError(f"{value!r} is not one of {', '.join(TABLE_STRATEGIES)}", key=Key.TABLE_STRATEGY)
    return strategy


def _properties(text: str | None) -> dict[str, str]:
    """`ConfigUtils.toMap`: `k=v` entries, one per line."""
    out = {}
    for line in (text or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


@dataclass(frozen=True)
class SyncSettings:
    catalogs: tuple[Catalog, ...]
    database: str
    table: str
    partition_fields: tuple[str, ...]
    extractor: Extractor
    metastore_uris: str = "thrift://localhost:9083"
    skip_ro_suffix: bool = False
    table_strategy: str = "ALL"         # HoodieSyncTableStrategy: ALL, RO or RT
    snapshot_with_table_name: bool = True  # HoodieSyncConfig's default since Hudi 0.15 (0.14: false)
    sync_as_datasource: bool = True
    support_timestamp: bool = False
    create_managed_table: bool = False
    omit_metadata_fields: bool = False
    batch_num: int = 1000
    auto_create_database: bool = True
    schema_length_threshold: int = 4000
    decode_partition: bool = False
    spark_version: str | None = None
    table_properties: Mapping[str, str] = field(default_factory=dict)
    serde_properties: Mapping[str, str] = field(default_factory=dict)
    glue_endpoint: str | None = None
    glue_region: str | None = None
    glue_catalog_id: str | None = None
    glue_skip_table_archive: bool = True
    aws_credentials: Mapping[str, str] = field(default_factory=dict, repr=False)
    failures_allowed: int = 3           # consecutive failed syncs a job tolerates (ingest's own setting)

    @property
    def enabled(self) -> bool:
        return bool(self.catalogs)

    @classmethod
    def from_hudi(cls, hudi: Mapping[str, object], failures_allowed: int = 3) -> SyncSettings:
        """From Hudi-named settings (a pipeline's `hudi:` section with the table's name filled in)."""
        def get(name: str, default: object = None) -> object:
            value = hudi.get(name)
            return default if value is None or value == "" else value

        enabled = _bool(get(Key.META_SYNC, False)) or _bool(get(Key.HIVE_SYNC, False))
        catalogs: tuple[Catalog, ...] = ()
        if enabled:
            catalogs = tuple(TOOLS[t] for t in tool_classes(hudi))
        raw_fields = get(Key.PARTITION_FIELDS) or get("hoodie.datasource.write.partitionpath.field") or ""
        fields_ = tuple(f.strip().split(":", 1)[0] for f in str(raw_fields).split(",") if f.strip())
        extractor = get(Key.EXTRACTOR)
        if extractor is None:
            hive_style = _bool(get("hoodie.datasource.write.hive_style_partitioning", False))
            if not fields_:
                extractor = Extractor.NON_PARTITIONED
            elif len(fields_) == 1:
                extractor = Extractor.HIVE_STYLE if hive_style else Extractor.SINGLE_PART
            else:
                extractor = Extractor.MULTI_PART
        credentials = {k: str(get(name)) for k, name in (("aws_access_key_id", Key.AWS_ACCESS_KEY),
                                                           ("aws_secret_access_key", Key.AWS_SECRET_KEY),
                                                           ("aws_session_token", Key.AWS_SESSION_TOKEN))
                       if get(name) is not None}
        return cls(
            catalogs=catalogs,
            database=str(get(Key.DATABASE) or get("hoodie.database.name") or "default"),
            table=str(get(Key.TABLE) or get("hoodie.table.name") or "unknown"),
            partition_fields=fields_,
            extractor=Extractor(extractor),
            metastore_uris=str(get(Key.URIS, "thrift://localhost:9083")),
            skip_ro_suffix=_bool(get(Key.SKIP_RO_SUFFIX, False)),
            table_strategy=_strategy(get(Key.TABLE_STRATEGY, "ALL")),
            snapshot_with_table_name=_bool(get(Key.SNAPSHOT_WITH_TABLE_NAME, True)),
            sync_as_datasource=_bool(get(Key.AS_DATASOURCE, True)),
            support_timestamp=_bool(get(Key.SUPPORT_TIMESTAMP, False)),
            create_managed_table=_bool(get(Key.MANAGED, False)),
            omit_metadata_fields=_bool(get(Key.OMIT_META, False)),
            batch_num=int(get(Key.BATCH_NUM, 1000)),
            auto_create_database=_bool(get(Key.AUTO_CREATE_DB, True)),
            schema_length_threshold=int(get(Key.SCHEMA_THRESHOLD, 4000)),
            decode_partition=_bool(get(Key.DECODE_PARTITION, False)),
            spark_version=get(Key.SPARK_VERSION),
            table_properties=_properties(get(Key.TABLE_PROPERTIES)),
            serde_properties=_properties(get(Key.SERDE_PROPERTIES)),
            glue_endpoint=get(Key.GLUE_ENDPOINT),
            glue_region=get(Key.GLUE_REGION),
            glue_catalog_id=get(Key.GLUE_CATALOG_ID),
            glue_skip_table_archive=_bool(get(Key.GLUE_SKIP_TABLE_ARCHIVE, True)),
            aws_credentials=credentials,
            failures_allowed=failures_allowed,
        )
