"""Reading a Merge-On-Read table: every file slice's base file merged with its log blocks.

Per file slice, versions of each record key are taken in scan order — base file first, then log
files in order, blocks in file order — keeping only blocks of instants completed as of the read
time and not named by a rollback command block. Then, as the table config says:

* event-time ordering (an ordering field with an event-time payload): the version with the largest
  ordering value wins, ties going to the later one. A delete that carries an ordering value of the
  field's type competes like any version; a delete without one (Hudi writes `IntWrapper(0)`)
  supersedes every version before it;
* commit-time ordering: the last version wins;
* Hudi 0.14/0.15 with `OverwriteWithLatestAvroPayload` and an ordering field
  (`TableConfig.log_versions_by_ordering`): the log versions are merged as event-time ordering merges
  them, and the winner replaces the base file's version whatever its ordering value.

At version 6 (`TableVersion.deletes_fold_in_log_order`) the log versions merge among themselves first, as
0.14/0.15's log scanner merges them, and their survivor then meets the base file's row: a surviving
delete removes it whatever its value. A key with a delete that carries an ordering value (Hudi writes one
for `_hoodie_is_deleted`) is merged version by version in log order, when that value is of the class the
records' values are read in (`_SAME_CLASS_AS_RECORDS`; a string, date or decimal one never is, and such a
delete replaces what came before it, as one without value does). A record flagged
`_hoodie_is_deleted` in a log that wins is a delete, at every version.

Tables written by ingest keep every key's history monotonic (see `ingest.write.resolve`), so on them
these rules, Hudi's Java payloads and hudi-rs all give the same rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import BadRecordError, InvalidInstant, LogFormatError
from ingest.hudi.avro import schema as avro
from ingest.hudi.log.compacted_blocks import merge_order
from ingest.hudi.log.delete_block import OrderingWrapper, ordering_wrapper
from ingest.hudi.log.log_block import BlockType, LogBlock
from ingest.hudi.log.log_reader import corrupt_block_instant, decode_block, iter_log_blocks
from ingest.hudi.merge import precombine as pcb
from ingest.hudi.parquet.base_file import read_base_file
from ingest.hudi.table.file_system_view import FileSlice
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import WRITE_ACTIONS, Action, query_instant
from ingest.hudi.timeline.lsm_history import LSMHistory
from ingest.hudi.timeline.timeline import ARCHIVE_FOLDER, Timeline
from ingest.storage import Storage

log = logging.getLogger(__name__)


# Version 6: the wrappers whose value `HoodieAvroUtils.unwrapAvroValueWrapper` returns in the class a record's
# ordering value has as Avro's `GenericDatumReader` reads it (`SpillableMapUtils.getPreCombineVal`). Only for
# these does 0.14/0.15's `processNextDeletedRecord` compare a delete with the record before it
# (`ReflectionUtils.isSameClass`); a StringWrapper unwraps to `String` against the record's `Utf8`, a
# DateWrapper to `LocalDate` against `Integer`, a DecimalWrapper to `BigDecimal` against `ByteBuffer` or
# `GenericFixed`, so such a delete replaces the record whatever the values. 1.x converts both sides to the
# engine's type first (`RecordContext.convertOrderingValueToEngineType`) and compares them by value.
_SAME_CLASS_AS_RECORDS = frozenset({OrderingWrapper.BOOLEAN, OrderingWrapper.INT, OrderingWrapper.LONG,
                                    OrderingWrapper.FLOAT, OrderingWrapper.DOUBLE, OrderingWrapper.BYTES})


def _ordering_wrapper(schema: avro.AvroSchema, ordering_field: str | None) -> OrderingWrapper | None:
    """The wrapper a delete's ordering value has when it is comparable with the ordering field's values."""
    if ordering_field is None:
        return None
    for field in schema["fields"]:
        if field["name"] == ordering_field:
            try:
                return ordering_wrapper(field["type"])
            except BadRecordError:
                return None
    return None


@dataclass(frozen=True)
class ReadContext:
    """What a slice read needs: where, which instants count, the schema, and the merge rule."""

    storage: Storage
    schema: avro.AvroSchema            # table schema, no meta fields
    completed: frozenset[str]          # completed write instants as of the read time
    ordering_field: str | None
    event_time: bool
    writes_pending: bool = False       # a write may be appending now: an unknown torn tail is its
    skip_corrupt: bool = False         # report corrupt committed blocks as warnings, not errors
    log_ordering: bool = False         # log versions by ordering value, laid over the base (0.x)
    deletes_in_log_order: bool = False  # ordered deletes merge in log order (`TableVersion`)
    delete_ordering_by_class: bool = False  # compared only where Java's classes match (`TableVersion`)

    @classmethod
    def of(cls, table: HudiTable, schema: avro.AvroSchema, completed: frozenset[str], *,
           writes_pending: bool = False, skip_corrupt: bool = False) -> ReadContext:
        """A read of `table` with the merge rule its config gives."""
        config = table.config
        return cls(table.storage, schema, completed, config.precombine_field, config.event_time_ordering,
                   writes_pending=writes_pending, skip_corrupt=skip_corrupt,
                   log_ordering=config.log_versions_by_ordering,
                   deletes_in_log_order=config.table_version.deletes_fold_in_log_order,
                   delete_ordering_by_class=config.table_version.delete_ordering_by_java_class)

    @property
    def reader_schema(self) -> avro.AvroSchema:
        return avro.with_meta_fields(self.schema)

    @property
    def arrow_schema(self) -> pa.Schema:
        return avro.avro_to_arrow(self.reader_schema)


def context(table: HudiTable, as_of: str | None = None, *,
            skip_corrupt: bool = False) -> tuple[ReadContext, list[FileSlice]]:
    timeline = table.timeline()
    if as_of is not None:
        _check_as_of(table, timeline, as_of)
    schema = table.schema(timeline, as_of)
    if schema is None:
        name, namespace = avro.record_name(table.name)
        schema = {"type": "record", "name": name, "namespace": namespace, "fields": []}
    ctx = ReadContext.of(table, schema, timeline.completed_write_timestamps(as_of),
                         writes_pending=bool(timeline.pending()), skip_corrupt=skip_corrupt)
    slices = table.view(timeline, as_of).latest_file_slices(as_of)
    return ctx, slices


def _check_as_of(table: HudiTable, timeline: Timeline, as_of: str) -> None:
    """A time travel to before the first commit has nothing to show: say so rather than show nothing."""
    first = next(iter(timeline.completed(*WRITE_ACTIONS)), None)
    if first is None:
        raise InvalidInstant(f"{table.base_url}: as of {as_of}: the table has no completed commit")
    if as_of < first.timestamp:
        history = table.layout.history
        archived = (LSMHistory(table.storage, history).exists() if history is not None
                    else any(not e.is_dir for e in table.storage.list(ARCHIVE_FOLDER)))
        where = "first commit on its active timeline (older ones are archived)" if archived else "first commit"
        raise InvalidInstant(f"{table.base_url}: instant {as_of} is before the table's {where}, {first.timestamp}")


@dataclass(frozen=True)
class CorruptBlock:
    """A corrupt block no reader may skip silently: of a committed instant, or of one unknown, that no later
    block of the slice explains (a rollback command block, a retried task's whole block)."""

    url: str
    offset: int
    size: int
    instant: str | None
    reason: str

    def describe(self) -> str:
        whose = f"committed instant {self.instant}" if self.instant else "an instant its header no longer names"
        return (f"{self.url}: corrupt block at offset {self.offset} ({self.size} bytes) of {whose}: "
                f"{self.reason}")


@dataclass
class _SliceLogs:
    blocks: list[LogBlock]                   # visible blocks, in scan order
    paths: dict[int, str]                    # id(block) -> its log file
    rolled_back: set[str]
    corrupt: list[CorruptBlock]


def scan_logs(ctx: ReadContext, slice_: FileSlice) -> _SliceLogs:
    """The slice's log blocks of completed instants, the instants rollback blocks name, and the
    corrupt blocks that lost committed data. Hudi's reader (`AbstractHoodieLogRecordReader.scanInternalV1`)
    never fails on a CORRUPT block: a later rollback command block removes every one queued before it,
    whatever its target (`removeIf(block -> ... CORRUPT_BLOCK ...)`), and one left is skipped with a warning
    (`processQueuedBlocksForInstant`). Skipped here too, with an info line, is a torn block that is normal:
    of a failed or rolled back write, one a rollback command block follows, and one a retried task wrote
    again after it (a whole block of the same instant later in the slice; when its cut header no longer
    names the instant, a whole block of any completed instant: `HoodieAppendHandle` appends the retry to
    the slice's latest log file). The rest held rows of a committed instant (or of one unknown) that no
    later block explains, and are reported (`CorruptBlock`)."""
    out = _SliceLogs([], {}, set(), [])
    torn: list[tuple[str, LogBlock, bool, int]] = []  # (log file, block, last in its file, scan position)
    last_of_instant: dict[str, int] = {}              # instant -> scan position of its last whole block
    last_command = -1
    position = -1
    for log_file in slice_.log_files:
        last = None
        for block in iter_log_blocks(ctx.storage, log_file.path):
            position += 1
            last = block
            out.paths[id(block)] = log_file.path
            if block.is_corrupt:
                torn.append((log_file.path, block, False, position))
                continue
            if block.block_type == BlockType.COMMAND:
                last_command = position
                if block.target_instant_time:
                    out.rolled_back.add(block.target_instant_time)
                continue
            if block.instant_time is not None:
                last_of_instant[block.instant_time] = position
            if block.instant_time in ctx.completed:
                out.blocks.append(block)
        if torn and last is torn[-1][1]:
            torn[-1] = (torn[-1][0], last, True, torn[-1][3])
    last_completed = max((p for i, p in last_of_instant.items() if i in ctx.completed), default=-1)
    for path, block, at_end, at in torn:
        instant = corrupt_block_instant(block)
        if instant is not None and (instant not in ctx.completed or instant in out.rolled_back):
            continue
        if instant is None and at_end and ctx.writes_pending:
            continue  # the tail a pending write is appending (or left behind when it died)
        url = ctx.storage.url(path)
        if at < last_command:
            log.info("%s: corrupt block at offset %d skipped: a rollback command block follows it", url, block.offset)
            continue
        if at < (last_completed if instant is None else last_of_instant.get(instant, -1)):
            whose = "a completed instant" if instant is None else f"instant {instant}"
            log.info("%s: corrupt block at offset %d skipped: a whole block of %s follows it (a retried task's)",
                     url, block.offset, whose)
            continue
        out.corrupt.append(CorruptBlock(url, block.offset, block.size, instant, block.corrupt_reason or "corrupt"))
    return out


def report_corrupt(ctx: ReadContext, corrupt: Iterable[CorruptBlock]) -> None:
    """Fail on the first corrupt committed block, or (`skip_corrupt`) warn about each."""
    for block in corrupt:
        if not ctx.skip_corrupt:
            raise LogFormatError(f"{block.describe()}; its rows would be lost (skip corrupt blocks to read "
                                 "the rest)")
        log.warning("%s; skipped: its rows are missing from this read", block.describe())


def merged_blocks(scanned: _SliceLogs) -> list[LogBlock]:
    """The scanned blocks a read merges, in the order it merges them: rolled back ones left out,
    log-compacted ones in place of the blocks they replaced (`compacted_blocks.merge_order`)."""
    return merge_order([b for b in scanned.blocks if b.instant_time not in scanned.rolled_back])


def _log_versions(ctx: ReadContext, slice_: FileSlice) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """Data records and deletes of the slice's visible log blocks, in scan order."""
    scanned = scan_logs(ctx, slice_)
    report_corrupt(ctx, scanned.corrupt)
    block_paths, rolled_back = scanned.paths, scanned.rolled_back
    blocks = merged_blocks(scanned)
    records: list[dict[str, Any]] = []
    deletes: list[tuple[Any, ...]] = []
    wanted_wrapper = _ordering_wrapper(ctx.schema, ctx.ordering_field)
    seq = 0
    for block in blocks:
        if block.instant_time in rolled_back:
            continue
        decoded = decode_block(block, ctx.reader_schema)
        if decoded.block.is_corrupt:
            # Well framed but undecodable content of a committed instant: skipping it would silently
            # drop committed rows, so the read fails (as Hudi's own reader does).
            report_corrupt(ctx, [CorruptBlock(ctx.storage.url(block_paths[id(block)]), block.offset, block.size,
                                              block.instant_time, decoded.block.corrupt_reason or "corrupt")])
            continue
        if decoded.records is not None:
            for record in decoded.records:
                seq += 1
                records.append((seq, record))
        elif decoded.deletes is not None:
            for d in decoded.deletes:
                seq += 1
                ov = d.ordering_value
                ordered = (
                    ov is not None and wanted_wrapper is not None and ov.wrapper == wanted_wrapper
                    and not (ov.wrapper == OrderingWrapper.INT and ov.value == 0)
                    and (not ctx.delete_ordering_by_class or ov.wrapper in _SAME_CLASS_AS_RECORDS)
                )
                deletes.append((seq, d.record_key, d.partition_path, ov.value if ordered else None))
    return records, deletes


def read_slice(ctx: ReadContext, slice_: FileSlice) -> pa.Table:
    """The merged rows of one file slice, meta fields included."""
    schema = ctx.arrow_schema
    base_parts, parts = [], []
    offset = 0
    if slice_.base_file is not None:
        base = read_base_file(ctx.storage, slice_.base_file.path, schema=schema)
        base_parts.append(_versions(base, 0, deleted=False))
        offset = base.num_rows
    records, deletes = _log_versions(ctx, slice_)
    if not records and not deletes:
        return base_parts[0].select(schema.names) if base_parts else schema.empty_table()
    if ctx.deletes_in_log_order and any(d[3] is not None for d in deletes):
        records, deletes = _fold_keys_with_ordered_deletes(records, deletes, ctx.ordering_field)
    if records:
        table = pa.Table.from_pylist([r for _, r in records], schema=schema)
        parts.append(_versions(table, offset, deleted=False, seqs=[s for s, _ in records]))
    if deletes:
        cols: dict[str, pa.Array] = {}
        n = len(deletes)
        for field in schema:
            cols[field.name] = pa.nulls(n, field.type)
        cols[avro.RECORD_KEY] = pa.array([d[1] for d in deletes], pa.string())
        cols[avro.PARTITION_PATH] = pa.array([d[2] for d in deletes], pa.string())
        if ctx.ordering_field is not None and ctx.ordering_field in cols:
            target = schema.field(ctx.ordering_field).type
            cols[ctx.ordering_field] = pa.array([d[3] for d in deletes], target)
        table = pa.Table.from_pydict(cols, schema=schema)
        parts.append(_versions(table, offset, deleted=True, seqs=[d[0] for d in deletes]))
    ordering = ctx.ordering_field if ctx.ordering_field in schema.names else None
    if ctx.deletes_in_log_order:
        # 0.14/0.15: the log versions merge among themselves first (`HoodieMergedLogRecordScanner`), then
        # the survivor meets the base file's row: a delete removes it whatever its value, a record
        # competes with it by value (event time) or replaces it.
        log_order = ordering if ctx.event_time or ctx.log_ordering else None
        logs = _unordered_deletes(pcb.precombine(pa.concat_tables(parts), log_order, global_scope=True), ordering)
        final = ordering if ctx.event_time else None
        winners = pcb.precombine(pa.concat_tables(base_parts + [logs]), final, global_scope=True)
    else:
        # 1.x (`HoodieFileGroupReader`): the log versions merge among themselves in log order (`deltaMerge`),
        # then the survivor meets the base file's row (`finalMerge`). A delete without an ordering value (a
        # commit-time delete) replaces what came before it, and a later record replaces it in turn
        # (`shouldKeepNewerRecord`): the base row then competes with that record by value.
        order = ordering if ctx.event_time else None
        logs = pcb.precombine(_flagged_as_deletes(pa.concat_tables(parts), ordering), order, global_scope=True)
        winners = pcb.precombine(pa.concat_tables(base_parts + [logs]), order, global_scope=True)
    live = winners.filter(pc.invert(winners.column(pcb.DELETE)))
    if avro.IS_DELETED in schema.names:
        # A log record flagged deleted that wins is a delete (the payloads' `isDeleteRecord`, 1.x's
        # `FileGroupRecordBuffer.isBuiltInDeleteRecord`); writers put such records in delete blocks.
        # A base file's row no log version meets is read as it is, as Hudi's readers read it.
        flagged = pc.and_(pc.fill_null(live.column(avro.IS_DELETED), False),
                          pc.greater_equal(live.column(pcb.ORDER), offset))
        live = live.filter(pc.invert(flagged))
    return live.select(schema.names)


def _flagged_as_deletes(versions: pa.Table, ordering: str | None) -> pa.Table:
    """1.x: a log record flagged `_hoodie_is_deleted` whose ordering value is missing, or the default `0` of an
    int field, is a delete without ordering value (`OrderingValues.create` replaces a null with 0;
    `BufferedRecord.isCommitTimeOrderingDelete`); one with a value competes by it, as before."""
    if avro.IS_DELETED not in versions.column_names:
        return versions
    flagged = pc.fill_null(versions.column(avro.IS_DELETED), False)
    if ordering is not None:
        column = versions.column(ordering)
        default = pc.is_null(column)
        if pa.types.is_int32(column.type):
            default = pc.or_(default, pc.fill_null(pc.equal(column, 0), False))
        flagged = pc.and_(flagged, default)
    if not pc.any(flagged).as_py():
        return versions
    versions = versions.set_column(versions.schema.get_field_index(pcb.DELETE), pcb.DELETE,
                                   pc.or_(versions.column(pcb.DELETE), flagged))
    return _without_ordering(versions, flagged, ordering)


def _unordered_deletes(versions: pa.Table, ordering: str | None) -> pa.Table:
    """`versions` with the ordering value of every delete cleared: each then removes what came before."""
    if ordering is None or not pc.any(versions.column(pcb.DELETE)).as_py():
        return versions
    return _without_ordering(versions, versions.column(pcb.DELETE), ordering)


def _without_ordering(versions: pa.Table, where: pa.ChunkedArray, ordering: str | None) -> pa.Table:
    """`versions` with the ordering value cleared where `where` holds (a delete without one)."""
    if ordering is None:
        return versions
    column = versions.column(ordering)
    cleared = pc.if_else(where, pa.scalar(None, column.type), column)
    return versions.set_column(versions.schema.get_field_index(ordering), ordering, cleared)


def _greater(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a > b


def _fold_keys_with_ordered_deletes(records: list[tuple[int, dict[str, Any]]], deletes: list[tuple[Any, ...]],
                                    ordering: str | None) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[Any, ...]]]:
    """Hudi 0.14/0.15's log merge of the keys with a delete that carries an ordering value, version by
    version in log order: a record replaces a delete, and a record unless that one's ordering value is
    larger (the payloads' `preCombine`); a delete replaces what came before unless that carries a larger
    value (`processNextDeletedRecord`, `choosePrev`). Each such key keeps its one surviving version; a
    surviving delete loses its ordering value, as it removes the base file's row whatever that row's
    (`combineAndGetUpdateValue` of an empty payload). Other keys are left to the vectorized merge."""
    keys = {d[1] for d in deletes if d[3] is not None}
    folded: dict[str, list[tuple[int, bool, Any, Any]]] = {}
    kept_records, kept_deletes = [], []
    for seq, record in records:
        key = record.get(avro.RECORD_KEY)
        if key in keys:
            folded.setdefault(key, []).append((seq, False, record.get(ordering) if ordering else None, record))
        else:
            kept_records.append((seq, record))
    for d in deletes:
        if d[1] in keys:
            folded.setdefault(d[1], []).append((d[0], True, d[3], d))
        else:
            kept_deletes.append(d)
    for versions in folded.values():
        state = None
        for version in sorted(versions, key=lambda v: v[0]):
            _, is_delete, value, _ = version
            if state is None or (not is_delete and state[1]) or not _greater(state[2], value):
                state = version
        seq, is_delete, _, item = state
        if is_delete:
            kept_deletes.append((seq, item[1], item[2], None))
        else:
            kept_records.append((seq, item))
    return sorted(kept_records, key=lambda r: r[0]), sorted(kept_deletes, key=lambda d: d[0])


