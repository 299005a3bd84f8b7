"""Timeline metadata that Hudi stores as Avro container files (rollback, clean, compaction...).

Hudi reads these with its generated classes: the writer schema embedded in our file is resolved
against Hudi's own schema by record full name and field name, so our schemas below carry the same
names, namespaces, field order and types as Hudi 0.14/0.15's `hudi-common/src/main/avro/*.avsc`
(written out here from those definitions; docs omitted). Files are plain Avro object container
files with the null codec and one record, as `TimelineMetadataUtils.serializeAvroMetadata` writes.
"""

from __future__ import annotations

import io
from typing import Any

import fastavro

NAMESPACE = "org.apache.hudi.avro.model"

INSTANT_INFO: dict[str, Any] = {
    "type": "record",
    "name": "HoodieInstantInfo",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "commitTime", "type": "string"},
        {"name": "action", "type": "string"},
    ],
}

ROLLBACK_PLAN: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRollbackPlan",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "instantToRollback", "type": ["null", INSTANT_INFO], "default": None},
        {
            "name": "RollbackRequests",
            "type": [
                "null",
                {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieRollbackRequest",
                        "fields": [
                            {"name": "partitionPath", "type": "string"},
                            {"name": "fileId", "type": ["null", "string"], "default": None},
                            {"name": "latestBaseInstant", "type": ["null", "string"], "default": None},
                            {"name": "filesToBeDeleted", "type": {"type": "array", "items": "string"}, "default": []},
                            {
                                "name": "logBlocksToBeDeleted",
                                "type": ["null", {"type": "map", "values": "long"}],
                                "default": None,
                            },
                        ],
                    },
                },
            ],
            "default": None,
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}

ROLLBACK_METADATA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRollbackMetadata",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "startRollbackTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": {"type": "array", "items": "string"}},
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieRollbackPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": "string"},
                        {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
                        {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
                        {"name": "rollbackLogFiles", "type": ["null", {"type": "map", "values": "long"}], "default": None},
                        # Hudi 0.14+ (HoodieRollbackPartitionMetadata); earlier releases named it writtenLogFiles.
                        {"name": "logFilesFromFailedCommit", "type": ["null", {"type": "map", "values": "long"}],
                         "default": None},
                    ],
                },
            },
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "instantsRollback", "type": {"type": "array", "items": INSTANT_INFO}, "default": []},
    ],
}



def _nullable(avro_type: Any, default: Any = None) -> dict[str, Any]:
    """A field type `["null", T]` defaulting to null (the shape of most of Hudi's optional fields)."""
    return {"type": ["null", avro_type], "default": default}


