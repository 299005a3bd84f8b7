"""The work of write tasks, on Arrow tables, free of Spark.

The Spark sink runs these inside `mapInArrow` on executors; the local writer runs them in-process.
Either way the same functions decide every byte, so a table written through Spark equals one written
locally.

Bucket index: records are routed by (partition, bucket), and one task does everything for a bucket:
pre-combine, look up the key state, drop stale versions, write the file group, write the state.

Key index: a first pass, routed by key shard, pre-combines and resolves against the shard's state,
tags each record (`tag`), places new keys as Hudi's upsert partitioner does for an index that cannot
index log files (`insert_buckets`: the plan's small base files, then new file groups) and writes the
shards' state (`place_and_index`); a second pass, routed by file group, writes them (`write_groups`:
a small file's group is rewritten into a new base file). Hudi places new keys from the whole batch's
count per partition; a shard task sees a share of the keys that the hash of the key makes even, so it
places them from its own count scaled by that share (`estimated_insert_counts`), exact with one task,
and the two passes run as one Spark job with nothing between them on the driver.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import ClusteringConflict
from ingest.hudi.avro import schema as avro
from ingest.hudi.avro.promotion import promote, untyped
from ingest.hudi.keygen.bucket_index import bucket_ids, java_string_hashes
from ingest.hudi.merge import precombine as pcb
from ingest.hudi.parquet.base_file import read_base_file
from ingest.hudi.timeline.commit_metadata import WriteStat
from ingest.index import key_state as ks
from ingest.write import fence
from ingest.write.file_group_writer import IS_UPDATE, TaskIdentity, write_file_groups, writes_base_file
from ingest.write.plan import WritePlan
from ingest.write.resolve import DELETED_IN, FILE_ID, join_rows, resolve, state_changes

BUCKET = "_ingest_bucket"
SHARD = "_ingest_shard"
KIND = "_ingest_kind"
UPSERT, DELETE, DEAD = "U", "D", "X"
SEGMENT = "S"  # a row naming a key-state segment this instant wrote (its path in `FILE_ID`)
COUNTERS = ("upserts", "inserts", "updates", "deletes", "stale", "missing_deletes")
ADMISSION = ("rows_in", "quarantined")


@dataclass(frozen=True)
class TaskResult:
    stats: tuple[WriteStat, ...] = ()
    segments: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)

    @staticmethod
    def merge(results: Iterable[TaskResult]) -> TaskResult:
        stats, segments, counts = [], [], dict.fromkeys(COUNTERS, 0)
        for r in results:
            stats.extend(r.stats)
            segments.extend(r.segments)
            for k, v in r.counts.items():
                counts[k] = counts.get(k, 0) + v
        return TaskResult(tuple(stats), tuple(segments), counts)


# -- routing ------------------------------------------------------------------------------------


def key_shards(keys: pa.Array | pa.ChunkedArray, shards: int) -> np.ndarray:
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    return (java_string_hashes(keys).astype(np.int64) & 0x7FFFFFFF) % shards


def shard_name(plan: WritePlan, route: int) -> str:
    """Key-state shard of a route: one per bucket (all partitions), or one per key shard."""
    if plan.index_type.value == "bucket":
        return f"bucket-{route:08d}"
    return f"{route:04d}"


def conform(plan: WritePlan, records: pa.Table) -> pa.Table:
    """Data columns cast to the writer schema's Arrow types (all-null columns get the table's type; a
    narrower type the schema's evolution accepted is promoted as Hudi promotes it)."""
    target = avro.avro_to_arrow(plan.write.writer_schema)
    unknown = [f.name for f in records.schema if untyped(f.type) and target.get_field_index(f.name) < 0]
    records = records.drop_columns(unknown)  # all null and not in the table: nothing to keep
    for i, name in enumerate(records.column_names):
        index = target.get_field_index(name)
        if index >= 0 and records.schema.field(i).type != target.field(index).type:
            records = records.set_column(i, name, promote(records.column(i), target.field(index).type))
    return records


def route(plan: WritePlan, records: pa.Table) -> pa.Table:
    """Add the routing column: the bucket (bucket index) or the key shard (key index).

    Both depend on the key alone, so every version of a key, tombstones included (whose partition is
    unknown), meets in the task that owns its bucket or shard.
    """
    if plan.index_type.value == "bucket":
        ids = bucket_ids(records.column(pcb.KEY).combine_chunks(), plan.hash_fields, plan.bucket_count,
                         cut_1x=plan.bucket_cut_1x)
        return records.append_column(BUCKET, pa.array(ids.astype(np.int32)))
    return records.append_column(SHARD, pa.array(key_shards(records.column(pcb.KEY), plan.shards).astype(np.int32)))


