"""A column arriving with a narrower type than the table's is written in the table's type, as Hudi does.

Hudi's Spark writer reconciles the incoming schema with the table's
(`AvroSchemaEvolutionUtils.reconcileSchemaRequirements`): where `SchemaChangeUtils.shouldPromoteType`
allows the incoming type to be promoted to the table's, the table's type is written, and each value
is rewritten by `HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType`. The table's schema does not
change. The pairs here are those both methods take, for plain (not logical) types:

- int to long, float, double; long to float, double: Java's widening (`longValue()`, `floatValue()`,
  `doubleValue()`: a long rounds to the nearest float);
- float to double through its text, `Double.valueOf(oldValue + "")`, so 0.1f becomes 0.1;
- int, long, float, double to string: `oldValue.toString()`, Java's text of the number;
- string to bytes: its UTF-8 bytes.

Other differences (a wider incoming type, bytes to string, dates, decimals, nested types) are refused
by `schema.evolve`, naming the column.
"""

from __future__ import annotations

import pyarrow as pa

from ingest.hudi.java_numbers import java_double_to_string, java_float_to_string

# incoming Avro type -> the table's Avro types it is written as
PROMOTIONS: dict[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double", "string"}),
    "long": frozenset({"float", "double", "string"}),
    "float": frozenset({"double", "string"}),
    "double": frozenset({"string"}),
    "string": frozenset({"bytes"}),
}


def promotable(incoming: object, table: object) -> bool:
    """Whether a value of Avro type `incoming` is written into a column of Avro type `table`."""
    return isinstance(incoming, str) and isinstance(table, str) and table in PROMOTIONS.get(incoming, ())


def promote(values: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """`values` in the Arrow type of the table's column, each rewritten as Hudi rewrites it."""
    source = values.type
    if pa.types.is_floating(source) and (pa.types.is_string(target) or pa.types.is_float64(target)):
        render = java_float_to_string if pa.types.is_float32(source) else java_double_to_string
        texts = pa.array([None if v is None else render(v) for v in values.to_pylist()], pa.string())
        return texts if pa.types.is_string(target) else texts.cast(pa.float64())
    # Integers widen or become their decimal digits (Java's Integer/Long.toString); a long that no
    # float holds exactly rounds to the nearest, as Java's conversion does.
    return values.cast(target, safe=not pa.types.is_floating(target))
