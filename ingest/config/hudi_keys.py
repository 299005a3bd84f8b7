"""Hudi keys ingest does not read, classified: irrelevant to a Python writer, or refused.

Hudi's writers take hundreds of `hoodie.*` keys (HoodieWriteConfig, HoodieTableConfig,
HoodieMetadataConfig, HoodieIndexConfig, HoodieCompactionConfig, HoodieCleanConfig,
HoodieArchivalConfig, HoodieStorageConfig, HoodiePayloadConfig, HoodieLockConfig,
KeyGeneratorOptions, DataSourceWriteOptions, HoodieSyncConfig / HiveSyncConfig). A key the
registry (`ingest.config.keys`) lists is honoured. Of the others, most tune Hudi's own engine
(parallelism, caching, timeline server, marker types, ...): they are kept and warned about, so
HoodieStreamer property files load. The keys below would change what is written or what the table
promises (its version, format, layout, concurrency guarantees, catalog entry); ingest does not
honour them, so a value other than what ingest does is refused, naming what ingest does instead.

This module is data, read by the loader and rendered into docs/configuration.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ingest.hudi.config.table_version import WRITABLE_VERSIONS, TableVersion

# Table versions ingest writes (`ingest.hudi.config.table_version` decides), as configuration values.
WRITABLE_TABLE_VERSIONS: tuple[str, ...] = tuple(str(v) for v in WRITABLE_VERSIONS)


@dataclass(frozen=True)
class Refused:
    """A key ingest does not honour. `allowed`: the values that say what ingest does anyway (those
    are accepted); empty when every value is refused. `instead`: what ingest does."""

    instead: str
    allowed: tuple[str, ...] = ()
    source: str = ""  # the Hudi class that defines the key


def _refused(source: str, instead: str, *allowed: str) -> Refused:
    return Refused(instead, tuple(allowed), source)


# Timeline layout 1 goes with table version 6, layout 2 with versions 8 and 9.
_LAYOUTS = tuple(sorted({str(TableVersion.of(v).timeline_layout) for v in WRITABLE_VERSIONS}))
_VERSION = ("ingest writes table version " + ", ".join(
    f"{v} ({TableVersion.of(v).hudi_releases})" for v in WRITABLE_VERSIONS) + "; an existing table keeps its own")

REFUSED: Mapping[str, Refused] = {
    # -- HoodieWriteConfig ------------------------------------------------------------------------
    "hoodie.write.auto.upgrade": _refused("HoodieWriteConfig", "ingest never upgrades a table; it writes each "
                                          "table at its own version", "false"),
    "hoodie.avro.schema": _refused("HoodieWriteConfig", "the written schema is the source's: source.schema or "
                                   "source.schema_file"),
    "hoodie.combine.before.upsert": _refused("HoodieWriteConfig", "upserts are always pre-combined by key", "true"),
    "hoodie.schema.on.read.enable": _refused("HoodieCommonConfig", "schemas evolve by Avro resolution; no "
                                             "internal schema is written", "false"),
    "hoodie.datasource.write.reconcile.schema": _refused("HoodieCommonConfig", "incoming schemas are checked "
                                                         "against the table's, never reconciled", "false"),
    "hoodie.datasource.write.record.merger.impls": _refused(
        "HoodieWriteConfig", "records merge by hoodie.datasource.write.payload.class",
        "org.apache.hudi.common.model.HoodieAvroRecordMerger"),
    "hoodie.write.record.merge.mode": _refused("HoodieWriteConfig", "records merge by "
                                               "hoodie.datasource.write.payload.class"),
    # KeyGeneratorOptions.SLASH_SEPARATED_DATE_PARTITIONING (Hudi 1.2): `2024-03-15` written as `2024/03/15`.
    "hoodie.datasource.write.slash.separated.date.partitioning": _refused(
        "KeyGeneratorOptions", "a partition value is written as one folder (2024-03-15)", "false"),
    "hoodie.datasource.write.partitions.to.delete": _refused("DataSourceWriteOptions", "deleting partitions is "
                                                             "not supported; delete their records"),
    # -- HoodieTableConfig ------------------------------------------------------------------------
    "hoodie.table.version": _refused("HoodieTableConfig", _VERSION, *WRITABLE_TABLE_VERSIONS),
    "hoodie.timeline.layout.version": _refused("HoodieTableConfig", "ingest writes the timeline layout of the table "
                                               "version", *_LAYOUTS),
    "hoodie.table.timeline.timezone": _refused("HoodieTableConfig", "instant times are UTC", "UTC"),
    "hoodie.table.log.file.format": _refused("HoodieTableConfig", "log files are Hudi's log format", "HOODIE_LOG"),
    "hoodie.archivelog.folder": _refused("HoodieTableConfig", "the archive is .hoodie/archived", "archived"),
    "hoodie.table.cdc.enabled": _refused("HoodieTableConfig", "no change-data-capture log is written", "false"),
    "hoodie.partition.metafile.use.base.format": _refused("HoodieTableConfig", "partition metafiles are "
                                                          ".hoodie_partition_metadata text files", "false"),
    "hoodie.table.recordkey.fields": _refused("HoodieTableConfig", "give it as "
                                              "hoodie.datasource.write.recordkey.field"),
    "hoodie.table.partition.fields": _refused("HoodieTableConfig", "give it as "
                                              "hoodie.datasource.write.partitionpath.field"),
    "hoodie.table.keygenerator.class": _refused("HoodieTableConfig", "give it as "
                                                "hoodie.datasource.write.keygenerator.class"),
    "hoodie.bootstrap.base.path": _refused("HoodieTableConfig", "bootstrapping from existing files is not "
                                           "supported; backfill them (ingest backfill)"),
    "hoodie.table.metadata.partitions": _refused("HoodieTableConfig", "ingest does not maintain the metadata table"),
    # -- HoodieMetadataConfig ---------------------------------------------------------------------
    "hoodie.metadata.record.index.enable": _refused("HoodieMetadataConfig", "ingest does not maintain the "
                                                    "metadata table; RECORD_INDEX uses ingest's key index", "false"),
    "hoodie.metadata.index.column.stats.enable": _refused("HoodieMetadataConfig", "ingest does not maintain the "
                                                          "metadata table", "false"),
    "hoodie.metadata.index.bloom.filter.enable": _refused("HoodieMetadataConfig", "ingest does not maintain the "
                                                          "metadata table", "false"),
    # -- HoodieIndexConfig ------------------------------------------------------------------------
    "hoodie.simple.index.update.partition.path": _refused("HoodieIndexConfig", "a global key index moves a record "
                                                          "whose partition changes", "true"),
    "hoodie.bloom.index.update.partition.path": _refused("HoodieIndexConfig", "a global key index moves a record "
                                                         "whose partition changes", "true"),
    # NumBucketsFunction: a partition's own bucket count from these; ingest hashes every key into
    # hoodie.bucket.index.num.buckets.
    "hoodie.bucket.index.partition.expressions": _refused("HoodieIndexConfig", "every partition has "
                                                          "hoodie.bucket.index.num.buckets buckets"),
    "hoodie.bucket.index.partition.rule.type": _refused("HoodieIndexConfig", "every partition has "
                                                        "hoodie.bucket.index.num.buckets buckets", "regex"),
    # -- HoodieStorageConfig ----------------------------------------------------------------------
    "hoodie.logfile.data.block.format": _refused("HoodieStorageConfig", "log data blocks are Avro", "avro"),
    "hoodie.parquet.outputtimestamptype": _refused("HoodieStorageConfig", "parquet timestamps are "
                                                   "TIMESTAMP_MICROS", "TIMESTAMP_MICROS"),
    "hoodie.parquet.writelegacyformat.enabled": _refused("HoodieStorageConfig", "parquet is written in its "
                                                         "current format (int-based decimals)", "false"),
    # -- HoodiePayloadConfig ----------------------------------------------------------------------
    "hoodie.payload.ordering.field": _refused("HoodiePayloadConfig", "give the ordering field as "
                                              "hoodie.datasource.write.precombine.field"),
    # DefaultHoodieRecordPayload.isDeleteRecord: a record whose field holds the marker is a delete.
    "hoodie.payload.delete.field": _refused("HoodiePayloadConfig", "deletes are marked by a boolean column: "
                                            "_hoodie_is_deleted or write.delete_flag_column"),
    "hoodie.payload.delete.marker": _refused("HoodiePayloadConfig", "deletes are marked by a boolean column: "
                                             "_hoodie_is_deleted or write.delete_flag_column"),
}


# Hudi keys known to be irrelevant to a Python writer, by family: kept and warned about as unused.
# Keys of these families that the registry lists are read, and those refused above are refused; every
# other `hoodie.*` key is treated as these are.
IRRELEVANT: Mapping[str, str] = {
    "hoodie.*.shuffle.parallelism, hoodie.*.index.parallelism, hoodie.finalize.write.parallelism":
        "Spark parallelism of Hudi's own jobs (HoodieWriteConfig, HoodieIndexConfig)",
    "hoodie.embed.timeline.server*, hoodie.filesystem.view.*":
        "Hudi's timeline server and file-system view cache (HoodieWriteConfig, FileSystemViewStorageConfig)",
    "hoodie.write.markers.*, hoodie.markers.*": "how Hudi's writers track markers (HoodieWriteConfig)",
    "hoodie.consistency.check.*, hoodie.auto.commit, hoodie.fail.on.timeline.archiving":
        "checks and commit steps of Hudi's write client (HoodieWriteConfig)",
    "hoodie.bloom.index.*, hoodie.simple.index.*, hoodie.global.simple.index.*, hoodie.index.bloom.*":
        "tuning of Hudi's index lookups; ingest's key index sizes itself (HoodieIndexConfig)",
    "hoodie.parquet.small.file.limit, hoodie.copyonwrite.*, hoodie.record.size.estimation.*":
        "Hudi's insert sizing; inserts are sized by write.file_group_max_bytes (HoodieCompactionConfig)",
    "hoodie.parquet.block.size, hoodie.parquet.page.size, hoodie.parquet.compression.ratio, "
    "hoodie.parquet.dictionary.enabled, hoodie.logfile.data.block.max.size, hoodie.orc.*, hoodie.hfile.*":
        "file layout details every reader reads either way (HoodieStorageConfig)",
    "hoodie.memory.*, hoodie.compaction.lazy.block.read, hoodie.compaction.reverse.log.read":
        "memory and read strategy of Hudi's merges (HoodieMemoryConfig, HoodieCompactionConfig)",
    "hoodie.clean.async, hoodie.archive.async":
        "how Hudi schedules its table services; ingest runs them inline (HoodieCleanConfig, HoodieArchivalConfig)",
    "hoodie.write.lock.*": "settings of Hudi's lock manager and of its other lock providers (ZooKeeper, DynamoDB, "
                           "Hive); the file-system provider's are read, the others are refused (HoodieLockConfig)",
    "hoodie.metadata.*": "settings of the metadata table, which ingest does not maintain; its index switches are "
                         "refused (HoodieMetadataConfig)",
    "hoodie.datasource.write.streaming.*, hoodie.datasource.write.row.writer.enable, hoodie.bulkinsert.*":
        "how Hudi's Spark writer runs (DataSourceWriteOptions)",
    "hoodie.metrics.*, hoodie.write.commit.callback.*": "Hudi's metrics reporters and commit callbacks",
    "hoodie.streamer.*, hoodie.deltastreamer.*": "HoodieStreamer's own settings (source classes, checkpoints)",
}


def refusal(name: str, value: str) -> Refused | None:
    """Why `name` (a `hoodie.*` key the registry does not list) is refused with `value`, if it is."""
    rule = REFUSED.get(name)
    if rule is None:
        return None
    if any(value.strip().lower() == allowed.lower() for allowed in rule.allowed):
        return None
    return rule


def is_honoured_value(name: str, value: str) -> bool:
    """True when a refused key is given the value that says what ingest does (no warning then)."""
    rule = REFUSED.get(name)
    return rule is not None and refusal(name, value) is None


def irrelevant_table() -> str:
    """docs/configuration.md's table of the families kept with a warning."""
    rows = ["| Hudi keys | Why ingest does not need them |", "| --- | --- |"]
    rows += [f"| {', '.join(f'`{k.strip()}`' for k in keys.split(', '))} | {why} |" for keys, why in IRRELEVANT.items()]
    return "\n".join(rows)


def reference_table() -> str:
    """docs/configuration.md's table of refused keys."""
    rows = ["| Hudi key | Defined in | Accepted values | What ingest does instead |", "| --- | --- | --- | --- |"]
    for name, rule in sorted(REFUSED.items()):
        accepted = ", ".join(f"`{v}`" for v in rule.allowed) or "none"
        rows.append(f"| `{name}` | {rule.source} | {accepted} | {rule.instead} |")
    return "\n".join(rows)
