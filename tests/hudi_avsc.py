"""Hudi's own Avro schemas (`hudi-common/src/main/avro/*.avsc`), to read our timeline files with.

The project does not carry Hudi's .avsc files. When `INGEST_HUDI_AVSC_DIR` names a folder holding
them, `hudi_schema(name)` returns the named record with every type it references inlined (a
standalone reader schema); otherwise it returns None and tests check the structure they verified.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

AVSC_DIR_ENV = "INGEST_HUDI_AVSC_DIR"
_COMMENT = re.compile(r"/\*.*?\*/", re.S)  # Hudi's .avsc files carry C-style comments Avro Java skips
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def avsc_dir() -> Path | None:
    raw = os.environ.get(AVSC_DIR_ENV)
    return Path(raw) if raw else None


def _records(node: Any, namespace: str | None, out: dict[str, dict]) -> None:
    if isinstance(node, list):
        for n in node:
            _records(n, namespace, out)
    elif isinstance(node, dict):
        if node.get("type") in ("record", "enum", "fixed"):
            ns = node.get("namespace", namespace)
            out[node["name"]] = {**node, "namespace": ns} if ns else node
            for f in node.get("fields", []):
                _records(f["type"], ns, out)
        else:
            for key in ("type", "items", "values"):
                if key in node:
                    _records(node[key], namespace, out)


def _named(folder: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for path in sorted(folder.glob("*.avsc")):
        _records(json.loads(_COMMENT.sub("", path.read_text())), None, out)
    return out


def _inline(node: Any, named: dict[str, dict], seen: set[str]) -> Any:
    if isinstance(node, str):
        short = node.rsplit(".", 1)[-1]
        if node in _PRIMITIVES or short not in named:
            return node
        if short in seen:
            return short
        return _inline(named[short], named, seen)
    if isinstance(node, list):
        return [_inline(n, named, seen) for n in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "record":
        if node["name"] in seen:
            return node["name"]
        seen.add(node["name"])
        return {**node, "fields": [{**f, "type": _inline(f["type"], named, seen)} for f in node["fields"]]}
    return {k: _inline(v, named, seen) if k in ("type", "items", "values") else v for k, v in node.items()}


def hudi_schema(name: str) -> dict | None:
    """Hudi's schema of record `name`, standalone, or None without `INGEST_HUDI_AVSC_DIR`."""
    folder = avsc_dir()
    if folder is None:
        return None
    named = _named(folder)
    if name not in named:
        raise AssertionError(f"{folder} defines no record {name} (has {sorted(named)})")
    return _inline(named[name], named, set())


# Hudi 0.14/0.15's rollback schemas as text (`hudi-common/src/main/avro/HoodieRollbackMetadata.avsc`,
# `HoodieRollbackPlan.avsc`, with `HoodieInstantInfo.avsc` inlined). 0.14 renamed the partition
# metadata's `writtenLogFiles` to `logFilesFromFailedCommit`: 0.15's `BaseRollbackHelper` fills it
# (`withLogFilesFromFailedCommit`) and `HoodieTableMetadataUtil` reads it without a null check
# (`pm.getLogFilesFromFailedCommit().forEach`).
_INSTANT_INFO = """{"namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieInstantInfo",
  "fields": [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}]}"""

ROLLBACK_METADATA_0_15 = """{"namespace": "org.apache.hudi.avro.model",
 "type": "record",
 "name": "HoodieRollbackMetadata",
 "fields": [
     {"name": "startRollbackTime", "type": "string"},
     {"name": "timeTakenInMillis", "type": "long"},
     {"name": "totalFilesDeleted", "type": "int"},
     {"name": "commitsRollback", "type": {"type": "array", "items": "string"}},
     {"name": "partitionMetadata", "type": {
     "type" : "map", "values" : {
        "type": "record",
        "name": "HoodieRollbackPartitionMetadata",
        "fields": [
            {"name": "partitionPath", "type": "string"},
            {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
            {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
            {"name": "rollbackLogFiles", "type": ["null", {
                "type": "map",
                "doc": "Files to which append blocks were written to capture rollback commit",
                "values": {"type": "long", "doc": "Size of this file in bytes"}
            }], "default":null },
            {"name": "logFilesFromFailedCommit", "type": ["null", {
                "type": "map",
                "doc": "Log files written that were expected to be rolledback",
                "values": {"type": "long", "doc": "Size of this file in bytes"}
            }], "default":null }
        ]
     }}},
     {"name":"version", "type":["int", "null"], "default": 1},
     /* overlaps with 'commitsRollback' field. Adding this to track action type for all the instants being rolled back. */
     {"name": "instantsRollback", "default": [],
       "type": {"type": "array", "default": [], "items": "HoodieInstantInfo"}}
 ]
}"""

