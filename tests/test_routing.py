"""The JVM route must equal the route the write tasks compute, for every key Hudi can be given.

Keys are drawn to hit the cut of complex keys: commas, colons, Hudi's null/empty placeholders,
empty values, non-ASCII text (Java hashes UTF-16 units, surrogate pairs included).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.hudi.keygen.bucket_index import java_string_hashes
from ingest.hudi.keygen.key_generator import KeyGeneratorSpec
from ingest.hudi.merge import precombine as pcb
from ingest.spark import routing
from ingest.write import tasks
from ingest.write.options import IndexType


def plan_of(index_type: IndexType, bucket_count: int = 7, hash_fields: tuple[str, ...] = (), shards: int = 5,
            bucket_cut_1x: bool = False):
    """The routing settings of a write plan (all routing reads of it); picklable for executors."""
    return SimpleNamespace(index_type=index_type, bucket_count=bucket_count, hash_fields=hash_fields, shards=shards,
                           bucket_cut_1x=bucket_cut_1x)


PIECES = st.sampled_from([",", ":", "__null__", "__empty__", "a", "id", "b", "é", "😀", " ", ",,", "::"])
TEXT = st.one_of(st.none(), st.text(max_size=12), st.lists(PIECES, max_size=6).map("".join))

PLANS = [
    plan_of(IndexType.BUCKET, 7),
    plan_of(IndexType.BUCKET, 256, hash_fields=("id",)),
    plan_of(IndexType.BUCKET, 3, hash_fields=("b", "id")),
    plan_of(IndexType.KEY, shards=16),
]


def _spec(fields: str) -> KeyGeneratorSpec:
    return KeyGeneratorSpec.from_config({
        "hoodie.datasource.write.recordkey.field": fields,
        "hoodie.datasource.write.partitionpath.field": "",
    })


FIELD_LISTS = ("id", "id,b", "b,id")


def _all_routes_agree(spark, table: pa.Table, plans, field_lists, exact: bool = True) -> None:
    """Every (plan, key fields) route of every row, computed in one Spark job, against the tasks' own."""
    from pyspark.sql.pandas.types import from_arrow_schema

    df = spark.createDataFrame(table.to_pylist(), schema=from_arrow_schema(table.schema))
    combos = [(plan, fields) for plan in plans for fields in field_lists]
    columns = [routing.jvm_route(df.schema, _spec(fields), plan, exact=exact) for plan, fields in combos]
    assert all(c is not None for c in columns), "these key types take the JVM route"
    rows = df.select(*[c.alias(f"r{i}") for i, c in enumerate(columns)]).collect()
    for i, (plan, fields) in enumerate(combos):
        expected = routing.python_routes(table, _spec(fields), plan).to_pylist()
        assert [r[i] for r in rows] == expected, (plan, fields)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=200))
def test_jvm_route_equals_the_write_tasks_route(spark, pairs):
    table = pa.table({"id": pa.array([a for a, _ in pairs], pa.string()),
                      "b": pa.array([b for _, b in pairs], pa.string())})
    _all_routes_agree(spark, table, PLANS, FIELD_LISTS)


UNCUT_TEXT = st.one_of(st.none(), st.text(alphabet=st.characters(blacklist_characters=":,"), max_size=12),
                      st.lists(st.sampled_from(["__null__", "__empty__", "a", "é", "😀", " "]), max_size=6).map("".join))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(st.tuples(UNCUT_TEXT, UNCUT_TEXT), min_size=1, max_size=200))
def test_fast_route_is_exact_for_keys_without_colons_and_commas(spark, pairs):
    table = pa.table({"id": pa.array([a for a, _ in pairs], pa.string()),
                      "b": pa.array([b for _, b in pairs], pa.string())})
    _all_routes_agree(spark, table, PLANS + PLANS_1X, FIELD_LISTS, exact=False)


# Tables of versions 8 and 9: Hudi 1.x's cut. Their fast route hashes a one-field key whole, even a
# complex `id:value` one; their exact route is the Python one.
PLANS_1X = [plan_of(IndexType.BUCKET, 7, bucket_cut_1x=True),
            plan_of(IndexType.BUCKET, 3, hash_fields=("b", "id"), bucket_cut_1x=True)]


