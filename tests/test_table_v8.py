"""Table version 8 (Hudi 1.x) Merge-On-Read tables read as hudi-rs reads them, and as their SQL says.

The v8 fixture has a layout-2 timeline (`.hoodie/timeline/`, `<requested>_<completed>.<action>`),
Avro commit metadata, log files named by the deltacommit that wrote them, delete blocks, and a
completed compaction. Every read (latest and as of each instant) is compared with hudi-rs over all
columns, meta fields included, and with the rows the fixture's SQL implies. The version-6 fixtures are
read the same way, so both layouts stay covered; writing into a version-8 table is refused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import FIXTURES

from ingest.errors import UnsupportedTable
from ingest.hudi.config.table_config import RecordMergeMode, TableConfig
from ingest.hudi.table.file_names import BaseFileName, LogFileName
from ingest.hudi.table.file_system_view import FileSystemView
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import CommitMetadata, decode_metadata
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import Timeline, read_instant
from ingest.hudi.timeline.timeline_layout import LAYOUT_1, TimelineLayout
from ingest.storage import FileInfo

hudi = pytest.importorskip("hudi")

V8 = "v8_trips_8i3u1d"
V6 = ["v6_trips_8i1u", "v6_trips_8i3d"]
ALL = [*V6, V8]


# -- what hudi-rs reads, and what the SQL says ---------------------------------------------------


def rows(table: pa.Table, names: list[str]) -> set[tuple]:
    return {tuple(r[n] for n in names) for r in table.to_pylist()}


def hudi_rs(path: Path, as_of: str | None = None) -> pa.Table:
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    table = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    batches = table.read(options)
    return pa.Table.from_batches(batches) if batches else table.get_schema_with_meta_fields().empty_table()


def assert_same_as_hudi_rs(path: Path, as_of: str | None = None) -> pa.Table:
    ours = read_snapshot(HudiTable.open(str(path)), as_of)
    theirs = hudi_rs(path, as_of)
    assert set(theirs.column_names) == set(ours.column_names)
    names = ours.column_names
    assert ours.num_rows == len(rows(ours, names)), "a key is read twice"
    assert rows(ours, names) == rows(theirs, names), f"as of {as_of}"
    return ours


def _value(text: str) -> Any:
    text = text.strip()
    if text.startswith("'"):
        return text.strip("'")
    return float(text) if "." in text else int(text)


def fixture_sql(name: str) -> list[str]:
    """The statements of a fixture's SQL, comments dropped, whitespace collapsed."""
    text = re.sub(r"/\*.*?\*/", "", (FIXTURES / "tables" / f"{name}.sql").read_text(), flags=re.S)
    return [" ".join(s.split()) for s in text.split(";") if s.strip()]


def is_write(statement: str) -> bool:
    return statement.startswith(("INSERT", "UPDATE", "DELETE"))


def sql_rows(statements: list[str], write_instants: list[str]) -> dict[str, dict[str, Any]]:
    """The rows the statements leave, by rider, each with the instant of its last write.

    Understands the statements the fixtures use: one INSERT ... VALUES, `UPDATE ... SET c = v WHERE
    rider = 'r'` and `DELETE ... WHERE rider = 'r'` / `rider in (...)`; each writes one instant, in order.
    """
    create = re.search(r"CREATE TABLE \w+ \((.*?)\) USING", statements[0])
    columns = [c.split()[0] for c in create.group(1).split(",")]
    table: dict[str, dict[str, Any]] = {}
    writes = iter(write_instants)
    for statement in statements[1:]:
        if not is_write(statement):
            assert statement.startswith("CREATE INDEX"), statement
            continue
        instant = next(writes)
        if statement.startswith("INSERT INTO"):
            for values in re.findall(r"\(([^()]*)\)", statement.split(" VALUES ", 1)[1]):
                row = dict(zip(columns, (_value(v) for v in values.split(",")), strict=True))
                table[row["rider"]] = {**row, "_hoodie_commit_time": instant}
        elif m := re.fullmatch(r"UPDATE \w+ SET (\w+) = (\S+) WHERE rider = '([^']+)'", statement):
            table[m.group(3)].update({m.group(1): _value(m.group(2)), "_hoodie_commit_time": instant})
        elif m := re.fullmatch(r"DELETE FROM \w+ WHERE rider (?:= '([^']+)'|in \(([^)]*)\))", statement):
            for rider in [m.group(1)] if m.group(1) else [_value(v) for v in m.group(2).split(",")]:
                del table[rider]
        else:
            raise AssertionError(f"statement not understood: {statement}")
    assert next(writes, None) is None, "more write instants than write statements"
    return table


