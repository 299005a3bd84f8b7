"""Avro message values: plain Avro binary with the spec's schema, or Confluent-framed (magic byte,
schema id) with the writer schema from the registry or from files by id, resolved to the spec's."""

from __future__ import annotations

import io
import json
import struct
from typing import Any

import numpy as np
import pyarrow as pa

from ingest.kafka import registry as schema_registry
from ingest.kafka.columns import CONFLUENT_HEADER, CONFLUENT_MAGIC, HOODIE_IS_DELETED
from ingest.kafka.outcome import Outcome, aligned, loose
from ingest.kafka.spec import DecoderSpec, parsed_avro

# -- Avro ---------------------------------------------------------------------------------------


def _avro_reader(writer: str, reader: str):
    import fastavro

    writer_schema = parsed_avro(writer)
    reader_schema = None if writer == reader else parsed_avro(reader)

    def read(payload: bytes) -> dict:
        stream = io.BytesIO(payload)
        record = fastavro.schemaless_reader(stream, writer_schema, reader_schema)
        trailing = len(payload) - stream.tell()
        if trailing:
            raise ValueError(f"{trailing} bytes left after the Avro record")
        return record

    return read


def read_avro(values: pa.Array, spec: DecoderSpec, schema: pa.Schema) -> Outcome:
    """Decode non-null binary values as the spec's Avro flavour, one record at a time, to `schema`."""
    assert spec.avro_schema is not None
    reader_text = spec.avro_schema
    writers = dict(spec.writer_schemas)
    default_read = _avro_reader(reader_text, reader_text)
    readers: dict[int, Any] = {}
    # A writer schema may carry Hudi's delete marker the declared schema lacks: read it too.
    marker_reader = None
    if HOODIE_IS_DELETED not in schema.names:
        parsed = json.loads(reader_text)
        marker = {"name": HOODIE_IS_DELETED, "type": ["null", "boolean"], "default": None}
        marker_reader = json.dumps({**parsed, "fields": [*parsed["fields"], marker]})
    records: list[dict | None] = []
    errors: dict[int, str] = {}
    for i, payload in enumerate(values.to_pylist()):
        read = default_read
        if spec.format == "confluent-avro":
            if len(payload) < CONFLUENT_HEADER:
                errors[i] = f"{len(payload)} bytes: too short for a Confluent header (magic byte, schema id)"
                records.append(None)
                continue
            if payload[0] != CONFLUENT_MAGIC:
                errors[i] = f"not Confluent-framed Avro: magic byte {payload[0]} (expected {CONFLUENT_MAGIC})"
                records.append(None)
                continue
            schema_id = struct.unpack(">I", payload[1:CONFLUENT_HEADER])[0]
            payload = payload[CONFLUENT_HEADER:]
            if spec.registry is not None:
                if schema_id not in readers:  # asked once per batch; writer schemas are cached per process
                    writer = schema_registry.writer_schema(spec.registry, schema_id)
                    readers[schema_id] = None if writer is None else _avro_reader(writer, reader_text)
                if readers[schema_id] is None:
                    registry_url = schema_registry.without_credentials(spec.registry.source.root)
                    errors[i] = f"schema id {schema_id} is not registered in the schema registry at {registry_url}"
                    records.append(None)
                    continue
                read = readers[schema_id]
            elif writers:
                if schema_id not in writers:
                    errors[i] = f"unknown schema id {schema_id} (known: {sorted(writers)})"
                    records.append(None)
                    continue
                if schema_id not in readers:
                    writer = writers[schema_id]
                    carries = marker_reader is not None and any(
                        f.get("name") == HOODIE_IS_DELETED for f in json.loads(writer).get("fields", ()))
                    readers[schema_id] = _avro_reader(writer, marker_reader if carries else reader_text)
                read = readers[schema_id]
        try:
            records.append(read(payload))
        except Exception as e:  # garbage bytes can fail inside fastavro in many ways; all are bad records
            errors[i] = f"not Avro for the schema: {type(e).__name__}: {e}"[:500]
            records.append(None)
    struct_type = pa.struct(list(schema))
    pieces: list[tuple[np.ndarray, pa.Table]] = []
    pending = [np.array([i for i in range(len(records)) if records[i] is not None], dtype=np.int64)]
    while pending:
        idx = pending.pop()
        if not len(idx):
            continue
        try:
            array = pa.array([records[i] for i in idx], type=struct_type)
            pieces.append((idx, pa.Table.from_struct_array(array)))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError) as e:
            if len(idx) == 1:
                errors[int(idx[0])] = f"Avro record does not fit the declared schema: {e}"[:500]
            else:
                pending += [idx[len(idx) // 2 :], idx[: len(idx) // 2]]
    marked = pa.array([i not in errors and r is not None and r.get(HOODIE_IS_DELETED) is True
                       for i, r in enumerate(records)], pa.bool_())
    return Outcome(aligned(pieces, len(records), loose(schema)), errors, marked)
