"""Building the key index from a table's files, and noticing when it must be rebuilt.

The index is complete only if every write since it was built went through ingest. It is (re)built
from the table's latest file slices when it does not exist yet (a table written by Hudi itself, or
by ingest before), when its layout changed (index type, shard or bucket count), or when a commit
not written by ingest appeared since (another writer added keys the index does not know). The
manifest is written last, so a crash during a build leaves an index that is built again next time.
"""

from __future__ import annotations

import functools
import json
import posixpath
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ingest.hudi.avro import avro_models
from ingest.hudi.avro import schema as avro
from ingest.hudi.keygen.bucket_index import bucket_id_from_file_id
from ingest.hudi.log.log_block import DATA_BLOCKS
from ingest.hudi.log.log_reader import refuse_unmergeable
from ingest.hudi.table.file_names import is_log_file
from ingest.hudi.table.file_system_view import FileSlice
from ingest.hudi.table.snapshot import ReadContext, merged_blocks, read_slice, scan_logs
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import CommitMetadata
from ingest.hudi.timeline.instant import Action, Instant
from ingest.hudi.timeline.timeline import Timeline, read_instant
from ingest.index import key_state as ks
from ingest.phases import phase
from ingest.write.commit import WRITER_KEY
from ingest.write.options import IndexType, WriteOptions

MANIFEST = f"{ks.INDEX_ROOT}/_manifest.json"
BOOTSTRAP_PHASE = "bootstrap of the key index"


# Writes that can add keys or move them between file groups (a compaction's `commit` is told apart by
# its metadata). A 1.x clustering is requested as `clustering` and completes as a replacecommit.
KEY_WRITES = (Action.DELTA_COMMIT, Action.COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING)
# Instants that can undo a write the index reflects.
UNDOING = (Action.RESTORE, Action.ROLLBACK)


# How many completed instants a manifest lists by name; older ones count as covered by their time.
MAX_KNOWN = 500


@dataclass(frozen=True)
class Manifest:
    """The index's layout and the completed writes, restores, rollbacks and log compactions it reflects.

    Coverage is by name, not by time: Hudi's writers take their instant time when they start and write
    the requested instant afterwards, on machines whose clocks differ, so a write can appear after the
    index was brought up to date yet carry an earlier time than ingest's last commit. Such a write is
    not in `known`, and is noticed. `known` lists the last `MAX_KNOWN` completed instants; those before
    `known_since` are covered unless they were pending then (`pending`). A manifest written before
    `known` was kept (`known` None) covers by time: up to `as_of`, but the writes pending then.
    """

    layout: dict
    as_of: str
    pending: tuple[str, ...] = ()
    known: tuple[str, ...] | None = None
    known_since: str = "0"

    def to_bytes(self) -> bytes:
        return json.dumps({"layout": self.layout, "as_of": self.as_of, "pending": list(self.pending),
                           "known": list(self.known or ()), "known_since": self.known_since},
                          sort_keys=True).encode()

    @classmethod
    def read(cls, table: HudiTable) -> Manifest | None:
        try:
            d = json.loads(table.storage.read(MANIFEST))
        except FileNotFoundError:
            return None
        known = tuple(d["known"]) if "known" in d else None
        return cls(d["layout"], d["as_of"], tuple(d.get("pending") or ()), known, d.get("known_since") or "0")

    @classmethod
    def of(cls, options: WriteOptions, as_of: str, timeline: Timeline, own: str | None = None) -> Manifest:
        """A manifest covering `timeline` (and the write `own`, completed since), up to `as_of`."""
        pending = tuple(i.timestamp for i in timeline.pending(*KEY_WRITES) if i.timestamp != own)
        # Log compactions too: no key moves, but the writer's check reads their blocks until they are known.
        completed = {i.timestamp for i in timeline.completed(*KEY_WRITES, *UNDOING, Action.LOG_COMPACTION)}
        known = sorted(completed | ({own} if own else set()))
        since = known[-MAX_KNOWN] if len(known) > MAX_KNOWN else "0"
        return cls(layout(options), as_of, pending, tuple(known[-MAX_KNOWN:]), since)

    def covers(self, timestamp: str) -> bool:
        """Whether the index reflects the completed instant `timestamp`."""
        if self.known is None:
            return timestamp <= self.as_of and timestamp not in self.pending
        return timestamp in self._known or (timestamp < self.known_since and timestamp not in self.pending)

    @functools.cached_property
    def _known(self) -> frozenset[str]:
        return frozenset(self.known or ())