def deltacommits(table: HudiTable) -> list[str]:
    return [i.timestamp for i in table.timeline().completed(Action.DELTA_COMMIT)]


# -- whole-table reads ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_snapshot_matches_hudi_rs_and_the_sql(fixture_tables, name):
    path = fixture_tables[name]
    ours = assert_same_as_hudi_rs(path)
    table = HudiTable.open(str(path))
    expected = sql_rows(fixture_sql(name), deltacommits(table))
    got = {r["rider"]: r for r in ours.to_pylist()}
    assert sorted(got) == sorted(expected)
    for rider, row in expected.items():
        assert {k: got[rider][k] for k in row} == row, rider
        assert got[rider]["_hoodie_record_key"] == row["uuid"]
        assert got[rider]["_hoodie_partition_path"] == f"city={row['city']}"


def test_v8_snapshot_is_what_its_sql_leaves(fixture_tables):
    got = {r["rider"]: r for r in read_snapshot(HudiTable.open(str(fixture_tables[V8]))).to_pylist()}
    assert sorted(got) == ["rider-A", "rider-C", "rider-D", "rider-E", "rider-G", "rider-I"]
    assert (got["rider-A"]["fare"], got["rider-G"]["fare"]) == (0.0, 0.0)


@pytest.mark.parametrize("name", ALL)
def test_as_of_every_instant_matches_hudi_rs(fixture_tables, name):
    path = fixture_tables[name]
    timeline = HudiTable.open(str(path)).timeline()
    times = {i.timestamp for i in timeline.completed()} | {
        i.completion_time for i in timeline.completed() if i.completion_time
    }
    assert len(times) >= 2
    for ts in sorted(times):
        assert_same_as_hudi_rs(path, ts)


def test_v8_as_of_follows_the_sql_statement_by_statement(fixture_tables):
    table = HudiTable.open(str(fixture_tables[V8]))
    writes = deltacommits(table)
    statements = fixture_sql(V8)
    assert len(writes) == sum(map(is_write, statements))
    for n in range(1, len(writes) + 1):
        # The table as of the n-th deltacommit is what the first n write statements leave.
        last = [i for i, s in enumerate(statements) if is_write(s)][n - 1]
        expected = sql_rows(statements[: last + 1], writes[:n])
        got = {r["rider"]: r for r in read_snapshot(table, writes[n - 1]).to_pylist()}
        assert sorted(got) == sorted(expected), writes[n - 1]
        for rider, row in expected.items():
            assert {k: got[rider][k] for k in row} == row, (writes[n - 1], rider)


# -- the layout-2 timeline -----------------------------------------------------------------------


def test_layout_2_timeline_carries_completion_times(fixture_tables):
    table = HudiTable.open(str(fixture_tables[V8]))
    assert table.layout == TimelineLayout(2, ".hoodie/timeline", ".hoodie/timeline/history")
    timeline = table.timeline()
    names = sorted(p.name for p in (fixture_tables[V8] / ".hoodie" / "timeline").iterdir() if p.is_file())
    assert sorted(timeline.files) == names
    for instant in timeline:
        assert instant.is_completed and instant.completion_time > instant.timestamp
        assert table.layout.file_name(instant) in names
    compaction = timeline.get("20251220210129235")
    assert (compaction.action, compaction.completion_time) == (Action.COMPACTION, "20251220210129883")
    assert table.layout.file_name(compaction) == "20251220210129235_20251220210129883.commit"
    assert [i.action for i in timeline.completed(Action.INDEXING)] == [Action.INDEXING]
    assert set(timeline.completed_write_timestamps("20251220210124336")) == {"20251220210108078", "20251220210123755"}