def _group_order(table: pa.Table, columns: list[str]) -> tuple[np.ndarray, list[int]]:
    """The row order that sorts `table` by `columns` (stable), and where each group of rows sharing
    them starts in that order (then the row count)."""
    codes = []
    for name in columns:
        col = table.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if pa.types.is_integer(col.type):
            codes.append(np.asarray(pc.fill_null(col, -1).to_numpy(zero_copy_only=False), dtype=np.int64))
        else:
            codes.append(np.asarray(col.dictionary_encode(null_encoding="encode").indices.to_numpy(
                zero_copy_only=False), dtype=np.int64))
    key = _small_key(codes)
    if key is not None:
        # numpy sorts 16-bit integers by radix: a few times faster than a lexsort of int64 codes.
        order = np.argsort(key, kind="stable")
        sorted_codes = [key[order]]
    else:
        order = np.lexsort(codes[::-1])
        sorted_codes = [c[order] for c in codes]
    change = np.zeros(len(order), dtype=bool)
    change[0] = True
    for c in sorted_codes:
        change[1:] |= c[1:] != c[:-1]
    return order, np.flatnonzero(change).tolist() + [len(order)]


def _small_key(codes: list[np.ndarray]) -> np.ndarray | None:
    """The codes (each -1 or more) as one uint16 key in the same order, first column first, when
    their combinations fit in 16 bits (buckets, shards, a task's partitions); else None."""
    key = np.zeros(len(codes[0]), dtype=np.int64)
    span = 1
    for c in codes:
        width = int(c.max()) + 2 if len(c) else 1
        span *= width
        if span > 1 << 16:
            return None
        key = key * width + (c + 1)
    return key.astype(np.uint16)


def _groups(table: pa.Table, columns: list[str]) -> Iterable[tuple[tuple, pa.Table]]:
    """Contiguous groups of rows sharing `columns`, in sorted order."""
    if table.num_rows == 0:
        return
    order, starts = _group_order(table, columns)
    ordered = table.take(pa.array(order))
    for begin, end in zip(starts[:-1], starts[1:], strict=True):
        group = ordered.slice(begin, end - begin)
        yield tuple(group.column(c)[0].as_py() for c in columns), group


def _where(table: pa.Table, mask: pa.Array | pa.ChunkedArray) -> pa.Table:
    """`table.filter(mask)` (mask without nulls), without copying every column when the mask keeps all
    rows or none: the common case for the kind masks below, over a task's whole batch."""
    kept = pc.sum(mask).as_py() or 0
    if kept == table.num_rows:
        return table
    if kept == 0:
        return table.slice(0, 0)
    return table.filter(mask)


def _drop_internal(table: pa.Table, *names: str) -> pa.Table:
    return table.drop_columns([n for n in names if n in table.column_names])


def _counts(resolved, upserts: pa.Table) -> dict[str, int]:
    updates = int(pc.sum(upserts.column(IS_UPDATE).cast(pa.int64())).as_py() or 0) if upserts.num_rows else 0
    deletes = int(pc.sum(pc.invert(resolved.deletes.column("_ingest_moved")).cast(pa.int64())).as_py() or 0) \
        if resolved.deletes.num_rows else 0
    return {
        "upserts": upserts.num_rows, "updates": updates, "inserts": upserts.num_rows - updates,
        "deletes": deletes, "stale": resolved.stale, "missing_deletes": resolved.missing_deletes,
    }


def _write_segment(plan: WritePlan, store: ks.KeyStateStore, state: ks.ShardState, changes: pa.Table,
                   replaced: np.ndarray | None = None) -> str:
    # No marker: Hudi's rollback accepts markers of data files only. A segment counts once its
    # instant completes; one of an instant that never did is deleted by `ks.discard_instant`.
    written = store.write(state, changes, plan.instant, replaced)
    store.prune(state)
    return written.path


# -- bucket index: everything in one task ---------------------------------------------------------


def _bucket_tombstones(records: pa.Table, state: ks.ShardState) -> pa.Table:
    """A tombstone (partition unknown) applies to its key in every partition where the key lives
    (the bucket's state says) or arrives in this batch."""
    unknown = pc.is_null(records.column(pcb.PARTITION))
    if not records.num_rows or not pc.any(unknown).as_py():
        return records
    lost = records.filter(unknown)
    known = records.filter(pc.invert(unknown))
    rows = state.rows_for_keys(lost.column(pcb.KEY))
    live = rows.filter(pc.invert(rows.column(ks.DELETED)))
    names = [pcb.KEY, "_ingest_place"]
    places = pa.concat_tables([
        pa.table([live.column(ks.KEY), live.column(ks.PARTITION)], names=names),
        pa.table([known.column(pcb.KEY), known.column(pcb.PARTITION)], names=names),
    ], promote_options="permissive").group_by(names).aggregate([])
    return pa.concat_tables([known, _place(lost, places)])