def layout(options: WriteOptions) -> dict:
    if options.index.type is IndexType.BUCKET:
        return {"type": "bucket", "shards": "per-bucket", "buckets": options.index.bucket_count, "hash_fields": list(options.hash_fields)}
    return {"type": "key", "shards": options.index.shards, "global": options.index.global_scope}


def _unseen(table: HudiTable, timeline: Timeline, manifest: Manifest | None,
            *actions: Action) -> Iterator[tuple[Instant, CommitMetadata]]:
    """Completed instants of `actions` another writer made that `manifest` (if any) does not cover."""
    for instant in timeline.completed(*actions):
        if manifest is not None and manifest.covers(instant.timestamp):
            continue
        meta = table.commit_metadata(instant)
        if WRITER_KEY not in meta.extra_metadata:
            yield instant, meta


def foreign_commits(table: HudiTable, timeline: Timeline, manifest: Manifest) -> list[str]:
    """Writes completed that `manifest` does not cover and ingest did not make (compactions add no
    keys); and restores and rollbacks since then that undid a write it covers."""
    out = [instant.timestamp for instant, meta in _unseen(table, timeline, manifest, *KEY_WRITES) if not meta.compacted]
    return out + undone_writes(table, timeline, manifest)


def refuse_unmergeable_writes(table: HudiTable, timeline: Timeline, manifest: Manifest | None) -> None:
    """Before a write begins: the log blocks other writers' deltacommits and log compactions left where
    the latest file slices' reads merge them, unseen by the index, must be blocks ingest merges
    (`log_reader.refuse_unmergeable`: no partial updates, no changelog deletes). The index's rebuild
    would read them, but only once the write's instant is requested; refused here, the table is left as
    it was. Once Hudi compacted those slices, their log files are not read, and the write goes ahead.
    `manifest`: the index's manifest (`Manifest.read`; None: there is none)."""
    instants: set[str] = set()  # the foreign instants, and the log files they wrote
    logs: set[str] = set()
    for instant, meta in _unseen(table, timeline, manifest, Action.DELTA_COMMIT, Action.LOG_COMPACTION):
        written = [p for p in meta.written_paths() if is_log_file(posixpath.basename(p))]
        if written:
            instants.add(instant.timestamp)
            logs.update(written)
    if not logs:
        return
    slices = [s for s in table.view(timeline).latest_file_slices() if any(lf.path in logs for lf in s.log_files)]
    if not slices:
        return
    ctx = ReadContext.of(table, table.schema(timeline) or {}, timeline.completed_write_timestamps())
    for slice_ in slices:
        for block in merged_blocks(scan_logs(ctx, slice_)):
            if block.instant_time in instants and block.block_type in DATA_BLOCKS:
                refuse_unmergeable(block)


# Rolled back, these change no key: a compaction is retried from its plan (`rollbackInflightCompaction`).
_KEYLESS = frozenset({Action.COMPACTION.value, Action.LOG_COMPACTION.value})


def undone_writes(table: HudiTable, timeline: Timeline, manifest: Manifest) -> list[str]:
    """Restores, and rollbacks of a completed write the index covers, completed since `manifest`: the
    index's segments of that write (or the base segments stamped with it) no longer show, and what the
    write replaced is live again (`hudi-cli commit rollback`, `rollback_to_savepoint`). Rollbacks of
    writes that never completed, as writers roll back failed attempts, change no key; nor do rollbacks
    of compactions (`instantsRollback` names their action)."""
    out = []
    for instant in timeline.completed(*UNDOING):
        if manifest.covers(instant.timestamp):
            continue
        if instant.action is Action.RESTORE:
            out.append(instant.timestamp)
            continue
        data = read_instant(table.storage, instant, timeline.layout)
        metadata = avro_models.deserialize(data, avro_models.ROLLBACK_METADATA) if data else {}
        named = metadata.get("instantsRollback") or [{"commitTime": t} for t in metadata.get("commitsRollback") or ()]
        targets = [i["commitTime"] for i in named if i.get("action") not in _KEYLESS]
        if any(manifest.covers(t) for t in targets):
            out.append(instant.timestamp)
    return out


