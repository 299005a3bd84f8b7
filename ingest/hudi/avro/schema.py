"""Avro schemas as Hudi writes them, and their mapping to Arrow.

Hudi derives a table's Avro schema from Spark's with `AvroConversionUtils`: record `<table>_record`
in namespace `hoodie.<table>`, nested records named after their field with the enclosing path as
namespace, decimals as `fixed` named `fixed` in namespace `<path>.<field>`, and every nullable type
as the union `["null", T]` with default null. Readers compare schema strings and resolve names, so
we reproduce those names exactly, and refuse names Avro's parser would (`avro_names`). Schemas are plain JSON-shaped dicts (what fastavro consumes);
`to_json` prints them as Avro Java's `Schema.toString()` does.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from ingest.errors import SchemaEvolutionError
from ingest.hudi.avro.avro_names import CASE_CLASH, check_names, sanitize_name
from ingest.hudi.avro.promotion import promotable, widens

AvroSchema = dict[str, Any]

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
META_FIELDS: tuple[str, ...] = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)
IS_DELETED = "_hoodie_is_deleted"


def meta_field(name: str) -> dict[str, Any]:
    return {"name": name, "type": ["null", "string"], "doc": "", "default": None}


def with_meta_fields(schema: AvroSchema) -> AvroSchema:
    """The writer schema of log blocks and base files: the five meta fields first."""
    fields = [f for f in schema["fields"] if f["name"] not in META_FIELDS]
    return {**schema, "fields": [meta_field(n) for n in META_FIELDS] + fields}


def without_meta_fields(schema: AvroSchema) -> AvroSchema:
    return {**schema, "fields": [f for f in schema["fields"] if f["name"] not in META_FIELDS]}


def to_json(schema: Any) -> str:
    """Compact JSON in the key order the dicts carry (built in Avro Java's order)."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def parse(text: str) -> AvroSchema:
    return json.loads(text)


def record_name(table_name: str) -> tuple[str, str]:
    """(name, namespace) Hudi gives a table's top-level record: from the table name as
    `AvroSchemaUtils.getAvroRecordQualifiedName` sanitizes it, so `my-table` is `my__table_record`."""
    name = sanitize_name(table_name)
    return f"{name}_record", f"hoodie.{name}"


# -- Arrow -> Avro ------------------------------------------------------------------------------


def _min_bytes_for_precision(precision: int) -> int:
    n = 1
    while 2 ** (8 * n - 1) < 10**precision:
        n += 1
    return n


def _nullable(avro_type: Any, nullable: bool) -> Any:
    return ["null", avro_type] if nullable else avro_type


def arrow_type_to_avro(dtype: pa.DataType, name: str, namespace: str) -> Any:
    """The Avro type of an Arrow (or Spark-as-Arrow) type, named like Spark's SchemaConverters."""
    if pa.types.is_boolean(dtype):
        return "boolean"
    if pa.types.is_int8(dtype) or pa.types.is_int16(dtype) or pa.types.is_int32(dtype):
        return "int"
    if pa.types.is_uint8(dtype) or pa.types.is_uint16(dtype):
        return "int"
    if pa.types.is_int64(dtype) or pa.types.is_uint32(dtype):
        return "long"
    if pa.types.is_float32(dtype):
        return "float"
    if pa.types.is_float64(dtype):
        return "double"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "string"
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return "bytes"
    if pa.types.is_date32(dtype) or pa.types.is_date64(dtype):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(dtype):
        logical = "timestamp-micros" if dtype.tz is not None else "local-timestamp-micros"
        if dtype.unit == "ms":
            logical = logical.replace("micros", "millis")
        return {"type": "long", "logicalType": logical}
    if pa.types.is_decimal(dtype):
        full = f"{namespace}.{name}" if namespace else name
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": full,
            "size": _min_bytes_for_precision(dtype.precision),
            "logicalType": "decimal",
            "precision": dtype.precision,
            "scale": dtype.scale,
        }
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        item = dtype.value_field
        return {"type": "array", "items": _nullable(arrow_type_to_avro(item.type, name, namespace), item.nullable)}
    if pa.types.is_map(dtype):
        if not pa.types.is_string(dtype.key_type):
            raise SchemaEvolutionError(f"column {name}: Avro maps need string keys, got {dtype.key_type}")
        item = dtype.item_field
        return {"type": "map", "values": _nullable(arrow_type_to_avro(item.type, name, namespace), item.nullable)}
    if pa.types.is_struct(dtype):
        return struct_to_avro(list(dtype), name, namespace)
    if pa.types.is_null(dtype):
        return "null"
    raise SchemaEvolutionError(f"column {name}: type {dtype} has no Avro mapping")