def _place(lost: pa.Table, places: pa.Table) -> pa.Table:
    """Copies of partition-less rows, one per (key, partition) in `places` (`_ingest_place`)."""
    joined = join_rows(lost, [pcb.KEY], places, ("_ingest_place",), join_type="inner")
    index = joined.schema.get_field_index(pcb.PARTITION)
    return joined.set_column(index, pcb.PARTITION, joined.column("_ingest_place")).drop_columns(["_ingest_place"])


WIDE_ROW = "_ingest_wide_row"


def _decisive(records: pa.Table, ordering_field: str | None) -> list[str]:
    """The columns that decide what is written: grouping, pre-combining and resolving read only these."""
    return [c for c in (pcb.KEY, pcb.PARTITION, pcb.DELETE, pcb.ORDER, BUCKET, ordering_field)
            if c is not None and c in records.column_names]


def _narrow(records: pa.Table, ordering_field: str | None) -> pa.Table:
    """The decisive columns, and each row's number in `records`.

    Grouping, pre-combining and resolving then move only these; the data columns are taken once,
    in their final order, for the file groups (`_widen`). Copying every column at each step costs
    more than the steps themselves.
    """
    narrow = records.select(_decisive(records, ordering_field))
    return narrow.append_column(WIDE_ROW, pa.array(np.arange(records.num_rows, dtype=np.int64)))


RUN_BYTES = 32 << 20  # new base files' data columns are taken about this many bytes at a time


def _runs(sizes: list[int], limit: int) -> list[list[int]]:
    """Consecutive indexes of `sizes` cut into runs of at most `limit` in total (at least one each)."""
    runs: list[list[int]] = []
    total = 0
    for i, size in enumerate(sizes):
        if not runs or total + size > limit:
            runs.append([])
            total = 0
        runs[-1].append(i)
        total += size
    return runs


def _in_runs(data: pa.Table, sizes: list[int], rows_of: Callable[[list[int]], pa.Array],
             limit: int) -> Iterator[pa.Table]:
    """Each group's rows of `data`, group after group (`sizes[i]` rows each). Consecutive groups of at
    most `limit` rows in all are taken together when the first of them is asked for (`rows_of(run)`:
    their row numbers, group after group), then sliced without copying: the caller holds one run's
    copy at a time, and a take per group would cost more than one for the run."""
    for run in _runs(sizes, limit):
        taken = data.take(rows_of(run))
        start = 0
        for i in run:
            part = taken.slice(start, sizes[i])
            start += sizes[i]
            yield part
            del part  # else it would hold this run's rows while the next run is taken
        del taken


