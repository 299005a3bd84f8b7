"""Writing one file group's share of a commit, in the executor that holds its records.

Per file group and instant: AVRO_DATA blocks with the upserts, cut at `log_block_max_bytes` of
records (`hoodie.logfile.data.block.max.size`, as `HoodieAppendHandle` flushes a block), then one
DELETE block with the deletes, appended to the slice's current log file where that is safe (the storage appends, and the
file is under the size limit), otherwise written as the next log file version. A new file group in
`insert_mode: base` gets a parquet base file instead (Hudi's `HoodieCreateHandle`). With an index
that cannot index log files, an existing file group the plan chose as a small file (it receives new
keys) is rewritten whole into a new base file of this instant with its updates, deletes and new keys,
as `BaseSparkDeltaCommitActionExecutor.handleUpdate` sends such a group to `HoodieMergeHandle`.
A marker is written before any file is touched, so a crash leaves a complete list of what to undo.
The write stat of a log is filled as `HoodieAppendHandle` fills it: `logFiles` is the slice's log files
plus the one written, `fileSizeInBytes` the whole log file's size after the append, `totalWriteBytes`
the bytes this commit added.

A retried task may find bytes an earlier attempt of the same task appended past the size the driver
planned: they belong to this instant and this task only, so the file is cut back to the planned size
before appending again, and the file ends up exactly as one successful attempt writes it. Bytes of
another instant there are another writer's, appended after this instant lost its lease: never cut
(`cut_back`); the task's own writes for an instant rolled back meanwhile are taken back by `fence`.
"""

from __future__ import annotations

import functools
import logging
import posixpath
import struct
import time
from collections import deque
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import ConcurrentWriterError
from ingest.hudi.avro import avro_encoder
from ingest.hudi.avro import schema as avro
from ingest.hudi.log.data_block import DATA_BLOCK_VERSION, data_block_header
from ingest.hudi.log.delete_block import NO_ORDERING_VALUE, DeleteRecord, delete_block
from ingest.hudi.log.log_block import BlockType, block_parts, encode_log_block
from ingest.hudi.log.log_reader import (
    corrupt_block_instant,
    ends_in_whole_block,
    instants_between,
    iter_log_blocks,
)
from ingest.hudi.merge.precombine import KEY, PARTITION
from ingest.hudi.parquet.base_file import (
    BaseFileOptions,
    encode_base_file,
    merged_bloom_filter,
    read_base_file_and_footer,
)
from ingest.hudi.parquet.encodings import dictionary_choice, settled_by
from ingest.hudi.table import markers
from ingest.hudi.table.file_names import BaseFileName, LogFileName, make_write_token
from ingest.hudi.timeline.commit_metadata import NULL_COMMIT, RuntimeStats, WriteStat
from ingest.hudi.timeline.timeline_layout import LAYOUT_1, TimelineLayout
from ingest.storage import Storage, data_size
from ingest.write.merge_order import merge_order

log = logging.getLogger(__name__)

IS_UPDATE = "_ingest_is_update"


class InsertMode(str, Enum):
    LOG = "log"
    BASE = "base"


@dataclass(frozen=True)
class TaskIdentity:
    """The Spark task writing (partition id, stage id, attempt id): names files and sequence numbers."""

    partition_id: int = 0
    stage_id: int = 0
    attempt_id: int = 0

    @property
    def write_token(self) -> str:
        return make_write_token(self.partition_id, self.stage_id, self.attempt_id)


@dataclass(frozen=True)
class FileGroupTarget:
    """A file group as the driver planned it for this instant."""

    partition_path: str
    file_id: str
    base_instant: str | None = None    # the latest slice's base instant; None for a new group
    base_file: str | None = None       # that slice's base file name
    base_size: int = 0                 # its bytes (how much of the table's keys the group holds)
    latest_log: str | None = None      # that slice's newest log file name
    latest_log_size: int = 0           # its size when the commit was planned
    log_files: tuple[str, ...] = ()    # that slice's log file names, oldest first
    # Table version 8+: a log file is named with the writing instant and opens its own slice, so it
    # never appends and its stat names no base file (`HoodieAppendHandle.populateWriteStatAndFetchFileSlice`).
    logs_by_writer: bool = False

    @property
    def is_new(self) -> bool:
        return self.base_instant is None

    def path(self, name: str) -> str:
        return posixpath.join(self.partition_path, name) if self.partition_path else name


