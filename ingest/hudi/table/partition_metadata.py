"""`.hoodie_partition_metadata`: marks a folder as a Hudi partition and records its depth.

Readers use the depth to tell partition folders from their parents; Hudi writes it once, when a
partition first receives data, under a temporary name that is then moved into place. Our `Storage.write`
gives the same all-or-nothing result on local disks (temporary file + rename) and on object stores (one PUT).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from ingest.hudi.config import properties
from ingest.hudi.table.file_names import PARTITION_METADATA
from ingest.storage import Storage


@dataclass(frozen=True)
class PartitionMetadata:
    commit_time: str
    partition_depth: int

    def to_bytes(self) -> bytes:
        props = {"commitTime": self.commit_time, "partitionDepth": str(self.partition_depth)}
        return properties.encode_text(properties.dumps(props, "partition metadata"))

    @classmethod
    def from_bytes(cls, data: bytes) -> PartitionMetadata:
        props = properties.loads(properties.decode_bytes(data))
        return cls(props["commitTime"], int(props["partitionDepth"]))


def partition_depth(partition_path: str) -> int:
    return len([p for p in partition_path.split("/") if p]) if partition_path else 0


def metadata_path(partition_path: str) -> str:
    return posixpath.join(partition_path, PARTITION_METADATA) if partition_path else PARTITION_METADATA


def ensure(storage: Storage, partition_path: str, commit_time: str) -> bool:
    """Write the partition's metadata unless present; True if this call wrote it."""
    path = metadata_path(partition_path)
    if storage.exists(path):
        return False
    storage.write(path, PartitionMetadata(commit_time, partition_depth(partition_path)).to_bytes())
    return True


def read(storage: Storage, partition_path: str) -> PartitionMetadata | None:
    try:
        return PartitionMetadata.from_bytes(storage.read(metadata_path(partition_path)))
    except FileNotFoundError:
        return None
