"""Tables written over many commits read back exactly as the reference model says.

Hypothesis generates operation sequences: inserts, updates with out-of-order ordering values,
in-batch duplicates, deletes (flag) and tombstones across partitions, a write that dies before its
commit (rolled back by the next writer), and a schema that gains a nullable column. Every table is
read by our reader (all file groups) and by hudi-rs (every file group that has a base file).
"""

from __future__ import annotations

import hudi_invariants
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model import Op, TableModel

from ingest.hudi.avro import schema as avro
from ingest.hudi.table.snapshot import context, read_slice, read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.write import index_bootstrap
from ingest.write.batch import LocalEngine, LocalWriter, incoming_avro_schema, open_table
from ingest.write.commit import begin
from ingest.write.file_group_writer import InsertMode
from ingest.write.options import IndexOptions, IndexType, WriteOptions
from ingest.write.plan import build_plan

hudi = pytest.importorskip("hudi")

KEYS = [f"key-{i}" for i in range(7)]
CITIES = ["san_francisco", "são paulo", "chennai"]

HUDI_SETTINGS = {
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.datasource.write.partitionpath.urlencode": "true",
}


def options_for(path, index: str, insert_mode: str, global_scope: bool = False) -> WriteOptions:
    return WriteOptions(
        table_path=str(path),
        table_name="trips",
        hudi=HUDI_SETTINGS,
        index=IndexOptions(type=IndexType(index), bucket_count=2, shards=3, global_scope=global_scope),
        insert_mode=InsertMode(insert_mode),
    )


upsert = st.builds(lambda k, c, ts, fare: Op(k, c, ts, False, {"fare": fare}),
                   st.sampled_from(KEYS), st.sampled_from(CITIES), st.integers(0, 5),
                   st.floats(allow_nan=False, allow_infinity=False, width=64))
flag_delete = st.builds(lambda k, c, ts: Op(k, c, ts, True), st.sampled_from(KEYS), st.sampled_from(CITIES),
                        st.integers(0, 5))
tombstone = st.builds(lambda k: Op(k, None, None, True), st.sampled_from(KEYS))
operation = st.one_of(upsert, upsert, upsert, flag_delete, tombstone)


@st.composite
def scenarios(draw):
    batches = draw(st.lists(st.lists(operation, min_size=1, max_size=8), min_size=3, max_size=7))
    evolve_at = draw(st.integers(1, len(batches)))     # batches from here on carry a `note` column
    fail_at = draw(st.integers(0, len(batches)))        # a write dies before this batch
    return batches, evolve_at, fail_at


def to_table(ops: list[Op], with_note: bool, salt: int) -> pa.Table:
    cols = {
        "uuid": [o.key for o in ops],
        "city": [o.partition for o in ops],
        "ts": pa.array([o.ts for o in ops], pa.int64()),
        "fare": pa.array([o.values.get("fare") for o in ops], pa.float64()),
        "_hoodie_is_deleted": [o.delete and not o.tombstone for o in ops],
        "_ingest_is_tombstone": [o.tombstone for o in ops],
    }
    if with_note:
        cols["note"] = pa.array([None if o.delete else f"n{salt}-{o.key}" for o in ops], pa.string())
    return pa.table(cols)


def model_values(op: Op, with_note: bool, salt: int) -> dict:
    values = {"fare": op.values.get("fare"), "_hoodie_is_deleted": False}
    values["note"] = f"n{salt}-{op.key}" if with_note else None
    return values


def die_before_commit(options: WriteOptions, data: pa.Table) -> str:
    """Write a batch's files and stop as a killed writer would: no commit, no cleanup."""
    engine = LocalEngine()
    table = open_table(options, data.schema)
    ordering = table.config.precombine_field
    prepared = engine.prepare(data, options, ordering)
    txn = begin(table, incoming_avro_schema(data.schema, options.table_name), "upsert")
    plan = build_plan(txn, options)
    index_bootstrap.ensure(table, txn.timeline, options, plan.ordering_type)
    engine.run(plan, prepared)
    return txn.instant_time