@dataclass(frozen=True)
class WriteContext:
    """Everything an executor needs to write its file groups for one instant."""

    storage: Storage
    instant: str
    writer_schema: avro.AvroSchema      # with meta fields
    insert_mode: InsertMode = InsertMode.LOG
    merge_small_files: bool = False    # the index cannot index log files: small files take new keys by merging
    log_max_bytes: int = 1024 * 1024 * 1024
    log_block_max_bytes: int = 256 * 1024 * 1024
    base_file_options: BaseFileOptions = BaseFileOptions()
    completed: Container[str] = frozenset()  # completed write instants when the commit was planned
    log_marker: markers.IOType = markers.IOType.APPEND  # of a new log file (`TableVersion.log_marker`)
    timeline_layout: TimelineLayout = LAYOUT_1  # where tasks look for a rollback of their instant (`fence`)

    @functools.cached_property
    def schema_json(self) -> str:
        """Computed once per context: every log block's header carries it."""
        return avro.to_json(self.writer_schema)


def with_meta_columns(upserts: pa.Table, instant: str, partition_id: int, file_names: Sequence[str],
                      group_sizes: Sequence[int], *, log_records: bool, numbers: np.ndarray | None = None) -> pa.Table:
    """Fill the five `_hoodie_*` columns as Hudi's write handles do, for rows of consecutive groups.

    Rows come group after group (`group_sizes`); each group is one file group and carries its file
    name. `_hoodie_commit_seqno` is `<instant>_<task partition>_<n>` (`HoodieRecord.generateSequenceId`).
    In a base file `n` counts the file's records from 0 (the parquet writer's written-record count);
    in log files it is `HoodieAppendHandle`'s JVM-wide `RECORD_COUNTER`, which starts at 1 and is not
    reset between file groups: here it runs across the task's log records, as in a fresh executor.
    `numbers`: each row's `n` where the caller placed the rows itself (a merge).
    """
    n = upserts.num_rows
    sizes = np.asarray(group_sizes, dtype=np.int64)
    if numbers is not None:
        counter = numbers
    elif log_records:
        counter = np.arange(1, n + 1, dtype=np.int64)
    else:
        counter = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    seq = seqnos(instant, partition_id, counter)
    names = pa.DictionaryArray.from_arrays(
        pa.array(np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)), pa.array(list(file_names), pa.string()),
    ).cast(pa.string()) if n else pa.array([], pa.string())
    meta = {
        avro.COMMIT_TIME: pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([instant])).cast(
            pa.string()),
        avro.COMMIT_SEQNO: seq,
        avro.RECORD_KEY: upserts.column(KEY),
        avro.PARTITION_PATH: upserts.column(PARTITION),
        avro.FILE_NAME: names,
    }
    out = upserts.drop_columns([c for c in avro.META_FIELDS if c in upserts.column_names])
    for name in reversed(avro.META_FIELDS):
        out = out.add_column(0, name, meta[name])
    return out


def seqnos(instant: str, partition_id: int, numbers: np.ndarray) -> pa.Array:
    """`HoodieRecord.generateSequenceId`: `<instant>_<task partition>_<n>` for each `n`."""
    if not len(numbers):
        return pa.array([], pa.string())
    return pc.binary_join_element_wise(pa.scalar(f"{instant}_{partition_id}_"),
                                       pa.array(numbers).cast(pa.string()), "")


def _writer_columns(rows: pa.Table, writer_schema: avro.AvroSchema) -> pa.Table:
    """Only the columns the writer schema names (ingest's routing columns stay out of the files)."""
    return rows.select([f["name"] for f in writer_schema["fields"] if f["name"] in rows.column_names])


def _runtime(started: float, create: bool) -> RuntimeStats:
    ms = int((time.monotonic() - started) * 1000)
    return RuntimeStats(total_create_time=ms) if create else RuntimeStats(total_upsert_time=ms)


def _counts(upserts: pa.Table) -> tuple[int, int]:
    if upserts.num_rows == 0 or IS_UPDATE not in upserts.column_names:
        return 0, upserts.num_rows
    updates = int(pc.sum(upserts.column(IS_UPDATE)).as_py() or 0)  # a boolean sum counts the trues
    return updates, upserts.num_rows - updates


