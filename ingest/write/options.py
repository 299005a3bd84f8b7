"""What a writer is told: the table, how keys and partitions are computed, and how to write.

Settings Hudi names keep Hudi's keys (`hudi` mapping: `hoodie.datasource.write.recordkey.field`,
...), so people can bring their HoodieStreamer properties over; the rest are ingest's own. This is the
typed form the pipeline configuration (`ingest.config`) builds and the sink and jobs consume.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property
from typing import Any

from ingest.errors import ConfigError
from ingest.hudi.config.table_config import TableConfig, TableConfigKey
from ingest.hudi.config.table_version import DEFAULT_WRITE_VERSION, TableVersion
from ingest.hudi.keygen.bucket_index import bucket_index_write_config, hash_fields_from_config
from ingest.hudi.keygen.key_generator import (
    BARE_KEYS_REFUSED,
    COMPLEX_NEW_ENCODING,
    KeyGeneratorSpec,
    complex_key_encoding,
)
from ingest.hudi.table.lock_provider import lazy_failed_writes
from ingest.hudi.timeline.heartbeat import HeartbeatSettings
from ingest.write.file_group_writer import InsertMode

RECORD_KEY_FIELD = "hoodie.datasource.write.recordkey.field"
PARTITION_PATH_FIELD = "hoodie.datasource.write.partitionpath.field"
PRECOMBINE_FIELD = "hoodie.datasource.write.precombine.field"
PAYLOAD_CLASS = "hoodie.datasource.write.payload.class"
OPERATION = "hoodie.datasource.write.operation"
TABLE_NAME = "hoodie.table.name"
DATABASE_NAME = "hoodie.database.name"
IS_DELETED = "_hoodie_is_deleted"
WRITE_TABLE_VERSION = "hoodie.write.table.version"
STREAMING_RETRY_COUNT = "hoodie.datasource.write.streaming.retry.count"
STREAMING_RETRY_INTERVAL = "hoodie.datasource.write.streaming.retry.interval.ms"


class Operation(str, Enum):
    UPSERT = "upsert"
    INSERT = "insert"
    BULK_INSERT = "bulk_insert"
    DELETE = "delete"


class IndexType(str, Enum):
    BUCKET = "bucket"
    KEY = "key"

    @property
    def can_index_log_files(self) -> bool:
        """Hudi's `HoodieIndex.canIndexLogFiles`: only the bucket index finds keys whose only copy is in a
        log file. SIMPLE, BLOOM, their GLOBAL_ forms and RECORD_INDEX (which the key index stands for)
        look keys up in base files, so new keys must land in base files for Hudi's writers to see them."""
        return self is IndexType.BUCKET


@dataclass(frozen=True)
class IndexOptions:
    """How records find their file group.

    `bucket`: Hudi's bucket index (hash of the key modulo `bucket_count`, per partition); Hudi's own
    writers can continue such a table. `key`: the persisted record-key index, per partition or
    global (`global_scope`: a key that changes partition moves), sharded into `shards` pieces.
    """

    type: IndexType = IndexType.BUCKET
    bucket_count: int = 4
    hash_fields: tuple[str, ...] = ()
    global_scope: bool = False
    shards: int = 8

    def __post_init__(self) -> None:
        if self.bucket_count < 1:
            raise ConfigError(f"must be at least 1, got {self.bucket_count}", key="hoodie.bucket.index.num.buckets")
        if self.shards < 1:
            raise ConfigError(f"must be at least 1, got {self.shards}", key="index.shards")
        if self.type is IndexType.BUCKET and self.global_scope:
            raise ConfigError("the bucket index is per partition; a global index is GLOBAL_SIMPLE, GLOBAL_BLOOM or RECORD_INDEX",
                              key="index.global")