ROLLBACK_PLAN_0_15 = """{"namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieRollbackPlan",
  "fields": [
    {"name": "instantToRollback", "doc": "Hoodie instant that needs to be rolled back",
     "type": ["null", "HoodieInstantInfo"], "default": null},
    {"name": "RollbackRequests", "type": ["null", {"type": "array", "items": {
        "type": "record", "name": "HoodieRollbackRequest",
        "fields": [
          {"name": "partitionPath", "type": "string"},
          {"name": "fileId", "type": ["null", "string"], "default": null},
          {"name": "latestBaseInstant", "type": ["null", "string"], "default": null},
          {"name": "filesToBeDeleted", "default": [], "type": {"type": "array", "default": [], "items": "string"}},
          {"name": "logBlocksToBeDeleted", "type": ["null", {"type": "map",
            "doc": "Log blocks that need to be deleted as part of the rollback",
            "values": {"type": "long", "doc": "Size of this file/block in bytes"}}], "default": null}
        ]}}], "default": null},
    {"name": "version", "type": ["int", "null"], "default": 1}
  ]
}"""


# Hudi 1.x's `HoodieCommitMetadata` (`hudi-common/src/main/avro/HoodieCommitMetadata.avsc` at apache/hudi
# d5e5c40: `compacted`, the log-file fields of `HoodieWriteStat`, `HoodieRuntimeStats`), equal to the
# writer schema Hudi 1.0 and 1.1.1 embedded in the v8 and v9 fixtures' deltacommits (`CommitMetadataSerDeV2`).
COMMIT_METADATA_1_2 = """{"namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieCommitMetadata",
  "fields": [
    {"name": "partitionToWriteStats", "default": null, "type": ["null", {"type": "map", "values": {"type": "array",
      "items": {"name": "HoodieWriteStat", "type": "record", "fields": [
        {"name": "fileId", "type": ["null", "string"], "default": null},
        {"name": "path", "type": ["null", "string"], "default": null},
        {"name": "prevCommit", "type": ["null", "string"], "default": null},
        {"name": "numWrites", "type": ["null", "long"], "default": null},
        {"name": "numDeletes", "type": ["null", "long"], "default": null},
        {"name": "numUpdateWrites", "type": ["null", "long"], "default": null},
        {"name": "totalWriteBytes", "type": ["null", "long"], "default": null},
        {"name": "totalWriteErrors", "type": ["null", "long"], "default": null},
        {"name": "partitionPath", "type": ["null", "string"], "default": null},
        {"name": "totalLogRecords", "type": ["null", "long"], "default": null},
        {"name": "totalLogFiles", "type": ["null", "long"], "default": null},
        {"name": "totalUpdatedRecordsCompacted", "type": ["null", "long"], "default": null},
        {"name": "numInserts", "type": ["null", "long"], "default": null},
        {"name": "totalLogBlocks", "type": ["null", "long"], "default": null},
        {"name": "totalCorruptLogBlock", "type": ["null", "long"], "default": null},
        {"name": "totalRollbackBlocks", "type": ["null", "long"], "default": null},
        {"name": "fileSizeInBytes", "type": ["null", "long"], "default": null},
        {"name": "logVersion", "type": ["null", "int"], "default": null},
        {"name": "logOffset", "type": ["null", "long"], "default": null},
        {"name": "baseFile", "type": ["null", "string"], "default": null},
        {"name": "logFiles", "type": ["null", {"type": "array", "items": "string", "default": null}], "default": null},
        {"name": "cdcStats", "type": ["null", {"type": "map", "values": "long", "default": null}], "default": null},
        {"name": "prevBaseFile", "type": ["null", "string"], "default": null},
        {"name": "minEventTime", "type": ["null", "long"], "default": null},
        {"name": "maxEventTime", "type": ["null", "long"], "default": null},
        {"name": "runtimeStats", "default": null, "type": ["null", {"type": "record", "name": "HoodieRuntimeStats",
          "fields": [{"name": "totalScanTime", "type": ["null", "long"], "default": null},
                     {"name": "totalCreateTime", "type": ["null", "long"], "default": null},
                     {"name": "totalUpsertTime", "type": ["null", "long"], "default": null}]}]},
        {"name": "totalLogFilesCompacted", "type": ["null", "long"], "default": null},
        {"name": "totalLogReadTimeMs", "type": ["null", "long"], "default": null},
        {"name": "totalLogSizeCompacted", "type": ["null", "long"], "default": null},
        {"name": "tempPath", "type": ["null", "string"], "default": null},
        {"name": "numUpdates", "type": ["null", "long"], "default": null}
      ]}}}]},
    {"name": "compacted", "type": ["null", "boolean"], "default": null},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string", "default": null}], "default": null},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "operationType", "type": ["null", "string"], "default": null}
  ]
}"""