def test_layout_2_file_names_parse_and_print_back():
    layout = TimelineLayout(2, ".hoodie/timeline")
    cases = {
        "20240101000000000_20240101000000100.deltacommit": Instant(
            "20240101000000000", Action.DELTA_COMMIT, State.COMPLETED, "20240101000000100"
        ),
        "20240101000000000.deltacommit.inflight": Instant("20240101000000000", Action.DELTA_COMMIT, State.INFLIGHT),
        "20240101000000000.inflight": Instant("20240101000000000", Action.COMMIT, State.INFLIGHT),
        "20240101000000000.commit.requested": Instant("20240101000000000", Action.COMMIT, State.REQUESTED),
        "20240101000000000.commit": Instant("20240101000000000", Action.COMMIT, State.COMPLETED),  # legacy
        "20240101000000000_20240101000000100.replacecommit": Instant(
            "20240101000000000", Action.REPLACE_COMMIT, State.COMPLETED, "20240101000000100"
        ),
    }
    for name, instant in cases.items():
        parsed = layout.parse(name)
        assert parsed == instant and parsed.completion_time == instant.completion_time, name
        assert layout.file_name(parsed) == name
    for bad in ("20240101000000000_20240101000000100.deltacommit.inflight", "history", "abc_123.commit",
                "20240101000000000_x.commit", "hoodie.properties"):
        assert layout.parse(bad) is None, bad
    # Completed table services are named by the action they complete as.
    done = {"compaction": "commit", "logcompaction": "deltacommit", "clustering": "replacecommit"}
    for action, completed_as in done.items():
        instant = Instant("20240101000000000", Action(action), State.COMPLETED, "20240101000000100")
        assert layout.file_name(instant) == f"20240101000000000_20240101000000100.{completed_as}"
    # Layout 1 is unchanged.
    assert LAYOUT_1.parse("20240101000000000_20240101000000100.deltacommit") is None
    assert LAYOUT_1.file_name(cases["20240101000000000.deltacommit.inflight"]) == "20240101000000000.deltacommit.inflight"


def test_layout_follows_the_table_config():
    def config(**props: str) -> TableConfig:
        return TableConfig({"hoodie.table.type": "MERGE_ON_READ", **props})

    assert TimelineLayout.of(config(**{"hoodie.table.version": "6"})) == LAYOUT_1
    assert TimelineLayout.of(config(**{"hoodie.table.version": "8"})).folder == ".hoodie/timeline"
    custom = config(**{"hoodie.table.version": "8", "hoodie.timeline.layout.version": "2", "hoodie.timeline.path": "tl"})
    assert TimelineLayout.of(custom) == TimelineLayout(2, ".hoodie/tl", ".hoodie/tl/history")
    with pytest.raises(UnsupportedTable, match="layout version 3"):
        TimelineLayout.of(config(**{"hoodie.table.version": "8", "hoodie.timeline.layout.version": "3"}))


def test_v8_commit_metadata_is_avro_and_parses_like_json(fixture_tables):
    table = HudiTable.open(str(fixture_tables[V8]))
    timeline = table.timeline()
    first = timeline.completed()[0]
    data = read_instant(table.storage, first, timeline.layout)
    assert data.startswith(b"Obj\x01")
    meta = CommitMetadata.from_bytes(data)
    assert meta.operation_type == "UPSERT" and not meta.compacted
    assert sorted(meta.partition_to_write_stats) == ["city=chennai", "city=san_francisco", "city=sao_paulo"]
    assert sum(s.num_inserts for s in meta.all_write_stats()) == 8
    assert all(p.endswith("_20251220210108078.parquet") for p in meta.written_paths())
    assert [f["name"] for f in pa_fields(meta.schema)] == ["ts", "uuid", "rider", "driver", "fare", "city"]

    update = table.commit_metadata(timeline.get("20251220210127080"))
    (stat,) = update.all_write_stats()
    assert stat.is_delta and stat.log_files == (".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210127080.log.1_0-1072-3078",)
    compaction = table.commit_metadata(timeline.get("20251220210129235"))
    assert compaction.compacted and compaction.operation_type == "COMPACT"
    assert len(compaction.all_write_stats()) == 3
    assert table.schema() == table.schema(timeline, "20251220210108078")
    # JSON (layout 1 and legacy instants) still decodes as before.
    assert decode_metadata(b'{"compacted" : false}') == {"compacted": False} and decode_metadata(b"") == {}


def pa_fields(schema_json: str | None) -> list[dict]:
    return json.loads(schema_json)["fields"]


# -- the file system view by completion time -----------------------------------------------------


def test_v8_logs_join_the_slice_current_when_they_completed(fixture_tables):
    table = HudiTable.open(str(fixture_tables[V8]))
    view = table.view()
    slices = {
        (g.partition_path, s.base_instant): [lf.name.base_instant for lf in s.log_files]
        for g in view.groups for s in g.slices
    }
    assert slices == {
        ("city=chennai", "20251220210108078"): ["20251220210127080", "20251220210128625"],
        ("city=chennai", "20251220210129235"): [],
        ("city=san_francisco", "20251220210108078"): ["20251220210123755"],
        ("city=san_francisco", "20251220210129235"): [],
        ("city=sao_paulo", "20251220210108078"): ["20251220210125441"],
        # Written after the compaction was planned: on top of the compacted base file.
        ("city=sao_paulo", "20251220210129235"): ["20251220210130911"],
    }
    assert all(s.base_file is not None for g in view.groups for s in g.slices)
    latest = {s.partition_path: s.base_instant for s in view.latest_file_slices()}
    assert set(latest.values()) == {"20251220210129235"}
    before = {s.partition_path: s.base_instant for s in view.latest_file_slices("20251220210129197")}
    assert set(before.values()) == {"20251220210108078"}


