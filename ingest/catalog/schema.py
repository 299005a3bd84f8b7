"""A table's Avro schema as catalog columns, as Hudi's sync derives them.

Hudi's sync reads the latest commit's Avro schema, converts it to Parquet (`AvroSchemaConverter`)
and maps that to Hive types (`HiveSchemaUtil.convertField`, `createHiveStruct`, `createHiveMap`,
`createHiveArray`, without the formatting spaces the HMS path turns off) and to Spark's schema JSON
(`Parquet2SparkSchemaUtils.convertToSparkSchemaJson`, partition columns moved last). The composition
is done here in one step: nullable unions are their non-null branch, timestamps are `bigint` unless
`support_timestamp` (Hive) and `timestamp` always (Spark), local timestamps carry no Parquet
timestamp annotation and stay `bigint`/`long`, decimals are `decimal(p,s)`, records `struct<...>`
with `-` in nested names replaced by `_`.
"""

from __future__ import annotations

import json
from typing import Any

from ingest.hudi.avro.schema import AvroSchema


def _branch(schema: Any) -> tuple[Any, bool]:
    """The non-null branch of a nullable union, and whether it was nullable."""
    if isinstance(schema, list):
        rest = [s for s in schema if s != "null"]
        return (rest[0] if len(rest) == 1 else rest), len(rest) != len(schema)
    return schema, False


_PRIMITIVES = {"string": "string", "bytes": "binary", "int": "int", "long": "long", "float": "float",
               "double": "double", "boolean": "boolean", "null": "string", "enum": "string", "fixed": "binary"}
_HIVE_NAMES = {"long": "bigint"}
_SPARK_NAMES = {"int": "integer"}


def _leaf(schema: Any) -> str | None:
    """A leaf type in one vocabulary (Spark's names but `int`), or None for records, arrays and maps.
    Timestamps are `timestamp`: the Hive side turns them into `bigint` unless told otherwise."""
    if isinstance(schema, str):
        return _PRIMITIVES[schema]
    kind, logical = schema["type"], schema.get("logicalType")
    if logical == "decimal":
        return f"decimal({schema['precision']},{schema.get('scale', 0)})"
    if logical == "date":
        return "date"
    if logical in ("timestamp-micros", "timestamp-millis"):
        return "timestamp"
    if kind in ("record", "array", "map"):
        return None
    return _leaf(kind)


def hive_type(schema: Any, support_timestamp: bool = False) -> str:
    schema, _ = _branch(schema)
    leaf = _leaf(schema)
    if leaf == "timestamp":
        return "timestamp" if support_timestamp else "bigint"
    if leaf is not None:
        return _HIVE_NAMES.get(leaf, leaf)
    kind = schema["type"]
    if kind == "record":
        inner = ",".join(f"{f['name']}:{hive_type(f['type'], support_timestamp)}" for f in schema["fields"])
        return f"struct<{inner}>".replace("-", "_")
    if kind == "array":
        return f"array<{hive_type(schema['items'], support_timestamp)}>"
    return f"map<string,{hive_type(schema['values'], support_timestamp)}>"


def _spark_type(schema: Any) -> Any:
    schema, _ = _branch(schema)
    leaf = _leaf(schema)
    if leaf is not None:
        return _SPARK_NAMES.get(leaf, leaf)
    kind = schema["type"]
    if kind == "record":
        return {"type": "struct", "fields": [_spark_field(f) for f in schema["fields"]]}
    if kind == "array":
        _, nullable = _branch(schema["items"])
        return {"type": "array", "elementType": _spark_type(schema["items"]), "containsNull": nullable}
    _, nullable = _branch(schema["values"])
    return {"type": "map", "keyType": "string", "valueType": _spark_type(schema["values"]),
            "valueContainsNull": nullable}


def _spark_field(f: dict) -> dict:
    _, nullable = _branch(f["type"])
    return {"name": f["name"], "type": _spark_type(f["type"]), "nullable": nullable, "metadata": {}}


def columns(schema: AvroSchema, support_timestamp: bool = False) -> list[tuple[str, str]]:
    """(name, Hive type) of every top-level field, in schema order."""
    return [(f["name"], hive_type(f["type"], support_timestamp)) for f in schema["fields"]]


def spark_schema_json(schema: AvroSchema, partition_fields: tuple[str, ...]) -> str:
    """Spark's StructType JSON of the table, partition columns last (`SparkDataSourceTableUtils`)."""
    fields = [f for f in schema["fields"] if f["name"] not in partition_fields]
    by_name = {f["name"]: f for f in schema["fields"]}
    fields += [by_name[p] for p in partition_fields if p in by_name]
    return json.dumps({"type": "struct", "fields": [_spark_field(f) for f in fields]}, separators=(",", ":"))


def without_meta_fields(schema: AvroSchema) -> AvroSchema:
    return {**schema, "fields": [f for f in schema["fields"] if not f["name"].startswith("_hoodie_")]}