def shape(node: Any, names: dict | None = None) -> Any:
    """An Avro schema reduced to what Avro resolution and Hudi's generated classes depend on: record
    full names, field names and order, types (unions in order) and field defaults; a named type is the
    same whether defined inline or referenced by name. Docs and `avro.java.string` are dropped."""
    names = {} if names is None else names
    if isinstance(node, str):
        if node in _PRIMITIVES:
            return node
        return names.get(node.rsplit(".", 1)[-1], node)
    if isinstance(node, list):
        return [shape(n, names) for n in node]
    kind = node["type"]
    if kind == "record":
        full = node["name"] if "." in node["name"] else f"{node.get('namespace', '')}.{node['name']}"
        fields = tuple((f["name"], json.dumps(shape(f["type"], names)), json.dumps(f.get("default", "-")))
                       for f in node["fields"])
        names[node["name"].rsplit(".", 1)[-1]] = ["record", full, [list(f) for f in fields]]
        return names[node["name"].rsplit(".", 1)[-1]]
    if kind == "array":
        return ["array", shape(node["items"], names)]
    if kind == "map":
        return ["map", shape(node["values"], names)]
    return shape(kind, names)


def parse_hudi_text(text: str) -> Any:
    """An .avsc text parsed as Avro Java parses it (comments skipped, `HoodieInstantInfo` known)."""
    import fastavro

    named: dict[str, Any] = {}
    fastavro.parse_schema(json.loads(_INSTANT_INFO), named_schemas=named)
    return fastavro.parse_schema(json.loads(_COMMENT.sub("", text)), named_schemas=named)


# Hudi 1.2's table-service schemas as text (`hudi-common/src/main/avro`, apache/hudi master and
# release-1.x; comments dropped). `HoodieCompactionOperation.avsc` declares `HoodieCompactionPlan`, whose
# `strategy` is `HoodieCompactionStrategy.avsc` (inlined here) and whose last field,
# `missingSchedulePartitions`, came with 1.0's incremental table services (the plans in the v8 and v9
# fixtures carry it). The clean schemas are unchanged since 0.14: `HoodieCleanerPlan.avsc`,
# `HoodieCleanMetadata.avsc` with `HoodieCleanPartitionMetadata.avsc` inlined.
COMPACTION_PLAN_1_2 = """{"namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieCompactionPlan",
  "fields": [
    {"name": "operations", "type": ["null", {"type": "array", "items": {
      "name": "HoodieCompactionOperation", "type": "record",
      "fields": [
        {"name": "baseInstantTime", "type": ["null", "string"]},
        {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": "string"}], "default": null},
        {"name": "dataFilePath", "type": ["null", "string"], "default": null},
        {"name": "fileId", "type": ["null", "string"]},
        {"name": "partitionPath", "type": ["null", "string"], "default": null},
        {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}], "default": null},
        {"name": "bootstrapFilePath", "type": ["null", "string"], "default": null}
      ]}}], "default": null},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "strategy", "type": ["null", {"type": "record", "name": "HoodieCompactionStrategy",
      "fields": [
        {"name": "compactorClassName", "type": ["null", "string"], "default": null},
        {"name": "strategyParams", "type": ["null", {"type": "map", "values": "string"}], "default": null},
        {"name": "version", "type": ["int", "null"], "default": 1}
      ]}], "default": null},
    {"name": "preserveHoodieMetadata", "type": ["boolean", "null"], "default": false},
    {"name": "missingSchedulePartitions", "type": ["null", {"type": "array", "items": "string"}], "default": null}
  ]
}"""