def _listing(*names: str) -> dict[str, list[FileInfo]]:
    return {"p": [FileInfo(f"p/{n}", 1, False) for n in names]}


def _base(file_id: str, ts: str) -> str:
    return BaseFileName(file_id, "0-1-2", ts).name


def _log(file_id: str, ts: str, version: int = 1) -> str:
    return LogFileName(file_id, ts, version, "0-1-2").name


def test_completion_time_decides_the_slice_and_uncommitted_files_are_left_out():
    layout = TimelineLayout(2, ".hoodie/timeline")
    timeline = Timeline.from_file_names([
        "100_110.deltacommit",  # insert: base files
        "200.compaction.requested", "200.compaction.inflight", "200_300.commit",  # compaction
        "150_250.deltacommit",  # requested before the compaction, completed after it was planned
        "160_190.deltacommit",  # completed before the compaction was planned
        "400.deltacommit.requested", "400.deltacommit.inflight",  # in flight
        "500.compaction.requested",  # planned, not run
        "120_130.deltacommit",  # logs of a group without base files
        "140_145.deltacommit",
    ], layout)
    view = FileSystemView.from_listing(timeline, _listing(
        _base("f1", "100"), _base("f1", "200"), _base("f1", "500"),
        _log("f1", "150"), _log("f1", "160"), _log("f1", "400"),
        _log("f2", "120"), _log("f2", "140"),
        _base("f3", "400"),
    ))
    groups = {g.file_id: [(s.base_instant, s.base_file is not None, [lf.name.base_instant for lf in s.log_files])
                          for s in g.slices] for g in view.groups}
    assert groups == {
        "f1": [("100", True, ["160"]), ("200", True, ["150"])],
        "f2": [("120", False, ["120", "140"])],
    }
    assert [(s.file_id, s.base_instant) for s in view.latest_file_slices("199")] == [("f1", "100"), ("f2", "120")]


def test_a_legacy_instant_stands_in_with_its_own_time():
    timeline = Timeline.from_file_names(["100.deltacommit", "200_300.commit", "250.deltacommit"],
                                        TimelineLayout(2, ".hoodie/timeline"))
    assert timeline.get("100").completion_time is None and timeline.get("200").completion_time == "300"
    view = FileSystemView.from_listing(timeline, _listing(_base("f", "100"), _base("f", "200"), _log("f", "250")))
    (group,) = view.groups
    assert [(s.base_instant, [lf.name.base_instant for lf in s.log_files]) for s in group.slices] == [
        ("100", []), ("200", ["250"])
    ]


# -- merge rules from the table config -----------------------------------------------------------


_MODEL = "org.apache.hudi.common.model."
_EVENT_STRATEGY, _COMMIT_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5", "ce9acb64-bde0-424c-9b91-f6ebba25356d"


def _hudi_mode_of_payload(payload: str) -> str:
    """`HoodieTableConfig.inferRecordMergeModeFromPayloadClass` (Hudi 1.1), for the built-in payloads."""
    if payload in (_MODEL + "DefaultHoodieRecordPayload", _MODEL + "EventTimeAvroPayload"):
        return "EVENT_TIME_ORDERING"
    return "COMMIT_TIME_ORDERING" if payload == _MODEL + "OverwriteWithLatestAvroPayload" else "CUSTOM"


def _hudi_mode_of_strategy(strategy: str) -> str:
    """`HoodieTableConfig.inferRecordMergeModeFromMergeStrategyId`."""
    return {_EVENT_STRATEGY: "EVENT_TIME_ORDERING", _COMMIT_STRATEGY: "COMMIT_TIME_ORDERING"}.get(strategy, "CUSTOM")


@pytest.mark.parametrize("version", ["8", "9"])
@pytest.mark.parametrize("payload", [None, "DefaultHoodieRecordPayload", "EventTimeAvroPayload",
                                     "OverwriteWithLatestAvroPayload"])
