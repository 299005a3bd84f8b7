"""Write markers of an instant, both kinds Hudi writes under `.hoodie/.temp/<instant>/`.

Mirrors `DirectWriteMarkers`, `TimelineServerBasedWriteMarkers` and how Hudi reads them back for a
rollback (`MarkerBasedRollbackUtils.getAllMarkerPaths`): without a `MARKERS.type` file the markers are
DIRECT, one empty file `<partition>/<file>.marker.<IOType>` each; with `MARKERS.type` holding
`TIMELINE_SERVER_BASED` (Hudi's default for Spark writers on every storage but HDFS) they are lines of
the `MARKERS<n>` files (`MarkerUtils.readTimelineServerBasedMarkersFromFileSystem`).

A marker is written before its data file is created or appended to, so after a crash the markers of
the failed instant list every file it may have touched. Every marker names a base or log file of a
data partition: Hudi's `MarkerBasedRollbackStrategy.getRollbackRequests` requires a file id in the
name of every CREATE or MERGE marker and fails the whole rollback otherwise, so files of ingest's own
under `.hoodie/` never get one (they recover by their instant time, see `ingest.index.key_state`).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from enum import Enum

from ingest.hudi.table.file_names import is_base_file, is_log_file
from ingest.hudi.timeline.timeline import METAFOLDER, TEMP_FOLDER
from ingest.storage import Storage

MARKER_SUFFIX = ".marker."
MARKERS_PREFIX = "MARKERS"  # MarkerUtils.MARKERS_FILENAME_PREFIX
MARKER_TYPE_FILE = f"{MARKERS_PREFIX}.type"  # MarkerUtils.MARKER_TYPE_FILENAME


class IOType(str, Enum):
    CREATE = "CREATE"
    MERGE = "MERGE"
    APPEND = "APPEND"


class MarkerType(str, Enum):
    DIRECT = "DIRECT"
    TIMELINE_SERVER_BASED = "TIMELINE_SERVER_BASED"


@dataclass(frozen=True)
class Marker:
    partition_path: str
    file_name: str
    io_type: IOType

    @property
    def data_file_path(self) -> str:
        return posixpath.join(self.partition_path, self.file_name) if self.partition_path else self.file_name


def marker_folder(instant: str) -> str:
    return f"{TEMP_FOLDER}/{instant}"


def marker_path(instant: str, partition_path: str, file_name: str, io_type: IOType) -> str:
    name = f"{file_name}{MARKER_SUFFIX}{io_type.value}"
    parts = [marker_folder(instant)] + ([partition_path] if partition_path else []) + [name]
    return posixpath.join(*parts)


def names_data_file(partition_path: str, file_name: str) -> bool:
    """A base or log file outside `.hoodie/`: the only files a Hudi rollback accepts a marker for."""
    top = partition_path.split("/", 1)[0]
    return top != METAFOLDER and (is_base_file(file_name) or is_log_file(file_name))


def create(storage: Storage, instant: str, partition_path: str, file_name: str, io_type: IOType) -> None:
    if not names_data_file(partition_path, file_name):
        raise ValueError(f"a marker must name a base or log file of a data partition, not "
                         f"{posixpath.join(partition_path, file_name)!r} (MarkerBasedRollbackStrategy)")
    storage.touch(marker_path(instant, partition_path, file_name, io_type))


def parse(relative: str) -> Marker | None:
    """`<partition>/<file>.marker.<IOType>` (relative to the instant's marker folder), or None."""
    partition, _, name = relative.strip().strip("/").rpartition("/")
    file_name, sep, io = name.rpartition(MARKER_SUFFIX)
    if not sep:
        return None
    try:
        return Marker(partition, file_name, IOType(io))
    except ValueError:
        return None


def _read_type(storage: Storage, path: str) -> MarkerType | None:
    """The content of `MARKERS.type` (`MarkerUtils.readMarkerType`)."""
    text = storage.read(path).decode("utf-8").strip()
    return MarkerType(text) if text else None


def list_markers(storage: Storage, instant: str) -> list[Marker]:
    """Every marker of `instant`, whichever kind wrote them (`MarkerBasedRollbackUtils.getAllMarkerPaths`).

    One walk of the marker folder finds `MARKERS.type` too (an object store lists the folder in one
    request, where asking for the type file first cost one more)."""
    folder = marker_folder(instant)
    files = {entry.path[len(folder) + 1:]: entry for entry in storage.walk_files(folder)}
    kind = _read_type(storage, files[MARKER_TYPE_FILE].path) if MARKER_TYPE_FILE in files else None
    if kind is MarkerType.TIMELINE_SERVER_BASED:
        lines: list[str] = []
        for name, entry in sorted(files.items()):
            if "/" not in name and name.startswith(MARKERS_PREFIX) and name != MARKER_TYPE_FILE:
                lines.extend(storage.read(entry.path).decode("utf-8").splitlines())
        found = [parse(line) for line in lines if line.strip()]
    else:
        found = [parse(name) for name in files]
    unique = {m: None for m in found if m is not None}
    return list(unique)


def delete_all(storage: Storage, instant: str) -> None:
    storage.delete_tree(marker_folder(instant))
