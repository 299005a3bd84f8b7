"""Each row's route, the bucket or key shard whose task writes it, as a Spark column.

Routing decides which task writes each file group, so it must agree exactly with the bucket the
write task computes (`ingest.hudi.keygen.bucket_index`) and with the key shard the key index uses
(`ingest.write.tasks.key_shards`). When every record-key field is a string, integer or boolean
column, Spark's string of the value is the one Hudi keys by, and the route is computed in the JVM:
Java's `String.hashCode` (Spark's `HiveHash` for ASCII keys, `reflect` for others), Hudi's cut of
complex keys, `List.hashCode`. Rows then never cross into Python before the shuffle. Other key types
(doubles, decimals, dates, timestamps) take a vectorized Python UDF over the key columns. Either way
each write task checks that every row it received has a route it owns (`check_task`): anything else
fails the batch, naming the key, instead of letting two tasks write one file group.

The JVM route comes in two forms. The exact one follows Hudi's cut for every key, but the cut of a
key holding both `:` and `,` needs Spark's lambda functions, which Spark evaluates row by row
outside generated code: with them in the plan, the shuffle's map side of a 200,000-row batch took
0.55-0.69 s instead of 0.36-0.44 s. The fast route hashes the key (or each key value) whole, which
is Hudi's bucket whenever no key holds those characters. The sink starts with the fast route; a
key it gets wrong fails the batch in `check_task` before anything is written, and the sink then
rolls the attempt back and writes the batch again with the exact route, which it keeps from then on.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from py4j.protocol import Py4JError
from pyspark import SparkContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.functions import arrow_udf
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
)

from ingest.hudi.keygen.bucket_index import bucket_ids
from ingest.hudi.keygen.key_generator import (
    EMPTY_PLACEHOLDER,
    NULL_PLACEHOLDER,
    KeyGeneratorSpec,
    compute_record_keys,
)
from ingest.hudi.merge import precombine as pcb
from ingest.write import records as rec
from ingest.write import tasks
from ingest.write.options import IndexType
from ingest.write.plan import WritePlan

SLOT = "_ingest_slot"
ROW = "_ingest_row"  # the batch's own columns, packed in one struct for the write tasks (`shuffled`)
UNKEYED = -1  # rows without a record key: the task that gets them reports them
MISROUTED = "[ingest: misrouted key]"  # in a task failure's message: the batch needs the exact route

_JVM_KEY_TYPES = (StringType, IntegerType, LongType, ShortType, ByteType, BooleanType)


def python_routes(table: pa.Table | pa.RecordBatch, spec: KeyGeneratorSpec, plan: WritePlan) -> pa.Array:
    """The route of each row as the write tasks compute it (int32; -1 where a row has no key)."""
    batch = table if isinstance(table, pa.RecordBatch) else rec.one_batch(table)
    keys = compute_record_keys(batch, spec)
    filled = pc.fill_null(keys, "")
    if plan.index_type is IndexType.BUCKET:
        ids = bucket_ids(filled, plan.hash_fields, plan.bucket_count, cut_1x=plan.bucket_cut_1x)
    else:
        ids = tasks.key_shards(filled, plan.shards)
    return pc.if_else(pc.is_null(keys), UNKEYED, pa.array(ids.astype(np.int32)))


def unpacked(table: pa.Table) -> pa.Table:
    """The rows as the batch had them, from what a write task receives (`shuffled`): the packed row's
    fields, then the columns added beside it, less the column Spark placed them by."""
    rows = pa.Table.from_struct_array(table.column(ROW))
    for field, column in zip(table.schema, table.columns, strict=True):
        if field.name not in (ROW, SLOT):
            rows = rows.append_column(field, column)
    return rows


def unpacked_schema(schema: StructType) -> StructType:
    """The Spark schema of `unpacked`'s rows, from the schema of `shuffled`'s frame."""
    fields = []
    for field in schema.fields:
        if field.name == ROW:
            fields.extend(field.dataType.fields)
        elif field.name != SLOT:
            fields.append(field)
    return StructType(fields)


def check_task(records: pa.Table, tasks_count: int, task: int) -> None:
    """Fails if any record's route, as this task computed it to write the record (`tasks.route`),
    belongs to another task.

    A route computed differently in the JVM is harmless as long as the row reaches the task that
    owns its route; anything else could let two tasks write one file group.
    """
    name = tasks.BUCKET if tasks.BUCKET in records.column_names else tasks.SHARD
    routes = np.asarray(records.column(name).to_numpy(), dtype=np.int64)
    wrong = np.mod(routes, tasks_count) != task  # pmod, as Spark placed the rows
    if wrong.any():
        row = int(np.flatnonzero(wrong)[0])
        key = records.column(pcb.KEY)[row].as_py()
        raise MisroutedKey(
            f"{MISROUTED} record key {key!r} (route {routes[row]}) reached write task {task} instead of "
            f"{routes[row] % tasks_count}; nothing of this batch is committed")


class MisroutedKey(RuntimeError):
    """A write task got a row whose file group another task writes (the fast route's rare miss)."""


def is_misrouted(error: BaseException) -> bool:
    """Whether a failed write job failed on a misrouted key (the message crosses from the executor)."""
    return MISROUTED in str(error)


def shuffled(df: DataFrame, spec: KeyGeneratorSpec, plan: WritePlan, tasks_count: int, *,
             exact: bool = False, columns: Mapping[str, Column] | None = None) -> DataFrame:
    """`df` shuffled so that write task `i` gets exactly the rows whose route `r` has `r % tasks_count == i`,
    with `columns` added in the same projection as the route.

    Routes are computed in the JVM when the key types allow (the fast form unless `exact`), else
    through a Python UDF. Spark places a row by `pmod(hash(slot), n)`, so each task's slot is a
    number known to hash to it: the routes spread evenly over the tasks, and each task can check it
    got only its own rows.
    """
    session, schema_json = df.sparkSession, df.schema.json()
    if tasks_count == 1:  # one task owns every route: no shuffle at all
        slot = _first_slot(session)
    else:
        settings = (plan.index_type, plan.bucket_count, tuple(plan.hash_fields), plan.shards, plan.bucket_cut_1x)
        slot = _slot_column(session, schema_json, spec, settings, tasks_count, exact)
    added = [column.alias(name) for name, column in (columns or {}).items()]
    frame = df.select(_packed_row(session, schema_json), *added, slot)
    return frame.coalesce(1) if tasks_count == 1 else frame.repartition(tasks_count, SLOT)


@functools.lru_cache(maxsize=32)
def _packed_row(session, schema_json: str) -> Column:
    """The batch's columns as one struct column, built once per session and schema: `mapInArrow`
    resolves every column of its frame with a JVM call of its own (13 of them for the benchmark's
    rows, with the columns added beside), which took about 12 ms of a 1,000-row batch's commit;
    the task unpacks the struct's fields without copying them (`unpacked`)."""
    names = [field["name"] for field in json.loads(schema_json)["fields"]]
    return F.struct(*[F.col(f"`{name.replace('`', '``')}`").alias(name) for name in names]).alias(ROW)


@functools.lru_cache(maxsize=32)
def _first_slot(session) -> Column:
    return F.lit(0).alias(SLOT)


@functools.lru_cache(maxsize=32)
def _slot_column(session, schema_json: str, spec: KeyGeneratorSpec, settings: tuple, tasks_count: int,
                 exact: bool) -> Column:
    """Built once per session, schema and settings: building it costs a JVM round trip per
    expression node, more than a small batch's whole shuffle."""
    index_type, bucket_count, hash_fields, shards, bucket_cut_1x = settings
    plan = SimpleNamespace(index_type=index_type, bucket_count=bucket_count, hash_fields=hash_fields, shards=shards,
                           bucket_cut_1x=bucket_cut_1x)
    route = jvm_route(StructType.fromJson(json.loads(schema_json)), spec, plan, exact=exact)
    if route is None:
        route = _python_route(spec, plan)
    keys = F.array(*[F.lit(k) for k in _slot_keys(session, tasks_count)])
    return F.element_at(keys, F.pmod(route, F.lit(tasks_count)) + 1).alias(SLOT)


@functools.lru_cache(maxsize=32)
def _slot_keys(session, tasks_count: int) -> tuple[int, ...]:
    """For each task `i`, the smallest int whose `pmod(hash(int), n)` is `i` (Spark's own hash, asked once)."""
    found: dict[int, int] = {}
    size = 8 * tasks_count
    while len(found) < tasks_count:
        rows = session.range(size).select(
            F.col("id").cast("int").alias("k"),
            F.pmod(F.hash(F.col("id").cast("int")), F.lit(tasks_count)).alias("task")).collect()
        for row in rows:
            found.setdefault(row["task"], row["k"])
        size *= 4
    return tuple(found[i] for i in range(tasks_count))


def slot_keys(session, tasks_count: int) -> tuple[int, ...]:
    """For each task `i`, a slot value `repartition(tasks_count, SLOT)` sends to task `i`."""
    return _slot_keys(session, tasks_count)


def group_slots(table: pa.Table, task_of: Callable[[str | None, str], int], keys: Sequence[int]) -> pa.Array:
    """The slot of the task that writes each row's file group (`task_of(partition, file id)`, as
    `tasks.write_task` decides)."""
    if not table.num_rows:
        return pa.array([], pa.int32())
    partitions = table.column(pcb.PARTITION).combine_chunks().dictionary_encode(null_encoding="encode")
    file_ids = table.column(tasks.FILE_ID).combine_chunks().dictionary_encode(null_encoding="encode")
    width = len(file_ids.dictionary)
    codes = (partitions.indices.to_numpy(zero_copy_only=False).astype(np.int64) * width
             + file_ids.indices.to_numpy(zero_copy_only=False))
    places, at = np.unique(codes, return_inverse=True)
    names, groups = partitions.dictionary.to_pylist(), file_ids.dictionary.to_pylist()
    slots = np.array([keys[task_of(names[c // width], groups[c % width])] for c in places.tolist()], np.int32)
    return pa.array(slots[at.reshape(-1)], pa.int32())


def _key_columns(spec: KeyGeneratorSpec) -> list[str]:
    return sorted({f.split(".")[0] for f in spec.record_key_fields})


def _python_route(spec: KeyGeneratorSpec, plan: WritePlan) -> Column:
    columns = _key_columns(spec)

    @arrow_udf("int")
    def route(*arrays: pa.Array) -> pa.Array:
        return python_routes(pa.RecordBatch.from_arrays(list(arrays), names=columns), spec, plan)

    return route(*[F.col(c) for c in columns])


# -- the JVM route -------------------------------------------------------------------------------------


def _field_type(schema: StructType, path: str) -> DataType | None:
    dtype: DataType = schema
    for part in path.split("."):
        if not isinstance(dtype, StructType) or part not in dtype.fieldNames():
            return None
        dtype = dtype[part].dataType
    return dtype


def jvm_route(schema: StructType, spec: KeyGeneratorSpec, plan: WritePlan, *, exact: bool = True) -> Column | None:
    """The route as a JVM expression, or None when a key field's type needs the Python route.

    Not `exact`: keys are hashed whole, as Hudi does unless a key holds `:` and `,` (see the module).
    Hudi 1.x's cut (`WritePlan.bucket_cut_1x`) has no exact JVM form here: its exact route is Python's.
    """
    fields = spec.record_key_fields
    if not fields or any(not isinstance(_field_type(schema, f), _JVM_KEY_TYPES) for f in fields):
        return None
    cut_1x = plan.index_type is IndexType.BUCKET and plan.bucket_cut_1x
    if exact and cut_1x:
        return None
    if any(":" in f or "," in f for f in fields):
        return None  # such names would change how Hudi cuts the key
    values = [F.col(f).cast("string") for f in fields]
    if spec.plain_record_key:
        key = values[0]
        unkeyed = key.isNull() | (key == "")
    else:
        key = F.concat_ws(",", *[
            F.concat(F.lit(f + ":"), F.when(v.isNull(), F.lit(NULL_PLACEHOLDER))
                     .when(v == "", F.lit(EMPTY_PLACEHOLDER)).otherwise(v))
            for f, v in zip(fields, values, strict=True)])
        unkeyed = F.lit(True)
        for v in values:
            unkeyed = unkeyed & (v.isNull() | (v == ""))
    if plan.index_type is IndexType.BUCKET:
        if cut_1x and (spec.plain_record_key or len(fields) == 1):
            list_hash = _step(F.lit(1).cast("long"), _java_hash(key))  # 1.x hashes a key without `,` whole
        elif spec.plain_record_key:
            list_hash = _plain_key_hash(key, plan.hash_fields, exact)
        else:
            list_hash = _complex_key_hash(key, fields, values, plan.hash_fields, exact)
        code = list_hash.bitwiseAND(F.lit(0x7FFFFFFF)) % F.lit(plan.bucket_count)
    else:
        code = _java_hash(key).bitwiseAND(F.lit(0x7FFFFFFF)) % F.lit(plan.shards)
    return F.when(unkeyed, F.lit(UNKEYED)).otherwise(code).cast("int")


def _step(acc: Column, element_hash: Column) -> Column:
    """One step of `List.hashCode` on longs, masked to 32 bits so that nothing overflows."""
    return (acc * 31 + element_hash).bitwiseAND(F.lit(0xFFFFFFFF).cast("long"))


def _java_hash(text: Column) -> Column:
    """Java's own `Objects.hashCode(text)` as a long (null hashes to 0, as in `List.hashCode`).

    An ASCII string's UTF-16 code units are its UTF-8 bytes, and Spark's `HiveHash` of a string is
    `String.hashCode`'s polynomial (31 * h + unit) over those bytes, so it answers for ASCII strings
    in generated code. Other strings take `reflect`, which builds a Java string and parses the
    result's text per row: hashing 1,000,000 keys took 0.24 s that way, 0.19 s with `HiveHash` and
    the ASCII check. `reflect` is a non-deterministic expression to Spark, which initializes it only
    outside lambda functions; inside them `_sql_java_hash` is used.
    """
    hashed = F.call_function("reflect", F.lit("java.util.Objects"), F.lit("hashCode"), text).cast("long")
    native = _hive_hash(text)
    if native is not None:
        ascii_only = F.octet_length(text) == F.length(text)
        hashed = F.when(ascii_only, native.cast("long")).otherwise(hashed)
    return F.coalesce(hashed, F.lit(0).cast("long"))


def _hive_hash(text: Column) -> Column | None:
    """Spark's `HiveHash(text)`, which Spark's SQL does not name (it hashes Hive's bucketed tables),
    built from its Catalyst class; None on a Spark without it (`reflect` then answers alone).

    The text is cast to the binary collation first: `HiveHash` of a string with another collation
    hashes its collation key (`ABC` as `abc` under UTF8_LCASE), not its bytes.
    """
    try:
        jvm = SparkContext._active_spark_context._jvm
        utils = jvm.org.apache.spark.sql.classic.ExpressionUtils
        binary = text.cast(StringType("UTF8_BINARY"))
        children = jvm.scala.jdk.javaapi.CollectionConverters.asScala(
            jvm.java.util.List.of(utils.expression(binary._jc))).toSeq()
        return Column(utils.column(jvm.org.apache.spark.sql.catalyst.expressions.HiveHash(children)))
    except (Py4JError, AttributeError):  # no such class, or no JVM behind this session
        return None


def _sql_java_hash(text: Column) -> Column:
    """`String.hashCode` from the string's UTF-16 code units, in plain SQL (slow; rare keys only)."""
    units = F.hex(F.encode(text, "UTF-16BE"))
    count = F.length(units) / 4
    hashed = F.aggregate(
        F.sequence(F.lit(0), count.cast("int") - 1), F.lit(0).cast("long"),
        lambda acc, i: _step(acc, F.conv(F.substring(units, i * 4 + 1, 4), 16, 10).cast("long")))
    return F.when(text.isNull() | (text == ""), F.lit(0).cast("long")).otherwise(hashed)


def _value_hash(value: Column, hasher=_java_hash) -> Column:
    """Hash of a key value as Hudi's cut reads it: its null and empty placeholders hash to 0."""
    blank = value.isNull() | value.isin("", NULL_PLACEHOLDER, EMPTY_PLACEHOLDER)
    return F.when(blank, F.lit(0).cast("long")).otherwise(hasher(value))


def _plain_key_hash(key: Column, hash_fields: Sequence[str], exact: bool = True) -> Column:
    """`List.hashCode` of `hash_key_values(key)` for a bare key value (not `exact`: of the key whole,
    which it is unless the key holds a colon)."""
    one = F.lit(1).cast("long")
    whole = _step(one, _java_hash(key))
    if not exact:
        return whole
    colon = F.instr(key, ":")
    field = F.substring_index(key, ":", 1)
    kept = F.lit(True) if not hash_fields else field.isin(*hash_fields)
    single_part = F.when(kept, _step(one, _value_hash(F.substring(key, colon + 1, 1 << 30)))).otherwise(one)
    return (F.when(colon == 0, whole)
            .when(F.instr(key, ",") == 0, single_part)
            .otherwise(_cut_key_hash(key, hash_fields)))


def _complex_key_hash(key: Column, fields: Sequence[str], values: Sequence[Column],
                      hash_fields: Sequence[str], exact: bool = True) -> Column:
    """`List.hashCode` of `hash_key_values(key)` for `f1:v1,f2:v2`: straight from the values unless one
    holds a comma (which cuts the key elsewhere; not `exact`, that case is left out)."""
    acc = F.lit(1).cast("long")
    for field, value in zip(fields, values, strict=True):
        if not hash_fields or field in hash_fields:
            acc = _step(acc, _value_hash(value))
    if not exact:
        return acc
    comma = F.lit(False)
    for value in values:
        comma = comma | F.coalesce(F.instr(value, ",") > 0, F.lit(False))
    return F.when(comma, _cut_key_hash(key, hash_fields)).otherwise(acc)


def _cut_key_hash(key: Column, hash_fields: Sequence[str]) -> Column:
    """The general cut: Java's split on commas (trailing empties dropped), each part at its first colon."""
    parts = F.split(F.regexp_replace(key, ",+$", ""), ",", -1)

    def element(part: Column) -> Column:
        colon = F.instr(part, ":")
        field = F.substring_index(part, ":", 1)
        kept = F.lit(True) if not hash_fields else field.isin(*hash_fields)
        return F.when(colon == 0, F.struct(F.lit(True).alias("kept"), _sql_java_hash(part).alias("h"))) \
            .otherwise(F.struct(kept.alias("kept"),
                                _value_hash(F.substring(part, colon + 1, 1 << 30), _sql_java_hash).alias("h")))

    hashes = F.transform(F.filter(F.transform(parts, element), lambda e: e["kept"]), lambda e: e["h"])
    return F.aggregate(hashes, F.lit(1).cast("long"), _step)