def write_file_group(
    ctx: WriteContext,
    target: FileGroupTarget,
    upserts: pa.Table,
    deletes: pa.Table,
    task: TaskIdentity,
) -> WriteStat:
    """Write the upserts and deletes of one file group; returns its write stat."""
    return write_file_groups(ctx, [(target, upserts, deletes)], task)[0]


# Base files and incoming rows merged side by side on an object store, in total (each merge holds its
# file's rows, old and new, and the new file's bytes): small merges share a round trip, a large one goes alone.
MERGE_BYTES_AT_ONCE = 32 << 20


def write_file_groups(
    ctx: WriteContext,
    groups: Iterable[tuple[FileGroupTarget, pa.Table, pa.Table]],
    task: TaskIdentity,
) -> list[WriteStat]:
    """Write several file groups' upserts and deletes, in order; the log groups' records are encoded in
    one pass. Base files and merges are written as their groups come, so a lazy `groups` is held one
    group at a time, except for the log groups, which wait for the encoder, and on object stores a few
    small merges, which go side by side."""
    stats: dict[int, WriteStat] = {}
    logs: list[tuple[int, tuple[FileGroupTarget, pa.Table, pa.Table]]] = []
    merging: list[tuple[int, tuple[FileGroupTarget, pa.Table, pa.Table]]] = []
    dictionary: dict[str, bool] = {}  # new base files hold rows of one batch: they share the first's choice

    def merge() -> None:
        done = ctx.storage.map(lambda job: _merge_base_file(ctx, *job[1], task, time.monotonic()), merging)
        stats.update((j, stat) for (j, _), stat in zip(merging, done, strict=True))
        merging.clear()

    i = -1
    for group in groups:  # no enumerate: its reused result tuple would hold the last group a step longer
        i += 1
        target, upserts, deletes = group
        if writes_base_file(ctx, target, deletes):
            stats[i] = _write_base_file(ctx, target, upserts, task, time.monotonic(), dictionary)
        elif _merges(ctx, target, upserts):
            held = sum(t.base_size + u.nbytes for _, (t, u, _) in merging)  # their base files and rows
            if merging and held + target.base_size + upserts.nbytes > MERGE_BYTES_AT_ONCE:
                merge()  # a large one goes alone
            merging.append((i, group))
            if len(merging) >= ctx.storage.requests_at_once:
                merge()  # at once on a local disk: one group at a time, as the others
        else:
            logs.append((i, group))
        del group, upserts  # before the next group is made: a lazy caller's rows, one group at a time
    if merging:
        merge()
    if logs:
        started = time.monotonic()
        contents = _data_contents(ctx, [group for _, group in logs], task)
        # Each group's marker comes before its log file; the groups themselves are independent.
        written = ctx.storage.map(
            lambda job: _write_log(ctx, *job[0][1], job[1], task, started), zip(logs, contents, strict=True))
        stats.update((i, stat) for (i, _), stat in zip(logs, written, strict=True))
    return [stats[i] for i in sorted(stats)]


def writes_base_file(ctx: WriteContext, target: FileGroupTarget, deletes: pa.Table) -> bool:
    """A new file group in `insert_mode: base` is written as a base file (`HoodieCreateHandle`)."""
    return target.is_new and ctx.insert_mode is InsertMode.BASE and deletes.num_rows == 0


def block_cuts(record_ends: np.ndarray, max_bytes: int) -> list[int]:
    """Where a group's records are cut into data blocks: indexes into `record_ends` (the records'
    end offsets, framed, from the group's start at 0), each block holding the longest run whose
    content (8 bytes of version and count, then the framed records) stays within `max_bytes`;
    a record too big on its own gets a block of its own, as `HoodieAppendHandle.flushToDiskIfRequired`
    flushes before every record once its estimate says none fits."""
    cuts, start, n = [], 0, len(record_ends)
    while start < n:
        base = int(record_ends[start - 1]) if start else 0
        end = int(np.searchsorted(record_ends, base + max_bytes - 8, side="right"))
        start = min(max(end, start + 1), n)
        cuts.append(start)
    return cuts