def expected_rows(model: TableModel) -> set[tuple]:
    return {(r["key"], r["partition"], r["ts"], r["fare"], r["note"]) for r in model.rows()}


def our_rows(table: pa.Table) -> set[tuple]:
    names = table.column_names
    return {
        (r["uuid"], r["city"], r["ts"], r["fare"], r["note"] if "note" in names else None)
        for r in table.to_pylist()
    }


def check_hudi_rs(path: str, table: HudiTable) -> int:
    """hudi-rs and our reader agree on every file slice with a base file, and on the whole table."""
    ctx, slices = context(table)
    with_base = [s for s in slices if s.base_file is not None]
    if not with_base:
        return 0
    rs_table = hudi.HudiTableBuilder.from_base_uri(path).build()
    reader = rs_table.create_file_group_reader_with_options()
    names = ctx.arrow_schema.names

    def rows(t) -> list[tuple]:
        return sorted((tuple(r[n] for n in names) for r in t.to_pylist()), key=repr)

    for s in with_base:
        ours = read_slice(ctx, s)
        theirs = reader.read_file_slice_from_paths(s.base_file.path, [lf.path for lf in s.log_files])
        assert rows(pa.Table.from_batches([theirs])) == rows(ours), f"slice {s.partition_path}/{s.file_id}"
    whole = pa.Table.from_batches(rs_table.read())
    ours_all = pa.concat_tables([read_slice(ctx, s) for s in with_base])
    assert rows(whole) == rows(ours_all)
    return len(with_base)


# The key index stands for Hudi's SIMPLE/BLOOM/GLOBAL_*/RECORD_INDEX, which cannot index log files:
# `insert_mode: log` is refused with it (tests/test_config.py), so it is written in base mode only.
MODES = [("bucket", "log", False), ("bucket", "base", False), ("key", "base", False), ("key", "base", True)]


@pytest.mark.slow
@pytest.mark.parametrize(("index", "insert_mode", "global_scope"), MODES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_table_matches_reference_model(tmp_path_factory, index, insert_mode, global_scope, scenario):
    batches, evolve_at, fail_at = scenario
    path = tmp_path_factory.mktemp("table")
    options = options_for(path, index, insert_mode, global_scope)
    writer = LocalWriter(options)
    model = TableModel(event_time=True, global_scope=global_scope)
    failed = None
    for i, ops in enumerate(batches):
        with_note = i >= evolve_at
        if i == fail_at:
            failed = die_before_commit(options, to_table(ops, with_note, salt=1000 + i))
            # The next process to open the table may be a Hudi writer: it rolls our failed instant back.
            hudi_invariants.check(path, bucket_index=index == "bucket", global_index=global_scope)
        for op in ops:
            op.values = model_values(op, with_note, salt=i)
        writer.write(to_table(ops, with_note, salt=i))
        model.apply(ops)

    table = HudiTable.open(str(path))
    timeline = table.timeline()
    if failed is not None:
        assert timeline.get(failed) is None, "the failed instant must be gone from the timeline"
        assert timeline.completed(Action.ROLLBACK), "its rollback must be on the timeline"
    ours = read_snapshot(table)
    assert our_rows(ours) == expected_rows(model)
    # Meta fields agree with the data they describe.
    for r in ours.to_pylist():
        assert r[avro.RECORD_KEY] == r["uuid"]
        assert r[avro.PARTITION_PATH].startswith("city=")
    check_hudi_rs(str(path), table)
    checked = hudi_invariants.check(path, bucket_index=index == "bucket", global_index=global_scope)
    assert index == "bucket" or checked["keys_in_base_files"] == len(expected_rows(model))
    assert checked["schemas"] > 0 and (failed is None or checked["rollbacks"] > 0), checked
