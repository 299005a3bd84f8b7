"""The driver's plan for one commit: small, picklable, sent to every write task.

It says, for this instant, where each existing file group's next log blocks go (its latest slice,
or the slice a pending compaction opened; from table version 8 on, a new log file named with this
instant, which the file system view slices by completion time), which bucket maps to which file group, which instants make
key-index segments visible, and, for indexes that cannot index log files, which small base files take
new keys (Hudi's `SparkUpsertDeltaCommitPartitioner.getSmallFileCandidates`) and how many records a
file holds (`UpsertPartitioner.averageBytesPerRecord`); which file groups a pending clustering will
replace, so that no row goes into them (`clustering_plan`). Executors decide nothing the plan does not
allow, so every task attempt writes the same files.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from ingest.errors import ConfigError
from ingest.hudi.avro import schema as avro
from ingest.hudi.config.table_config import TableConfig
from ingest.hudi.keygen.bucket_index import INDEX_TYPE as BUCKET_INDEX_TYPE
from ingest.hudi.keygen.bucket_index import NUM_BUCKETS as BUCKET_COUNT_KEY
from ingest.hudi.keygen.bucket_index import bucket_id_from_file_id, new_bucket_file_id
from ingest.hudi.parquet.base_file import BaseFileOptions
from ingest.hudi.services.clustering_plan import pending_clustering_groups
from ingest.hudi.services.compaction_plan import pending_plans
from ingest.hudi.table import markers
from ingest.hudi.table.file_system_view import FileSlice
from ingest.hudi.timeline.instant import Action
from ingest.index.key_state import KeyStateStore, visibility
from ingest.storage import Storage
from ingest.write.commit import Transaction
from ingest.write.file_group_writer import FileGroupTarget, WriteContext
from ingest.write.options import IndexType, Operation, WriteOptions

_FILE_ID_NAMESPACE = uuid.UUID("6f1d3c0e-8a52-4b8e-9d6c-3d2f0f6b7a11")
DEFAULT_RECORD_BYTES = 1024


@dataclass(frozen=True)
class WritePlan:
    write: WriteContext
    index_type: IndexType
    bucket_count: int
    hash_fields: tuple[str, ...]
    shards: int
    global_scope: bool
    ordering_field: str | None
    event_time: bool
    ordering_type: pa.DataType | None
    targets: Mapping[tuple[str, str], FileGroupTarget] = field(default_factory=dict)
    buckets: Mapping[tuple[str, int], str] = field(default_factory=dict)
    partitions: tuple[str, ...] = ()
    visible_instants: frozenset[str] = frozenset()
    timeline_start: str | None = None
    small_files: Mapping[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    record_bytes: int = DEFAULT_RECORD_BYTES
    file_group_max_bytes: int = 120 * 1024 * 1024
    insert_split: int = 0   # records per new file group; 0: file_group_max_bytes // record_bytes
    bucket_cut_1x: bool = False  # bucket hash values cut from keys as Hudi 1.x cuts them (`TableVersion`)
    # File groups a pending clustering will replace, and its instant: no write may touch them.
    clustering: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @property
    def storage(self) -> Storage:
        return self.write.storage

    @property
    def instant(self) -> str:
        return self.write.instant

    def key_state(self) -> KeyStateStore:
        return KeyStateStore(self.storage, self.ordering_type, self.global_scope)

    def is_visible(self, instant: str) -> bool:
        return visibility(self.visible_instants, self.timeline_start)(instant)

    def planned_sizes(self) -> dict[str, int]:
        """Sizes of the log files writers may append to, as planned (for reconciliation)."""
        return {t.path(t.latest_log): t.latest_log_size for t in self.targets.values() if t.latest_log}

    def target(self, partition: str, file_id: str) -> FileGroupTarget:
        return self.targets.get((partition, file_id)) or FileGroupTarget(partition, file_id)

    def bucket_file_id(self, partition: str, bucket: int) -> str:
        """The bucket's file group; a new bucket's id is derived from the instant, so every attempt agrees."""
        existing = self.buckets.get((partition, bucket))
        if existing:
            return existing
        seed = uuid.uuid5(_FILE_ID_NAMESPACE, f"{partition}\x00{bucket}\x00{self.instant}")
        return new_bucket_file_id(bucket, str(seed))

    def new_file_id(self, partition: str, index: int) -> str:
        seed = uuid.uuid5(_FILE_ID_NAMESPACE, f"{partition}\x00new\x00{index}\x00{self.instant}")
        return f"{seed}-0"


def pending_compaction_groups(txn: Transaction) -> dict[tuple[str, str], str]:
    """(partition, file id) -> instant of the pending compaction that covers the file group."""
    plans = pending_plans(txn.table.storage, txn.timeline)
    return {group: instant for instant, plan in plans.items() for group in plan.file_groups}


def _ordering_type(schema: avro.AvroSchema, ordering_field: str | None) -> pa.DataType | None:
    if ordering_field is None:
        return None
    for f in schema["fields"]:
        if f["name"] == ordering_field:
            return avro.avro_field_to_arrow(f).type
    return None


def index_type_mismatch(config: TableConfig, slices: Iterable[FileSlice], index_type: IndexType) -> str | None:
    """Why the table cannot be continued with `index_type`, or None.

    A bucket-indexed table names its file groups by bucket (`BucketIdentifier.bucketIdFromFileId`
    reads the number from the first 8 characters) and records `hoodie.index.type=BUCKET`; a key
    index would add file groups no bucket writer can find, and a bucket index cannot find a key
    index's file groups. Both are refused before anything is written, in the settings' words.
    """
    recorded = config.props.get(BUCKET_INDEX_TYPE)
    if index_type is not IndexType.BUCKET:
        if recorded == "BUCKET":
            return (f"the table records {BUCKET_INDEX_TYPE}=BUCKET (its file groups are buckets); "
                    "continue it with BUCKET")
        return None
    for slice_ in slices:
        try:
            bucket_id_from_file_id(slice_.file_id)
        except ValueError:
            return (f"file group {slice_.file_id} in partition '{slice_.partition_path}' was not written by a "
                    f"bucket index; continue this table with SIMPLE (or another {BUCKET_INDEX_TYPE} but BUCKET)")
    return None


def bucket_count_mismatch(slices: Iterable[FileSlice], bucket_count: int) -> str | None:
    """Why a bucket-indexed table cannot be continued with `bucket_count` buckets, or None: a file group
    numbered at or past it tells the table was written with more (Hudi does not record the count), and
    keys would go to other buckets than Hudi's writers send them to (`BucketIdentifier.getBucketId`)."""
    for slice_ in slices:
        try:
            bucket = bucket_id_from_file_id(slice_.file_id)
        except ValueError:
            continue  # `index_type_mismatch` names it
        if bucket >= bucket_count:
            return (f"file group {slice_.file_id} in partition '{slice_.partition_path}' is bucket {bucket}: the "
                    f"table has more buckets than {bucket_count}; set {BUCKET_COUNT_KEY} to the count it was "
                    "written with")
    return None