def struct_to_avro(fields: Iterable[pa.Field], name: str, namespace: str) -> AvroSchema:
    child_namespace = f"{namespace}.{name}" if namespace else name
    out_fields = []
    for field in fields:
        avro_type = arrow_type_to_avro(field.type, field.name, child_namespace)
        if field.nullable and avro_type != "null":
            out_fields.append({"name": field.name, "type": ["null", avro_type], "default": None})
        else:
            out_fields.append({"name": field.name, "type": avro_type})
    record: AvroSchema = {"type": "record", "name": name}
    if namespace:
        record["namespace"] = namespace
    record["fields"] = out_fields
    return record


def arrow_to_avro(schema: pa.Schema, table_name: str) -> AvroSchema:
    """A table's Avro schema (no meta fields) from its Arrow schema, as Hudi would name it.

    Fails, naming each one, on column or nested field names Avro refuses: field, record and
    namespace names all come from them, and Java readers parse the schema strictly."""
    check_names(schema)
    name, namespace = record_name(table_name)
    fields = [f for f in schema if f.name not in META_FIELDS]
    return struct_to_avro(fields, name, namespace)


# -- Avro -> Arrow ------------------------------------------------------------------------------


def _strip_null(avro_type: Any) -> tuple[Any, bool]:
    if isinstance(avro_type, list):
        branches = [b for b in avro_type if b != "null"]
        nullable = len(branches) != len(avro_type)
        if len(branches) == 1:
            return branches[0], nullable
        raise SchemaEvolutionError(f"unions of several non-null types are not supported: {avro_type}")
    return avro_type, False


def avro_type_to_arrow(avro_type: Any, named: dict[str, Any] | None = None) -> pa.DataType:
    named = {} if named is None else named
    if isinstance(avro_type, str):
        primitive = {
            "boolean": pa.bool_(),
            "int": pa.int32(),
            "long": pa.int64(),
            "float": pa.float32(),
            "double": pa.float64(),
            "string": pa.string(),
            "bytes": pa.binary(),
            "null": pa.null(),
        }
        if avro_type in primitive:
            return primitive[avro_type]
        short = avro_type.rsplit(".", 1)[-1]
        if avro_type in named or short in named:
            return avro_type_to_arrow(named.get(avro_type, named.get(short)), named)
        raise SchemaEvolutionError(f"unknown Avro type {avro_type!r}")
    if isinstance(avro_type, list):
        inner, _ = _strip_null(avro_type)
        return avro_type_to_arrow(inner, named)
    kind = avro_type["type"]
    logical = avro_type.get("logicalType")
    if logical == "decimal":
        return pa.decimal128(int(avro_type["precision"]), int(avro_type.get("scale", 0)))
    if logical == "date":
        return pa.date32()
    if logical == "timestamp-micros":
        return pa.timestamp("us", tz="UTC")
    if logical == "timestamp-millis":
        return pa.timestamp("ms", tz="UTC")
    if logical == "local-timestamp-micros":
        return pa.timestamp("us")
    if logical == "local-timestamp-millis":
        return pa.timestamp("ms")
    if logical == "time-micros":
        return pa.time64("us")
    if logical == "time-millis":
        return pa.time32("ms")
    if kind == "record":
        _register(avro_type, named)
        return pa.struct([avro_field_to_arrow(f, named) for f in avro_type["fields"]])
    if kind == "array":
        inner, nullable = _strip_null(avro_type["items"])
        return pa.list_(pa.field("element", avro_type_to_arrow(inner, named), nullable))
    if kind == "map":
        inner, nullable = _strip_null(avro_type["values"])
        return pa.map_(pa.string(), pa.field("value", avro_type_to_arrow(inner, named), nullable))
    if kind == "enum":
        _register(avro_type, named)
        return pa.string()
    if kind == "fixed":
        _register(avro_type, named)
        return pa.binary(int(avro_type["size"]))
    return avro_type_to_arrow(kind, named)


def _register(named_type: dict[str, Any], named: dict[str, Any]) -> None:
    name = named_type["name"]
    named[name] = named_type
    if named_type.get("namespace"):
        named[f"{named_type['namespace']}.{name}"] = named_type


def avro_field_to_arrow(field: dict[str, Any], named: dict[str, Any] | None = None) -> pa.Field:
    inner, nullable = _strip_null(field["type"])
    return pa.field(field["name"], avro_type_to_arrow(inner, named), nullable)