def test_the_exact_route_of_hudi_1x_buckets_is_pythons(spark):
    df = spark.createDataFrame([("id:1",)], "id string")
    assert routing.jvm_route(df.schema, _spec("id"), PLANS_1X[0], exact=True) is None
    assert routing.jvm_route(df.schema, _spec("id"), PLANS_1X[0], exact=False) is not None


def test_ascii_keys_hash_in_generated_code_and_others_through_reflect(spark):
    """`String.hashCode` of ASCII keys through Spark's `HiveHash` (the same polynomial over the
    bytes), of others through `reflect`: both must give Java's value."""
    from pyspark.sql import functions as F

    assert routing._hive_hash(F.col("id")) is not None, "this Spark has HiveHash: routes avoid reflect"
    keys = ["", "a", "order-123", "A" * 100, "~!@#$%^&*()_+{}|:<>?", "é", "x€y", "😀", "\u007f", "\u0080"]
    df = spark.createDataFrame([(k,) for k in keys] + [(None,)], "id string")
    plan = df.select(routing._java_hash(F.col("id")).alias("h"))._jdf.queryExecution().executedPlan().toString()
    assert "hive-hash" in plan and "reflect" in plan
    got = [r["h"] for r in df.select(routing._java_hash(F.col("id")).alias("h")).collect()]
    assert got == [int(h) - (1 << 32) if h >= 1 << 31 else int(h) for h in java_string_hashes(pa.array(keys))] + [0]


