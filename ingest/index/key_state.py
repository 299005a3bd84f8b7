"""The persisted record-key index: for every key, where it lives and its latest ordering value.

The writer needs two answers per incoming key, in the executor that handles it: which file group
holds the key (routing for the `key` index), and which version of the key the table currently shows
(its ordering value, or that it was deleted). The second answer lets the writer keep every key's
history monotonic in its ordering value, so that every Hudi reader — whatever its merge rules for
deletes — resolves the same rows (see `ingest.write.precombine`).

Layout: `.hoodie/.aux/ingest/key_index/<shard>/<instant>.{delta,base}.parquet`. A task loads only its
shard. A segment counts only once its instant has completed (or is older than the active timeline),
so a crashed batch's segments are invisible, and rollback deletes them through their markers.
When a shard accumulates deltas, the writer folds them into a new base segment.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ingest.hudi.timeline import AUX_FOLDER
from ingest.storage import Storage

INDEX_ROOT = f"{AUX_FOLDER}/ingest/key_index"
KEY = "key"
PARTITION = "partition"
FILE_ID = "file_id"
ORDERING = "ordering"
DELETED = "deleted"
INSTANT = "instant"
MAX_DELTAS = 8

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
    return pq.read_table(io.BytesIO(storage.read(segment.path)))


def _identity(table: pa.Table, global_scope: bool):
    if global_scope:
        return table.column(KEY)
    return pc.binary_join_element_wise(table.column(KEY), table.column(PARTITION), "\x00")


def _apply(base: pa.Table, changes: pa.Table, global_scope: bool) -> pa.Table:
    """`base` (one row per identity) with `changes` (one row per identity) applied: a hash anti-join,
    so a batch costs time in the shard's size without sorting it."""
    if changes.num_rows == 0:
        return base
    if base.num_rows == 0:
        return changes
    replaced = pc.is_in(_identity(base, global_scope), value_set=_identity(changes, global_scope).combine_chunks())
    return pa.concat_tables([base.filter(pc.invert(replaced)), changes])


@dataclass(frozen=True)
class ShardState:
    """The visible state of one shard, plus what is needed to write its next segment."""

    shard: str
    table: pa.Table
    segments: tuple[Segment, ...]

    @property
    def deltas_since_base(self) -> int:
        return sum(1 for s in self.segments if s.kind == "delta")


class _ShardCache:
    """Shard states kept by a (long-lived) executor process between batches.

    An entry is valid for exactly the segments it was built from; a later batch whose visible segments
    extend them reads only the new ones. The segment a task just wrote is kept aside and adopted once
    its instant turns out visible (committed), so a streaming writer rarely reads its own index back.
    """

    def __init__(self, budget_bytes: int):
        self.budget = budget_bytes
        self.entries: OrderedDict[tuple, tuple[tuple[Segment, ...], pa.Table]] = OrderedDict()
        self.written: dict[tuple, tuple[Segment, pa.Table]] = {}
        self.total = 0

    def get(self, key: tuple) -> tuple[tuple[Segment, ...], pa.Table] | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
        return entry

    def put(self, key: tuple, segments: tuple[Segment, ...], table: pa.Table) -> None:
        old = self.entries.pop(key, None)
        if old is not None:
            self.total -= old[1].nbytes
        self.entries[key] = (segments, table)
        self.total += table.nbytes
        while self.total > self.budget and len(self.entries) > 1:
            _, (_, dropped) = self.entries.popitem(last=False)
            self.total -= dropped.nbytes


_CACHE = _ShardCache(int(os.environ.get("INGEST_KEY_INDEX_CACHE_MB", "512")) * 1024 * 1024)


class KeyStateStore:
    """Reads and writes shard segments through `Storage`."""

    def __init__(self, storage: Storage, ordering_type: pa.DataType | None, global_scope: bool):
        self.storage = storage
        self.ordering_type = ordering_type
        self.global_scope = global_scope
        self.schema = state_schema(ordering_type)

    def _cache_key(self, shard: str) -> tuple:
        return (self.storage.base_url, shard, self.global_scope)

    def load(self, shard: str, is_visible: Callable[[str], bool]) -> ShardState:
        segments = [s for s in list_segments(self.storage, shard) if is_visible(s.instant)]
        bases = [s for s in segments if s.kind == "base"]
        if bases:
            latest_base = bases[-1]
            segments = [latest_base] + [s for s in segments if s.kind == "delta" and s.instant > latest_base.instant]
        wanted = tuple(segments)
        key = self._cache_key(shard)
        table = self._from_cache(key, wanted)
        if table is None:
            # Each segment holds an identity once; applying them in order keeps the latest version.
            table = self.schema.empty_table()
            for segment in segments:
                table = _apply(table, self._conform(_read(self.storage, segment)), self.global_scope)
        _CACHE.put(key, wanted, table)
        return ShardState(shard, table, wanted)

    def _from_cache(self, key: tuple, wanted: tuple[Segment, ...]) -> pa.Table | None:
        written = _CACHE.written.pop(key, None)
        cached = _CACHE.get(key)
        if written is not None and wanted and wanted[-1] == written[0]:
            if written[0].kind == "base" or (cached is not None and cached[0] == wanted[:-1]):
                return written[1]
        if cached is None or cached[1].schema != self.schema:
            return None
        have, table = cached
        if have == wanted:
            return table
        if wanted[: len(have)] == have and all(s.kind == "delta" for s in wanted[len(have):]):
            for segment in wanted[len(have):]:
                table = _apply(table, self._conform(_read(self.storage, segment)), self.global_scope)
            return table
        return None

    def _conform(self, table: pa.Table) -> pa.Table:
        if table.schema.equals(self.schema):
            return table
        cols = []
        for field in self.schema:
            col = table.column(field.name) if field.name in table.column_names else pa.nulls(table.num_rows, field.type)
            cols.append(col.cast(field.type) if col.type != field.type else col)
        return pa.Table.from_arrays(cols, schema=self.schema)

    def write(self, state: ShardState, changes: pa.Table, instant: str) -> Segment:
        """Write this instant's changes to the shard, folding deltas into a base when there are many."""
        changes = self._conform(changes)
        merged = _apply(state.table, changes, self.global_scope)
        if state.deltas_since_base + 1 > MAX_DELTAS:
            segment = self._put(Segment(state.shard, instant, "base"), merged)
        else:
            segment = self._put(Segment(state.shard, instant, "delta"), changes)
        _CACHE.written[self._cache_key(state.shard)] = (segment, merged)
        return segment

    def write_base(self, shard: str, rows: pa.Table, instant: str) -> Segment:
        """A shard's complete state as of `instant` (index builds)."""
        return self._put(Segment(shard, instant, "base"), self._conform(rows))

    def _put(self, segment: Segment, data: pa.Table) -> Segment:
        buf = io.BytesIO()
        pq.write_table(data, buf, compression="snappy")
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