@dataclass(frozen=True)
class BatchRetry:
    """How often a failed micro-batch is written again, as Hudi's streaming sink does it
    (`HoodieStreamingSink.retry`): `attempts` in all (`hoodie.datasource.write.streaming.retry.count`),
    the first pause `interval_ms` (`...streaming.retry.interval.ms`), doubled after each failure.
    Only a batch with a checkpoint id is retried, so an attempt that did commit is recognised and
    skipped rather than written twice."""

    attempts: int = 3
    interval_ms: int = 2000

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigError(f"must be at least 1, got {self.attempts}", key=STREAMING_RETRY_COUNT)
        if self.interval_ms < 0:
            raise ConfigError(f"must be at least 0, got {self.interval_ms}", key=STREAMING_RETRY_INTERVAL)

    def pause(self, failures: int) -> float:
        """Seconds to wait after the `failures`-th failed attempt."""
        return self.interval_ms / 1000.0 * 2 ** (failures - 1)


@dataclass(frozen=True)
class SmallFileOptions:
    """Hudi's insert sizing for indexes that cannot index log files (`UpsertPartitioner`,
    `SparkUpsertDeltaCommitPartitioner`), with Hudi 0.14/0.15's defaults.

    `small_file_limit` (`hoodie.parquet.small.file.limit`): a base-only file slice smaller than this
    takes new keys, rewritten with them; 0 turns that off. `candidates` (`hoodie.merge.small.file.group.
    candidates.limit`): how many such slices per partition, smallest first. `record_size_estimate`
    (`hoodie.copyonwrite.record.size.estimate`): bytes per record until a commit or compaction wrote more
    than `estimation_threshold` x `small_file_limit` bytes. `insert_split_size` (`hoodie.copyonwrite.
    insert.split.size`): records per new file group unless `auto_split` (`hoodie.copyonwrite.insert.
    auto.split`) sizes them to the max file size.
    """

    small_file_limit: int = 104_857_600
    candidates: int = 1
    record_size_estimate: int = 1024
    estimation_threshold: float = 1.0
    insert_split_size: int = 500_000
    auto_split: bool = True