def _run_rows(data: pa.Table) -> int:
    """Rows of `data` in about `RUN_BYTES`."""
    return max(1, int(RUN_BYTES // max(data.nbytes / max(1, data.num_rows), 1)))


def _widen(plan: WritePlan, records: pa.Table, writes: list[tuple]) -> Iterator[tuple]:
    """`writes` with their narrow rows given the data columns of the `records` they stand for, in order.

    Groups written into logs or merged are taken in one run (the encoder reads them as one table).
    New base files' groups, the whole of a bulk load, are taken in runs of about `RUN_BYTES`, each
    when the writer comes to it (`_in_runs`): the task then holds a run's copy of the data instead of
    a second copy of all of it (which a fresh Python worker also pays for in page faults). Their rows
    keep the order they came in, which `_write_base_file` keeps too.
    """
    data = records.drop_columns(_decisive(records, plan.ordering_field)).combine_chunks()
    own = [writes_base_file(plan.write, target, deletes) for target, _, deletes in writes]

    def parts(groups: list[int], limit: int) -> Iterator[pa.Table]:
        def rows_of(run: list[int]) -> pa.Array:
            chunks = [c.cast(pa.int64()) for j in run for c in writes[groups[j]][1].column(WIDE_ROW).chunks]
            return pa.concat_arrays(chunks) if chunks else pa.array([], pa.int64())

        return _in_runs(data, [writes[i][1].num_rows for i in groups], rows_of, limit)

    shared = parts([i for i, base in enumerate(own) if not base], max(1, data.num_rows))
    base = parts([i for i, base in enumerate(own) if base], _run_rows(data))
    for i, (target, narrow, deletes) in enumerate(writes):
        part = next(base if own[i] else shared)
        narrow = narrow.drop_columns([WIDE_ROW])
        yield (target, pa.Table.from_arrays(narrow.columns + part.columns,
                                            names=narrow.column_names + part.column_names), deletes)
        del narrow, part  # else they would hold this run's rows while the next run is taken


def refuse_pending_clustering(plan: WritePlan, partitions: Iterable[str | None], file_ids: Iterable[str | None]) -> None:
    """Fail before writing when a row goes to a file group a pending clustering will replace (the
    clustering's new groups would not hold it). Hudi's default `SparkRejectUpdateStrategy.handleUpdate`
    refuses such a write too, after tagging, with this message."""
    if not plan.clustering:
        return
    hit = sorted({(p or "", f) for p, f in zip(partitions, file_ids, strict=True)} & plan.clustering.keys())
    if hit:
        partition, file_id = hit[0]
        raise ClusteringConflict(
            f"Not allowed to update the clustering file group HoodieFileGroupId{{partitionPath='{partition}', "
            f"fileId='{file_id}'}}. For pending clustering operations, we are not going to support update for "
            f"now. ({len(hit)} file group(s) of clustering {plan.clustering[hit[0]]}, which Hudi scheduled on "
            f"{plan.storage.base_url}, take rows of this batch: let the clustering complete, or roll it back with "
            "Hudi, then write again)")


def _check_live(plan: WritePlan) -> None:
    fence.check(plan.storage, plan.write.timeline_layout, plan.instant)


def _fenced(plan: WritePlan, result: TaskResult) -> TaskResult:
    """`result` once the instant is known to be live after the task's writes; else they are taken back."""
    fence.take_back_if_rolled_back(plan.storage, plan.write.timeline_layout, plan.instant, result.stats,
                                   result.segments)
    return result


def bucket_task(plan: WritePlan, records: pa.Table, task: TaskIdentity) -> TaskResult:
    """Everything for the buckets routed to this task, in every partition: one key-state shard per bucket.
    Fenced (`ingest.write.fence`): nothing is written for, or left of, an instant rolled back meanwhile."""
    _check_live(plan)
    return _fenced(plan, _bucket_writes(plan, records, task))


def _bucket_writes(plan: WritePlan, records: pa.Table, task: TaskIdentity) -> TaskResult:
    store = plan.key_state()
    results = []
    writes = []
    pending_state = []
    # One chunk: each file group's `_widen` takes from these columns, and a take from a chunked
    # column costs several times one from a contiguous one (Spark hands a task ~10,000-row batches).
    records = conform(plan, records).combine_chunks()
    listed = store.segments_of(shard_name(plan, b) for b in pc.unique(records.column(BUCKET)).to_pylist())
    for (bucket,), group in _groups(_narrow(records, plan.ordering_field), [BUCKET]):
        group = _drop_internal(group, BUCKET)
        state = store.load(shard_name(plan, bucket), plan.is_visible, listed[shard_name(plan, bucket)])
        group = _bucket_tombstones(group, state)
        combined = pcb.precombine(group, plan.ordering_field, global_scope=False)
        resolved = resolve(combined, state, plan.ordering_field, plan.event_time, global_scope=False)
        upserts = _drop_internal(resolved.upserts, DELETED_IN)
        partitions = upserts.column(pcb.PARTITION).combine_chunks().dictionary_encode()
        ids = pa.array([plan.bucket_file_id(p, bucket) for p in partitions.dictionary.to_pylist()], pa.string())
        # Dictionary-encoded, as the key state holds them; the file writers never read this column.
        file_ids = pa.DictionaryArray.from_arrays(partitions.indices, ids)
        upserts = upserts.set_column(upserts.schema.get_field_index(FILE_ID), FILE_ID, file_ids)
        deletes = resolved.deletes
        by_partition = {p: part for (p,), part in _groups(upserts, [pcb.PARTITION])}
        delete_partitions = set(deletes.column(pcb.PARTITION).to_pylist())
        for partition in sorted(set(by_partition) | delete_partitions):
            part_upserts = by_partition.get(partition, upserts.slice(0, 0))
            part_deletes = deletes.filter(pc.equal(deletes.column(pcb.PARTITION), partition))
            target = plan.target(partition, plan.bucket_file_id(partition, bucket))
            writes.append((target, part_upserts, part_deletes))
        # The state holds partitions dictionary-encoded too, as they are here.
        encoded = upserts.set_column(upserts.schema.get_field_index(pcb.PARTITION), pcb.PARTITION, partitions)
        changes = state_changes(encoded, resolved.deleted_state, plan.ordering_field, plan.ordering_type,
                                plan.instant)
        pending_state.append((state, changes, resolved.overlay_replaced))
        results.append(TaskResult((), (), _counts(resolved, upserts)))
    refuse_pending_clustering(plan, (t.partition_path for t, _, _ in writes), (t.file_id for t, _, _ in writes))
    stats = tuple(write_file_groups(plan.write, _widen(plan, records, writes), task)) if writes else ()
    segments = tuple(store.storage.map(lambda pending: _write_segment(plan, store, *pending),
                                       [p for p in pending_state if p[1].num_rows]))
    return TaskResult.merge([*results, TaskResult(stats, segments, {})])


# -- key index: tag, size new file groups, write groups, write state ---------------------------------


def tagged_schema(records_schema: pa.Schema, plan: WritePlan) -> pa.Schema:
    """The schema `tag` outputs: the record columns plus where each row goes and what it is.

    Every column is nullable: delete and key-state rows carry no data values.
    """
    fields = [f.with_nullable(True) for f in records_schema if f.name not in (SHARD,)]
    return pa.schema(fields + [
        pa.field(FILE_ID, pa.string()), pa.field(IS_UPDATE, pa.bool_()), pa.field(KIND, pa.string()),
        pa.field(SHARD, pa.int32()),
    ])


def _expand_unknown_partitions(group: pa.Table, state: ks.ShardState) -> pa.Table:
    """Partition-scoped key index: a tombstone without partition applies to its key in every partition
    the key lives in (the shard's state) or arrives in (this batch). Done before pre-combine, so the
    tombstone supersedes exactly the versions before it."""
    unknown = pc.is_null(group.column(pcb.PARTITION))
    if not group.num_rows or not pc.any(unknown).as_py():
        return group
    lost = group.filter(unknown)
    rows = state.rows_for_keys(lost.column(pcb.KEY))
    live = rows.filter(pc.invert(rows.column(ks.DELETED))).select([ks.KEY, ks.PARTITION])
    seen = group.filter(pc.invert(unknown)).select([pcb.KEY, pcb.PARTITION])
    names = [pcb.KEY, "_ingest_place"]
    places = pa.concat_tables([
        pa.table([live.column(0), live.column(1)], names=names),
        pa.table([seen.column(0), seen.column(1)], names=names),
    ], promote_options="permissive")
    places = places.group_by([pcb.KEY, "_ingest_place"]).aggregate([])
    return pa.concat_tables([group.filter(pc.invert(unknown)), _place(lost, places)])


def tag(plan: WritePlan, records: pa.Table, schema: pa.Schema) -> tuple[pa.Table, dict[str, int]]:
    """Pre-combine and resolve each key shard against its state; rows tagged U / D / X."""
    store = plan.key_state()
    out = []
    counts = dict.fromkeys(COUNTERS, 0)
    records = conform(plan, records)
    listed = store.segments_of(shard_name(plan, s) for s in pc.unique(records.column(SHARD)).to_pylist())
    for (shard,), group in _groups(records, [SHARD]):
        group = _drop_internal(group, SHARD)
        state = store.load(shard_name(plan, shard), plan.is_visible, listed[shard_name(plan, shard)])
        if not plan.global_scope:
            group = _expand_unknown_partitions(group, state)
        combined = pcb.precombine(group, plan.ordering_field, global_scope=plan.global_scope)
        resolved = resolve(combined, state, plan.ordering_field, plan.event_time, plan.global_scope)
        upserts = _back_where_hudi_finds_them(plan, resolved.upserts)
        for k, v in _counts(resolved, upserts).items():
            counts[k] += v
        parts = [_conform(upserts, schema, UPSERT, shard)]
        deletes = resolved.deletes
        if deletes.num_rows:
            parts.append(_conform(deletes.drop_columns(["_ingest_moved"]), schema, DELETE, shard))
        dead = resolved.deleted_state
        if dead.num_rows:
            rows = {pcb.KEY: dead.column(ks.KEY), pcb.PARTITION: dead.column(ks.PARTITION),
                    FILE_ID: dead.column(ks.FILE_ID)}
            if plan.ordering_field:
                rows[plan.ordering_field] = dead.column(ks.ORDERING)
            parts.append(_conform(pa.table(rows), schema, DEAD, shard))
        out.extend(parts)
    table = pa.concat_tables(out) if out else schema.empty_table()
    return table, counts


def _back_where_hudi_finds_them(plan: WritePlan, upserts: pa.Table) -> pa.Table:
    """A deleted key written again goes back to its file group when that group's base file still holds
    it (the delete is in a log): Hudi's SIMPLE and BLOOM indexes read base files, not logs
    (`HoodieIndexUtils.getLatestBaseFilesForPartition`), so Hudi tags such a key as an update of that
    group (`HoodieAppendHandle`); put anywhere else, its index would find the key in two files."""
    again = upserts.column(DELETED_IN).combine_chunks() if upserts.num_rows else None
    if again is None or again.null_count == len(again):
        return _drop_internal(upserts, DELETED_IN)
    file_ids = upserts.column(FILE_ID).to_pylist()
    updates = upserts.column(IS_UPDATE).to_pylist()
    keys = upserts.column(pcb.KEY).to_pylist()
    partitions = upserts.column(pcb.PARTITION).to_pylist()
    groups = again.to_pylist()
    in_base: dict[tuple[str, str], set] = {}
    for i in np.flatnonzero(pc.is_valid(again).to_numpy(zero_copy_only=False)):
        place = (partitions[i], groups[i])
        target = plan.targets.get(place)
        if target is None or target.base_file is None:
            continue
        if place not in in_base:
            base = read_base_file(plan.storage, target.path(target.base_file), columns=[avro.RECORD_KEY])
            in_base[place] = set(base.column(avro.RECORD_KEY).to_pylist())
        if keys[i] in in_base[place]:
            file_ids[i], updates[i] = groups[i], True
    upserts = upserts.set_column(upserts.schema.get_field_index(FILE_ID), FILE_ID, pa.array(file_ids, pa.string()))
    upserts = upserts.set_column(upserts.schema.get_field_index(IS_UPDATE), IS_UPDATE, pa.array(updates, pa.bool_()))
    return upserts.drop_columns([DELETED_IN])


def _conform(table: pa.Table, schema: pa.Schema, kind: str, shard: int) -> pa.Table:
    n = table.num_rows
    cols = []
    for f in schema:
        if f.name == KIND:
            cols.append(pa.array([kind] * n, pa.string()))
        elif f.name == SHARD:
            cols.append(pa.array([shard] * n, pa.int32()))
        elif f.name in table.column_names:
            col = table.column(f.name)
            cols.append(col.cast(f.type) if col.type != f.type else col)
        else:
            cols.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def insert_counts(tagged: pa.Table) -> dict[str, int]:
    new = tagged.filter(pc.and_(pc.equal(tagged.column(KIND), UPSERT), pc.is_null(tagged.column(FILE_ID))))
    out: dict[str, int] = {}
    for (partition,), group in _groups(new.select([pcb.PARTITION]), [pcb.PARTITION]):
        out[partition] = group.num_rows
    return out


def insert_buckets(plan: WritePlan, counts: Mapping[str, int]) -> dict[str, tuple[tuple[str, int], ...]]:
    """New keys per partition: the plan's small files first, then new file groups (`UpsertPartitioner.assignInserts`).

    A small file takes (max file size - its size) / bytes per record of them; the rest is cut into
    new file groups of `hoodie.copyonwrite.insert.split.size` records, or, auto-split, of max file
    size / bytes per record, the last one taking the remainder.
    """
    record_bytes = max(1, plan.record_bytes)
    per_group = max(1, plan.insert_split or plan.file_group_max_bytes // record_bytes)
    out = {}
    for partition, n in sorted(counts.items()):
        buckets = []
        remaining = n
        for file_id, size in plan.small_files.get(partition, ()):
            take = min(remaining, (plan.file_group_max_bytes - size) // record_bytes)
            if take > 0:
                buckets.append((file_id, take))
                remaining -= take
        index = 0
        while remaining > 0:
            take = min(remaining, per_group)
            buckets.append((plan.new_file_id(partition, index), take))
            remaining -= take
            index += 1
        out[partition] = tuple(buckets)
    return out


def assign(tagged: pa.Table, buckets: Mapping[str, tuple[tuple[str, int], ...]]) -> pa.Table:
    """Give each new key its file group: hash of the key over the groups' shares (as Hudi's upsert partitioner)."""
    new_mask = pc.and_(pc.equal(tagged.column(KIND), UPSERT), pc.is_null(tagged.column(FILE_ID)))
    if not tagged.num_rows or not pc.any(new_mask).as_py():
        return tagged
    new_mask = new_mask.combine_chunks() if isinstance(new_mask, pa.ChunkedArray) else new_mask
    rows = np.flatnonzero(np.asarray(new_mask.to_numpy(zero_copy_only=False), dtype=bool))
    keys = tagged.column(pcb.KEY).take(pa.array(rows)).combine_chunks()
    hashes = java_string_hashes(keys).astype(np.int64) & 0x7FFFFFFF
    partitions = tagged.column(pcb.PARTITION).take(pa.array(rows)).combine_chunks().dictionary_encode()
    codes = partitions.indices.to_numpy(zero_copy_only=False)
    chosen = np.empty(len(rows), dtype=object)
    for code, partition in enumerate(partitions.dictionary.to_pylist()):
        here = codes == code
        cumulative = np.cumsum([c for _, c in buckets[partition]])
        ids = np.array([f for f, _ in buckets[partition]], dtype=object)
        chosen[here] = ids[np.searchsorted(cumulative, hashes[here] % cumulative[-1], side="right")]
    file_ids = pc.replace_with_mask(tagged.column(FILE_ID).combine_chunks(), new_mask, pa.array(chosen, pa.string()))
    return tagged.set_column(tagged.schema.get_field_index(FILE_ID), FILE_ID, file_ids)


def write_groups(plan: WritePlan, tagged: pa.Table, task: TaskIdentity) -> TaskResult:
    """Write every file group's upserts and deletes (rows routed here by file group); segment rows
    (`place_and_index`) are handed on in the result, and taken back with the files if the instant
    was rolled back meanwhile (`ingest.write.fence`)."""
    _check_live(plan)
    kinds = tagged.column(KIND)
    segments = tagged.column(FILE_ID).filter(pc.equal(kinds, SEGMENT)).to_pylist()
    written = np.flatnonzero(np.asarray(pc.is_in(kinds, pa.array([UPSERT, DELETE])).to_numpy(
        zero_copy_only=False), dtype=bool))
    stats = write_file_groups(plan.write, _file_group_writes(plan, tagged, written), task)
    return _fenced(plan, TaskResult(tuple(stats), tuple(segments), {}))


def _file_group_writes(plan: WritePlan, tagged: pa.Table, written: np.ndarray) -> Iterator[tuple]:
    """Each file group's (target, upserts, deletes) from the `written` rows of `tagged`, in (partition,
    file id) order, rows in the order they came.

    A group's rows are taken when the writer comes to it, with the next groups' in a run of about
    `RUN_BYTES` (as `_widen` takes a bulk load's): the task holds one run's copy of its rows at a time,
    not a second copy of all of them in group order.
    """
    if not len(written):
        return
    keys = tagged.select([pcb.PARTITION, FILE_ID]).take(pa.array(written))
    order, starts = _group_order(keys, [pcb.PARTITION, FILE_ID])
    firsts = pa.array(order[starts[:-1]])
    targets = [plan.target(partition, file_id) for partition, file_id in zip(
        keys.column(pcb.PARTITION).take(firsts).to_pylist(), keys.column(FILE_ID).take(firsts).to_pylist(), strict=True)]
    del keys
    data = tagged.combine_chunks()  # a copy only where the rows came in pieces (a take joins them each time)
    rows = written[order]
    sizes = np.diff(starts).tolist()
    groups = _in_runs(data, sizes, lambda run: pa.array(rows[starts[run[0]]:starts[run[-1] + 1]]), _run_rows(data))
    for target in targets:  # no zip: its reused result tuple would hold the last group a step longer
        group = next(groups)
        kinds = group.column(KIND)
        upserts = _where(group, pc.equal(kinds, UPSERT))
        deletes = _where(group, pc.equal(kinds, DELETE))
        yield target, _drop_internal(upserts, KIND, SHARD), deletes
        del group, kinds, upserts, deletes  # else they would hold this run's rows into the next


def write_state(plan: WritePlan, tagged: pa.Table) -> TaskResult:
    """Write each shard's state changes (rows still grouped by shard)."""
    store = plan.key_state()
    pending = []
    # Only the columns the state keeps: grouping takes every column it is given.
    kept = [c for c in (KIND, SHARD, pcb.KEY, pcb.PARTITION, FILE_ID, plan.ordering_field) if c is not None]
    for (shard,), group in _groups(tagged.select(kept), [SHARD]):
        kinds = group.column(KIND)
        live = _where(group, pc.equal(kinds, UPSERT))
        dead = _where(group, pc.equal(kinds, DEAD))
        dead_state = pa.table({
            ks.KEY: dead.column(pcb.KEY), ks.PARTITION: dead.column(pcb.PARTITION),
            ks.FILE_ID: dead.column(FILE_ID),
            ks.ORDERING: dead.column(plan.ordering_field) if plan.ordering_field else pa.nulls(dead.num_rows),
            ks.DELETED: pa.array([True] * dead.num_rows),
        })
        changes = state_changes(live, dead_state, plan.ordering_field, plan.ordering_type, plan.instant)
        if changes.num_rows:
            pending.append((shard_name(plan, shard), changes))
    listed = store.segments_of(name for name, _ in pending)
    segments = []
    at_once = store.storage.requests_at_once  # states loaded a few at a time: one on a local disk
    for start in range(0, len(pending), at_once):
        loaded = [(store.load(name, plan.is_visible, listed[name]), changes)
                  for name, changes in pending[start:start + at_once]]
        segments += store.storage.map(lambda job: _write_segment(plan, store, *job), loaded)
        del loaded
    return TaskResult((), tuple(segments), {})


def place_and_index(plan: WritePlan, tagged: pa.Table, buckets: Mapping[str, tuple[tuple[str, int], ...]]) -> pa.Table:
    """One shard task's tagged rows on their way to the file-group writers: new keys placed
    (`assign`), the shards' state written (`write_state`), and out go the upserts and deletes plus a
    row per segment written. The rows are already in this task, in shard order, so the state costs
    no pass of its own; a retried task writes the same segments under the same names."""
    _check_live(plan)
    assigned = assign(tagged, buckets)
    rows = _where(assigned, pc.is_in(assigned.column(KIND), pa.array([UPSERT, DELETE])))
    if plan.clustering:
        planned = pc.is_in(rows.column(FILE_ID), value_set=pa.array(sorted({f for _, f in plan.clustering}), pa.string()))
        hits = rows.select([pcb.PARTITION, FILE_ID]).filter(planned)
        refuse_pending_clustering(plan, hits.column(pcb.PARTITION).to_pylist(), hits.column(FILE_ID).to_pylist())
    segments = write_state(plan, assigned).segments
    if not segments:
        return rows
    named = _conform(pa.table({FILE_ID: pa.array(segments, pa.string())}), tagged.schema, SEGMENT, 0)
    return pa.concat_tables([rows, named])


def place_in_task(plan: WritePlan, tagged: pa.Table, tasks_count: int = 1, task: int = 0) -> pa.Table:
    """`place_and_index` for shard task `task` of `tasks_count`, sized by `estimated_insert_counts`."""
    return place_and_index(plan, tagged, insert_buckets(plan, estimated_insert_counts(plan, tagged, tasks_count, task)))


def estimated_insert_counts(plan: WritePlan, tagged: pa.Table, tasks_count: int, task: int) -> dict[str, int]:
    """New keys per partition in the whole batch, as one shard task can know them: its own count
    scaled by the share of shards it owns (task `i` owns the shards `s % tasks_count == i`). The
    shard is a hash of the key, so every task holds an even sample of each partition's new keys; with
    one task the count is exact, and the placement is exactly `UpsertPartitioner.assignInserts`."""
    owned = len(range(task, plan.shards, tasks_count))
    if owned == 0:
        return {}
    return {p: -(-n * plan.shards // owned) for p, n in insert_counts(tagged).items()}


def write_tasks(plan: WritePlan, tasks_count: int) -> dict[tuple[str, str], int]:
    """The write task of each existing file group the plan can weigh, the largest first onto the least
    loaded task.

    Hudi gives every file group a Spark partition of its own (`UpsertPartitioner.getPartition`), so
    Spark's scheduler evens the work out; here a fixed number of tasks writes them, decided before any
    row is tagged. The heavy work is a small file's rewrite (`HoodieMergeHandle` reads and writes all
    of its records), known from the plan; the rewrites are spread first, then the other existing
    groups by their base file's size (keys are updated evenly, so a group's share of a batch's updates
    follows its share of the keys); new groups go by a hash of their name (`write_task`).
    """
    out: dict[tuple[str, str], int] = {}
    small = [(size, partition, file_id) for partition, files in plan.small_files.items() for file_id, size in files]
    _spread(small, tasks_count, out)
    others = [(t.base_size, t.partition_path, t.file_id) for t in plan.targets.values()
              if t.base_size and (t.partition_path, t.file_id) not in out]
    _spread(others, tasks_count, out)
    return out


def _spread(groups: list[tuple[int, str, str]], tasks_count: int, out: dict[tuple[str, str], int]) -> None:
    """Largest first onto the least loaded task (ties by task number, so every caller agrees)."""
    load = [0] * tasks_count
    for size, partition, file_id in sorted(groups, key=lambda s: (-s[0], s[1], s[2])):
        task = min(range(tasks_count), key=lambda t: (load[t], t))
        out[(partition, file_id)] = task
        load[task] += size


def write_task(task_of: Mapping[tuple[str, str], int], tasks_count: int, partition: str | None, file_id: str) -> int:
    """The task writing a file group: `write_tasks`'s choice, else a hash of the group; rows of no
    file group (segment names) go to the first task."""
    if partition is None:
        return 0
    chosen = task_of.get((partition, file_id))
    if chosen is not None:
        return chosen
    return zlib.crc32(f"{partition}\x00{file_id}".encode()) % tasks_count
