"""A column arriving with a narrower type than the table's is written in the table's type, as Hudi does.

Hudi's Spark writer reconciles the incoming schema with the table's
(`AvroSchemaEvolutionUtils.reconcileSchemaRequirements`): where `SchemaChangeUtils.shouldPromoteType`
allows the incoming type to be promoted to the table's, the table's type is written, and each value
is rewritten by `HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType`. The table's schema does not
change. The pairs taken here, for plain (not logical) types:

- int to long, float, double; long to float, double: Java's widening (`longValue()`, `floatValue()`,
  `doubleValue()`: a long rounds to the nearest float);
- int, long, double to string: `oldValue.toString()`, Java's text of the number;
- string to bytes: its UTF-8 bytes.

Hudi takes a float for a double or string column too, through `Float.toString`, whose digits changed
in Java 19 (Java 17 prints `3.3555712E7` where Java 21 prints `3.355571E7`): what Hudi writes depends on
its JVM, so such a column is refused, as are bytes to string, dates and decimals (`schema.evolve`,
naming the column). The same pairs apply to the fields of structs, lists and maps, which
`reconcileSchemaRequirements` walks by their full names (`meta.priority`).

The other way round, an incoming type wider than the table's, Hudi changes the table's column to it
(`HoodieSchemaUtils.deduceWriterSchema`, allowed by `AvroSchemaCompatibility`), and its readers cast
the older files on read. ingest does so for a top-level int column arriving as long only (`widens`): the
readers read the older int values as the same longs (Avro's resolution in log blocks; Hudi's Spark
readers, Hive's parquet reader and hudi-rs widen parquet INT32 columns; Spark 3's own parquet reader,
used without Hudi's, refuses them, as on tables Hudi widened). For the other pairs the readers part:
a float read as double is `0.1` in Hudi's readers (through its text) and `0.10000000149011612` in
hudi-rs, an int base file read as string or double is refused by engines reading parquet directly.

Record keys and partition paths are made from the values as they arrive, and Hudi makes them from the
promoted ones: where the two texts differ (7 keyed as `7`, promoted to double keyed as `7.0`; bytes
keyed as hex), a key, partition or bucket-hash field is not promoted (`KEY_SAFE`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ingest.hudi.java_numbers import java_double_to_string

# incoming Avro type -> the table's Avro types it is written as
PROMOTIONS: dict[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double", "string"}),
    "long": frozenset({"float", "double", "string"}),
    "double": frozenset({"string"}),
    "string": frozenset({"bytes"}),
}
# Promotions after which a value's text (its record key or partition path) is what it was.
KEY_SAFE: frozenset[tuple[str, str]] = frozenset({("int", "long"), ("int", "string"), ("long", "string"),
                                                  ("double", "string")})


def promotable(incoming: object, table: object, *, keyed: bool = False) -> bool:
    """Whether a value of Avro type `incoming` is written into a column of Avro type `table` (`keyed`:
    the column makes record keys, partition paths or bucket hashes)."""
    if not (isinstance(incoming, str) and isinstance(table, str) and table in PROMOTIONS.get(incoming, ())):
        return False
    return not keyed or (incoming, table) in KEY_SAFE


# (the table's Avro type, the incoming one) where the table's column takes the incoming type
WIDENINGS: frozenset[tuple[str, str]] = frozenset({("int", "long")})


def widens(table: object, incoming: object) -> bool:
    """Whether a column of Avro type `table` becomes `incoming` when such data arrives."""
    return isinstance(table, str) and isinstance(incoming, str) and (table, incoming) in WIDENINGS


def promote(values: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """`values` in the Arrow type of the table's column, each rewritten as Hudi rewrites it. Structs,
    lists and maps are rebuilt in the target's type: fields matched by name and promoted, those the
    data lacks null. A field the target lacks is dropped if its type holds only nulls (`untyped`: the
    table's schema leaves such fields out), and kept otherwise, for the writers to refuse."""
    if values.type == target:
        return values
    if isinstance(values, pa.ChunkedArray) and _nested(target):
        chunks = [promote(chunk, target) for chunk in values.chunks or [pa.array([], values.type)]]
        return pa.chunked_array(chunks if values.num_chunks else [], chunks[0].type)
    if pa.types.is_struct(values.type) and pa.types.is_struct(target):
        children, fields = [], []
        for child in target:
            index = values.type.get_field_index(child.name)
            children.append(promote(values.field(index), child.type) if index >= 0 else pa.nulls(len(values), child.type))
            fields.append(child)
        for i, child in enumerate(values.type):
            if target.get_field_index(child.name) < 0 and not untyped(child.type):
                children.append(values.field(i))
                fields.append(child)
        return pa.StructArray.from_arrays(children, fields=fields, mask=_nulls(values))
    if pa.types.is_list(values.type) and pa.types.is_list(target):
        offsets, items = rebased(values, values.values)
        items = promote(items, target.value_type)
        kind = target if items.type == target.value_type else pa.list_(values.type.value_field.with_type(items.type))
        return pa.ListArray.from_arrays(offsets, items, type=kind, mask=_nulls(values))
    if pa.types.is_map(values.type) and pa.types.is_map(target):
        offsets, keys = rebased(values, values.keys)
        _, items = rebased(values, values.items)
        items = promote(items, target.item_type)
        kind = target if items.type == target.item_type else pa.map_(values.type.key_field,
                                                                       values.type.item_field.with_type(items.type))
        return pa.MapArray.from_arrays(offsets, keys, items, type=kind, mask=_nulls(values))
    if pa.types.is_floating(values.type) and pa.types.is_string(target):
        # Double.toString of each distinct value (a Python loop: columns repeat their values).
        encoded = pc.dictionary_encode(values.cast(pa.float64()))
        chunks = encoded.chunks if isinstance(encoded, pa.ChunkedArray) else [encoded]
        texts = []
        for chunk in chunks:
            words = pa.array([java_double_to_string(v) for v in chunk.dictionary.to_pylist()], pa.string())
            texts.append(words.take(chunk.indices))
        return pa.chunked_array(texts, pa.string()) if isinstance(values, pa.ChunkedArray) else texts[0]
    # Integers widen or become their decimal digits (Java's Integer/Long.toString); a long that no
    # float holds exactly rounds to the nearest, as Java's conversion does.
    return values.cast(target, safe=not pa.types.is_floating(target))


def untyped(kind: pa.DataType) -> bool:
    """Whether values of this Arrow type say nothing of their type: null, or structs of such fields
    only (Avro "null", which the table's schema leaves out: `schema.without_null_fields`)."""
    return pa.types.is_null(kind) or (pa.types.is_struct(kind) and all(untyped(f.type) for f in kind))


def _nested(kind: pa.DataType) -> bool:
    return pa.types.is_struct(kind) or pa.types.is_list(kind) or pa.types.is_map(kind)


def _nulls(values: pa.Array) -> pa.Array | None:
    return values.is_null() if values.null_count else None


def rebased(values: pa.ListArray | pa.MapArray, child: pa.Array) -> tuple[pa.Array, pa.Array]:
    """A (possibly sliced) list's offsets from 0 and the part of its child they cover: Arrow builds a
    list with nulls only from offsets that start at 0."""
    offsets = values.offsets
    start, stop = offsets[0].as_py(), offsets[-1].as_py()
    return pc.subtract(offsets, offsets[0]), child.slice(start, stop - start)