@pytest.mark.parametrize("ordering", [None, "ts"])
def test_new_tables_merge_properties_pass_hudis_checks(tmp_path, version, payload, ordering):
    """What `HoodieTableConfig.inferMergingConfigsForPreV9Table` checks on every read of a version-8 table
    with log files (`checkArgument(modeBasedOnPayload.equals(modeBasedOnStrategyId), "Configured payload
    class ... and record merge strategy ID ... conflict")`, and the recorded mode against both), and what
    `inferMergingConfigsForV9TableCreation` records at 9 for a payload the writer names (CASE 3: the merge
    mode, `hoodie.table.legacy.payload.class` and the strategy id) or none (CASE 1, as Hudi 1.1's Spark SQL
    leaves it: the mode alone). A second write under the same settings is accepted
    (`HoodieWriterUtils.validateTableConfig` reads the payload from the legacy key at 9)."""
    from ingest.write.batch import LocalWriter
    from ingest.write.options import IndexOptions, IndexType, WriteOptions

    hudi = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.write.table.version": version}
    if ordering:
        hudi["hoodie.datasource.write.precombine.field"] = ordering
    if payload:
        hudi["hoodie.datasource.write.payload.class"] = _MODEL + payload
    writer = LocalWriter(WriteOptions(table_path=str(tmp_path / "t"), table_name="t", hudi=hudi,
                                      index=IndexOptions(type=IndexType.BUCKET, bucket_count=1)))
    rows = pa.table({"id": ["a", "b"], "part": ["p", "p"], "ts": pa.array([1, 2], pa.int64())})
    writer.write(rows)
    writer.write(rows)
    props = HudiTable.open(str(tmp_path / "t")).config.props
    mode = props["hoodie.record.merge.mode"]
    expected = _hudi_mode_of_payload(_MODEL + payload) if payload else (
        "EVENT_TIME_ORDERING" if ordering else "COMMIT_TIME_ORDERING")
    assert mode == expected
    if version == "8":
        stored_payload = props["hoodie.compaction.payload.class"]
        strategy = props["hoodie.record.merge.strategy.id"]
        assert _hudi_mode_of_payload(stored_payload) == _hudi_mode_of_strategy(strategy) == mode
    elif payload:
        assert props["hoodie.table.legacy.payload.class"] == _MODEL + payload
        assert _hudi_mode_of_strategy(props["hoodie.record.merge.strategy.id"]) == mode
        assert "hoodie.compaction.payload.class" not in props
    else:
        assert not {"hoodie.table.legacy.payload.class", "hoodie.record.merge.strategy.id",
                    "hoodie.compaction.payload.class"} & set(props)


def test_settings_compare_as_hudi_reads_them():
    """`HoodieTableConfig.getOrderingFields` reads a comma list (blanks aside), and Hudi 1.x records a
    CustomKeyGenerator's partition fields in the writer's own spelling of the types."""
    at9 = TableConfig({"hoodie.table.version": "9", "hoodie.table.type": "MERGE_ON_READ",
                       "hoodie.table.ordering.fields": "ts"})
    assert at9.conflicts_with({"hoodie.table.precombine.field": " ts"}) == []
    assert at9.conflicts_with({"hoodie.table.precombine.field": "seq"})
    at8 = TableConfig({"hoodie.table.version": "8", "hoodie.table.type": "MERGE_ON_READ",
                       "hoodie.table.partition.fields": "region:simple,day:timestamp"})
    assert at8.conflicts_with({"hoodie.table.partition.fields": "region:SIMPLE,day:TIMESTAMP"}) == []
    assert at8.conflicts_with({"hoodie.table.partition.fields": "region,day"}) == []
    assert at8.conflicts_with({"hoodie.table.partition.fields": "region:SIMPLE,day:SIMPLE"})