@dataclass(frozen=True)
class WriteOptions:
    table_path: str
    table_name: str
    hudi: Mapping[str, str] = field(default_factory=dict)
    operation: Operation = Operation.UPSERT
    index: IndexOptions = IndexOptions()
    insert_mode: InsertMode | None = None   # None: log for the bucket index, base for the others
    file_group_max_bytes: int = 120 * 1024 * 1024   # Hudi's hoodie.parquet.max.file.size for inserts
    small_files: SmallFileOptions = SmallFileOptions()
    log_file_max_bytes: int = 1024 * 1024 * 1024
    log_block_max_bytes: int = 256 * 1024 * 1024
    delete_flag_column: str | None = None
    checkpoint_id: str = "default_single_writer"
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    parquet_compression: str = "snappy"
    jvm_timezone: str = "UTC"
    lock_expiry_seconds: float = 60.0
    lock_wait_seconds: float = 0.0  # how long a commit waits for the lease another writer holds
    # Column names Avro refuses are renamed with this mask (HoodieStreamer's sanitizing); None refuses them.
    invalid_name_mask: str | None = None
    heartbeat: HeartbeatSettings = HeartbeatSettings()  # of each instant in flight (`ingest.hudi.timeline.heartbeat`)
    batch_retry: BatchRetry = BatchRetry()  # the sink's retries of a failed micro-batch
    # Fields added to nested records are accepted (`avro.evolve`): hudi-rs cannot read the older log blocks.
    nested_field_additions: bool = False
    # The version of the existing table these options write (`for_table`); None before it is known.
    existing_version: TableVersion | None = None

    def __post_init__(self) -> None:
        if self.insert_mode is None:
            mode = InsertMode.LOG if self.index.type.can_index_log_files else InsertMode.BASE
        else:
            mode = InsertMode(self.insert_mode)
        object.__setattr__(self, "insert_mode", mode)
        if mode is InsertMode.LOG and not self.index.type.can_index_log_files:
            raise ConfigError(f"'log' needs an index that can index log files (BUCKET); index type "
                              f"'{self.index.type.value}' finds keys in base files only, so use 'base'",
                              key="write.insert_mode")

    @cached_property
    def keygen(self) -> KeyGeneratorSpec:
        spec = KeyGeneratorSpec.from_config(self.hudi, jvm_timezone=self.jvm_timezone)
        if spec.bare_complex_keys and not (self.existing_version or self.table_version).complex_key_form_chosen:
            raise ConfigError(BARE_KEYS_REFUSED, key=COMPLEX_NEW_ENCODING)
        return spec

    @property
    def keyed_fields(self) -> frozenset[str]:
        """The fields (dotted when nested) record keys, partition paths and bucket hashes are made of."""
        spec = self.keygen
        return frozenset([*spec.record_key_fields, *(f.name for f in spec.partition_fields), *self.hash_fields])

    @property
    def lazy_failed_writes(self) -> bool:
        """Other writers may be running: a pending write is rolled back only once its heartbeat expired."""
        return lazy_failed_writes(self.hudi)

    @property
    def precombine_field(self) -> str | None:
        return self.hudi.get(PRECOMBINE_FIELD) or None

    @property
    def table_version(self) -> TableVersion:
        """The version a table these options create gets (an existing table keeps its own)."""
        raw = self.hudi.get(WRITE_TABLE_VERSION)
        return TableVersion.of(raw) if raw else DEFAULT_WRITE_VERSION

    @property
    def hash_fields(self) -> tuple[str, ...]:
        if self.index.hash_fields:
            return self.index.hash_fields
        return hash_fields_from_config(self.hudi.get(RECORD_KEY_FIELD, ""))

    def table_settings(self) -> dict[str, str]:
        """The `hoodie.properties` entries a table written with these options must carry."""
        settings = {
            TableConfigKey.NAME.key: self.table_name,
            TableConfigKey.DATABASE_NAME.key: self.hudi.get(DATABASE_NAME, "default"),
        }
        version = self.existing_version or self.table_version
        settings.update(self.keygen.table_properties(typed_partition_fields=version.typed_custom_partition_fields))
        if self.table_version.merge_mode_in_properties:
            settings[TableConfigKey.KEY_GENERATOR_TYPE.key] = self.keygen.kind.value
        if self.precombine_field:
            settings[TableConfigKey.PRECOMBINE_FIELD.key] = self.precombine_field
        payload = self.hudi.get(PAYLOAD_CLASS) or self.hudi.get(TableConfigKey.PAYLOAD_CLASS.key)
        if payload:
            settings[TableConfigKey.PAYLOAD_CLASS.key] = payload
        if self.index.type is IndexType.BUCKET:
            # Not read by Hudi from hoodie.properties in table version 6, but recorded so every tool
            # and person can see what Hudi's own writers must be given to continue this table.
            settings.update(bucket_index_write_config(
                self.index.bucket_count, self.hudi.get(RECORD_KEY_FIELD, ""), ",".join(self.hash_fields) or None,
            ))
        return {k: v for k, v in settings.items() if v is not None and v != ""}

    def for_table(self, table_props: Mapping[str, str]) -> WriteOptions:
        """These options as a writer of the existing table `table_props` describes: its version kept as
        `existing_version` (the key form follows it, not `hoodie.write.table.version`, which is for new
        tables), and the key form that version fixes, else the one the table records where the config
        gives none (raises ConfigError if neither says; UnsupportedTable for a version ingest does not
        know, which callers refuse before)."""
        version = TableConfig(table_props).table_version
        encoding = complex_key_encoding(table_props, self.hudi, chosen_by_writer=version.complex_key_form_chosen)
        hudi = self.hudi if encoding is None else {**self.hudi, COMPLEX_NEW_ENCODING: encoding}
        if hudi == self.hudi and self.existing_version is version:
            return self
        return replace(self, hudi=hudi, existing_version=version)

    def identity_settings(self) -> dict[str, str]:
        """Settings that must agree with an existing table's (they define what a record is)."""
        keys = {
            TableConfigKey.RECORD_KEY_FIELDS.key, TableConfigKey.PARTITION_FIELDS.key,
            TableConfigKey.PRECOMBINE_FIELD.key, TableConfigKey.KEY_GENERATOR_CLASS.key,
            TableConfigKey.HIVE_STYLE_PARTITIONING.key, TableConfigKey.URL_ENCODE_PARTITIONING.key,
            TableConfigKey.PAYLOAD_CLASS.key, TableConfigKey.NAME.key, COMPLEX_NEW_ENCODING,
        }
        return {k: v for k, v in self.table_settings().items() if k in keys}