def _data_contents(ctx: WriteContext, groups: Sequence[tuple[FileGroupTarget, pa.Table, pa.Table]],
                   task: TaskIdentity) -> list[list[list[memoryview | bytes]]]:
    """AVRO_DATA block contents per group, as pieces of one encoder pass's output (none where a group
    has no upserts); a group's records are split into blocks of at most `log_block_max_bytes`. The
    pieces are views: the encoded records are not copied again before the file write."""
    with_rows = [(t, u) for t, u, _ in groups if u.num_rows]
    if not with_rows:
        return [[] for _ in groups]
    rows = pa.concat_tables([u.select(with_rows[0][1].column_names) for _, u in with_rows])
    rows = with_meta_columns(rows, ctx.instant, task.partition_id, [t.file_id for t, _ in with_rows],
                             [u.num_rows for _, u in with_rows], log_records=True)
    encoded = avro_encoder.encode_batch(_writer_columns(rows, ctx.writer_schema), ctx.writer_schema)
    framed = [memoryview(b) for b in encoded.framed()]
    starts = np.cumsum([0] + [len(b) for b in framed]).tolist()
    offsets = np.asarray(encoded.offsets, dtype=np.int64) + 4 * np.arange(len(encoded) + 1, dtype=np.int64)

    def span(begin: int, end: int) -> list[memoryview]:
        """Bytes [begin, end) of the framed records, which the encoder may have split in slices."""
        out = []
        for buf, at in zip(framed, starts, strict=False):
            lo, hi = max(begin, at), min(end, at + len(buf))
            if lo < hi:
                out.append(buf[lo - at:hi - at])
        return out

    out: list[list[list[memoryview | bytes]]] = []
    row = 0
    for _, upserts, _ in groups:
        n = upserts.num_rows
        blocks, first = [], row
        for cut in block_cuts(offsets[first + 1:first + n + 1] - offsets[first], ctx.log_block_max_bytes):
            end = first + cut
            blocks.append([struct.pack(">ii", DATA_BLOCK_VERSION, end - row), *span(int(offsets[row]), int(offsets[end]))])
            row = end
        out.append(blocks)
    return out


def _write_base_file(ctx: WriteContext, target: FileGroupTarget, upserts: pa.Table,
                     task: TaskIdentity, started: float, dictionary: dict[str, bool]) -> WriteStat:
    """Hudi's `HoodieCreateHandle`: a new file group's base file; `dictionary` is the choice of
    dictionary columns (`encodings.dictionary_choice`), made here on the first file's rows if empty.

    Rows stay in the order they came, numbered in it: Hudi's create handle writes its iterator's
    order, and its bulk insert sorts nothing by default (`hoodie.bulkinsert.sort.mode` is `NONE`,
    `NonSortPartitioner`); a sort by key would move every column once more for no reader's sake."""
    name = BaseFileName(target.file_id, task.write_token, ctx.instant).name
    path = target.path(name)
    rows = _writer_columns(with_meta_columns(upserts, ctx.instant, task.partition_id, [name], [upserts.num_rows],
                                             log_records=False),
                           ctx.writer_schema)
    if not dictionary and settled_by(rows.num_rows):
        dictionary.update(dictionary_choice(rows))
    data, stats = encode_base_file(rows, ctx.writer_schema, ctx.base_file_options, path=path,
                                   dictionary_leaves=dictionary or None)
    markers.create(ctx.storage, ctx.instant, target.partition_path, name, markers.IOType.CREATE)
    if not ctx.storage.create(path, data):
        raise FileExistsError(f"base file {ctx.storage.url(path)} already exists")
    return WriteStat(
        file_id=target.file_id,
        path=path,
        partition_path=target.partition_path,
        prev_commit=NULL_COMMIT,
        num_writes=rows.num_rows,
        num_inserts=rows.num_rows,
        total_write_bytes=len(data),
        file_size_in_bytes=len(data),
        runtime_stats=_runtime(started, create=True),
    )


def _merges(ctx: WriteContext, target: FileGroupTarget, upserts: pa.Table) -> bool:
    """An existing group takes new keys only as the plan's small file; then its whole share goes
    through the merge (`SparkUpsertDeltaCommitPartitioner.getSmallFileIds` in `handleUpdate`)."""
    return (ctx.merge_small_files and not target.is_new and target.base_file is not None
            and _counts(upserts)[1] > 0)