def avro_to_arrow(schema: AvroSchema) -> pa.Schema:
    named: dict[str, Any] = {}
    return pa.schema([avro_field_to_arrow(f, named) for f in schema["fields"]])


# -- evolution ----------------------------------------------------------------------------------


def _canonical(avro_type: Any) -> Any:
    """A type with names and docs removed, for comparing shapes."""
    if isinstance(avro_type, list):
        return [_canonical(t) for t in avro_type]
    if isinstance(avro_type, dict):
        kind = avro_type["type"]
        if kind == "record":
            return ("record", tuple((f["name"], _canonical(f["type"])) for f in avro_type["fields"]))
        if kind == "array":
            return ("array", _canonical(avro_type["items"]))
        if kind == "map":
            return ("map", _canonical(avro_type["values"]))
        if kind == "fixed":
            return ("fixed", avro_type.get("size"), avro_type.get("logicalType"),
                    avro_type.get("precision"), avro_type.get("scale"))
        return (kind, avro_type.get("logicalType"))
    return avro_type


def without_null_fields(schema: AvroSchema) -> AvroSchema:
    """The schema minus the fields, at any depth, of Avro type "null" (all-null data, whose real type is
    unknown yet), and minus records left without fields."""
    return {**schema, "fields": _known_fields(schema["fields"])}


def _known_fields(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**f, "type": known} for f in fields if (known := _known(f["type"])) is not None]


def _known(avro_type: Any) -> Any | None:
    """`avro_type` without its record fields of type "null", at any depth; None when nothing is left."""
    if avro_type in ("null", ["null"]):
        return None
    if isinstance(avro_type, list):
        branches = [b if b == "null" else _known(b) for b in avro_type]
        return None if all(b in ("null", None) for b in branches) else [b for b in branches if b is not None]
    if isinstance(avro_type, dict):
        kind = avro_type["type"]
        if kind == "record":
            fields = _known_fields(avro_type["fields"])
            return {**avro_type, "fields": fields} if fields else None
        if kind in ("array", "map"):
            part = "items" if kind == "array" else "values"
            inner = _known(avro_type[part])
            return {**avro_type, part: inner} if inner is not None else avro_type
    return avro_type


def is_nullable(avro_type: Any) -> bool:
    return isinstance(avro_type, list) and "null" in avro_type


def evolve(table: AvroSchema, incoming: AvroSchema, keyed_fields: Iterable[str] = (), *,
           nested_additions: bool = False) -> AvroSchema:
    """The schema to write with when `incoming` data arrives at a table whose schema is `table`
    (`keyed_fields`: the fields, dotted when nested, that record keys, partition paths and bucket
    hashes are made of).

    Accepted: the same fields (by name, in any order, at any depth); fields missing from the incoming
    data when the table allows null (they are written as null); fields of a type Hudi promotes to the
    table's, at any depth (`promotion`: written in the table's type); new columns (appended as
    nullable with a null default, so older files and blocks stay readable); an int column arriving
    as long (`promotion.widens`: the column becomes long). Hudi's writer accepts all of these
    (`HoodieSchemaUtils.deduceWriterSchema`, allowed by `AvroSchemaCompatibility`).

    Hudi's writer also accepts a field added to a nested record, and its readers read the older files
    as null there (`HoodieParquetFileFormatHelper.isDataTypeEqual` compares the fields both have);
    hudi-rs (0.5) fails on the log blocks written before it, so this needs `nested_additions`. A type
    widened below the top level (a nested int arriving as long, a list of ints as longs) Hudi's
    writer accepts too, but its Spark reader then refuses the older files when it reads vectorized
    ("Nested types with type changes(implicit or explicit) cannot be read in vectorized mode", the
    default of Spark 4), so it is refused. Anything else fails before a byte is written, naming the
    field.
    """
    evolution = _Evolution(frozenset(keyed_fields), nested_additions)
    incoming_fields = [f for f in incoming["fields"] if f["name"] not in META_FIELDS]
    fields = evolution.fields(table["fields"], incoming_fields, "")
    if evolution.problems:
        raise SchemaEvolutionError("incompatible schema change: " + "; ".join(evolution.problems))
    return table if fields is None else {**table, "fields": fields}


NESTED_ADDITIONS_REFUSED = ("hudi-rs cannot read the log blocks written before it until a compaction rewrites them; "
                            "Hudi's readers can: write.nested_field_additions accepts it")
