"""`HoodieCommitMetadata`: the body of `.deltacommit` and `.commit` instants.

Readers take the table schema from `extraMetadata.schema` of the latest commit, and incremental
readers take the files a commit touched from `partitionToWriteStats`, so both must be complete. The
layout follows Hudi's Jackson `DefaultPrettyPrinter` output byte for byte (`"key" : value`, two-space
indent, arrays inline as `[ a, b ]`), field order included.

Table versions 8 and 9 (timeline layout 2) store the same metadata as an Avro object container file
of Hudi's `HoodieCommitMetadata` (or `HoodieReplaceCommitMetadata`) record, whose field names are the
JSON keys; instants carried over from 0.x stay JSON (`CommitMetadataSerDeV2`). `decode_metadata`
reads both; `CommitMetadata.encode` writes the one the table version asks for. Hudi 1.x fills the
Avro record from its Java object (`MetadataConversionUtils.convertCommitMetadataToAvro`), so fields
the object lacks (`version`) are null and its primitive counters absent from the JSON are 0.
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import fastavro

from ingest.hudi.avro import avro_models
from ingest.hudi.config.table_version import TableVersion

AVRO_MAGIC = b"Obj\x01"  # an Avro object container file; JSON never starts with it
NULL_COMMIT = "null"  # Hudi writes the string "null" as prevCommit of a new file group


@dataclass(frozen=True)
class RuntimeStats:
    total_scan_time: int = 0
    total_upsert_time: int = 0
    total_create_time: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "totalScanTime": self.total_scan_time,
            "totalUpsertTime": self.total_upsert_time,
            "totalCreateTime": self.total_create_time,
        }


@dataclass(frozen=True)
class WriteStat:
    """`HoodieWriteStat`, plus the `HoodieDeltaWriteStat` fields when `log_files` is not None."""

    file_id: str
    path: str | None
    partition_path: str | None
    prev_commit: str = NULL_COMMIT
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    total_log_records: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    file_size_in_bytes: int = 0
    min_event_time: int | None = None
    max_event_time: int | None = None
    runtime_stats: RuntimeStats | None = None
    # HoodieDeltaWriteStat
    log_version: int | None = None
    log_offset: int | None = None
    base_file: str | None = None
    log_files: tuple[str, ...] | None = None
    # Hudi 1.x's `HoodieMergeHandle` names the base file it merged (Avro metadata only; JSON leaves it out)
    prev_base_file: str | None = None

    @property
    def is_delta(self) -> bool:
        return self.log_files is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "fileId": self.file_id,
            "path": self.path,
            "cdcStats": None,
            "prevCommit": self.prev_commit,
            "numWrites": self.num_writes,
            "numDeletes": self.num_deletes,
            "numUpdateWrites": self.num_update_writes,
            "numInserts": self.num_inserts,
            "totalWriteBytes": self.total_write_bytes,
            "totalWriteErrors": self.total_write_errors,
            "tempPath": None,
            "partitionPath": self.partition_path,
            "totalLogRecords": self.total_log_records,
            "totalLogFilesCompacted": self.total_log_files_compacted,
            "totalLogSizeCompacted": self.total_log_size_compacted,
            "totalUpdatedRecordsCompacted": self.total_updated_records_compacted,
            "totalLogBlocks": self.total_log_blocks,
            "totalCorruptLogBlock": self.total_corrupt_log_block,
            "totalRollbackBlocks": self.total_rollback_blocks,
            "fileSizeInBytes": self.file_size_in_bytes,
            "minEventTime": self.min_event_time,
            "maxEventTime": self.max_event_time,
            "runtimeStats": self.runtime_stats.to_json() if self.runtime_stats else None,
        }
        if self.is_delta:
            out["logVersion"] = self.log_version if self.log_version is not None else 0
            out["logOffset"] = self.log_offset if self.log_offset is not None else 0
            out["baseFile"] = self.base_file if self.base_file is not None else ""
            out["logFiles"] = list(self.log_files or ())
            out["recordsStats"] = {"val": None}
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> WriteStat:
        rs = d.get("runtimeStats")
        log_files = d.get("logFiles")
        return cls(
            file_id=d.get("fileId") or "",
            path=d.get("path"),
            partition_path=d.get("partitionPath"),
            prev_commit=d.get("prevCommit") or NULL_COMMIT,
            num_writes=int(d.get("numWrites") or 0),
            num_deletes=int(d.get("numDeletes") or 0),
            num_update_writes=int(d.get("numUpdateWrites") or 0),
            num_inserts=int(d.get("numInserts") or 0),
            total_write_bytes=int(d.get("totalWriteBytes") or 0),
            total_write_errors=int(d.get("totalWriteErrors") or 0),
            total_log_records=int(d.get("totalLogRecords") or 0),
            total_log_files_compacted=int(d.get("totalLogFilesCompacted") or 0),
            total_log_size_compacted=int(d.get("totalLogSizeCompacted") or 0),
            total_updated_records_compacted=int(d.get("totalUpdatedRecordsCompacted") or 0),
            total_log_blocks=int(d.get("totalLogBlocks") or 0),
            total_corrupt_log_block=int(d.get("totalCorruptLogBlock") or 0),
            total_rollback_blocks=int(d.get("totalRollbackBlocks") or 0),
            file_size_in_bytes=int(d.get("fileSizeInBytes") or 0),
            min_event_time=d.get("minEventTime"),
            max_event_time=d.get("maxEventTime"),
            runtime_stats=RuntimeStats(
                int(rs.get("totalScanTime") or 0), int(rs.get("totalUpsertTime") or 0),
                int(rs.get("totalCreateTime") or 0),
            ) if isinstance(rs, Mapping) else None,
            log_version=d.get("logVersion"),
            log_offset=d.get("logOffset"),
            base_file=d.get("baseFile"),
            log_files=tuple(log_files) if log_files is not None else None,
            prev_base_file=d.get("prevBaseFile"),
        )

    def with_updates(self, **changes: Any) -> WriteStat:
        return replace(self, **changes)


@dataclass(frozen=True)
class CommitMetadata:
    """What one commit wrote, per partition, plus extra metadata (schema, checkpoints)."""

    partition_to_write_stats: Mapping[str, tuple[WriteStat, ...]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    operation_type: str = "UPSERT"

    @property
    def schema(self) -> str | None:
        return self.extra_metadata.get("schema")

    def all_write_stats(self) -> list[WriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def written_paths(self) -> list[str]:
        """Relative paths of every file the commit wrote (base files and log files)."""
        out = []
        for stat in self.all_write_stats():
            if stat.path:
                out.append(stat.path)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "partitionToWriteStats": {
                p: [s.to_json() for s in stats] for p, stats in self.partition_to_write_stats.items()
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }

    def to_bytes(self) -> bytes:
        return jackson_dumps(self.to_json()).encode("utf-8")

    def to_avro_bytes(self) -> bytes:
        """The metadata as a `HoodieCommitMetadata` Avro container (null codec), as 1.x writes it."""
        return avro_models.serialize(avro_models.COMMIT_METADATA, self._avro_record())

    def _avro_record(self) -> dict[str, Any]:
        fields = [f["name"] for f in avro_models.WRITE_STAT["fields"]]
        zeros = {"totalLogReadTimeMs": 0, "numUpdates": 0}
        record = self.to_json()
        record["partitionToWriteStats"] = {
            p: [{f: s.get(f, zeros.get(f)) for f in fields} | {"prevBaseFile": stat.prev_base_file}
                for s, stat in zip(stats, self.partition_to_write_stats[p], strict=True)]
            for p, stats in record["partitionToWriteStats"].items()
        }
        record["version"] = None
        return record

    def encode(self, version: TableVersion) -> bytes:
        """The bytes of an inflight or completed commit file at `version`."""
        return self.to_avro_bytes() if version.avro_commit_metadata else self.to_bytes()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CommitMetadata:
        stats = d.get("partitionToWriteStats") or {}
        return cls(
            partition_to_write_stats={
                p: tuple(WriteStat.from_json(s) for s in (lst or [])) for p, lst in stats.items()
            },
            compacted=bool(d.get("compacted", False)),
            extra_metadata={k: v for k, v in (d.get("extraMetadata") or {}).items() if v is not None},
            operation_type=d.get("operationType") or "UNKNOWN",
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> CommitMetadata:
        if not data.strip():
            return cls()
        return cls.from_json(decode_metadata(data))


def upgraded_metadata(data: bytes, replace: bool = False) -> bytes:
    """A 0.x commit file (JSON) as Hudi 1.x rewrites it when upgrading the timeline: read into its
    `HoodieCommitMetadata` (`HoodieReplaceCommitMetadata` for a replacecommit), an empty file being an
    empty commit of operation UNKNOWN (`CommitMetadataSerDeV2.deserialize`: `clazz.newInstance()`), and
    written as the Avro container `CommitMetadataSerDeV2.serialize` makes
    (`SevenToEightUpgradeHandler.rewriteTimelineV1InstantFileToV2Format`)."""
    raw = decode_metadata(data)
    metadata = CommitMetadata.from_json(raw) if raw else CommitMetadata(operation_type="UNKNOWN")
    record = metadata._avro_record()
    if not replace:
        return avro_models.serialize(avro_models.COMMIT_METADATA, record)
    del record["compacted"]  # not a field of HoodieReplaceCommitMetadata
    replaced = raw.get("partitionToReplaceFileIds") or {}
    # MetadataConversionUtils.convertReplaceCommitMetadata drops a null partition.
    record["partitionToReplaceFileIds"] = {p: list(ids or ()) for p, ids in replaced.items() if p is not None}
    return avro_models.serialize(avro_models.REPLACE_COMMIT_METADATA_FILE, record)


def decode_metadata(data: bytes) -> dict[str, Any]:
    """An instant file's metadata as the JSON object it is (layout 1) or the Avro record it holds (layout 2)."""
    if data.startswith(AVRO_MAGIC):
        records = list(fastavro.reader(io.BytesIO(data)))
        return dict(records[0]) if records else {}
    if not data.strip():
        return {}
    return json.loads(data.decode("utf-8"))


