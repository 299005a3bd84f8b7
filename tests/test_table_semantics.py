"""Tables written over many commits read back exactly as the reference model says, at table versions
6, 8 and 9.

Hypothesis generates operation sequences: inserts, updates with out-of-order ordering values,
in-batch duplicates, deletes (flag) and tombstones across partitions, a schema that gains a nullable
column, and a crash at one of `ingest.faults`' points (a write dying before, during or after its commit,
a rollback dying midway, a table service dying midway), injected into a forked writer (tests/crashes.py);
the next writer rolls back or resumes what it left. After each commit the writer runs the table services
its version allows, with small thresholds. Every table is read by our reader and by hudi-rs (every file
group, those of log files only included: hudi-rs 0.5.0 reads them), and `tests/hudi_invariants.py` holds
right after the crash and at the end. `test_every_fault_point_at_every_version` crashes at each point
on a fixed scenario, so every point is hit whatever Hypothesis draws.
"""

from __future__ import annotations

import crashes
import hudi_invariants
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model import Op, TableModel
from service_tables import run_allowed_services

from ingest.hudi.avro import schema as avro
from ingest.hudi.table.snapshot import context, read_slice, read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.write.batch import LocalWriter
from ingest.write.file_group_writer import InsertMode
from ingest.write.options import IndexOptions, IndexType, WriteOptions

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