NESTED_WIDENING_REFUSED = ("Hudi's Spark reader refuses a type change below the top level when it reads vectorized: "
                           "'Nested types with type changes(implicit or explicit) cannot be read in vectorized mode'")


@dataclasses.dataclass
class _Evolution:
    """One comparison of the table's fields with the incoming ones; reasons to refuse collect in `problems`."""

    keyed: frozenset[str]
    nested_additions: bool
    problems: list[str] = dataclasses.field(default_factory=list)

    def fields(self, table: list[dict[str, Any]], incoming: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]] | None:
        """A record's fields once `incoming` arrives, or None when they stay the table's."""
        kind = "field" if prefix else "column"
        # A field whose values are all null (Avro type "null") says nothing about its type: it matches
        # any nullable field of the table and never adds one.
        by_name = {f["name"]: {**f, "type": _known(f["type"]) or "null"} for f in incoming}
        fields, changed = [], False
        for old in table:
            name = prefix + old["name"]
            arriving = by_name.get(old["name"])
            if arriving is not None and arriving["type"] == "null":
                if not is_nullable(old["type"]):
                    self.problems.append(f"{kind} '{name}' is all null but not nullable in the table")
                arriving = None
            elif arriving is None:
                if old["name"] not in META_FIELDS and not is_nullable(old["type"]):
                    self.problems.append(f"{kind} '{name}' is missing from the data and is not nullable in the table")
            if arriving is None:
                fields.append(old)
                continue
            evolved = self.type(old["type"], arriving["type"], name)
            changed |= evolved is not None
            fields.append(old if evolved is None else {**old, "type": evolved})
        known = {f["name"] for f in table}
        # Hudi's writer matches names exactly (`AvroSchemaUtils.checkValidEvolution`) and would call such a
        # column missing; added beside the table's, it makes Spark's readers refuse the table.
        by_lower = {n.lower(): n for n in known}
        self.problems += [f"{kind} '{prefix}{n}' differs from the table's '{prefix}{by_lower[n.lower()]}' only in "
                          f"case ({CASE_CLASH})" for n in by_name if n not in known and n.lower() in by_lower]
        # Rows written before a new field existed hold no value for it, so the table's field is nullable
        # whatever the incoming data declares.
        added = [_as_nullable(f) for n, f in by_name.items()
                 if n not in known and n.lower() not in by_lower and f["type"] != "null"]
        if added and prefix and not self.nested_additions:
            self.problems += [f"field '{prefix}{f['name']}' is new in a nested record ({NESTED_ADDITIONS_REFUSED})"
                              for f in added]
        return fields + added if changed or added else None

    def type(self, table: Any, incoming: Any, name: str) -> Any | None:
        """A field's type once data of type `incoming` arrives (its nullability kept), or None when it
        stays `table`."""
        if _canonical(table) == _canonical(incoming):
            return None
        old, _ = _strip_null(table)
        new, _ = _strip_null(incoming)
        if _canonical(old) == _canonical(new):
            # Same type; nullability differs. Spark marks columns nullable loosely, so data declared
            # nullable may go into a non-nullable field: an actual null there fails its record.
            return None
        inner = self.inner(old, new, name)
        if inner is None:
            return None
        return [inner if branch != "null" else branch for branch in table] if isinstance(table, list) else inner

    def inner(self, old: Any, new: Any, name: str) -> Any | None:
        kinds = (old.get("type") if isinstance(old, dict) else old, new.get("type") if isinstance(new, dict) else new)
        if kinds == ("record", "record"):
            fields = self.fields(old["fields"], new["fields"], name + ".")
            return None if fields is None else {**old, "fields": fields}
        if kinds == ("array", "array"):
            items = self.type(old["items"], new["items"], name + ".element")
            return None if items is None else {**old, "items": items}
        if kinds == ("map", "map"):
            values = self.type(old["values"], new["values"], name + ".value")
            return None if values is None else {**old, "values": values}
        if promotable(new, old, keyed=name in self.keyed):
            return None  # written in the table's type (`promotion`), as Hudi's writer does
        if widens(old, new):
            if "." in name:
                self.problems.append(f"field '{name}' widens from {old} to {new} ({NESTED_WIDENING_REFUSED})")
                return None
            return new  # the table's field takes the incoming type, as in Hudi
        kind = "field" if "." in name else "column"
        self.problems.append(f"{kind} '{name}' changes type from {to_json(old)} to {to_json(new)}")
        return None


def _as_nullable(field: dict[str, Any]) -> dict[str, Any]:
    if is_nullable(field["type"]):
        return field
    return {"name": field["name"], "type": ["null", field["type"]], "default": None}