def build_plan(txn: Transaction, options: WriteOptions) -> WritePlan:
    storage = txn.table.storage
    config = txn.table.config
    ordering_field = config.precombine_field or options.precombine_field
    by_writer = txn.table.version.log_files_by_writer
    compactions = pending_compaction_groups(txn)
    clustering = pending_clustering_groups(storage, txn.timeline)
    slices = txn.view.latest_writer_slices()
    mismatch = index_type_mismatch(config, slices, options.index.type)
    if mismatch:
        raise ConfigError(f"{txn.table.base_url}: {mismatch}", key=BUCKET_INDEX_TYPE)
    if options.index.type is IndexType.BUCKET:
        mismatch = bucket_count_mismatch(slices, options.index.bucket_count)
        if mismatch:
            raise ConfigError(f"{txn.table.base_url}: {mismatch}", key=BUCKET_COUNT_KEY)
    targets: dict[tuple[str, str], FileGroupTarget] = {}
    buckets: dict[tuple[str, int], str] = {}
    for slice_ in slices:
        key = (slice_.partition_path, slice_.file_id)
        pending = compactions.get(key)
        if by_writer:
            # `HoodieAppendHandle` at 8+: the log file, its prevCommit and slice are this instant's own;
            # the slice's base file is still what a small-file merge (`HoodieMergeHandle`) rewrites.
            targets[key] = FileGroupTarget(
                slice_.partition_path, slice_.file_id, base_instant=slice_.base_instant,
                base_file=slice_.base_file.name.name if slice_.base_file else None,
                base_size=slice_.base_file.size if slice_.base_file else 0, logs_by_writer=True)
        elif pending is not None and slice_.base_instant < pending:
            # Logs written after a compaction was planned open the compaction's slice.
            targets[key] = FileGroupTarget(slice_.partition_path, slice_.file_id, base_instant=pending)
        else:
            latest = slice_.latest_log_file
            targets[key] = FileGroupTarget(
                partition_path=slice_.partition_path,
                file_id=slice_.file_id,
                base_instant=slice_.base_instant,
                base_file=slice_.base_file.name.name if slice_.base_file else None,
                base_size=slice_.base_file.size if slice_.base_file else 0,
                latest_log=latest.name.name if latest else None,
                latest_log_size=latest.size if latest else 0,
                log_files=tuple(lf.name.name for lf in slice_.log_files),
            )
        if options.index.type is IndexType.BUCKET:
            buckets[(slice_.partition_path, bucket_id_from_file_id(slice_.file_id))] = slice_.file_id
    timeline = txn.timeline
    completed = timeline.completed_write_timestamps()
    start = timeline.instants[0].timestamp if timeline.instants else None
    write = WriteContext(
        storage=storage,
        instant=txn.instant_time,
        writer_schema=txn.writer_schema,
        insert_mode=options.insert_mode,
        merge_small_files=not options.index.type.can_index_log_files,
        log_max_bytes=options.log_file_max_bytes,
        log_block_max_bytes=options.log_block_max_bytes,
        base_file_options=BaseFileOptions(compression=options.parquet_compression),
        completed=completed,
        log_marker=markers.IOType(txn.table.version.log_marker),
        timeline_layout=timeline.layout,
    )
    return WritePlan(
        write=write,
        index_type=options.index.type,
        bucket_count=options.index.bucket_count,
        bucket_cut_1x=txn.table.version.bucket_keys_cut_1x,
        hash_fields=options.hash_fields,
        shards=options.index.shards,
        global_scope=options.index.global_scope,
        ordering_field=ordering_field,
        event_time=config.event_time_ordering,
        ordering_type=_ordering_type(txn.schema, ordering_field),
        targets=targets,
        buckets=buckets,
        partitions=tuple(sorted(txn.view.partitions)),
        visible_instants=frozenset(completed),
        timeline_start=start,
        small_files=small_files(txn, options, {**compactions, **clustering}),
        clustering=clustering,
        record_bytes=_record_bytes(txn, options),
        file_group_max_bytes=options.file_group_max_bytes,
        insert_split=0 if options.small_files.auto_split else options.small_files.insert_split_size,
    )