def _merge_base_file(ctx: WriteContext, target: FileGroupTarget, upserts: pa.Table, deletes: pa.Table,
                     task: TaskIdentity, started: float) -> WriteStat:
    """Hudi's `HoodieMergeHandle`: the slice's base file rewritten as this instant's, same file id,
    its records in the handle's order (`merge_order`).

    Records not touched keep their meta fields but `_hoodie_file_name` (`writeToFile` with metadata
    preserved); updated and new records get this instant's, their `_hoodie_commit_seqno` numbering
    their place in the file (`HoodieAvroParquetWriter.writeAvroWithMetadata` numbers by the writer's
    record count, copied records included); deleted keys are left out.
    """
    name = BaseFileName(target.file_id, task.write_token, ctx.instant).name
    path = target.path(name)
    schema = avro.avro_to_arrow(ctx.writer_schema)
    # `_hoodie_file_name` is this file's for every row: the old file's is not read.
    kept = pa.schema([f for f in schema if f.name != avro.FILE_NAME])
    old, footer = read_base_file_and_footer(ctx.storage, target.path(target.base_file), schema=kept)
    new_keys = upserts.column(KEY).combine_chunks().cast(pa.string())
    order, inserted = merge_order(old.column(avro.RECORD_KEY).combine_chunks(), new_keys,
                                  deletes.column(KEY).combine_chunks().cast(pa.string()))
    written = np.flatnonzero(order >= old.num_rows)
    place = np.zeros(upserts.num_rows, dtype=np.int64)  # each incoming row's place in the file: its seqno
    place[order[written] - old.num_rows] = written
    new = with_meta_columns(upserts, ctx.instant, task.partition_id, [name], [upserts.num_rows],
                            log_records=False, numbers=place)
    new = pa.Table.from_arrays([new.column(f.name).cast(f.type) if f.name in new.column_names
                                else pa.nulls(new.num_rows, f.type) for f in kept], schema=kept)
    rows = pa.concat_tables([old, new]).take(pa.array(order))
    rows = rows.add_column(schema.get_field_index(avro.FILE_NAME), schema.field(avro.FILE_NAME),
                           pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows.num_rows, np.int32)),
                                                          pa.array([name])).cast(pa.string()))
    deleted = old.num_rows - (len(order) - inserted)
    filt = None
    if not deleted:  # every old key stays: the old filter holds them, only the added keys need hashing
        added = new_keys.take(pa.array(order[len(order) - inserted:] - old.num_rows))
        filt = merged_bloom_filter(footer, ctx.base_file_options, added)
    data, _ = encode_base_file(rows, ctx.writer_schema, ctx.base_file_options, path=path, bloom_filter=filt,
                               dictionary_leaves=footer.dictionary_leaves if settled_by(len(old)) else None)
    markers.create(ctx.storage, ctx.instant, target.partition_path, name, markers.IOType.MERGE)
    if not ctx.storage.create(path, data):
        raise FileExistsError(f"base file {ctx.storage.url(path)} already exists")
    updates, inserts = _counts(upserts)
    return WriteStat(
        file_id=target.file_id,
        path=path,
        partition_path=target.partition_path,
        prev_commit=target.base_instant,
        prev_base_file=target.base_file,
        num_writes=rows.num_rows,
        num_deletes=deleted,
        num_update_writes=updates,
        num_inserts=inserts,
        total_write_bytes=len(data),
        file_size_in_bytes=len(data),
        runtime_stats=_runtime(started, create=False),
    )


def _blocks(ctx: WriteContext, contents: list[list[memoryview | bytes]], deletes: pa.Table) -> list:
    """The bytes to add to the log file: the data blocks of `contents`, then one delete block (as
    `HoodieAppendHandle.appendDataAndDeleteBlocks` appends deletes after all data blocks), as pieces."""
    parts: list = []
    header = data_block_header(ctx.instant, ctx.schema_json)
    for content in contents:
        parts.extend(block_parts(BlockType.AVRO_DATA, header, content))
    if deletes.num_rows:
        keys = deletes.column(KEY).to_pylist()
        partitions = deletes.column(PARTITION).to_pylist()
        records = [DeleteRecord(k, p, NO_ORDERING_VALUE) for k, p in zip(keys, partitions, strict=True)]
        parts.append(encode_log_block(delete_block(ctx.instant, ctx.schema_json, records)))
    return parts