def options_for(path, index: str, insert_mode: str, global_scope: bool = False,
                version: int | None = None) -> WriteOptions:
    """`version` sets `hoodie.write.table.version` (default: ingest's)."""
    return WriteOptions(
        table_path=str(path),
        table_name="trips",
        hudi={**HUDI_SETTINGS, "hoodie.write.table.version": str(version)} if version else HUDI_SETTINGS,
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
    fail_at = draw(st.integers(0, len(batches)))        # a crash comes before this batch
    fault = draw(st.sampled_from(crashes.SCENARIO_POINTS))        # where it comes
    return batches, evolve_at, fail_at, fault


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


def expected_rows(model: TableModel) -> set[tuple]:
    return {(r["key"], r["partition"], r["ts"], r["fare"], r["note"]) for r in model.rows()}


def our_rows(table: pa.Table) -> set[tuple]:
    names = table.column_names
    return {
        (r["uuid"], r["city"], r["ts"], r["fare"], r["note"] if "note" in names else None)
        for r in table.to_pylist()
    }


def check_hudi_rs(path: str, table: HudiTable) -> int:
    """hudi-rs and our reader agree on every file slice hudi-rs lists (those of log files only included:
    read from their paths, as `read_file_slice` asks for a base file) and on the whole table; returns the
    number of slices compared."""
    ctx, slices = context(table)
    ours = {(s.partition_path, s.file_id): s for s in slices}
    rs_table = hudi.HudiTableBuilder.from_base_uri(path).build()
    reader = rs_table.create_file_group_reader_with_options()
    names = ctx.arrow_schema.names

    def rows(t) -> list[tuple]:
        return sorted((tuple(r[n] for n in names) for r in t.to_pylist()), key=repr)

    theirs = rs_table.get_file_slices()
    assert sorted((s.partition_path, s.file_id) for s in theirs) == sorted(ours)
    for s in theirs:
        base = s.base_file_relative_path() if s.base_file_name else ""
        got = pa.Table.from_batches([reader.read_file_slice_from_paths(base, s.log_files_relative_paths())])
        assert rows(got) == rows(read_slice(ctx, ours[(s.partition_path, s.file_id)])), \
            f"slice {s.partition_path}/{s.file_id} (base file {s.base_file_name or 'none'})"
    whole = rs_table.read()
    ours_all = [read_slice(ctx, s) for s in slices]
    assert rows(pa.Table.from_batches(whole) if whole else ctx.arrow_schema.empty_table()) == \
        rows(pa.concat_tables(ours_all) if ours_all else ctx.arrow_schema.empty_table())
    return len(theirs)


# The key index stands for Hudi's SIMPLE/BLOOM/GLOBAL_*/RECORD_INDEX, which cannot index log files:
# `insert_mode: log` is refused with it (tests/test_config.py), so it is written in base mode only.
MODES = [("bucket", "log", False), ("bucket", "base", False), ("key", "base", False), ("key", "base", True)]


def run_scenario(path, version: int, index: str, insert_mode: str, global_scope: bool, scenario,
                 services_from: int = 0) -> dict:
    """Write the scenario's batches (crashing once where it says; table services after each commit from
    batch `services_from` on), then check the table; returns what the crash did."""
    batches, evolve_at, fail_at, fault = scenario
    options = options_for(path, index, insert_mode, global_scope, version)
    bucket = index == "bucket"
    writer = LocalWriter(options)
    model = TableModel(event_time=True, global_scope=global_scope)
    crash = {"point": None, "crashed": False}
    for i, ops in enumerate(batches):
        with_note = i >= evolve_at
        if i == fail_at:
            point = fault if crashes.reachable(fault, options.table_version) else "after_data_write"
            failing = [Op(o.key, o.partition, o.ts, o.delete, model_values(o, with_note, 1000 + i)) for o in ops]
            crashed, committed = crashes.inject(point, options, to_table(failing, with_note, salt=1000 + i))
            crash = {"point": point, "crashed": crashed}
            if committed:
                model.apply(failing)
            # The next process to open the table may be a Hudi writer: it rolls back or resumes what is left.
            if (path / ".hoodie" / "hoodie.properties").exists():
                hudi_invariants.check(path, bucket_index=bucket, global_index=global_scope)
        for op in ops:
            op.values = model_values(op, with_note, salt=i)
        writer.write(to_table(ops, with_note, salt=i))
        model.apply(ops)
        if i >= services_from:
            run_allowed_services(HudiTable.open(str(path)))

    table = HudiTable.open(str(path))
    timeline = table.timeline()
    assert not [i for i in timeline.pending() if i.action is not Action.COMPACTION], \
        "every failed write is rolled back and every crashed clean finished by the writers after it"
    ours = read_snapshot(table)
    assert our_rows(ours) == expected_rows(model)
    # Meta fields agree with the data they describe.
    for r in ours.to_pylist():
        assert r[avro.RECORD_KEY] == r["uuid"]
        assert r[avro.PARTITION_PATH].startswith("city=")
    check_hudi_rs(str(path), table)
    checked = hudi_invariants.check(path, bucket_index=bucket, global_index=global_scope)
    assert bucket or checked["keys_in_base_files"] == len(expected_rows(model))
    assert checked["schemas"] > 0 and checked["timeline"] > 0, checked
    return crash


@pytest.mark.slow
@pytest.mark.parametrize(("index", "insert_mode", "global_scope"), MODES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_table_matches_reference_model(tmp_path_factory, index, insert_mode, global_scope, scenario):
    """Version 6 (`HoodieTableVersion.SIX`): `BaseRollbackActionExecutor` rolls back a failed write before
    the next one (`HoodieTable.rollbackInflightCommits`), `CleanActionExecutor.runPendingClean` finishes a
    crashed clean, `HoodieTimeline.filterPendingCompactionTimeline` makes a crashed compaction run again;
    readers merge as `HoodieMergedLogRecordScanner` does."""
    run_scenario(tmp_path_factory.mktemp("table"), 6, index, insert_mode, global_scope, scenario)


@pytest.mark.slow
@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize(("index", "insert_mode", "global_scope"), MODES)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_table_matches_reference_model_at_versions_8_and_9(tmp_path_factory, version, index, insert_mode,
                                                           global_scope, scenario):
    """Versions 8 and 9 (`HoodieTableVersion.EIGHT`/`NINE`), fewer examples: the same scenarios, with
    log files named by their writing deltacommit and deleted on rollback (`HoodieAppendHandle`,
    `MarkerBasedRollbackStrategy`), a layout-2 timeline (`ActiveTimelineV2`) and Avro metadata."""
    run_scenario(tmp_path_factory.mktemp("table"), version, index, insert_mode, global_scope, scenario)


# Seven commits before the crash (more than `hoodie.keep.max.commits`, so an archival has work), the
# services held back until then (so a clean and an archival find something to do), two after it.
FIXED = [[("key-1", "chennai", 1), ("key-2", "são paulo", 1), ("key-3", "chennai", 2)],
         [("key-1", "chennai", 3), ("key-4", "san_francisco", 1)],
         [("key-2", "são paulo", 2), ("key-5", "chennai", 1), ("key-3", "chennai", 1, True)],
         [("key-6", "são paulo", 4), ("key-1", "chennai", 4)],
         [("key-4", "san_francisco", 2), ("key-5", None, None, True)],
         [("key-6", "são paulo", 5), ("key-0", "chennai", 1)],
         [("key-2", "são paulo", 6), ("key-3", "chennai", 3)],
         [("key-1", "chennai", 2), ("key-0", "chennai", 3, True), ("key-4", "san_francisco", 7)],
         [("key-5", "chennai", 8), ("key-6", "são paulo", 1)]]
FIXED_CRASH_AT = 7


def _version_points() -> list[tuple[int, str]]:
    from ingest.hudi.config.table_version import TableVersion

    return [(v, p) for v in (6, 8, 9) for p in crashes.SCENARIO_POINTS if crashes.reachable(p, TableVersion.of(v))]


@pytest.mark.parametrize(("version", "point"), _version_points())
def test_every_fault_point_at_every_version(tmp_path, version, point):
    """A crash at each of `ingest.faults`' points, on a fixed scenario at each version, is survived: the
    writer after it rolls back what a dead write left (`BaseRollbackActionExecutor`, a crashed rollback
    finished from its plan: `BaseRollbackPlanActionExecutor`), a crashed clean is finished
    (`CleanActionExecutor.runPendingClean`), a crashed compaction runs again
    (`HoodieTimeline.filterPendingCompactionTimeline`), a crashed archival is redone
    (`HoodieTimelineArchiver.archiveIfRequired`); both readers equal the model and the invariants hold.
    Points a version does not have (the LSM history's at 6) are not generated."""
    batches = [[Op(*op, values={"fare": float(op[2] or 0) + n}) for op in ops] for n, ops in enumerate(FIXED)]
    crash = run_scenario(tmp_path / "t", version, "bucket", "log", False, (batches, 3, FIXED_CRASH_AT, point),
                         services_from=FIXED_CRASH_AT)
    assert crash == {"point": point, "crashed": True}

