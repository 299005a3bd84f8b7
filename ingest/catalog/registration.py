"""What Hudi's sync registers for a Merge-On-Read table, as plain data (no catalog client here).

`HiveSyncTool` registers a MOR table as `<table>_ro` (read optimized, `HoodieParquetInputFormat`; plain
`<table>` with `skip_ro_suffix`), `<table>_rt` (snapshot, `HoodieParquetRealtimeInputFormat`) and, since
Hudi 0.15 by default, the snapshot again as `<table>` (`table_names`). `HMSDDLExecutor.createTable`
gives each a storage descriptor at the base path with the Parquet output format and serde (serde
parameters `serialization.format=1`, and with `sync_as_datasource` the `path` and
`hoodie.query.as.ro.table` of `SparkDataSourceTableUtils.getSparkSerdeProperties`), partition keys typed
from the schema (`HiveSchemaUtil.getPartitionKeyType`), table type EXTERNAL_TABLE with `EXTERNAL=TRUE`
unless managed, and the Spark data source properties (`getSparkTableProperties`). A partition is the
table's storage descriptor at `base/partitionPath` with the extractor's values (`addPartitionsToTable`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from ingest.catalog import schema as cschema
from ingest.catalog.settings import SyncSettings
from ingest.hudi.avro.schema import AvroSchema

INPUT_FORMAT = "org.apache.hudi.hadoop.HoodieParquetInputFormat"
REALTIME_INPUT_FORMAT = "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"
OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
LAST_COMMIT_TIME_SYNC = "last_commit_time_sync"
LAST_COMMIT_COMPLETION_TIME_SYNC = "last_commit_completion_time_sync"
SUFFIX_RO, SUFFIX_RT = "_ro", "_rt"


@dataclass(frozen=True)
class TableDefinition:
    name: str
    columns: tuple[tuple[str, str], ...]
    partition_keys: tuple[tuple[str, str], ...]
    location: str
    input_format: str
    serde_parameters: Mapping[str, str]
    parameters: Mapping[str, str]
    output_format: str = OUTPUT_FORMAT
    serde: str = SERDE
    read_optimized: bool = False


@dataclass(frozen=True)
class PartitionDefinition:
    path: str                       # the partition path in the table
    values: tuple[str, ...]
    location: str


@dataclass(frozen=True)
class Registration:
    """Everything one sync makes the catalog hold, for one Hudi table."""

    database: str
    tables: tuple[TableDefinition, ...]
    partitions: tuple[PartitionDefinition, ...] = field(default=())


def qualified(url: str) -> str:
    """The table URL as Hadoop's `Path` shows a qualified one: a local path as `file:/...`."""
    if url.startswith("file://"):
        return "file:" + url[len("file://"):]
    if "://" not in url and not url.startswith("file:"):
        return "file:" + url
    return url


def table_names(settings: SyncSettings) -> list[tuple[str, bool]]:
    """(name, read optimized) of the tables a MOR table is registered as (`HiveSyncTool.initTableNameVars`,
    `doSync`): with the RO or RT strategy the table's own name alone; with ALL the read-optimized table
    (`<table>_ro`, or `<table>` with `skip_ro_suffix`), the snapshot table `<table>_rt`, and, with
    `sync_snapshot_with_table_name`, the snapshot under the table's own name too. Hudi syncs them in that
    order, so where two share a name the later one is what the catalog keeps (`updateSerdeProperties`
    also changes the input format)."""
    table = settings.table
    if settings.table_strategy != "ALL":
        return [(table, settings.table_strategy == "RO")]
    ro = table if settings.skip_ro_suffix else table + SUFFIX_RO
    synced = [(ro, True), (table + SUFFIX_RT, False)]
    if settings.snapshot_with_table_name:
        synced.append((table, False))
    last = dict(synced)
    return [(name, last[name]) for name in dict.fromkeys(name for name, _ in synced)]


def spark_table_properties(settings: SyncSettings, schema: AvroSchema) -> dict[str, str]:
    props = {"spark.sql.sources.provider": "hudi"}
    if settings.spark_version:
        props["spark.sql.create.version"] = settings.spark_version
    text = cschema.spark_schema_json(schema, settings.partition_fields)
    size = settings.schema_length_threshold
    parts = [text[i:i + size] for i in range(0, len(text), size)]
    props["spark.sql.sources.schema.numParts"] = str(len(parts))
    for i, part in enumerate(parts):
        props[f"spark.sql.sources.schema.part.{i}"] = part
    if settings.partition_fields:
        props["spark.sql.sources.schema.numPartCols"] = str(len(settings.partition_fields))
        for i, name in enumerate(settings.partition_fields):
            props[f"spark.sql.sources.schema.partCol.{i}"] = name
    return props


def table_definitions(settings: SyncSettings, base_path: str, schema: AvroSchema) -> tuple[TableDefinition, ...]:
    """The tables, from the latest commit's schema (with the meta fields unless omitted)."""
    base_path = qualified(base_path)
    storage_schema = cschema.without_meta_fields(schema) if settings.omit_metadata_fields else schema
    all_columns = cschema.columns(storage_schema, settings.support_timestamp)
    types = dict(all_columns)
    columns = tuple((n, t) for n, t in all_columns if n not in settings.partition_fields)
    keys = tuple((p, types.get(p, "string")) for p in settings.partition_fields)
    out = []
    for name, read_optimized in table_names(settings):
        serde = dict(settings.serde_properties)
        params = {} if settings.create_managed_table else {"EXTERNAL": "TRUE"}
        params.update(settings.table_properties)
        if settings.sync_as_datasource:
            serde.update({"path": base_path, "hoodie.query.as.ro.table": str(read_optimized).lower()})
            params.update(spark_table_properties(settings, storage_schema))
        serde["serialization.format"] = "1"
        out.append(TableDefinition(
            name=name, columns=columns, partition_keys=keys, location=base_path,
            input_format=INPUT_FORMAT if read_optimized else REALTIME_INPUT_FORMAT,
            serde_parameters=serde, parameters=params, read_optimized=read_optimized,
        ))
    return tuple(out)


def partition_definition(settings: SyncSettings, base_path: str, partition_path: str) -> PartitionDefinition:
    """`FSUtils.getPartitionPath(basePath, partition)` and the extractor's values."""
    base_path = qualified(base_path)
    values = settings.extractor.values(partition_path)
    if len(values) != len(settings.partition_fields):
        raise ValueError(f"partition path {partition_path!r} gives values {values} for partition fields "
                         f"{list(settings.partition_fields)}: check {settings.extractor.value}")
    location = posixpath.join(base_path.rstrip("/"), partition_path) if partition_path else base_path
    return PartitionDefinition(partition_path, tuple(values), location)