def small_files(txn: Transaction, options: WriteOptions,
                pending: Mapping[tuple[str, str], str]) -> dict[str, tuple[tuple[str, int], ...]]:
    """Per partition, the file groups new keys fill first, smallest first: (file id, bytes).

    Hudi's `SparkUpsertDeltaCommitPartitioner.getSmallFileCandidates` for an index that cannot index
    log files: slices with a base file and no log files (a slice's logs cannot be padded without
    compacting them), base smaller than `hoodie.parquet.small.file.limit`, no pending compaction or
    clustering (`pending`; `UpsertPartitioner.filterSmallFilesInClustering`),
    at most `hoodie.merge.small.file.group.candidates.limit` of them. A bulk insert takes none (Hudi's
    bulk insert has no small-file handling), nor does the bucket index (its buckets are fixed).
    """
    settings = options.small_files
    if (options.index.type.can_index_log_files or settings.small_file_limit <= 0
            or options.operation is Operation.BULK_INSERT):
        return {}
    found: dict[str, list[tuple[str, int]]] = {}
    for slice_ in txn.view.latest_writer_slices():
        base = slice_.base_file
        if (base is None or slice_.log_files or base.size >= settings.small_file_limit
                or (slice_.partition_path, slice_.file_id) in pending):
            continue
        found.setdefault(slice_.partition_path, []).append((slice_.file_id, base.size))
    return {p: tuple(sorted(g, key=lambda x: (x[1], x[0]))[:settings.candidates]) for p, g in found.items()}


def _record_bytes(txn: Transaction, options: WriteOptions) -> int:
    """Hudi's `UpsertPartitioner.averageBytesPerRecord`: bytes per record of the latest commit or
    replacecommit (compactions, in a Merge-On-Read table; deltacommits do not count) that wrote more
    than `hoodie.record.size.estimation.threshold` x the small file limit, else
    `hoodie.copyonwrite.record.size.estimate`."""
    settings = options.small_files
    threshold = int(settings.estimation_threshold * settings.small_file_limit)
    for instant in reversed(txn.timeline.completed(Action.COMMIT, Action.REPLACE_COMMIT)):
        stats = txn.table.commit_metadata(instant).all_write_stats()
        writes = sum(s.num_writes for s in stats)
        written = sum(s.total_write_bytes for s in stats)
        if written > threshold and writes > 0:
            return max(1, -(-written // writes))
    return settings.record_size_estimate