def _versions(table: pa.Table, offset: int, deleted: bool, seqs: list[int] | None = None) -> pa.Table:
    n = table.num_rows
    order = pa.array([offset + s for s in seqs] if seqs is not None else range(n), pa.int64())
    return (
        table.append_column(pcb.KEY, table.column(avro.RECORD_KEY))
        .append_column(pcb.PARTITION, table.column(avro.PARTITION_PATH))
        .append_column(pcb.ORDER, order)
        .append_column(pcb.DELETE, pa.array([deleted] * n, pa.bool_()))
    )


def read_snapshot(table: HudiTable, as_of: str | None = None, *, skip_corrupt: bool = False) -> pa.Table:
    """Every live row of the table as of `as_of` (default: the latest completed instant), in any of
    the formats Hudi's time travel takes (`query_instant`)."""
    ctx, slices = context(table, None if as_of is None else query_instant(as_of), skip_corrupt=skip_corrupt)
    parts = [read_slice(ctx, s) for s in slices]
    parts = [p for p in parts if p.num_rows]
    return pa.concat_tables(parts) if parts else ctx.arrow_schema.empty_table()


def read_incremental(table: HudiTable, start: str, end: str | None = None, *,
                     skip_corrupt: bool = False) -> pa.Table:
    """Rows changed by commits in (start, end], with their values as of `end`.

    Only file groups those commits wrote are read (their write stats say which). Both times are
    taken in any of the formats Hudi's queries take (`query_instant`).
    """
    start = query_instant(start)
    end = None if end is None else query_instant(end)
    timeline = table.timeline()
    commits = [
        i for i in timeline.completed(Action.DELTA_COMMIT, Action.COMMIT, Action.REPLACE_COMMIT)
        if i.timestamp > start and (end is None or i.timestamp <= end)
    ]
    touched = set()
    for instant in commits:
        for stat in table.commit_metadata(instant).all_write_stats():
            touched.add((stat.partition_path or "", stat.file_id))
    ctx, slices = context(table, end, skip_corrupt=skip_corrupt)
    parts = []
    for s in slices:
        if (s.partition_path, s.file_id) not in touched:
            continue
        rows = read_slice(ctx, s)
        commit_time = rows.column(avro.COMMIT_TIME)
        in_range = pc.greater(commit_time, pa.scalar(start))
        if end is not None:
            in_range = pc.and_(in_range, pc.less_equal(commit_time, pa.scalar(end)))
        parts.append(rows.filter(in_range))
    parts = [p for p in parts if p.num_rows]
    return pa.concat_tables(parts) if parts else ctx.arrow_schema.empty_table()


def slices_with_base_files(slices: Iterable[FileSlice]) -> list[FileSlice]:
    return [s for s in slices if s.base_file is not None]