def test_a_table_that_would_contradict_its_writer_is_refused_before_any_file(tmp_path):
    """A new table whose properties would contradict the settings given is refused as a conflict, not
    taken for one another writer created meanwhile, and leaves no `.hoodie` folder."""
    from ingest.errors import TableConfigConflict
    from ingest.hudi.config.table_version import TableVersion

    settings = {"hoodie.table.name": "t", "hoodie.table.precombine.field": "ts",
                "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}
    with pytest.raises(TableConfigConflict, match="hoodie.record.merge.mode"):
        HudiTable.open_or_create(str(tmp_path / "t"), settings, version=TableVersion.of(9))
    assert not (tmp_path / "t" / ".hoodie").exists()


def test_a_writers_ordering_field_must_match_the_tables_at_9(tmp_path):
    """`HoodieWriterUtils.validateTableConfig` compares a writer's precombine field with the table's
    ordering fields (`hoodie.table.ordering.fields` at 9) and refuses a difference."""
    from ingest.errors import TableConfigConflict
    from ingest.write.batch import LocalWriter
    from ingest.write.options import IndexOptions, IndexType, WriteOptions

    def writer(ordering: str) -> LocalWriter:
        return LocalWriter(WriteOptions(table_path=str(tmp_path / "t"), table_name="t", hudi={
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": ordering, "hoodie.write.table.version": "9"},
            index=IndexOptions(type=IndexType.BUCKET, bucket_count=1)))

    rows = pa.table({"id": ["a"], "part": ["p"], "ts": pa.array([1], pa.int64()), "seq": pa.array([1], pa.int64())})
    writer("ts").write(rows)
    with pytest.raises(TableConfigConflict, match="hoodie.table.precombine.field"):
        writer("seq").write(rows)


def test_v8_merge_mode_from_the_config():
    def config(**props: str) -> TableConfig:
        return TableConfig({"hoodie.table.version": "8", "hoodie.table.type": "MERGE_ON_READ", **props})

    precombine = {"hoodie.table.precombine.field": "ts"}
    event = config(**precombine, **{"hoodie.record.merge.mode": "EVENT_TIME_ORDERING"})
    assert event.event_time_ordering and event.precombine_field == "ts"
    commit = config(**precombine, **{"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
                                     "hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"})
    assert not commit.event_time_ordering
    # Inferred as Hudi 1.x does: strategy id, then payload class, then the ordering field.
    assert config(**precombine, **{"hoodie.record.merge.strategy.id": "ce9acb64-bde0-424c-9b91-f6ebba25356d"}
                  ).record_merge_mode is RecordMergeMode.COMMIT_TIME_ORDERING
    assert config(**precombine, **{"hoodie.compaction.payload.class":
                                   "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"}
                  ).record_merge_mode is RecordMergeMode.COMMIT_TIME_ORDERING
    assert config(**precombine).event_time_ordering
    assert not config().event_time_ordering
    # Hudi 1.1's name for the ordering field.
    assert config(**{"hoodie.table.ordering.fields": "seq"}).precombine_field == "seq"
    # Event time without an ordering field is commit time.
    assert not config(**{"hoodie.record.merge.mode": "EVENT_TIME_ORDERING"}).event_time_ordering
    # Payload-based custom merging follows the payload class, as in version 6.
    custom = config(**precombine, **{"hoodie.record.merge.mode": "CUSTOM",
                                     "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
                                     "hoodie.compaction.payload.class":
                                     "org.apache.hudi.common.model.PartialUpdateAvroPayload"})
    assert custom.event_time_ordering
    custom.check_supported("t")
    with pytest.raises(UnsupportedTable, match="custom record merger strategy"):
        config(**{"hoodie.record.merge.mode": "CUSTOM", "hoodie.record.merge.strategy.id": "x"}).check_supported("t")
    with pytest.raises(UnsupportedTable, match="several fields"):
        config(**{"hoodie.table.ordering.fields": "a,b"}).check_supported("t")


def test_v6_merge_rules_are_unchanged():
    v6 = TableConfig({"hoodie.table.version": "6", "hoodie.table.precombine.field": "ts",
                      "hoodie.table.ordering.fields": "other", "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"})
    assert v6.precombine_field == "ts"
    assert not v6.event_time_ordering  # OverwriteWithLatestAvroPayload, version 6's default
    v6_default = TableConfig({**v6.props, "hoodie.compaction.payload.class":
                              "org.apache.hudi.common.model.DefaultHoodieRecordPayload"})
    assert v6_default.event_time_ordering


# -- versions: read 6 and 8 (writing 8 and 9: test_write_versions.py) ----------------------------------------------------------


def test_unknown_versions_are_refused_for_reading():
    with pytest.raises(UnsupportedTable, match="table version 7"):
        TableConfig({"hoodie.table.version": "7", "hoodie.table.type": "MERGE_ON_READ"}).check_supported("t")
    TableConfig({"hoodie.table.version": "8", "hoodie.table.type": "MERGE_ON_READ"}).check_supported("t")


def table_files(path: Path) -> list[str]:
    """Every file of the table but the writer lock's (`.hoodie/.aux/ingest`, which Hudi ignores)."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if ".aux" not in p.relative_to(path).parts)