def _field(name: str, avro_type: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": avro_type, **extra}


def _opt(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, **_nullable(avro_type)}


_STRINGS = {"type": "array", "items": "string"}
_STRING_MAP = {"type": "map", "values": "string"}
_VERSION = {"name": "version", "type": ["int", "null"], "default": 1}


def _record(name: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": NAMESPACE, "fields": fields}


# -- compaction -------------------------------------------------------------------------------------
# `.compaction.requested` holds a HoodieCompactionPlan. Plan version 2 (CompactionUtils'
# LATEST_COMPACTION_METADATA_VERSION) names files relative to their partition: `deltaFilePaths` are log
# file names, `dataFilePath` the base file name. `strategy`/`preserveHoodieMetadata` came with log
# compaction (0.13); the union order of `preserveHoodieMetadata` is that of the plan Hudi wrote in the
# v8 fixture. `missingSchedulePartitions` came with 1.0's incremental table services: the plan of a
# version-6 table leaves it out (readers default it to null), tables of 8 and 9 carry it
# (`COMPACTION_PLAN_1X`, as Hudi 1.x's `HoodieCompactionPlan.avsc` and the plans in the v8/v9 fixtures).

COMPACTION_OPERATION: dict[str, Any] = _record("HoodieCompactionOperation", [
    _field("baseInstantTime", ["null", "string"]),
    _opt("deltaFilePaths", _STRINGS),
    _opt("dataFilePath", "string"),
    _field("fileId", ["null", "string"]),
    _opt("partitionPath", "string"),
    _opt("metrics", {"type": "map", "values": "double"}),
    _opt("bootstrapFilePath", "string"),
])

COMPACTION_STRATEGY: dict[str, Any] = _record("HoodieCompactionStrategy", [
    _opt("compactorClassName", "string"),
    _opt("strategyParams", _STRING_MAP),
    dict(_VERSION),
])

COMPACTION_PLAN: dict[str, Any] = _record("HoodieCompactionPlan", [
    _opt("operations", {"type": "array", "items": COMPACTION_OPERATION}),
    _opt("extraMetadata", _STRING_MAP),
    dict(_VERSION),
    _opt("strategy", COMPACTION_STRATEGY),
    _field("preserveHoodieMetadata", ["boolean", "null"], default=False),
])

COMPACTION_PLAN_1X: dict[str, Any] = {**COMPACTION_PLAN, "fields": [
    *COMPACTION_PLAN["fields"],
    _opt("missingSchedulePartitions", _STRINGS),
]}

# -- clean ------------------------------------------------------------------------------------------
# `.clean.requested` / `.clean.inflight` hold a HoodieCleanerPlan (version 2: files to delete as
# HoodieCleanFileInfo per partition, full paths); `.clean` holds HoodieCleanMetadata (version 2).

ACTION_INSTANT: dict[str, Any] = _record("HoodieActionInstant", [
    _field("timestamp", "string"),
    _field("action", "string"),
    _field("state", "string"),
])

CLEAN_FILE_INFO: dict[str, Any] = _record("HoodieCleanFileInfo", [
    _opt("filePath", "string"),
    _opt("isBootstrapBaseFile", "boolean"),
])

CLEANER_PLAN: dict[str, Any] = _record("HoodieCleanerPlan", [
    _opt("earliestInstantToRetain", ACTION_INSTANT),
    _field("lastCompletedCommitTimestamp", "string", default=""),
    _field("policy", "string"),
    _opt("filesToBeDeletedPerPartition", {"type": "map", "values": _STRINGS}),
    dict(_VERSION),
    _opt("filePathsToBeDeletedPerPartition", {"type": "map", "values": {"type": "array", "items": CLEAN_FILE_INFO}}),
    _opt("partitionsToBeDeleted", _STRINGS),
    _opt("extraMetadata", _STRING_MAP),
])

CLEAN_PARTITION_METADATA: dict[str, Any] = _record("HoodieCleanPartitionMetadata", [
    _field("partitionPath", "string"),
    _field("policy", "string"),
    _field("deletePathPatterns", _STRINGS),
    _field("successDeleteFiles", _STRINGS),
    _field("failedDeleteFiles", _STRINGS),
    _opt("isPartitionDeleted", "boolean"),
])

CLEAN_METADATA: dict[str, Any] = _record("HoodieCleanMetadata", [
    _field("startCleanTime", "string"),
    _field("timeTakenInMillis", "long"),
    _field("totalFilesDeleted", "int"),
    _field("earliestCommitToRetain", "string"),
    _field("lastCompletedCommitTimestamp", "string", default=""),
    _field("partitionMetadata", {"type": "map", "values": CLEAN_PARTITION_METADATA}),
    dict(_VERSION),
    _opt("bootstrapPartitionMetadata", {"type": "map", "values": "HoodieCleanPartitionMetadata"}),
    _opt("extraMetadata", _STRING_MAP),
])

# -- archived timeline ------------------------------------------------------------------------------
# `.hoodie/archived/.commits_.archive.<n>_<token>` holds AVRO_DATA blocks of HoodieArchivedMetaEntry:
# one entry per timeline file of an archived instant, carrying that file's content as the Avro record
# of its action (commit metadata converted from its JSON, clean plan or metadata, rollback metadata,
# compaction plan). Readers look fields up by name, so the entry carries all of 0.14's fields, and the
# records it may embed are defined as Hudi defines them.

RUNTIME_STATS: dict[str, Any] = _record("HoodieRuntimeStats", [
    _opt("totalScanTime", "long"),
    _opt("totalCreateTime", "long"),
    _opt("totalUpsertTime", "long"),
])

WRITE_STAT: dict[str, Any] = _record("HoodieWriteStat", [
    _opt("fileId", "string"),
    _opt("path", "string"),
    _opt("prevCommit", "string"),
    _opt("numWrites", "long"),
    _opt("numDeletes", "long"),
    _opt("numUpdateWrites", "long"),
    _opt("totalWriteBytes", "long"),
    _opt("totalWriteErrors", "long"),
    _opt("partitionPath", "string"),
    _opt("totalLogRecords", "long"),
    _opt("totalLogFiles", "long"),
    _opt("totalUpdatedRecordsCompacted", "long"),
    _opt("numInserts", "long"),
    _opt("totalLogBlocks", "long"),
    _opt("totalCorruptLogBlock", "long"),
    _opt("totalRollbackBlocks", "long"),
    _opt("fileSizeInBytes", "long"),
    _opt("logVersion", "int"),
    _opt("logOffset", "long"),
    _opt("baseFile", "string"),
    _opt("logFiles", _STRINGS),
    _opt("cdcStats", {"type": "map", "values": "long"}),
    _opt("prevBaseFile", "string"),
    _opt("minEventTime", "long"),
    _opt("maxEventTime", "long"),
    _opt("runtimeStats", RUNTIME_STATS),
    _opt("totalLogFilesCompacted", "long"),
    _opt("totalLogReadTimeMs", "long"),
    _opt("totalLogSizeCompacted", "long"),
    _opt("tempPath", "string"),
    _opt("numUpdates", "long"),
])

COMMIT_METADATA: dict[str, Any] = _record("HoodieCommitMetadata", [
    _opt("partitionToWriteStats", {"type": "map", "values": {"type": "array", "items": WRITE_STAT}}),
    _opt("compacted", "boolean"),
    _opt("extraMetadata", _STRING_MAP),
    dict(_VERSION),
    _opt("operationType", "string"),
])

COMPACTION_METADATA: dict[str, Any] = _record("HoodieCompactionMetadata", [
    _opt("partitionToCompactionWriteStats", {"type": "map", "values": {"type": "array", "items": _record(
        "HoodieCompactionWriteStat", [
            _field("partitionPath", ["null", "string"]),
            _field("totalLogRecords", ["null", "long"]),
            _field("totalLogFiles", ["null", "long"]),
            _field("totalUpdatedRecordsCompacted", ["null", "long"]),
            _field("hoodieWriteStat", ["null", "HoodieWriteStat"]),
        ])}}),
])

SAVEPOINT_METADATA: dict[str, Any] = _record("HoodieSavepointMetadata", [
    _field("savepointedBy", "string"),
    _field("savepointedAt", "long"),
    _field("comments", "string"),
    _field("partitionMetadata", {"type": "map", "values": _record("HoodieSavepointPartitionMetadata", [
        _field("partitionPath", "string"),
        _field("savepointDataFile", _STRINGS),
    ])}),
    dict(_VERSION),
])

REPLACE_COMMIT_METADATA: dict[str, Any] = _record("HoodieReplaceCommitMetadata", [
    _opt("partitionToWriteStats", {"type": "map", "values": {"type": "array", "items": "HoodieWriteStat"}}),
    _opt("extraMetadata", _STRING_MAP),
    dict(_VERSION),
    _opt("operationType", "string"),
    _opt("partitionToReplaceFileIds", {"type": "map", "values": _STRINGS}),
])

# The same record as a file of its own (a layout-2 `.replacecommit`): `HoodieWriteStat` defined inline.
REPLACE_COMMIT_METADATA_FILE: dict[str, Any] = {
    **REPLACE_COMMIT_METADATA, "fields": [COMMIT_METADATA["fields"][0], *REPLACE_COMMIT_METADATA["fields"][1:]],
}

REQUESTED_REPLACE_METADATA: dict[str, Any] = _record("HoodieRequestedReplaceMetadata", [
    _opt("operationType", "string"),
    _opt("clusteringPlan", _record("HoodieClusteringPlan", [
        _opt("inputGroups", {"type": "array", "items": _record("HoodieClusteringGroup", [
            _opt("slices", {"type": "array", "items": _record("HoodieSliceInfo", [
                _opt("dataFilePath", "string"),
                _opt("deltaFilePaths", _STRINGS),
                _field("fileId", ["null", "string"]),
                _opt("partitionPath", "string"),
                _opt("bootstrapFilePath", "string"),
                dict(_VERSION),
            ])}),
            _opt("metrics", {"type": "map", "values": "double"}),
            {"name": "numOutputFileGroups", "type": ["int", "null"], "default": 1},
            dict(_VERSION),
        ])}),
        _opt("strategy", _record("HoodieClusteringStrategy", [
            _opt("strategyClassName", "string"),
            _opt("strategyParams", _STRING_MAP),
            dict(_VERSION),
        ])),
        _opt("extraMetadata", _STRING_MAP),
        dict(_VERSION),
        _opt("preserveHoodieMetadata", "boolean"),
    ])),
    _opt("extraMetadata", _STRING_MAP),
    dict(_VERSION),
])

INDEX_COMMIT_METADATA: dict[str, Any] = _record("HoodieIndexCommitMetadata", [
    dict(_VERSION),
    _opt("operationType", "string"),
    _opt("indexPartitionInfos", {"type": "array", "items": _record("HoodieIndexPartitionInfo", [
        dict(_VERSION),
        _opt("metadataPartitionPath", "string"),
        _opt("indexUptoInstant", "HoodieInstantInfo"),
    ])}),
])


def _define_once(node: Any, seen: set[str]) -> Any:
    """A copy of `node` in which each named record is defined at its first use and referenced after."""
    if isinstance(node, list):
        return [_define_once(n, seen) for n in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "record":
        full = f"{node.get('namespace', NAMESPACE)}.{node['name']}"
        if full in seen:
            return node["name"]
        seen.add(full)
        return {**node, "fields": [{**f, "type": _define_once(f["type"], seen)} for f in node["fields"]]}
    return {k: _define_once(v, seen) if k in ("type", "items", "values") else v for k, v in node.items()}


ARCHIVED_META_ENTRY: dict[str, Any] = _define_once(_record("HoodieArchivedMetaEntry", [
    _opt("hoodieCommitMetadata", COMMIT_METADATA),
    _opt("hoodieCleanMetadata", CLEAN_METADATA),
    _opt("hoodieCompactionMetadata", COMPACTION_METADATA),  # deprecated, never written
    _opt("hoodieRollbackMetadata", ROLLBACK_METADATA),
    _opt("hoodieSavePointMetadata", SAVEPOINT_METADATA),
    _opt("commitTime", "string"),
    _opt("actionType", "string"),
    dict(_VERSION),
    _opt("hoodieCompactionPlan", COMPACTION_PLAN),
    _opt("hoodieCleanerPlan", CLEANER_PLAN),
    _opt("actionState", "string"),
    _opt("hoodieReplaceCommitMetadata", REPLACE_COMMIT_METADATA),
    _opt("hoodieRequestedReplaceMetadata", REQUESTED_REPLACE_METADATA),
    _opt("HoodieInflightReplaceMetadata", "HoodieCommitMetadata"),
    _opt("hoodieIndexCommitMetadata", INDEX_COMMIT_METADATA),
    # The file's modification time as an instant time (0.14/0.15 `createMetaWrapper`); Hudi 1.x's upgrade
    # makes it the archived instant's completion time, which its readers need non-null.
    _opt("stateTransitionTime", "string"),
]), set())

# `.hoodie/archived/mergeArchivePlan`: written by Hudi 0.x's archiver before it merges small archive
# files into one (`HoodieTimelineArchiver.buildArchiveMergePlan`): the candidates by full path, the
# merged file by name (`HoodieMergeArchiveFilePlan.avsc`).
MERGE_ARCHIVE_FILE_PLAN: dict[str, Any] = _record("HoodieMergeArchiveFilePlan", [
    _opt("candidate", _STRINGS),
    _opt("mergedArchiveFileName", "string"),
])

# -- LSM timeline history (table versions 8 and 9) ----------------------------------------------------
# `.hoodie/timeline/history/<min>_<max>_<level>.parquet` rows: one per archived instant, its completed
# file's bytes as `metadata` and its plan (requested or inflight file) as `plan`
# (`HoodieLSMTimelineInstant.avsc`; `MetadataConversionUtils.createLSMTimelineInstant`).

LSM_TIMELINE_INSTANT: dict[str, Any] = _record("HoodieLSMTimelineInstant", [
    _opt("instantTime", "string"),
    _opt("completionTime", "string"),
    _opt("action", "string"),
    _opt("metadata", "bytes"),
    _opt("plan", "bytes"),
    _field("version", "int", default=1),
])


_PARSED: dict[int, tuple[dict[str, Any], Any]] = {}


def parsed(schema: dict[str, Any]) -> Any:
    """Each schema defines the named types it uses inline, so it parses on its own. Cached per schema
    object, not per record name: one record may have a schema per Hudi release (`COMPACTION_PLAN`,
    `COMPACTION_PLAN_1X`); the cache keeps the object, so its id is never another's."""
    key = id(schema)
    if key not in _PARSED:
        _PARSED[key] = (schema, fastavro.parse_schema(schema))
    return _PARSED[key][1]


def serialize(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    """One record in an Avro object container file (null codec), as Hudi writes timeline metadata."""
    buf = io.BytesIO()
    fastavro.writer(buf, parsed(schema), [record], codec="null")
    return buf.getvalue()


def deserialize(data: bytes, reader_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The single record of a container file (with its own writer schema, or resolved to `reader_schema`)."""
    reader = fastavro.reader(io.BytesIO(data), reader_schema=parsed(reader_schema) if reader_schema else None)
    for record in reader:
        return record
    raise ValueError("empty Avro container file")


def writer_schema(data: bytes) -> dict[str, Any]:
    """The writer schema embedded in a container file (e.g. to read ours with Hudi's own schema)."""
    return fastavro.reader(io.BytesIO(data)).writer_schema
