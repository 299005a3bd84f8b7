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


def _spark_type(schema: Any) -> str:
    """A type of Spark's schema JSON, as `Parquet2SparkSchemaUtils.convertFieldType` writes it: by hand,
    with a space after `"array",` and `"map",` (a schema Spark would print compactly is not equal
    text, and Hudi's sync rewrites what does not compare equal)."""
    schema, _ = _branch(schema)
    leaf = _leaf(schema)
    if leaf is not None:
        return f'"{_SPARK_NAMES.get(leaf, leaf)}"'
    kind = schema["type"]
    if kind == "record":
        return _struct([_spark_field(f) for f in schema["fields"]])
    if kind == "array":
        # Hudi's sync takes the table's Parquet schema from parquet-avro's `AvroSchemaConverter`, whose lists
        # are 2-level (`parquet.avro.write-old-list-structure`, true by default): the repeated field is the
        # element (`isElementType`), so `arrayType(repeatedType, false)`, whatever the items' nullability.
        return '{"type":"array", "elementType":' + _spark_type(schema["items"]) + ',"containsNull":false}'
    nullable = _branch(schema["values"])[1]
    return ('{"type":"map", "keyType":"string","valueType":' + _spark_type(schema["values"])
            + f',"valueContainsNull":{_bool(nullable)}}}')


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _spark_field(f: dict) -> tuple[str, str, bool]:
    return f["name"], _spark_type(f["type"]), _branch(f["type"])[1]


def _struct(fields: list[tuple[str, str, bool]]) -> str:
    """`convertToSparkSchemaJson`: a struct of `(name, type JSON, nullable)` fields."""
    parts = [f'{{"name":"{name}","type":{kind},"nullable":{_bool(nullable)},"metadata":{{}}}}'
             for name, kind, nullable in fields]
    return '{"type":"struct","fields":[' + ",".join(parts) + "]}"


def columns(schema: AvroSchema, support_timestamp: bool = False) -> list[tuple[str, str]]:
    """(name, Hive type) of every top-level field, in schema order."""
    return [(f["name"], hive_type(f["type"], support_timestamp)) for f in schema["fields"]]


def spark_schema_json(schema: AvroSchema, partition_fields: tuple[str, ...]) -> str:
    """Spark's StructType JSON of the table, partition columns last
    (`SparkDataSourceTableUtils.getSparkTableProperties`): a partition field that is no column of the table is added as a required string ("Default the unknown
    partition fields to be String"), without which Spark refuses to load the table (`HiveExternalCatalog`
    finds no schema column for a partition column)."""
    by_name = {f["name"]: f for f in schema["fields"]}
    fields = [_spark_field(f) for f in schema["fields"] if f["name"] not in partition_fields]
    fields += [_spark_field(by_name[p]) if p in by_name else (p, '"string"', False) for p in partition_fields]
    return _struct(fields)


def without_meta_fields(schema: AvroSchema) -> AvroSchema:
    return {**schema, "fields": [f for f in schema["fields"] if not f["name"].startswith("_hoodie_")]}
