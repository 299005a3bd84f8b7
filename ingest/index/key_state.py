"""The persisted record-key index: for every key, where it lives and its latest ordering value.

The writer needs two answers per incoming key, in the executor that handles it: which file group
holds the key (routing for the `key` index), and which version of the key the table currently shows
(its ordering value, or that it was deleted). The second answer lets the writer keep every key's
history monotonic in its ordering value, so that every Hudi reader — whatever its merge rules for
deletes — resolves the same rows (see `ingest.hudi.merge.precombine`).

Layout: `.hoodie/.aux/ingest/key_index/<shard>/<instant>.{delta,base}.parquet`. A task loads only its
shard. A segment counts only once its instant has completed (or is older than the active timeline),
so a crashed batch's segments are invisible. They get no write markers: Hudi's rollback accepts markers
of base and log files only (`MarkerBasedRollbackStrategy`), so a Hudi writer must never see one of
ours. Instead they recover by instant time: before an instant is rolled back its segments are deleted
(`discard_instant`), and segments of instants a Hudi writer rolled back, absent from the timeline yet
not older than it, are deleted before the next batch (`discard_orphans`) so archival can never make
them look committed.
When a shard accumulates deltas, the writer folds them into a new base segment.
"""

from __future__ import annotations

import functools
import io
import os
import posixpath
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ingest import parquet_bytes
from ingest.hudi.timeline.timeline import AUX_FOLDER
from ingest.index import key_hash_index as khi
from ingest.storage import Storage

INDEX_ROOT = f"{AUX_FOLDER}/ingest/key_index"
KEY = "key"
PARTITION = "partition"
FILE_ID = "file_id"
ORDERING = "ordering"
DELETED = "deleted"
INSTANT = "instant"
# Deltas a shard accumulates before its state is rewritten whole: rewriting costs time in the shard's
# size, so it is rare; reading the deltas back costs a small file each, only in a cold executor.
MAX_DELTAS = 32

_SEGMENT_RE = re.compile(r"^(\d+)\.(delta|base)\.parquet$")


def state_schema(ordering_type: pa.DataType | None) -> pa.Schema:
    return pa.schema([
        pa.field(KEY, pa.string(), nullable=False),
        pa.field(PARTITION, pa.string(), nullable=False),
        pa.field(FILE_ID, pa.string(), nullable=False),
        pa.field(ORDERING, ordering_type or pa.null()),
        pa.field(DELETED, pa.bool_(), nullable=False),
        pa.field(INSTANT, pa.string(), nullable=False),
    ])


# Columns with few distinct values per shard (a shard's partitions, file groups and instants), held
# dictionary-encoded in memory and read that way from parquet: a 250,000-key shard then takes 9 MB
# instead of 25 MB, and a process that has not held it reads it in 10 ms instead of 100-300 ms
# (decoding the repeated strings was most of the cost).
DICTIONARY_COLUMNS = (PARTITION, FILE_ID, INSTANT)
_DICTIONARY = pa.dictionary(pa.int32(), pa.string())


def as_schema(columns: Mapping[str, pa.Array | pa.ChunkedArray], schema: pa.Schema, rows: int) -> pa.Table:
    """`columns` as a table of `schema`: only columns of another type are cast, absent ones are null."""
    cols = []
    for field in schema:
        col = columns[field.name] if field.name in columns else pa.nulls(rows, field.type)
        cols.append(col.cast(field.type) if col.type != field.type else col)
    return pa.Table.from_arrays(cols, schema=schema)


def memory_schema(ordering_type: pa.DataType | None) -> pa.Schema:
    """The state as a process holds it: `state_schema` with `DICTIONARY_COLUMNS` dictionary-encoded."""
    schema = state_schema(ordering_type)
    for name in DICTIONARY_COLUMNS:
        i = schema.get_field_index(name)
        schema = schema.set(i, schema.field(i).with_type(_DICTIONARY))
    return schema


def _plain(table: pa.Table) -> pa.Table:
    """`table` with dictionary-encoded columns decoded (for the small tables handed to callers)."""
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, khi.plain_column(table.column(i)))
    return table


@dataclass(frozen=True)
class Segment:
    shard: str
    instant: str
    kind: str  # "delta" | "base"

    @property
    def path(self) -> str:
        return posixpath.join(INDEX_ROOT, self.shard, f"{self.instant}.{self.kind}.parquet")


