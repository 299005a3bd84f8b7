"""The LSM timeline history of table versions 8 and 9: where Hudi 1.x keeps archived instants.

Mirrors `LSMTimeline` (the layout and how a reader finds the current snapshot) and
`LSMTimelineWriter` (writing a layer file, updating the manifest, compacting and cleaning), Hudi 1.2.

The history folder (`.hoodie/timeline/history`) holds parquet files `<min>_<max>_<level>.parquet` of
`HoodieLSMTimelineInstant` rows (one per archived instant), and one snapshot of which files are valid
per write: `manifest_<N>`, the JSON of `HoodieLSMTimelineManifest` (`{"files": [{"fileName", "fileLen"}]}`,
Jackson's pretty printer), and `_version_` holding the latest N. A reader takes `_version_`, and when it
is missing or unreadable, the highest N of the listed manifests (`latestSnapshotVersion`); it reads only
the files the manifest names, so a parquet file written by a writer that crashed before its manifest is
invisible, and the writer's rerun replaces it.

Order of a write (`write`, `updateManifest`, `createManifestFile`, `updateVersionFile`): the parquet
file; then `manifest_<N+1>` (deleted first if a crashed run left one); then `_version_` is deleted and
written again with N+1. Compaction (`compactAndClean`): when a layer holds `hoodie.timeline.compaction.batch.size`
files (10), the oldest of them are merged into one file of the next layer, a new manifest drops them;
then cleaning keeps the files of the latest 3 (+ layers compacted) snapshots and deletes the rest,
manifests first. Hudi also caps a compaction's input at a byte size; our history files are kilobytes,
so that cap is not applied here.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ingest import parquet_bytes
from ingest.faults import crash_point
from ingest.hudi.avro.avro_models import LSM_TIMELINE_INSTANT
from ingest.hudi.parquet.base_file import BaseFileOptions, encode_avro_parquet
from ingest.hudi.timeline.commit_metadata import jackson_dumps
from ingest.storage import Storage

VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
LSM_INSTANT_VERSION = 1               # LSMTimeline.LSM_TIMELINE_INSTANT_VERSION_1
COMPACTION_BATCH = 10                 # hoodie.timeline.compaction.batch.size
SNAPSHOTS_KEPT = 3                    # LSMTimelineWriter.clean: "keeps only 3 valid snapshot versions"
_FILE_RE = re.compile(r"^(\d+)_(\d+)_(\d)\.parquet$")  # LSMTimeline.ARCHIVE_FILE_PATTERN
# HoodieLSMTimelineInstant as parquet-avro lays it out; gzip is hoodie.parquet.compression.codec's default.
ARROW_SCHEMA = pa.schema([
    ("instantTime", pa.string()), ("completionTime", pa.string()), ("action", pa.string()),
    ("metadata", pa.binary()), ("plan", pa.binary()), pa.field("version", pa.int32(), nullable=False),
])
_PARQUET = BaseFileOptions(compression="gzip")
# History files' completion times by URL and length, read once per process (the oldest dropped past this many).
_COMPLETIONS: dict[tuple[str, int], dict[str, str]] = {}
_COMPLETIONS_KEPT = 256


@dataclass(frozen=True)
class FileEntry:
    """`HoodieLSMTimelineManifest.LSMFileEntry`."""

    name: str
    length: int

    @property
    def min_instant(self) -> str:
        return _parse_name(self.name)[0]

    @property
    def max_instant(self) -> str:
        return _parse_name(self.name)[1]

    @property
    def layer(self) -> int:
        return _parse_name(self.name)[2]


def _parse_name(name: str) -> tuple[str, str, int]:
    m = _FILE_RE.match(name)
    if m is None:
        raise ValueError(f"{name} is not an LSM history file name")
    return m.group(1), m.group(2), int(m.group(3))


def file_name(min_instant: str, max_instant: str, layer: int) -> str:
    return f"{min_instant}_{max_instant}_{layer}.parquet"


def manifest_json(entries: Iterable[FileEntry]) -> str:
    """`HoodieLSMTimelineManifest.toJsonString`."""
    return jackson_dumps({"files": [{"fileName": e.name, "fileLen": e.length} for e in entries]})


def encode_instants(records: Sequence[dict[str, Any]]) -> bytes:
    """A history file's bytes: the rows in the order given, with parquet-avro's footer keys."""
    table = pa.Table.from_pylist([{f: r.get(f) for f in ARROW_SCHEMA.names} for r in records], ARROW_SCHEMA)
    return encode_avro_parquet(table, LSM_TIMELINE_INSTANT, _PARQUET)


@dataclass(frozen=True)
class LSMHistory:
    storage: Storage
    folder: str  # relative to the table: `.hoodie/<hoodie.timeline.path>/<hoodie.timeline.history.path>`

    def _path(self, name: str) -> str:
        return posixpath.join(self.folder, name)

    # -- snapshots ------------------------------------------------------------------------------

    def all_versions(self) -> list[int]:
        """Versions of the manifests present (`allSnapshotVersions`)."""
        out = []
        for entry in self.storage.list(self.folder):
            name = entry.name
            if entry.is_dir or not name.startswith(MANIFEST_PREFIX) or name.endswith(".tmp"):
                continue
            try:
                out.append(int(name.split("_")[1]))
            except (IndexError, ValueError):
                continue
        return sorted(out)

    def latest_version(self) -> int:
        """`_version_`, else the highest manifest listed, else -1 (`latestSnapshotVersion`)."""
        try:
            return int(self.storage.read(self._path(VERSION_FILE)).decode("utf-8").strip())
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            pass
        return max(self.all_versions(), default=-1)

    def manifest(self, version: int | None = None) -> list[FileEntry]:
        """The files of a snapshot (the latest by default); none before the first write."""
        version = self.latest_version() if version is None else version
        if version < 0:
            return []
        text = self.storage.read(self._path(f"{MANIFEST_PREFIX}{version}")).decode("utf-8")
        raw = json.loads(text) if text.strip() else {}
        return [FileEntry(f["fileName"], int(f["fileLen"])) for f in raw.get("files") or ()]

    def exists(self) -> bool:
        return self.latest_version() >= 0

    # -- reading --------------------------------------------------------------------------------

    def read_file(self, name: str) -> list[dict[str, Any]]:
        return parquet_bytes.read_table(self.storage.read(self._path(name))).to_pylist()

    def read(self) -> list[dict[str, Any]]:
        """Every archived instant of the current snapshot, by instant time (`ArchivedTimelineV2`
        loads the files the latest manifest names)."""
        rows = [r for entry in self.manifest() for r in self.read_file(entry.name)]
        return sorted(rows, key=lambda r: r["instantTime"] or "")

    def instant_times(self, min_instant: str, max_instant: str) -> set[str]:
        """Instant times already in the history between two times (only the files whose names overlap
        the range are read, as `LSMTimeline.isFileInRange` skips files)."""
        out = set()
        for entry in self.manifest():
            if entry.max_instant < min_instant or entry.min_instant > max_instant:
                continue
            table = parquet_bytes.read_table(self.storage.read(self._path(entry.name)), columns=["instantTime"])
            out.update(t for t in table.column("instantTime").to_pylist() if t is not None)
        return out

    def completion_times(self, instants: Iterable[str]) -> dict[str, str]:
        """Completion times of archived `instants` (`CompletionTimeQueryViewV2.readCompletionTime`); only
        the files whose names cover them are read, only those two columns, and each file once per process
        (a file a manifest names is never written again)."""
        wanted = set(instants)
        if not wanted:
            return {}
        out = {}
        for entry in self.manifest():
            if any(entry.min_instant <= w <= entry.max_instant for w in wanted):
                out.update((t, c) for t, c in self._completions_of(entry).items() if t in wanted)
        return out

    def _completions_of(self, entry: FileEntry) -> dict[str, str]:
        key = (self.storage.url(self._path(entry.name)), entry.length)
        found = _COMPLETIONS.get(key)
        if found is None:
            table = parquet_bytes.read_table(self.storage.read(self._path(entry.name)),
                                             columns=["instantTime", "completionTime"])
            found = {t: c for t, c in zip(table.column("instantTime").to_pylist(),
                                          table.column("completionTime").to_pylist(), strict=True) if t and c}
            if len(_COMPLETIONS) >= _COMPLETIONS_KEPT:
                _COMPLETIONS.pop(next(iter(_COMPLETIONS)))
            _COMPLETIONS[key] = found
        return found

    # -- writing --------------------------------------------------------------------------------

    def write(self, records: Sequence[dict[str, Any]]) -> str | None:
        """Write `records` (by instant time) as a layer-0 file and commit it to a new snapshot
        (`LSMTimelineWriter.write`). A file of that name already committed is kept as it is (a rerun
        after the archived instants' deletion crashed); one not committed is a crashed write, replaced."""
        if not records:
            raise ValueError("no instants to write to the LSM history")
        name = file_name(records[0]["instantTime"], records[-1]["instantTime"], 0)
        path = self._path(name)
        if self.storage.exists(path):
            if any(e.name == name for e in self.manifest()):
                return None
            self.storage.delete(path)
        self.storage.makedirs(self.folder)
        self.storage.write(path, encode_instants(records))
        crash_point("lsm_after_file")
        self.update_manifest((), name)
        return name

    def update_manifest(self, remove: Iterable[str], add: str) -> int:
        """A new snapshot: the latest one less `remove`, plus `add` (`updateManifest`)."""
        current = self.latest_version()
        removed = set(remove)
        entries = [e for e in self.manifest(current) if e.name not in removed]
        entries.append(FileEntry(add, self.storage.size(self._path(add))))
        new = 1 if current < 0 else current + 1
        manifest = self._path(f"{MANIFEST_PREFIX}{new}")
        if self.storage.exists(manifest):  # left by a run that crashed before its `_version_`
            self.storage.delete(manifest)
        self.storage.write(manifest, manifest_json(entries).encode("utf-8"))
        crash_point("lsm_after_manifest")
        self.storage.delete(self._path(VERSION_FILE))
        crash_point("lsm_version_deleted")
        self.storage.write(self._path(VERSION_FILE), str(new).encode("utf-8"))
        return new

    # -- compaction and cleaning ----------------------------------------------------------------

    def compact_and_clean(self, batch: int = COMPACTION_BATCH) -> list[str]:
        """Merge full layers into the next one, layer after layer, then clean (`compactAndClean`).
        Returns the compacted files written."""
        entries = self.manifest()
        layer = 0
        written = []
        compacted = self._compact_layer(entries, layer, batch)
        while compacted is not None:
            written.append(compacted)
            entries = [*entries, FileEntry(compacted, 0)]  # as Hudi: only counted for the next layer
            layer += 1
            compacted = self._compact_layer(entries, layer, batch)
        self.clean(layer)
        return written

    def _compact_layer(self, entries: list[FileEntry], layer: int, batch: int) -> str | None:
        files = sorted((e for e in entries if e.layer == layer), key=lambda e: e.name)
        if len(files) < batch:
            return None
        candidates = [e.name for e in files[:batch]]
        if len(candidates) < 2:
            return None
        name = file_name(min(_parse_name(c)[0] for c in candidates), max(_parse_name(c)[1] for c in candidates),
                         layer + 1)
        path = self._path(name)
        if self.storage.exists(path):  # a compaction that crashed before its manifest
            self.storage.delete(path)
        rows = [r for c in candidates for r in self.read_file(c)]
        self.storage.write(path, encode_instants(rows))
        crash_point("lsm_after_compacted_file")
        self.update_manifest(candidates, name)
        return name

    def clean(self, compacted_layers: int) -> list[str]:
        """Delete manifests beyond the latest 3 (+ layers compacted) and files none of those name."""
        versions = sorted(self.all_versions(), reverse=True)
        keep_count = SNAPSHOTS_KEPT + compacted_layers
        if len(versions) <= keep_count:
            return []
        kept = versions[:keep_count]
        keep_files = {e.name for v in kept for e in self.manifest(v)}
        deleted = []
        for v in versions[keep_count:]:
            name = f"{MANIFEST_PREFIX}{v}"
            self.storage.delete(self._path(name))
            deleted.append(name)
        for entry in self.storage.list(self.folder):
            if not entry.is_dir and entry.name.endswith(".parquet") and entry.name not in keep_files:
                self.storage.delete(self._path(entry.name))
                deleted.append(entry.name)
        return deleted