def _report_torn_tail(ctx: WriteContext, path: str, size: int) -> None:
    """A torn last block: a failed write's is normal (said at info level); a committed one's, or one
    whose instant its header no longer names, lost data and is reported."""
    tail = deque(iter_log_blocks(ctx.storage, path, size), maxlen=1)  # one block in memory at a time
    last = tail[0] if tail else None
    if last is None or not last.is_corrupt:
        return
    instant = corrupt_block_instant(last)
    if instant is not None and instant not in ctx.completed:
        log.info("%s ends in a torn block of failed write %s; writing the next log file version",
                 ctx.storage.url(path), instant)
        return
    whose = f"committed instant {instant}" if instant else "an instant its header no longer names"
    log.warning("%s: corrupt block at offset %d (%d bytes) of %s: %s; writing the next log file version "
                "instead of appending after it", ctx.storage.url(path), last.offset, last.size, whose,
                last.corrupt_reason)


def cut_back(storage: Storage, path: str, planned: int, current: int, instant: str) -> None:
    """Cut a log file back to the size this instant's plan recorded, removing what an earlier attempt
    of this instant's task appended past it. Only blocks of this instant are cut: whole blocks of
    another instant there mean another writer appended after this one lost its lease (its Spark tasks
    still running while its driver stalled), and cutting them would lose that writer's commits."""
    others = sorted(instants_between(storage, path, planned, current) - {instant})
    if others:
        raise ConcurrentWriterError(
            f"{storage.url(path)} holds blocks of instant(s) {', '.join(others)} past the {planned} bytes "
            f"that instant {instant} planned to append after: another writer appended to it, so this write "
            "lost its lease; not cutting them off")
    storage.truncate(path, planned)


def _write_log(ctx: WriteContext, target: FileGroupTarget, upserts: pa.Table, deletes: pa.Table,
               contents: list[list[memoryview | bytes]], task: TaskIdentity, started: float) -> WriteStat:
    storage = ctx.storage
    data = _blocks(ctx, contents, deletes)
    data_bytes = data_size(data)
    base_instant = ctx.instant if target.logs_by_writer else target.base_instant or ctx.instant
    appended = False
    offset = 0
    name = None
    if storage.can_append and target.latest_log and target.latest_log_size < ctx.log_max_bytes:
        path = target.path(target.latest_log)
        try:
            current = storage.size(path)
        except FileNotFoundError:
            current = -1
        if current >= target.latest_log_size and not ends_in_whole_block(storage, path, target.latest_log_size):
            # Blocks appended after a torn one would bury it: start the next log version instead,
            # as Hudi's `HoodieLogFormatWriter.getOutputStream` rolls over rather than append.
            _report_torn_tail(ctx, path, target.latest_log_size)
            current = -1
        if current >= target.latest_log_size:
            markers.create(storage, ctx.instant, target.partition_path, target.latest_log, markers.IOType.APPEND)
            if current > target.latest_log_size:
                cut_back(storage, path, target.latest_log_size, current, ctx.instant)
            size = storage.append(path, data)
            name, offset, appended = target.latest_log, target.latest_log_size, True
    if not appended:
        previous = LogFileName.parse(target.latest_log) if target.latest_log else None
        version = previous.version + 1 if previous else 1
        while True:
            candidate = LogFileName(target.file_id, base_instant, version, task.write_token)
            markers.create(storage, ctx.instant, target.partition_path, candidate.name, ctx.log_marker)
            if storage.create(target.path(candidate.name), data):
                break
            version += 1  # a log file of that version exists (another token): roll to the next
        name, size = candidate.name, data_bytes
    updates, inserts = _counts(upserts)
    parsed = LogFileName.parse(name)
    return WriteStat(
        file_id=target.file_id,
        path=target.path(name),
        partition_path=target.partition_path,
        prev_commit=base_instant,
        num_writes=upserts.num_rows,
        num_deletes=deletes.num_rows,
        num_update_writes=updates,
        num_inserts=inserts,
        total_write_bytes=data_bytes,
        file_size_in_bytes=size,
        runtime_stats=_runtime(started, create=False),
        log_version=parsed.version if parsed else 1,
        log_offset=offset,
        base_file="" if target.logs_by_writer else target.base_file or "",
        log_files=(name,) if target.logs_by_writer else _stat_log_files(target, name),
    )


def _stat_log_files(target: FileGroupTarget, written: str) -> tuple[str, ...]:
    """`HoodieAppendHandle.init`/`updateWriteStat`: the slice's log files as `FileSlice.getLogFiles`
    lists them (newest first), then the file written if it is not among them."""
    names = tuple(reversed(target.log_files))
    return names if written in names else (*names, written)