def test_keys_with_a_case_insensitive_collation_route_by_their_bytes(spark):
    """`ABC` and `abc` are one value to a UTF8_LCASE column, but two keys to Hudi."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    keys = ["ABC", "abc", "Order-7", "order-7", "É", "é"]
    df = spark.createDataFrame([(k,) for k in keys], "id string").select(
        F.col("id").cast(StringType("UTF8_LCASE")).alias("id"))
    table = pa.table({"id": pa.array(keys)})
    for plan in PLANS:
        for exact in (True, False):
            route = routing.jvm_route(df.schema, _spec("id"), plan, exact=exact)
            got = [r["r"] for r in df.select(route.alias("r")).collect()]
            assert got == routing.python_routes(table, _spec("id"), plan).to_pylist(), (plan, exact)


def test_fast_route_misses_are_caught_by_the_task_and_recognised_by_the_driver():
    """Rows placed by the fast route (the whole key's hash): a task that got a key Hudi cuts elsewhere
    fails with a message the sink recognises."""
    plan = PLANS[0]
    keys = [f"id:{i},b:{i % 3}" for i in range(40)]  # Hudi buckets these by their values, not whole
    table = pa.table({"id": pa.array(keys)})
    records = tasks.route(plan, table.append_column(pcb.KEY, pa.array(keys)))
    whole = (31 + java_string_hashes(pa.array(keys)).astype(np.int64)) & 0x7FFFFFFF
    fast_task = (whole % plan.bucket_count) % 2
    failures = []
    for task in (0, 1):
        try:
            routing.check_task(records.filter(pa.array(fast_task == task)), 2, task)
        except routing.MisroutedKey as error:
            failures.append(error)
    assert failures, "some of these keys are misplaced by the fast route"
    assert routing.is_misrouted(RuntimeError(f"Python worker failed: {failures[0]}"))
    assert not routing.is_misrouted(RuntimeError("some other failure"))


def test_integer_and_boolean_keys_route_in_the_jvm(spark):
    table = pa.table({
        "id": pa.array([0, -1, 2**63 - 1, -(2**63), None, 42], pa.int64()),
        "b": pa.array([True, False, None, True, False, None], pa.bool_()),
    })
    _all_routes_agree(spark, table, PLANS, FIELD_LISTS + ("b",))


def _routes_by_task(df, spec, plan, tasks_count: int) -> list[tuple[int, int]]:
    """(task, row's own route) for every row, as the write tasks receive them."""
    from pyspark import TaskContext

    def report(batches):
        task = TaskContext.get().partitionId()
        for batch in batches:
            table = routing.unpacked(pa.Table.from_batches([batch]))
            own = routing.python_routes(table, spec, plan).to_pylist()
            yield pa.RecordBatch.from_pydict({"task": pa.array([task] * len(own), pa.int32()),
                                              "route": pa.array(own, pa.int32())})

    return [(r["task"], r["route"]) for r in
            routing.shuffled(df, spec, plan, tasks_count).mapInArrow(report, "task int, route int").collect()]


@pytest.mark.parametrize("tasks_count", [1, 2, 3, 8])
def test_each_task_gets_exactly_the_routes_it_owns(spark, tasks_count):
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # as the sink runs its jobs
    try:
        df = spark.range(600).selectExpr("concat('key-', cast(id as string)) as id", "cast(id % 3 as string) as b")
        df = df.union(spark.createDataFrame([(None, "x")], "id string, b string"))
        for plan in (PLANS[0], PLANS[3]):
            got = _routes_by_task(df, _spec("id"), plan, tasks_count)
            assert len(got) == 601
            assert all(task == route % tasks_count for task, route in got)
            routes = {route for _, route in got}
            assert len({task for task, _ in got}) == min(tasks_count, len(routes))
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")


def test_other_key_types_take_the_python_route(spark):
    df = spark.createDataFrame([(1.5, "x"), (2.5, "y"), (None, "z")], "id double, b string")
    assert routing.jvm_route(df.schema, _spec("id"), PLANS[0]) is None
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        got = _routes_by_task(df, _spec("id"), PLANS[0], 2)
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    assert sorted(route for _, route in got) == sorted(routing.python_routes(
        pa.table({"id": pa.array([1.5, 2.5, None]), "b": pa.array(["x", "y", "z"])}), _spec("id"), PLANS[0]).to_pylist())
    assert all(task == route % 2 for task, route in got)


def test_a_task_given_a_row_it_does_not_own_fails_naming_the_key():
    spec = _spec("id")
    for plan in (PLANS[0], PLANS[3]):
        keys = [f"k{i}" for i in range(20)]
        table = pa.table({"id": pa.array(keys)})
        records = tasks.route(plan, table.append_column(pcb.KEY, pa.array(keys)))
        owners = [route % 2 for route in routing.python_routes(table, spec, plan).to_pylist()]
        assert len(set(owners)) == 2, "twenty keys spread over both tasks"
        mine = records.filter(pa.array([owner == owners[0] for owner in owners]))
        routing.check_task(mine, 2, owners[0])  # all its own: no error
        stranger = keys[owners.index(1 - owners[0])]
        with pytest.raises(RuntimeError, match=rf"record key '{stranger}' \(route \d+\) reached write task {owners[0]}"):
            routing.check_task(records, 2, owners[0])


@pytest.mark.parametrize("tasks_count", [1, 2])
def test_tasks_receive_the_batch_as_it_was(spark, tasks_count):
    """The write job packs the batch's columns in one struct (`routing.shuffled`); each task must
    unpack exactly the batch: every name (dots, backticks, spaces), type, nullability and value,
    then the columns added beside it."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    df = spark.sql("""SELECT concat('key-', cast(id AS string)) AS id, id AS `a.b`, cast(id AS string) AS `we``ird`,
                              named_struct('x', id, 'y', CASE WHEN id % 2 = 0 THEN NULL ELSE 'odd' END) AS `with space`,
                              CASE WHEN id % 3 = 0 THEN NULL ELSE id * 1.5 END AS maybe
                       FROM range(40)""")
    expected = df.toArrow()
    expected_schema = to_arrow_schema(df.schema, timezone="UTC").append(pa.field("added", pa.int64(), False))

    def received(batches):  # defined here, so that the executors get it by value
        rows = routing.unpacked(pa.Table.from_batches(list(batches)))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, rows.schema) as stream:
            stream.write_table(rows)
        yield pa.RecordBatch.from_pydict({"schema": [rows.schema.serialize().to_pybytes()],
                                          "rows": [sink.getvalue().to_pybytes()]})

    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        frame = routing.shuffled(df, _spec("id"), PLANS[0], tasks_count, columns={"added": F.col("`a.b`") + 1})
        got = frame.mapInArrow(received, "schema binary, rows binary").collect()
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    schemas = {pa.ipc.read_schema(pa.py_buffer(r["schema"])) for r in got}
    assert schemas == {expected_schema}
    rows = pa.concat_tables([pa.ipc.open_stream(r["rows"]).read_all() for r in got]).sort_by("id")
    assert rows.drop_columns(["added"]) == expected.sort_by("id").cast(rows.schema.remove(5))
    assert rows.column("added").to_pylist() == [v + 1 for v in rows.column("a.b").to_pylist()]
