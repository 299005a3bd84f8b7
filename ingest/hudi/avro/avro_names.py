"""Avro names: which column names a Hudi table can carry, and Hudi's way of renaming the others.

Every Java reader parses a log block's SCHEMA header with Avro's `Schema.Parser`, whose
`Schema.validateName` refuses a field, record or namespace name that does not start with a letter
or `_` and go on with letters, digits and `_`; one bad name makes every block unreadable. The rule
kept here is the one Hudi itself uses to tell a bad name from a good one, `HoodieAvroUtils`'
patterns `[^A-Za-z_]` (first character) and `[^A-Za-z0-9_]` (the others), which is the Avro
specification's and stricter than Java's `Character.isLetter` only for non-ASCII letters.

`sanitize_name` mirrors `HoodieAvroUtils.sanitizeName(name, invalidCharMask)`, used by
HoodieStreamer's `SanitizationUtils` when `hoodie.streamer.source.sanitize.invalid.schema.field.names`
is on: a bad first character is replaced by the mask, then every other bad character is, one mask
per character (`1x` -> `__x`, `order-id` -> `order__id`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pyarrow as pa

from ingest.errors import SchemaEvolutionError

_BAD_FIRST = re.compile(r"[^A-Za-z_]")
_BAD_CHAR = re.compile(r"[^A-Za-z0-9_]")
DEFAULT_MASK = "__"


def is_valid_name(name: str) -> bool:
    return bool(name) and not _BAD_FIRST.match(name[0]) and not _BAD_CHAR.search(name)


def sanitize_name(name: str, mask: str = DEFAULT_MASK) -> str:
    """Hudi's renaming of a name Avro refuses (`HoodieAvroUtils.sanitizeName`)."""
    if not name:
        raise SchemaEvolutionError("an empty column name cannot be an Avro name")
    if _BAD_FIRST.match(name[0]):
        name = _BAD_FIRST.sub(mask, name, count=1)
    return _BAD_CHAR.sub(mask, name)


def _children(dtype: pa.DataType) -> list[tuple[str | None, pa.Field]]:
    """(path step, field) of a type's nested fields; list items and map values add no name."""
    if pa.types.is_struct(dtype):
        return [(f.name, f) for f in dtype]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [(None, dtype.value_field)]
    if pa.types.is_map(dtype):
        return [(None, dtype.item_field)]
    return []


def _names(fields: list[tuple[str | None, pa.Field]], path: str) -> Iterator[str]:
    for step, field in fields:
        here = path if step is None else (f"{path}.{step}" if path else step)
        if step is not None and not is_valid_name(step):
            yield here
        yield from _names(_children(field.type), here)


def invalid_names(schema: pa.Schema) -> list[str]:
    """Dotted paths of every column and nested field whose name Avro refuses."""
    return list(_names([(f.name, f) for f in schema], ""))


def _case_clashes(fields: list[tuple[str | None, pa.Field]], path: str) -> Iterator[tuple[str, str]]:
    seen: dict[str, str] = {}
    for step, field in fields:
        here = path if step is None else (f"{path}.{step}" if path else step)
        if step is not None:
            if step.lower() in seen:
                yield seen[step.lower()], here
            seen.setdefault(step.lower(), here)
        yield from _case_clashes(_children(field.type), here)


def case_clashes(schema: pa.Schema) -> list[tuple[str, str]]:
    """Pairs of sibling columns or fields whose names differ only in case."""
    return list(_case_clashes([(f.name, f) for f in schema], ""))


CASE_CLASH = ("Spark resolves names ignoring case (spark.sql.caseSensitive is false by default), so its Hudi reader "
              "refuses a table with both ('Found duplicate column(s)'), as do Hive and the catalogs")


def check_names(schema: pa.Schema, *, where: str = "") -> None:
    """Fail, naming every bad column by its path, unless Avro accepts every name and no two sibling names
    differ only in case."""
    clashes = case_clashes(schema)
    if clashes:
        raise SchemaEvolutionError(f"{where}columns whose names differ only in case: "
                                   + ", ".join(f"{a!r} and {b!r}" for a, b in clashes) + f" ({CASE_CLASH})")
    bad = invalid_names(schema)
    if bad:
        raise SchemaEvolutionError(
            f"{where}column names Avro refuses (Hudi's Java readers could not parse the table's schema): "
            + ", ".join(repr(p) for p in bad)
            + "; a name starts with a letter or _ and holds only letters, digits and _. Rename them, or set "
              "source.sanitize_field_names (Hudi's hoodie.streamer.source.sanitize.invalid.schema.field.names) "
              "to rename them as HoodieStreamer does"
        )


def _distinct(fields: list[pa.Field], originals: list[pa.Field]) -> list[pa.Field]:
    """Two names renamed alike would make Avro refuse the record for a duplicate field: fail naming them."""
    seen: dict[str, str] = {}
    for field, original in zip(fields, originals, strict=True):
        if field.name in seen:
            raise SchemaEvolutionError(f"columns {seen[field.name]!r} and {original.name!r} would both be "
                                       f"renamed {field.name!r}")
        seen[field.name] = original.name
    return fields


def _sanitized_type(dtype: pa.DataType, mask: str) -> pa.DataType:
    if pa.types.is_struct(dtype):
        return pa.struct(_distinct([_sanitized_field(f, mask) for f in dtype], list(dtype)))
    if pa.types.is_large_list(dtype):
        return pa.large_list(dtype.value_field.with_type(_sanitized_type(dtype.value_type, mask)))
    if pa.types.is_list(dtype):
        return pa.list_(dtype.value_field.with_type(_sanitized_type(dtype.value_type, mask)))
    if pa.types.is_map(dtype):
        return pa.map_(dtype.key_field, dtype.item_field.with_type(_sanitized_type(dtype.item_type, mask)))
    return dtype


def _sanitized_field(field: pa.Field, mask: str) -> pa.Field:
    return field.with_name(sanitize_name(field.name, mask)).with_type(_sanitized_type(field.type, mask))


def sanitized_schema(schema: pa.Schema, mask: str = DEFAULT_MASK) -> pa.Schema:
    """The schema with every column and nested field renamed as Hudi's `SanitizationUtils` does
    (`sanitizeStructTypeForAvro`: struct fields at any depth, inside lists and maps too)."""
    return pa.schema(_distinct([_sanitized_field(f, mask) for f in schema], list(schema)), metadata=schema.metadata)
