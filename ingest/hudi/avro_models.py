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
                        {"name": "writtenLogFiles", "type": ["null", {"type": "map", "values": "long"}], "default": None},
                    ],
                },
            },
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "instantsRollback", "type": {"type": "array", "items": INSTANT_INFO}, "default": []},
    ],
}


_PARSED: dict[str, Any] = {}


def parsed(schema: dict[str, Any]) -> Any:
    """Each schema defines the named types it uses inline, so it parses on its own."""
    key = schema["name"]
    if key not in _PARSED:
        _PARSED[key] = fastavro.parse_schema(schema)
    return _PARSED[key]


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