def segment_folder(shard: str) -> str:
    return posixpath.join(INDEX_ROOT, shard)


def list_segments(storage: Storage, shard: str) -> list[Segment]:
    out = []
    for entry in storage.list(segment_folder(shard)):
        m = _SEGMENT_RE.match(entry.name)
        if m and not entry.is_dir:
            out.append(Segment(shard, m.group(1), m.group(2)))
    return sorted(out, key=lambda s: (s.instant, s.kind != "base"))


def _read(storage: Storage, segment: Segment) -> pa.Table:
    return parquet_bytes.read_table(storage.read(segment.path), dictionary_columns=DICTIONARY_COLUMNS)


def match_rows(big: pa.Table, big_keys: list[str], small: pa.Table, small_keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Row numbers `(in big, in small)` of the pairs equal on the keys (nulls match nothing)."""
    big_rows, small_rows, _ = _match(big, big_keys, small, small_keys)
    return big_rows, small_rows


def _match(big: pa.Table, big_keys: list[str], small: pa.Table, small_keys: list[str],
           small_hashes: np.ndarray | None = None, indexed: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """`match_rows`, plus the hashes of `small`'s first key when `big`'s index answered (pass them
    back as `small_hashes` to probe another table with the same rows).

    A table probed again (a shard's state kept between batches) answers through its `KeyHashIndex`,
    in time in `small`; one probed for the first time through a hash join built on `small`, which
    costs about one reading of `big` where building the index would cost more.
    """
    if big.num_rows == 0 or small.num_rows == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), small_hashes
    index = khi.index_for_probe(big, big_keys[0]) if indexed else None
    if index is None:
        return (*_joined(big, big_keys, small, small_keys), small_hashes)
    hashes = khi.hashes_of(small, small_keys[0]) if small_hashes is None else small_hashes
    valid = np.asarray(pc.is_valid(small.column(small_keys[0])).to_numpy(zero_copy_only=False), dtype=bool)
    first, big_rows, small_rows = index.candidates(hashes, valid)
    same = khi.equal_rows(big, big_keys, first, small, small_keys)
    if len(big_rows):
        other = khi.equal_pairs(big, big_keys, big_rows, small, small_keys, small_rows)
        return (np.concatenate([first[same], big_rows[other]]),
                np.concatenate([np.flatnonzero(same), small_rows[other]]), hashes)
    return first[same], np.flatnonzero(same), hashes


def _joined(big: pa.Table, big_keys: list[str], small: pa.Table, small_keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The pairs through a hash join that builds on `small`."""
    # The join hashes the first key alone (a record key, nearly unique); the other keys (a partition,
    # dictionary-encoded in the state) are compared on the matched pairs only.
    first = big.column(big_keys[0])
    probe = small.column(small_keys[0])
    probe = probe.cast(first.type) if probe.type != first.type else probe
    left = pa.table([first, pa.array(np.arange(big.num_rows, dtype=np.int64))], names=["_ingest_k", _BIG_ROW])
    right = pa.table([probe, pa.array(np.arange(small.num_rows, dtype=np.int64))], names=["_ingest_k", _SMALL_ROW])
    joined = left.join(right, keys="_ingest_k", join_type="inner", use_threads=False)
    big_rows, small_rows = joined.column(_BIG_ROW).to_numpy(), joined.column(_SMALL_ROW).to_numpy()
    if len(big_keys) > 1 and len(big_rows):
        same = khi.equal_pairs(big, big_keys[1:], big_rows, small, small_keys[1:], small_rows)
        big_rows, small_rows = big_rows[same], small_rows[same]
    return big_rows, small_rows


_BIG_ROW, _SMALL_ROW = "_ingest_big_row", "_ingest_small_row"


def _identity_keys(global_scope: bool) -> list[str]:
    return [KEY] if global_scope else [KEY, PARTITION]


def _apply(base: pa.Table, changes: pa.Table, global_scope: bool, indexed: bool = True,
           replaced: np.ndarray | None = None) -> pa.Table:
    """`base` (one row per identity) with `changes` (one row per identity) applied.

    The replaced rows are `replaced` when the caller knows them, else found by probing `base` with the
    changes (see `_match`); when `base` has an index and was probed, the result gets one derived from
    it, so a state kept between batches is never hashed again.
    """
    if changes.num_rows == 0:
        return base
    if base.num_rows == 0:
        return changes.combine_chunks()
    hashes = None
    if replaced is None:
        keys = _identity_keys(global_scope)
        replaced, _, hashes = _match(base, keys, changes, keys, indexed=indexed)
    keep = np.ones(base.num_rows, dtype=bool)
    keep[replaced] = False
    # One chunk: the rows taken from a state in every later batch's probes are taken from a chunked
    # column several times slower (0.2-0.5 ms a take from 17 chunks, against 0.02-0.1 from one).
    applied = pa.concat_tables([base.filter(pa.array(keep)), changes]).combine_chunks()
    parent = khi.index_of(base, KEY)
    if parent is not None and hashes is not None:
        added = khi.index_of(changes, KEY) or khi.KeyHashIndex.of_hashes(KEY, hashes)
        khi.register(applied, parent.after_apply(keep, added))
    return applied


def _fold(tables: list[pa.Table], global_scope: bool) -> pa.Table:
    """Tables applied in order, each holding an identity once."""
    folded = tables[0]
    for table in tables[1:]:
        folded = _apply(folded, table, global_scope)
    return folded


@dataclass(frozen=True)
class Found:
    """What `ShardState.lookup` found for each row: the state's columns (null where it holds none),
    and the overlay row holding the row's identity (-1: none). A batch whose state changes are rows it
    looked up hands their overlay rows to `with_changes`, which then does not probe the overlay again."""

    columns: pa.Table
    overlay_rows: np.ndarray


@dataclass(frozen=True)
class ShardState:
    """The visible state of one shard: a large `base` with a small `overlay` of later changes.

    Writers probe the two and never rebuild the base for a batch, so a small batch into a large
    shard costs time in the batch, not in the shard; the overlay is folded into the base once it
    outgrows it.
    """

    shard: str
    base: pa.Table
    overlay: pa.Table
    segments: tuple[Segment, ...]
    global_scope: bool = False

    @property
    def deltas_since_base(self) -> int:
        return sum(1 for s in self.segments if s.kind == "delta")

    def _parts(self) -> tuple[tuple[pa.Table, bool], ...]:
        """The base and the overlay, each with whether it is probed through a `KeyHashIndex`.

        The overlay changes with every batch: deriving its index each time (a sort and a renumbering
        of every overlay row, in random order) cost more than the hash join built on the batch, so it
        is joined; the base, probed by every batch until a fold replaces it, is indexed.
        """
        return (self.base, True), (self.overlay, False)

    @functools.cached_property
    def table(self) -> pa.Table:
        """Every identity's current row (base and overlay merged)."""
        return _apply(self.base, self.overlay, self.global_scope)

    def lookup(self, rows: pa.Table, keys: list[str], columns: tuple[str, ...]) -> Found:
        """`columns` of the state row of each of `rows` (matched on `keys`, in the state's key order:
        key, and partition unless global), null where the state has none."""
        state_keys = _identity_keys(self.global_scope)
        found, hashes = [], None
        for part, indexed in self._parts():
            rows_in_part = np.full(rows.num_rows, -1, dtype=np.int64)
            in_part, at, hashes = _match(part, state_keys, rows, keys, hashes, indexed)
            rows_in_part[at] = in_part
            found.append(rows_in_part)
        # Taken from each part on its own: taking from the two as one table would concatenate them.
        from_base = _plain(self.base.select(list(columns)).take(pa.array(found[0], mask=found[0] < 0)))
        newer = found[1] >= 0  # the overlay is newer than the base
        if not newer.any():
            return Found(from_base, found[1])
        from_overlay = _plain(self.overlay.select(list(columns)).take(pa.array(found[1], mask=~newer)))
        use = pa.array(newer)
        return Found(pa.table([pc.if_else(use, o, b) for o, b in zip(from_overlay.columns, from_base.columns,
                                                                      strict=True)], names=list(columns)), found[1])

    def rows_for_keys(self, keys: pa.Array | pa.ChunkedArray) -> pa.Table:
        """The current rows of the given record keys (in any partition)."""
        probe = pa.table({KEY: keys})
        base, overlay = (part.take(np.unique(_match(part, [KEY], probe, [KEY], indexed=indexed)[0]))
                         for part, indexed in self._parts())
        return _plain(_apply(base, overlay, self.global_scope))

    def with_changes(self, changes: pa.Table, replaced: np.ndarray | None = None) -> ShardState:
        """This state with `changes` applied (the overlay takes them; a large overlay joins the base).

        `replaced`: the overlay rows holding the identities of `changes`, where a lookup of those
        identities found them (`Found.overlay_rows`); probing the overlay for them again took 9 of the
        11 ms of applying 50,000 changes to a 150,000-row overlay.
        """
        overlay = _apply(self.overlay, changes, self.global_scope, indexed=False, replaced=replaced)
        return _normalized(replace(self, overlay=overlay))


_OVERLAY_MIN_ROWS = 65_536


def _normalized(state: ShardState) -> ShardState:
    if state.overlay.num_rows <= max(_OVERLAY_MIN_ROWS, state.base.num_rows):
        return state
    return replace(state, base=state.table, overlay=state.overlay.slice(0, 0))


class _ShardCache:
    """Shard states kept by a (long-lived) executor process between batches.

    An entry is valid for exactly the segments it was built from; a later batch whose visible segments
    extend them reads only the new ones. The segment a task just wrote is kept aside and adopted once
    its instant turns out visible (committed), so a streaming writer rarely reads its own index back.
    """

    def __init__(self, budget_bytes: int):
        self.budget = budget_bytes
        self.entries: OrderedDict[tuple, ShardState] = OrderedDict()
        self.written: dict[tuple, ShardState] = {}
        self.total = 0

    def get(self, key: tuple) -> ShardState | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
        return entry

    def put(self, key: tuple, state: ShardState) -> None:
        old = self.entries.pop(key, None)
        if old is not None:
            self.total -= _size(old)
        self.entries[key] = state
        self.total += _size(state)
        while self.total > self.budget and len(self.entries) > 1:
            _, dropped = self.entries.popitem(last=False)
            self.total -= _size(dropped)


def _size(state: ShardState) -> int:
    indexes = (khi.index_of(part, KEY) for part in (state.base, state.overlay))
    return state.base.nbytes + state.overlay.nbytes + sum(i.nbytes for i in indexes if i is not None)


_CACHE = _ShardCache(int(os.environ.get("INGEST_KEY_INDEX_CACHE_MB", "512")) * 1024 * 1024)


class KeyStateStore:
    """Reads and writes shard segments through `Storage`."""

    def __init__(self, storage: Storage, ordering_type: pa.DataType | None, global_scope: bool):
        self.storage = storage
        self.ordering_type = ordering_type
        self.global_scope = global_scope
        self.schema = memory_schema(ordering_type)

    def _cache_key(self, shard: str) -> tuple:
        return (self.storage.base_url, shard, self.global_scope)

    def segments_of(self, shards: Iterable[str]) -> dict[str, list[Segment]]:
        """Each shard's segments, the folders listed side by side on object stores: a task loads its
        shards one after another (they share this process's cache), but need not list them so."""
        shards = list(dict.fromkeys(shards))
        return dict(zip(shards, self.storage.map(lambda shard: list_segments(self.storage, shard), shards),
                        strict=True))

    def load(self, shard: str, is_visible: Callable[[str], bool], listed: list[Segment] | None = None) -> ShardState:
        """The shard's state as of its visible segments (`listed`: its segments, if listed already)."""
        listed = list_segments(self.storage, shard) if listed is None else listed
        segments = [s for s in listed if is_visible(s.instant)]
        bases = [s for s in segments if s.kind == "base"]
        if bases:
            latest_base = bases[-1]
            segments = [latest_base] + [s for s in segments if s.kind == "delta" and s.instant > latest_base.instant]
        wanted = tuple(segments)
        key = self._cache_key(shard)
        state = self._from_cache(key, wanted)
        if state is None:
            # Each segment holds an identity once; applying them in order keeps the latest version.
            tables = [self._conform(_read(self.storage, s)) for s in segments] or [self.schema.empty_table()]
            state = ShardState(shard, tables[0].combine_chunks(), self.schema.empty_table(), (), self.global_scope)
            if len(tables) > 1:
                state = state.with_changes(_fold(tables[1:], self.global_scope))
        state = replace(state, segments=wanted)
        _CACHE.put(key, state)
        return state

    def _from_cache(self, key: tuple, wanted: tuple[Segment, ...]) -> ShardState | None:
        written = _CACHE.written.pop(key, None)
        if written is not None and written.base.schema != self.schema:
            written = None  # held in another ordering type (the table's ordering field was widened since)
        if written is not None and wanted and wanted[-1].kind == "base" and wanted == written.segments[-1:]:
            return written
        # The state this process wrote last counts once its own segment is visible; it is then the
        # nearest to `wanted` when another process has written the shard since (only its deltas are read).
        for have_state in (written, _CACHE.get(key)):
            if have_state is None or have_state.base.schema != self.schema:
                continue
            have = have_state.segments
            if have == wanted:
                return have_state
            if wanted[: len(have)] == have and all(s.kind == "delta" for s in wanted[len(have):]):
                tables = [self._conform(_read(self.storage, s)) for s in wanted[len(have):]]
                return have_state.with_changes(_fold(tables, self.global_scope))
        return None

    def _conform(self, table: pa.Table) -> pa.Table:
        if table.schema.equals(self.schema):
            return table
        return as_schema({name: table.column(name) for name in table.column_names}, self.schema, table.num_rows)

    def write(self, state: ShardState, changes: pa.Table, instant: str, replaced: np.ndarray | None = None) -> Segment:
        """Write this instant's changes to the shard, folding deltas into a base when there are many
        (`replaced`: as `ShardState.with_changes`)."""
        changes = self._conform(changes)  # once: casting to the state's dictionary types is not free
        after = state.with_changes(changes, replaced)
        if state.deltas_since_base + 1 > MAX_DELTAS:
            merged = after.table
            segment = self._put(Segment(state.shard, instant, "base"), merged)
            after = replace(after, base=merged, overlay=merged.slice(0, 0))
        else:
            segment = self._put(Segment(state.shard, instant, "delta"), changes)
        _CACHE.written[self._cache_key(state.shard)] = replace(after, segments=(*state.segments, segment))
        return segment

    def write_base(self, shard: str, rows: pa.Table, instant: str) -> Segment:
        """A shard's complete state as of `instant` (index builds)."""
        return self._put(Segment(shard, instant, "base"), self._conform(rows))

    def _put(self, segment: Segment, data: pa.Table) -> Segment:
        buf = io.BytesIO()
        # Keys are unique: dictionary-encoding them or keeping their statistics only costs time.
        pq.write_table(data, buf, compression="snappy", use_dictionary=[PARTITION, FILE_ID, INSTANT],
                       write_statistics=False)
        self.storage.write(segment.path, buf.getvalue())
        return segment

    def prune(self, state: ShardState) -> None:
        """Delete segments superseded by the shard's latest visible base (safe: none are read again)."""
        bases = [s for s in state.segments if s.kind == "base"]
        if not bases:
            return
        floor = bases[-1].instant
        for segment in list_segments(self.storage, state.shard):
            if segment.instant < floor:
                self.storage.delete(segment.path)


def shard_names(storage: Storage) -> list[str]:
    """Every shard folder (shard names may contain `/`, e.g. `<partition>/<bucket>`)."""
    names = set()
    for entry in storage.walk_files(INDEX_ROOT):
        m = _SEGMENT_RE.match(entry.name)
        if m:
            names.add(posixpath.dirname(entry.path)[len(INDEX_ROOT) + 1:])
    return sorted(names)


def visibility(completed: Iterable[str], timeline_start: str | None) -> Callable[[str], bool]:
    """Segments of completed instants, or of instants older than the active timeline (archived)."""
    done = frozenset(completed)

    def is_visible(ts: str) -> bool:
        return ts in done or (timeline_start is not None and ts < timeline_start)

    return is_visible


def _segments_where(storage: Storage, keep: Callable[[str], bool]) -> list[str]:
    """Delete every segment whose instant `keep` rejects; returns their paths."""
    removed = []
    for entry in storage.walk_files(INDEX_ROOT):
        m = _SEGMENT_RE.match(entry.name)
        if m and not keep(m.group(1)) and storage.delete(entry.path):
            removed.append(entry.path)
    return removed


def discard_instant(storage: Storage, instant: str) -> list[str]:
    """Delete every shard's segment of `instant`, an instant about to be rolled back."""
    return _segments_where(storage, lambda ts: ts != instant)


def discard_orphans(storage: Storage, timeline_instants: Iterable[str], timeline_start: str | None) -> list[str]:
    """Delete segments of instants absent from the active timeline but not older than its start.

    Such an instant was rolled back (a Hudi writer rolls back failed writes without knowing our
    files); an older absent instant may be archived and committed, so it is left alone.
    """
    present = frozenset(timeline_instants)
    if timeline_start is None:  # no write on the active timeline: nothing to tell apart
        return []
    return _segments_where(storage, lambda ts: ts in present or ts < timeline_start)