def state_rows(ctx: ReadContext, slice_: FileSlice, ordering_type: pa.DataType | None) -> pa.Table:
    """Key-state rows for every live record of one file slice."""
    rows = read_slice(ctx, slice_)
    n = rows.num_rows
    if ctx.ordering_field and ctx.ordering_field in rows.column_names and ordering_type is not None:
        ordering = rows.column(ctx.ordering_field).cast(ordering_type)
    else:
        ordering = pa.nulls(n, ordering_type or pa.null())
    return pa.table({
        ks.KEY: rows.column(avro.RECORD_KEY),
        ks.PARTITION: pa.array([slice_.partition_path] * n, pa.string()),
        ks.FILE_ID: pa.array([slice_.file_id] * n, pa.string()),
        ks.ORDERING: ordering,
        ks.DELETED: pa.array(np.zeros(n, dtype=bool)),
        ks.INSTANT: pa.array([""] * n, pa.string()),
    })


def shard_of_rows(options: WriteOptions, rows: pa.Table) -> list[tuple[str, pa.Table]]:
    """Split state rows into the index's shards (bucket: per partition and bucket; key: by key hash)."""
    from ingest.write.tasks import key_shards  # shared routing rule

    if not rows.num_rows:
        return []
    if options.index.type is IndexType.BUCKET:
        names = [f"bucket-{bucket_id_from_file_id(f):08d}" for f in rows.column(ks.FILE_ID).to_pylist()]
    else:
        names = [f"{s:04d}" for s in key_shards(rows.column(ks.KEY), options.index.shards).tolist()]
    labels = pa.array(names, pa.string())
    out = []
    for name in sorted(set(names)):
        out.append((name, rows.filter(pa.compute.equal(labels, name))))
    return out


def rebuild(
    table: HudiTable,
    timeline: Timeline,
    options: WriteOptions,
    ordering_type: pa.DataType | None,
    slice_reader: Callable[[ReadContext, Iterable[FileSlice], str], list[tuple[str, pa.Table]]] | None = None,
) -> Manifest:
    """Build the index from the table's latest file slices, as of the latest completed write.

    `slice_reader` lets the Spark sink read slices on executors; by default they are read here.
    """
    storage = table.storage
    storage.delete_tree(ks.INDEX_ROOT)
    latest = timeline.last_completed(*KEY_WRITES, Action.COMPACTION)
    if latest is not None:
        schema = table.schema(timeline)
        ctx = ReadContext.of(table, schema, timeline.completed_write_timestamps())
        slices = table.view(timeline).latest_file_slices()
        store = ks.KeyStateStore(storage, ordering_type, options.index.global_scope)
        with phase(BOOTSTRAP_PHASE, total=len(slices), unit="file slices") as progress:
            if slice_reader is not None:
                shards = slice_reader(ctx, slices, latest.timestamp)
                progress.advance(len(slices))
            else:
                parts = []
                for s in slices:
                    parts.append(state_rows(ctx, s, ordering_type))
                    progress.advance()
                rows = pa.concat_tables(parts) if parts else ks.state_schema(ordering_type).empty_table()
                shards = shard_of_rows(options, rows)
        for name, shard_rows in shards:
            stamped = shard_rows.set_column(shard_rows.schema.get_field_index(ks.INSTANT), ks.INSTANT,
                                            pa.array([latest.timestamp] * shard_rows.num_rows, pa.string()))
            # A base segment at the latest completed instant: visible at once.
            store.write_base(name, stamped, latest.timestamp)
    # It covers what restores and rollbacks on `timeline` left, so they are not changes since.
    undone = timeline.last_completed(Action.RESTORE, Action.ROLLBACK)
    as_of = max(latest.timestamp if latest else "0", undone.timestamp if undone else "0")
    manifest = Manifest.of(options, as_of, timeline)
    storage.write(MANIFEST, manifest.to_bytes())
    return manifest


def ensure(
    table: HudiTable,
    timeline: Timeline,
    options: WriteOptions,
    ordering_type: pa.DataType | None,
    slice_reader=None,
) -> bool:
    """Make the index complete for `timeline`; True when it had to be (re)built."""
    manifest = Manifest.read(table)
    if manifest is not None and manifest.layout == layout(options):
        foreign = foreign_commits(table, timeline, manifest)
        if not foreign:
            return False
    rebuild(table, timeline, options, ordering_type, slice_reader)
    return True


def advance(table: HudiTable, options: WriteOptions, as_of: str, timeline: Timeline) -> None:
    """Record that the index covers the table up to our write `as_of`, which completed on `timeline`
    (the snapshot `ensure` checked): later checks start there, and at the writes pending in it."""
    table.storage.write(MANIFEST, Manifest.of(options, as_of, timeline, own=as_of).to_bytes())
