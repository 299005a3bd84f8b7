"""Direct write markers: `.hoodie/.temp/<instant>/<partition>/<file>.marker.<IOType>`.

A marker is written before its data file is created or appended to. After a crash, the markers of
the failed instant are the complete list of files it may have touched: rollback deletes the files it
created and neutralises its appends; at commit, files with a marker but no write stat (failed or
duplicate task attempts) are removed before the instant completes.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from enum import Enum

from ingest.hudi.timeline import TEMP_FOLDER
from ingest.storage import Storage

MARKER_SUFFIX = ".marker."


class IOType(str, Enum):
    CREATE = "CREATE"
    MERGE = "MERGE"
    APPEND = "APPEND"


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


def create(storage: Storage, instant: str, partition_path: str, file_name: str, io_type: IOType) -> None:
    storage.write(marker_path(instant, partition_path, file_name, io_type), b"")


def list_markers(storage: Storage, instant: str) -> list[Marker]:
    folder = marker_folder(instant)
    out = []
    for entry in storage.walk_files(folder):
        rel = entry.path[len(folder) + 1:]
        partition, _, name = rel.rpartition("/")
        file_name, sep, io = name.rpartition(MARKER_SUFFIX)
        if not sep:
            continue  # e.g. a MARKERS.type file
        try:
            out.append(Marker(partition, file_name, IOType(io)))
        except ValueError:
            continue
    return out


def delete_all(storage: Storage, instant: str) -> None:
    storage.delete_tree(marker_folder(instant))