def write_stat_field_names() -> list[str]:
    return [f.name for f in fields(WriteStat)]


def jackson_dumps(value: Any) -> str:
    """JSON laid out as Jackson's DefaultPrettyPrinter writes it."""
    out: list[str] = []
    _write(value, 0, out)
    return "".join(out)


_PLAIN_TEXT = re.compile(r'[^"\\\x00-\x1f]*')  # nothing json.dumps(ensure_ascii=False) would escape


@functools.lru_cache(maxsize=4096)
def _key_text(key: str) -> str:
    return _text(key)


def _text(value: str) -> str:
    """A JSON string: plain ASCII as is (the common case, fast), anything else through `json.dumps`."""
    if _PLAIN_TEXT.fullmatch(value):
        return '"' + value + '"'
    return json.dumps(value, ensure_ascii=False)


def _write(value: Any, depth: int, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_text(value))
    elif value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, Mapping):
        if not value:
            out.append("{ }")
            return
        out.append("{")
        inner = "\n" + "  " * (depth + 1)
        first = True
        for key, item in value.items():
            out.append(inner if first else "," + inner)
            first = False
            out.append(_key_text(str(key)))
            out.append(" : ")
            _write(item, depth + 1, out)
        out.append("\n" + "  " * depth + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _write(item, depth, out)  # Jackson's array indenter is inline: no extra nesting
        out.append(" ]")
    else:
        out.append(json.dumps(value, ensure_ascii=False))