CLEANER_PLAN_1_2 = """{"namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieCleanerPlan",
  "fields": [
    {"name": "earliestInstantToRetain", "type": ["null", {"type": "record", "name": "HoodieActionInstant",
      "fields": [{"name": "timestamp", "type": "string"}, {"name": "action", "type": "string"},
                 {"name": "state", "type": "string"}]}], "default": null},
    {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
    {"name": "policy", "type": "string"},
    {"name": "filesToBeDeletedPerPartition", "type": ["null", {"type": "map", "values": {"type": "array",
      "items": {"name": "filePath", "type": "string"}}}], "default": null},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "filePathsToBeDeletedPerPartition", "type": ["null", {"type": "map", "values": {"type": "array",
      "items": {"name": "HoodieCleanFileInfo", "type": "record", "fields": [
        {"name": "filePath", "type": ["null", "string"], "default": null},
        {"name": "isBootstrapBaseFile", "type": ["null", "boolean"], "default": null}]}}}], "default": null},
    {"name": "partitionsToBeDeleted", "type": ["null", {"type": "array", "items": "string"}], "default": null},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string", "default": null}], "default": null}
  ]
}"""

CLEAN_METADATA_1_2 = """{"namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieCleanMetadata",
  "fields": [
    {"name": "startCleanTime", "type": "string"},
    {"name": "timeTakenInMillis", "type": "long"},
    {"name": "totalFilesDeleted", "type": "int"},
    {"name": "earliestCommitToRetain", "type": "string"},
    {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
    {"name": "partitionMetadata", "type": {"type": "map", "values": {
      "namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieCleanPartitionMetadata",
      "fields": [
        {"name": "partitionPath", "type": "string"},
        {"name": "policy", "type": "string"},
        {"name": "deletePathPatterns", "type": {"type": "array", "items": "string"}},
        {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
        {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
        {"name": "isPartitionDeleted", "type": ["null", "boolean"], "default": null}
      ]}}},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "bootstrapPartitionMetadata", "type": ["null", {"type": "map",
      "values": "HoodieCleanPartitionMetadata", "default": null}], "default": null},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string", "default": null}], "default": null}
  ]
}"""


def decode_strict(data: bytes, text: str) -> dict:
    """The one record of an Avro container file, read by Apache Avro's own library (the `avro` package,
    whose parser rejects what Java's `Schema.Parser` rejects) with Hudi's schema `text` as reader
    schema: the writer schema we embedded is resolved against it by record full name and field name,
    as Hudi's generated classes read timeline files (`TimelineMetadataUtils.deserializeAvroMetadata`)."""
    import io

    import avro.datafile
    import avro.io
    import avro.schema

    reader_schema = avro.schema.parse(_COMMENT.sub("", text))
    with avro.datafile.DataFileReader(io.BytesIO(data), avro.io.DatumReader(readers_schema=reader_schema)) as r:
        records = list(r)
    if len(records) != 1:
        raise AssertionError(f"one record expected, found {len(records)}")
    return records[0]


_PINNED_1_X = {
    "HoodieCommitMetadata": COMMIT_METADATA_1_2,
    "HoodieCompactionPlan": COMPACTION_PLAN_1_2,
    "HoodieCleanerPlan": CLEANER_PLAN_1_2,
    "HoodieCleanMetadata": CLEAN_METADATA_1_2,
    "HoodieRollbackPlan": ROLLBACK_PLAN_0_15,
    "HoodieRollbackMetadata": ROLLBACK_METADATA_0_15,
}
HUDI_1X_RECORDS = frozenset(_PINNED_1_X)


def hudi_1x_text(name: str) -> str:
    """Hudi 1.x's schema of timeline record `name` as standalone text, from `INGEST_HUDI_AVSC_DIR` when
    set, else the text pinned here (the rollback ones are 0.15's, unchanged in 1.x: 1.x's
    `HoodieTableMetadataUtil` still calls `getLogFilesFromFailedCommit`)."""
    from_dir = hudi_schema(name)
    if from_dir is not None:
        return json.dumps(from_dir)
    if name.startswith("HoodieRollback"):  # they name HoodieInstantInfo, defined in its own file
        return json.dumps(_inline(json.loads(_COMMENT.sub("", _PINNED_1_X[name])),
                                  {"HoodieInstantInfo": json.loads(_INSTANT_INFO)}, set()))
    return _PINNED_1_X[name]


def hudi_1x_schema(name: str) -> Any:
    """`hudi_1x_text(name)`, parsed."""
    return parse_hudi_text(hudi_1x_text(name))
