"""A topic's decoder spec: the value format, the declared schema (a DDL string or an Avro schema file),
the schema registry, and where the record key comes from; checked when it is built, before Spark starts."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from ingest.errors import ConfigError, SchemaEvolutionError
from ingest.hudi.avro.schema import avro_to_arrow
from ingest.kafka import registry as schema_registry
from ingest.kafka.columns import FORMATS, KEY_FORMATS, KEY_SOURCES, META_FIELDS
from ingest.kafka.ddl import parse_ddl

# -- the spec -----------------------------------------------------------------------------------


def _has_type(dtype: pa.DataType, predicate) -> bool:
    if predicate(dtype):
        return True
    if pa.types.is_struct(dtype):
        return any(_has_type(f.type, predicate) for f in dtype)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return _has_type(dtype.value_type, predicate)
    if pa.types.is_map(dtype):
        return _has_type(dtype.key_type, predicate) or _has_type(dtype.item_type, predicate)
    return False


@dataclass(frozen=True)
class DecoderSpec:
    """How to turn a topic's messages into records: format, schema and record key.

    `schema` is the declared value schema (the output columns). `avro_schema` is the Avro schema
    (JSON text) records are read as, for the Avro formats; `writer_schemas` maps Confluent schema
    ids to the writer schema registered under them; `registry` is where the writer schemas of
    Confluent schema ids are looked up instead (and where `schema` and `avro_schema` came from).
    """

    format: str
    schema: pa.Schema
    key_fields: tuple[str, ...] = ()
    key_source: str = "value"
    key_format: str = "string"
    avro_schema: str | None = None
    writer_schemas: tuple[tuple[int, str], ...] = ()
    registry: schema_registry.RegistrySettings | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ConfigError(f"must be one of {', '.join(FORMATS)}, got {self.format!r}", key="format")
        if self.key_source not in KEY_SOURCES:
            raise ConfigError(f"must be one of {', '.join(KEY_SOURCES)}, got {self.key_source!r}", key="key_source")
        if self.key_format not in KEY_FORMATS:
            raise ConfigError(f"must be one of {', '.join(KEY_FORMATS)}, got {self.key_format!r}", key="key_format")
        if self.format != "json" and self.avro_schema is None:
            raise ConfigError(f"the {self.format} format needs an Avro schema file", key="schema_file")
        if self.writer_schemas and self.format != "confluent-avro":
            raise ConfigError("schema ids only apply to confluent-avro", key="schema_files_by_id")
        if self.registry is not None and (self.format != "confluent-avro" or self.writer_schemas):
            raise ConfigError("a schema registry serves confluent-avro values, instead of schema files by id",
                              key="schema_files_by_id")
        names = self.schema.names
        clash = sorted(set(names) & set(META_FIELDS.names))
        if clash:
            raise ConfigError(f"columns {clash} clash with the Kafka metadata columns", key="schema")
        missing = [f for f in self.key_fields if f not in names]
        if missing:
            raise ConfigError(f"key fields {missing} are not in the schema ({', '.join(names)})", key="key_fields")
        if self.key_source == "kafka_key" and not self.key_fields:
            raise ConfigError("key_source=kafka_key needs the key field(s) it fills", key="key_fields")
        if self.key_format == "string" and len(self.key_fields) > 1:
            raise ConfigError(
                "a plain-string Kafka key carries one field; use key_format=json for several", key="key_fields"
            )
        for name in self.key_fields:
            dtype = self.schema.field(name).type
            if pa.types.is_nested(dtype):
                raise ConfigError(f"key field {name!r} must be a scalar, not {dtype}", key="key_fields")
        if self.format == "json" and _has_type(pa.struct(list(self.schema)), pa.types.is_map):
            raise ConfigError("MAP columns cannot be read from JSON; declare them as STRUCT", key="schema")

    @property
    def records_schema(self) -> pa.Schema:
        """Declared columns (key fields non-null, the rest nullable: tombstones only carry keys) + metadata."""
        fields = [f.with_nullable(f.name not in self.key_fields) for f in self.schema]
        return pa.schema(fields + list(META_FIELDS))

    @property
    def value_schema(self) -> pa.Schema:
        """What is read from the value: all declared columns, less those the Kafka key fills."""
        if self.key_source == "kafka_key":
            return pa.schema([f for f in self.schema if f.name not in self.key_fields])
        return self.schema

    @property
    def key_schema(self) -> pa.Schema:
        return pa.schema([self.schema.field(name).with_nullable(False) for name in self.key_fields])


def _read_text(path: str | Path) -> str:
    import fsspec

    try:
        with fsspec.open(str(path), "rt", encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}", key="schema_file") from None


def _avro_record_schema(text: str, where: str, key: str) -> tuple[str, pa.Schema]:
    """Avro schema text (checked to be a record schema fastavro parses) and its Arrow columns."""
    from fastavro.schema import SchemaParseException

    try:
        parsed = json.loads(text)
        parsed_avro(json.dumps(parsed))
        if not isinstance(parsed, dict) or parsed.get("type") != "record":
            raise ValueError("the top-level type must be a record")
        return json.dumps(parsed), avro_to_arrow(parsed)
    except (ValueError, KeyError, TypeError, SchemaEvolutionError, SchemaParseException) as e:
        raise ConfigError(f"{where} is not a usable Avro record schema: {e}", key=key) from None


def _avro_schema_text(path: str | Path) -> tuple[str, pa.Schema]:
    return _avro_record_schema(_read_text(path), str(path), "schema_file")


def decoder_spec(
    format: str,
    *,
    schema: str | None = None,
    schema_file: str | Path | None = None,
    schema_files_by_id: Mapping[int, str | Path] | None = None,
    registry: schema_registry.RegistrySettings | None = None,
    key_fields: Sequence[str] = (),
    key_source: str = "value",
    key_format: str = "string",
) -> DecoderSpec:
    """A validated spec. JSON takes `schema` (Spark DDL) or `schema_file` (Avro); the Avro formats
    take `schema_file`, or, for confluent-avro, a `registry` whose source subject version records
    are read as and whose target version gives the columns (both fetched now: see `refreshed`).
    With key_source=kafka_key and a plain-string key, a key field the schema lacks is added as a
    non-null STRING column."""
    if registry is not None:
        if schema is not None or schema_file is not None:
            raise ConfigError("the schema comes from the schema registry: give no schema or schema file",
                              key="schema_file")
        avro_text, _ = _avro_record_schema(schema_registry.subject_schema(registry, registry.source),
                                           registry.source.shown, schema_registry.URL_KEY)
        _, arrow = _avro_record_schema(schema_registry.subject_schema(registry, registry.target),
                                       registry.target.shown, schema_registry.URL_KEY)
    else:
        if (schema is None) == (schema_file is None):
            raise ConfigError("give exactly one of a DDL schema or an Avro schema file", key="schema")
        avro_text = None
        if schema is not None:
            if format != "json":
                raise ConfigError(f"the {format} format reads its schema from an Avro schema file", key="schema")
            arrow = parse_ddl(schema)
        else:
            avro_text, arrow = _avro_schema_text(schema_file)  # type: ignore[arg-type]
            if format == "json":
                avro_text = None
    writers = tuple(sorted((int(i), _avro_schema_text(p)[0]) for i, p in (schema_files_by_id or {}).items()))
    key_fields = tuple(key_fields)
    if key_source == "kafka_key" and key_format == "string" and len(key_fields) == 1:
        if key_fields[0] not in arrow.names:
            arrow = arrow.append(pa.field(key_fields[0], pa.string(), nullable=False))
    return DecoderSpec(
        format=format,
        schema=arrow,
        key_fields=key_fields,
        key_source=key_source,
        key_format=key_format,
        avro_schema=avro_text,
        writer_schemas=writers,
        registry=registry,
    )


def refreshed(spec: DecoderSpec) -> DecoderSpec:
    """The spec with the registry's current source and target schemas (HoodieStreamer refreshes its
    SchemaRegistryProvider every sync round); specs without a registry are returned as they are."""
    if spec.registry is None:
        return spec
    return decoder_spec(spec.format, registry=spec.registry, key_fields=spec.key_fields,
                        key_source=spec.key_source, key_format=spec.key_format)


def _strip_uuid(node: Any) -> Any:
    """Avro uuid strings stay strings (fastavro would hand out UUID objects)."""
    if isinstance(node, dict):
        out = {k: _strip_uuid(v) for k, v in node.items()}
        if out.get("logicalType") == "uuid":
            out.pop("logicalType")
        return out
    if isinstance(node, list):
        return [_strip_uuid(v) for v in node]
    return node


@lru_cache(maxsize=64)
def parsed_avro(text: str) -> Any:
    import fastavro

    return fastavro.parse_schema(_strip_uuid(json.loads(text)))
