"""The JVM route must equal the route the write tasks compute, for every key Hudi can be given.

Keys are drawn to hit the cut of complex keys: commas, colons, Hudi's null/empty placeholders,
empty values, non-ASCII text (Java hashes UTF-16 units, surrogate pairs included).
"""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.hudi.key_generator import KeyGeneratorSpec
from ingest.spark import routing
from ingest.write.options import IndexType


def plan_of(index_type: IndexType, bucket_count: int = 7, hash_fields: tuple[str, ...] = (), shards: int = 5):
    """The routing settings of a write plan (all routing reads of it); picklable for executors."""
    return SimpleNamespace(index_type=index_type, bucket_count=bucket_count, hash_fields=hash_fields, shards=shards)


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


def _all_routes_agree(spark, table: pa.Table, plans, field_lists) -> None:
    """Every (plan, key fields) route of every row, computed in one Spark job, against the tasks' own."""
    from pyspark.sql.pandas.types import from_arrow_schema

    df = spark.createDataFrame(table.to_pylist(), schema=from_arrow_schema(table.schema))
    combos = [(plan, fields) for plan in plans for fields in field_lists]
    columns = [routing.jvm_route(df.schema, _spec(fields), plan) for plan, fields in combos]
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


def test_integer_and_boolean_keys_route_in_the_jvm(spark):
    table = pa.table({
        "id": pa.array([0, -1, 2**63 - 1, -(2**63), None, 42], pa.int64()),
        "b": pa.array([True, False, None, True, False, None], pa.bool_()),
    })
    _all_routes_agree(spark, table, PLANS, FIELD_LISTS + ("b",))


def test_other_key_types_take_the_python_route(spark):
    df = spark.createDataFrame([(1.5, "x")], "id double, b string")
    assert routing.jvm_route(df.schema, _spec("id"), PLANS[0]) is None
    routed = routing.with_routes(df, _spec("id"), PLANS[0])
    table = pa.table({"id": pa.array([1.5]), "b": pa.array(["x"])})
    assert [r[0] for r in routed.select(routing.ROUTE).collect()] == routing.python_routes(
        table, _spec("id"), PLANS[0]).to_pylist()


def test_a_task_given_a_row_of_another_route_fails_naming_the_key():
    spec, plan = _spec("id"), PLANS[0]
    table = pa.table({"id": pa.array(["k1", "k2"])})
    routes = routing.python_routes(table, spec, plan).to_pylist()
    routing.check_routes(table.append_column(routing.ROUTE, pa.array(routes, pa.int32())), spec, plan)
    wrong = [routes[0], (routes[1] + 1) % plan.bucket_count]
    with pytest.raises(RuntimeError, match="'k2' was routed to"):
        routing.check_routes(table.append_column(routing.ROUTE, pa.array(wrong, pa.int32())), spec, plan)
