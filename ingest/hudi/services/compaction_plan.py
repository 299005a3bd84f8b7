"""Compaction plans: `HoodieCompactionPlan` and its `HoodieCompactionOperation`s, as `CompactionUtils`
writes and reads them.

A plan names, per file slice to compact, its base file and log files by name (plan version 2,
`CompactionUtils.LATEST_COMPACTION_METADATA_VERSION`), with the metrics the strategy ordered it by. At
table versions 8 and 9 it is written in Hudi 1.x's schema, which adds `missingSchedulePartitions`
(`HoodieCompactionPlanGenerator.getCompactionPlan`). The plan is the `<t>.compaction.requested` file of
the table's timeline layout; executing and resuming a compaction start from it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from ingest.errors import TimelineError
from ingest.hudi.avro import avro_models
from ingest.hudi.config.table_version import V6, TableVersion
from ingest.hudi.table.file_names import BaseFileName, LogFileName
from ingest.hudi.table.file_system_view import BaseFile, FileSlice, LogFile
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import Timeline, read_instant
from ingest.hudi.timeline.timeline_layout import LAYOUT_1, TimelineLayout
from ingest.storage import Storage

PLAN_VERSION = 2  # CompactionUtils.LATEST_COMPACTION_METADATA_VERSION: file names, not paths

# CompactionStrategy.captureMetrics keys.
TOTAL_IO_READ_MB = "TOTAL_IO_READ_MB"
TOTAL_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"
TOTAL_IO_MB = "TOTAL_IO_MB"
TOTAL_LOG_FILES_SIZE = "TOTAL_LOG_FILES_SIZE"
TOTAL_LOG_FILES = "TOTAL_LOG_FILES"


@dataclass(frozen=True)
class CompactionOperation:
    """One file slice to compact: `HoodieCompactionOperation`."""

    partition_path: str
    file_id: str
    base_instant: str
    data_file: str | None                 # base file name, None for a slice of logs only
    delta_files: tuple[str, ...]          # log file names, in Hudi's log file order
    metrics: Mapping[str, float] = field(default_factory=dict)

    def path_of(self, name: str) -> str:
        return posixpath.join(self.partition_path, name) if self.partition_path else name

    def file_slice(self) -> FileSlice:
        """The planned slice (sizes are not needed to read it)."""
        base = None
        if self.data_file is not None:
            parsed = BaseFileName.parse(self.data_file)
            if parsed is None:
                raise TimelineError(f"compaction plan names {self.data_file!r}, which is no base file name")
            base = BaseFile(self.partition_path, parsed, 0)
        logs = []
        for name in self.delta_files:
            parsed_log = LogFileName.parse(name)
            if parsed_log is None:
                raise TimelineError(f"compaction plan names {name!r}, which is no log file name")
            logs.append(LogFile(self.partition_path, parsed_log, 0))
        return FileSlice(self.partition_path, self.file_id, self.base_instant, base,
                         tuple(sorted(logs, key=lambda lf: lf.name)))

    @property
    def log_size(self) -> int:
        return int(self.metrics.get(TOTAL_LOG_FILES_SIZE, 0))

    @property
    def io_mb(self) -> float:
        return float(self.metrics.get(TOTAL_IO_MB, 0.0))

    def to_avro(self) -> dict:
        return {
            "baseInstantTime": self.base_instant,
            "deltaFilePaths": list(self.delta_files),
            "dataFilePath": self.data_file,
            "fileId": self.file_id,
            "partitionPath": self.partition_path,
            "metrics": dict(self.metrics),
            "bootstrapFilePath": None,
        }

    @classmethod
    def from_avro(cls, d: Mapping) -> CompactionOperation:
        # Version 1 plans (Hudi before 0.5.1) carried full paths: keep the names.
        return cls(
            partition_path=d.get("partitionPath") or "",
            file_id=d["fileId"],
            base_instant=d.get("baseInstantTime") or "",
            data_file=posixpath.basename(d["dataFilePath"]) if d.get("dataFilePath") else None,
            delta_files=tuple(posixpath.basename(p) for p in d.get("deltaFilePaths") or ()),
            metrics=dict(d.get("metrics") or {}),
        )


@dataclass(frozen=True)
class CompactionPlan:
    operations: tuple[CompactionOperation, ...]
    extra_metadata: Mapping[str, str] | None = None
    version: int = PLAN_VERSION
    missing_partitions: tuple[str, ...] | None = None  # 1.x: partitions the strategy left work in

    def to_bytes(self, table_version: TableVersion = V6) -> bytes:
        """The plan file: at 8 and 9 in 1.x's schema, with `missingSchedulePartitions`."""
        record = {
            "operations": [op.to_avro() for op in self.operations],
            "extraMetadata": dict(self.extra_metadata) if self.extra_metadata is not None else None,
            "version": self.version,
            "strategy": None,
            "preserveHoodieMetadata": False,
        }
        if not table_version.plans_of_1x:
            return avro_models.serialize(avro_models.COMPACTION_PLAN, record)
        missing = list(self.missing_partitions) if self.missing_partitions is not None else None
        return avro_models.serialize(avro_models.COMPACTION_PLAN_1X, {**record, "missingSchedulePartitions": missing})

    @classmethod
    def from_bytes(cls, data: bytes) -> CompactionPlan:
        d = avro_models.deserialize(data)
        return cls(
            operations=tuple(CompactionOperation.from_avro(op) for op in d.get("operations") or ()),
            extra_metadata=d.get("extraMetadata"),
            version=int(d.get("version") or 1),
            missing_partitions=tuple(missing) if (missing := d.get("missingSchedulePartitions")) is not None else None,
        )

    @property
    def file_groups(self) -> frozenset[tuple[str, str]]:
        return frozenset((op.partition_path, op.file_id) for op in self.operations)


def read_plan(storage: Storage, timestamp: str, layout: TimelineLayout = LAYOUT_1,
              action: Action = Action.COMPACTION) -> CompactionPlan:
    """The plan of a compaction (or, `action=LOG_COMPACTION`, of a log compaction: the same record)."""
    requested = Instant(timestamp, action, State.REQUESTED)
    return CompactionPlan.from_bytes(read_instant(storage, requested, layout))


def pending_plans(storage: Storage, timeline: Timeline, action: Action = Action.COMPACTION) -> dict[str, CompactionPlan]:
    """Plans of the compactions (or log compactions) requested or inflight on `timeline`, by instant."""
    return {i.timestamp: read_plan(storage, i.timestamp, timeline.layout, action) for i in timeline.pending(action)}
