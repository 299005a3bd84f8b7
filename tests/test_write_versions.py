"""Writing and continuing tables at versions 8 and 9 (Hudi 1.x), read back by hudi-rs and by us.

What each test checks is named in its docstring with the Hudi (Java) class and method whose rule it
keeps; `ingest/hudi/config/table_version.py` is the seam the writer asks.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import fastavro
import hudi_invariants
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hudi_avsc import _INSTANT_INFO as INSTANT_INFO_AVSC
from hudi_avsc import ROLLBACK_METADATA_0_15, ROLLBACK_PLAN_0_15, hudi_schema, parse_hudi_text, shape
from model import Op, TableModel
from service_tables import ModelWriter, hudi_rs_rows, options_for, our_rows, random_batch, to_table
from test_read_any_table import unzip

from ingest.errors import UnsupportedTable
from ingest.faults import CRASH_EXIT_CODE
from ingest.hudi.avro import avro_models
from ingest.hudi.config.table_version import TableVersion
from ingest.hudi.log.log_block import HeaderKey
from ingest.hudi.log.log_reader import iter_log_blocks
from ingest.hudi.table import metadata_table
from ingest.hudi.table.file_names import LogFileName
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.storage import Storage
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

hudi = pytest.importorskip("hudi")

VERSIONS = (8, 9)
TESTS = Path(__file__).parent


def write_rounds(path: Path, version: int, rounds: int = 6, seed: int = 5) -> ModelWriter:
    w = ModelWriter(path, buckets=2, version=version)
    rng = random.Random(seed)
    for n in range(1, rounds + 1):
        w.write(random_batch(rng, n, keys=12, size=7))
    return w


def timeline_files(path: Path) -> list[str]:
    folder = path / ".hoodie" / "timeline"
    return sorted(p.name for p in folder.iterdir() if p.is_file())


def log_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob(".*.log.*") if ".hoodie" not in p.relative_to(path).parts)


# -- new tables ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_new_tables_at_8_and_9_read_by_hudi_rs_and_ours_as_the_model(tmp_path, version):
    """`HoodieWriteConfig.WRITE_TABLE_VERSION` 8/9 for a new table: properties as
    `HoodieTableMetaClient.TableBuilder` records them at that version (layout 2, initial version, merge
    mode; at 9 `hoodie.table.ordering.fields` instead of the precombine key and no payload class:
    `EightToNineUpgradeHandler.reconcileOrderingFieldsConfig`/`reconcilePayloadClassConfig`); log files
    named with the writing deltacommit's instant, log version 1, each a slice of its own, its write stat
    with `prevCommit` = that instant, no base file and only the new log file
    (`HoodieAppendHandle.populateWriteStatAndFetchFileSlice`, `init`). Over six commits of upserts,
    deletes and inserts across three partitions, hudi-rs and our reader return exactly the model's rows."""
    w = write_rounds(tmp_path / "t", version)
    path = Path(w.path)
    props = HudiTable.open(w.path).config
    assert props.props["hoodie.table.version"] == str(version)
    assert props.props["hoodie.table.initial.version"] == str(version)
    assert props.props["hoodie.timeline.layout.version"] == "2"
    assert props.props["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    assert props.props["hoodie.table.keygenerator.type"] == "SIMPLE"
    if version == 9:
        assert props.props["hoodie.table.ordering.fields"] == "ts"
        assert "hoodie.table.precombine.field" not in props.props
        assert "hoodie.compaction.payload.class" not in props.props
        assert props.props["hoodie.table.format"] == "native"
    else:
        assert props.props["hoodie.table.precombine.field"] == "ts"
        assert props.props["hoodie.record.merge.strategy.id"] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    assert not list((path / ".hoodie").glob("*.deltacommit*")), "layout 2 keeps instants in .hoodie/timeline"
    assert (path / ".hoodie" / "timeline" / "history").is_dir()

    table = w.table
    timeline = table.timeline()
    deltas = {i.timestamp for i in timeline.completed()}
    assert len(deltas) == 6 and all(i.completion_time > i.timestamp for i in timeline.completed())
    for log in log_files(path):
        name = LogFileName.parse(log.name)
        assert name.base_instant in deltas and name.version == 1, log.name
    for instant in timeline.completed():
        for stat in table.commit_metadata(instant).all_write_stats():
            assert stat.prev_commit == instant.timestamp and stat.base_file == ""
            assert list(stat.log_files) == [Path(stat.path).name]
            assert LogFileName.parse(Path(stat.path).name).base_instant == instant.timestamp
    expected = w.expected()
    assert sorted(hudi_rs_rows(path)) == sorted(expected)
    assert our_rows(path) == expected
    assert hudi_invariants.check(path, bucket_index=True)["schemas"] > 0


@pytest.mark.parametrize("version", VERSIONS)
def test_log_block_headers_are_ones_the_version_knows(tmp_path, version):
    """`HoodieLogBlock.HeaderMetadataType` at 8/9 (`HoodieAppendHandle.getUpdatedHeader`): Hudi's Spark
    writer puts INSTANT_TIME and SCHEMA on data and delete blocks (no record positions, no partial
    updates); the instant in the header is the one the log file is named with."""
    w = write_rounds(tmp_path / "t", version, rounds=3)
    storage = Storage(w.path)
    checked = 0
    for log in log_files(Path(w.path)):
        rel = str(log.relative_to(w.path))
        for block in iter_log_blocks(storage, rel):
            keys = {k for k, _ in block.header}
            TableVersion.of(version).check_header(keys)
            assert block.get(HeaderKey.INSTANT_TIME) == LogFileName.parse(log.name).base_instant
            checked += 1
    assert checked >= 3


# -- the timeline --------------------------------------------------------------------------------------

hudi_rs_instant = hudi_invariants.timeline_instant  # hudi-rs's instant rules, Hudi's action names


def crash_writer(path: str, version: int, ops: list[Op], crash_at: str) -> None:
    """Write `ops` in a separate process that dies at `crash_at` (`ingest.faults`)."""
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1])\n"
        "from model import Op\nfrom service_tables import options_for, to_table\n"
        "from ingest.write.batch import LocalWriter\n"
        "ops = [Op(**o) for o in json.loads(sys.argv[4])]\n"
        "LocalWriter(options_for(sys.argv[2], 2, int(sys.argv[3]))).write(to_table(ops))\n"
    )
    env = {**os.environ, "INGEST_CRASH_AT": crash_at}
    payload = json.dumps([{"key": o.key, "partition": o.partition, "ts": o.ts, "delete": o.delete,
                           "values": {"fare": o.values.get("fare")}} for o in ops])
    done = subprocess.run([sys.executable, "-c", code, str(TESTS), path, str(version), payload], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == CRASH_EXIT_CODE, done.stderr


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("rollback_crash", [None, "before_rollback_complete"])
def test_a_crashed_write_is_rolled_back_and_hudi_rs_reads_the_model(tmp_path, version, rollback_crash):
    """A writer killed after its data files (`after_data_write`) leaves an inflight deltacommit and a
    CREATE marker per log file (`WriteMarkers.createLogMarkerIfNotExists` at 8+; APPEND is
    `DirectWriteMarkersV1`'s, version 6); the next writer rolls it back as Hudi 1.x does (`BaseRollbackPlanActionExecutor`, `MarkerBasedRollbackStrategy`:
    at 8/9 every log file of the failed instant is named with it and is deleted; no command block),
    with `HoodieRollbackPlan`/`HoodieRollbackMetadata` in the layout-2 timeline and the failed instant's
    files removed (`BaseRollbackActionExecutor.finishRollback`). With `rollback_crash`, the first rollback
    itself dies before completing and the one after finishes it from its plan. Every timeline file name
    then parses with hudi-rs's rules, and hudi-rs and our reader return exactly the model's rows."""
    w = write_rounds(tmp_path / "t", version, rounds=3)
    before = {str(p) for p in log_files(Path(w.path))}
    crash_writer(w.path, version, random_batch(random.Random(99), 50, keys=12, size=7), "after_data_write")
    failed = w.table.timeline().pending()
    assert [i.state.value for i in failed] == ["INFLIGHT"]
    assert {str(p) for p in log_files(Path(w.path))} - before, "the crashed write left its log files"
    left = sorted(p.name for p in (Path(w.path) / ".hoodie" / ".temp" / failed[0].timestamp).rglob("*.marker.*"))
    assert left and all(".log." in n and n.endswith(".marker.CREATE") for n in left), left
    assert hudi_invariants.check(w.path, bucket_index=True)["markers"] == len(left)
    if rollback_crash:
        crash_writer(w.path, version, random_batch(random.Random(98), 60, keys=12, size=3), rollback_crash)
        assert w.table.timeline().pending()
    rng = random.Random(7)
    w.write(random_batch(rng, 70, keys=12, size=7))
    timeline = w.table.timeline()
    assert not timeline.pending()
    rollbacks = timeline.completed(Action.ROLLBACK)
    assert len(rollbacks) == 1 and rollbacks[0].completion_time
    assert failed[0].timestamp not in {i.timestamp for i in timeline}
    assert not [p for p in log_files(Path(w.path)) if failed[0].timestamp in p.name]
    names = timeline_files(Path(w.path))
    parsed = [hudi_rs_instant(n) for n in names]
    assert {p[2] for p in parsed} == {"deltacommit", "rollback"}
    assert all(c > r for r, c, _, s in parsed if s == "completed")
    expected = w.expected()
    assert sorted(hudi_rs_rows(w.path)) == sorted(expected)
    assert our_rows(w.path) == expected


# -- Avro files ----------------------------------------------------------------------------------------


def _hudi_shape(text: str):
    """The shape of one of Hudi's .avsc texts, `HoodieInstantInfo` (referenced by name) known."""
    names: dict = {}
    shape(json.loads(INSTANT_INFO_AVSC), names)
    return shape(parse_hudi_text(text), names)


def _fixture_commit_schema(tmp_path) -> dict:
    """The `HoodieCommitMetadata` writer schema Hudi 1.x embedded in the v9 fixture's deltacommits."""
    path = unzip("tables-v9", "v9_txns_simple_nometa", tmp_path / "fx")
    completed = sorted((path / ".hoodie" / "timeline").glob("*_*.deltacommit"))[0]
    return fastavro.reader(io.BytesIO(completed.read_bytes())).writer_schema


@pytest.mark.parametrize("version", VERSIONS)
def test_every_avro_file_we_write_carries_hudis_schemas(tmp_path, version):
    """Hudi reads timeline Avro files with its generated classes (`TimelineMetadataUtils.deserializeAvroMetadata`),
    resolving our embedded writer schema against its own by record full name and field name. Checked for
    every Avro file of a v8/v9 table we write (inflight and completed deltacommits, the rollback's
    requested plan and completed metadata): record names, field names and order, types and defaults equal
    Hudi's — `HoodieCommitMetadata` as Hudi 1.x itself embedded it in the v9 fixture's deltacommits
    (`CommitMetadataSerDeV2`), `HoodieRollbackPlan`/`HoodieRollbackMetadata` as `hudi-common/src/main/avro`
    defines them (from `INGEST_HUDI_AVSC_DIR` when set, else the text pinned in tests/hudi_avsc.py)."""
    hudi_commit = shape(_fixture_commit_schema(tmp_path))
    plan, meta = hudi_schema("HoodieRollbackPlan"), hudi_schema("HoodieRollbackMetadata")
    expected = {"HoodieCommitMetadata": hudi_commit,
                "HoodieRollbackPlan": shape(plan) if plan else _hudi_shape(ROLLBACK_PLAN_0_15),
                "HoodieRollbackMetadata": shape(meta) if meta else _hudi_shape(ROLLBACK_METADATA_0_15)}
    w = write_rounds(tmp_path / "t", version, rounds=2)
    crash_writer(w.path, version, random_batch(random.Random(3), 9, size=4), "after_data_write")
    w.write(random_batch(random.Random(4), 10, size=4))
    seen = {}
    for name in timeline_files(Path(w.path)):
        data = (Path(w.path) / ".hoodie" / "timeline" / name).read_bytes()
        if not data:
            assert name.endswith((".requested", ".rollback.inflight")), f"{name} is empty"
            continue
        assert data.startswith(b"Obj\x01"), f"{name} is not an Avro container"
        schema = fastavro.reader(io.BytesIO(data)).writer_schema
        record = schema["name"].rsplit(".", 1)[-1]
        assert shape(schema) == expected[record], name
        seen.setdefault(record, []).append(name)
    assert set(seen) == set(expected), seen
    assert avro_models.COMMIT_METADATA["name"] == "HoodieCommitMetadata"


# -- continuing Hudi-written tables --------------------------------------------------------------------

CONTINUED = [
    ("tables", "v8_trips_8i3u1d", "uuid", "city", "ts"),
    ("tables-v9", "v9_txns_simple_nometa", "txn_id", "region", "txn_ts"),
    ("tables-v9", "v9_txns_simple_meta", "txn_id", "region", "txn_ts"),
]


def _data(table: pa.Table) -> pa.Table:
    return table.drop_columns([c for c in table.column_names if c.startswith("_hoodie")])


@pytest.mark.parametrize("folder, name, key, part, order", CONTINUED, ids=[c[1] for c in CONTINUED])
def test_hudi_written_v8_and_v9_tables_are_continued(tmp_path, folder, name, key, part, order):
    """A Hudi 1.x table is written at its own version, never upgraded (`HoodieWriteConfig.AUTO_UPGRADE_VERSION`
    off): its metadata table first removed as a writer with `hoodie.metadata.enable=false` does
    (`HoodieTable.maybeDeleteMetadataTable`), then four deltacommits of upserts (a larger ordering value),
    deletes and inserts into other partitions, as `HoodieAppendHandle` writes them at 8/9. hudi-rs and
    our reader then return exactly the model's rows (the fixture's rows with the same changes applied),
    the table's version and properties unchanged but for the metadata partitions."""
    path = unzip(folder, name, tmp_path)
    start = HudiTable.open(str(path))
    version = start.version.number
    props_before = dict(start.config.props)
    base = _data(read_snapshot(start))
    existing = {r[key]: r for r in base.to_pylist()}
    model = TableModel(event_time=True)
    model.apply([Op(k, r[part], r[order], False, r) for k, r in existing.items()])
    options = WriteOptions(
        table_path=str(path), table_name=start.name,
        hudi={"hoodie.datasource.write.recordkey.field": key, "hoodie.datasource.write.partitionpath.field": part,
              "hoodie.datasource.write.precombine.field": order,
              "hoodie.datasource.write.hive_style_partitioning": "true"},
        index=IndexOptions(type=IndexType.KEY),
    )
    writer = LocalWriter(options)
    last_hudi_instant = start.timeline().latest_timestamp
    partitions = sorted({r[part] for r in existing.values()})
    top = max(r[order] for r in existing.values())
    keys = sorted(existing)
    for n in range(4):
        live = sorted(ident[0] for ident in model.live)
        upd, gone = live[n % len(live)], live[(n + 3) % len(live)]
        rows = [dict(existing[upd], **{order: top + 10 + n}),
                dict(existing[gone], **{order: top + 10 + n}),
                dict(existing[keys[n]], **{key: f"new-{n}", part: partitions[(n + 1) % len(partitions)],
                                           order: top + 10 + n})]
        deleted = [False, True, False]
        batch = pa.Table.from_pylist(rows, schema=base.schema).append_column(
            "_hoodie_is_deleted", pa.array(deleted))
        writer.write(batch)
        model.apply([Op(r[key], r[part], r[order], d, r) for r, d in zip(rows, deleted, strict=True)])
        existing[f"new-{n}"] = rows[2]
    table = HudiTable.open(str(path))
    assert table.version.number == version
    assert not (path / ".hoodie" / "metadata").exists() and not metadata_table.present(table)
    after = dict(table.config.props)
    changed = {k for k in set(after) | set(props_before) if after.get(k) != props_before.get(k)}
    assert changed <= {"hoodie.table.metadata.partitions", "hoodie.table.metadata.partitions.inflight",
                       "hoodie.table.checksum"}, changed
    ours_instants = [i for i in table.timeline() if i.timestamp > last_hudi_instant]
    assert [(i.action.value, i.state.value) for i in ours_instants] == [("deltacommit", "COMPLETED")] * 4
    expected = {(r["key"], r["partition"], r[order]) for r in model.rows()}
    ours = read_snapshot(table)
    assert {(r[key], r[part], r[order]) for r in ours.to_pylist()} == expected
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    got = [(r[key], r[part], r[order]) for r in rs.select([key, part, order]).to_pylist()]
    assert sorted(got) == sorted(expected)
    assert pc.count_distinct(rs.column(key)).as_py() == rs.num_rows


# -- services and refusals -----------------------------------------------------------------------------


def test_unknown_write_versions_are_refused():
    """`HoodieTableVersion`: only 6, 8 and 9 are written; a table of another version is not opened for
    writing, and a new table cannot be asked for one."""
    with pytest.raises(UnsupportedTable, match="table version 7"):
        TableVersion.of(7)
    options = options_for("/nonexistent", 2, 9)
    assert options.table_version.number == 9
    assert WriteOptions(table_path="x", table_name="t").table_version.number == 6


# -- the Spark sink ------------------------------------------------------------------------------------


def test_the_spark_sink_writes_version_9_from_executors(spark, tmp_path):
    """The sink's executors write what the driver's plan says (`HoodieAppendHandle` at 9: a log file per
    deltacommit and file group, named with its instant): three micro-batches of upserts and deletes into a
    new version-9 table, read by hudi-rs and by us as the model's rows."""
    from ingest.spark.sink import HudiSink

    path = tmp_path / "t"
    model = TableModel(event_time=True)
    rng = random.Random(11)
    with HudiSink(options_for(path, 2, 9), spark=spark) as sink:
        for batch_id in range(3):
            ops = random_batch(rng, batch_id + 1, keys=10, size=6)
            for op in ops:
                op.values = {"fare": op.values.get("fare")}
            sink(spark.createDataFrame(to_table(ops)), batch_id)
            model.apply(ops)
    table = HudiTable.open(str(path))
    assert table.version.number == 9 and len(table.timeline().completed()) == 3
    expected = {(r["key"], r["partition"], r["ts"], r["fare"]) for r in model.rows()}
    assert sorted(hudi_rs_rows(path)) == sorted(expected)
    assert our_rows(path) == expected


@pytest.mark.parametrize(("version", "buckets"), [(6, [1, 1, 1]), (8, [4, 5, 6]), (9, [4, 5, 6])])
def test_bucket_of_a_key_holding_a_colon_is_the_one_hudi_of_that_version_computes(tmp_path, version, buckets):
    """`BucketIdentifier.getBucketId` through `KeyGenUtils.extractRecordKeysByFields`: 0.14/0.15 cut the
    key `order:1` at its `:` and, `order` being no hash field, hash the empty list (bucket 1 of 8 for
    all three); 1.x (HUDI-8403) hashes a key without `,` whole. A Hudi 1.x writer upserting these keys
    looks in those buckets, so a version-8 or 9 table must hold them there, or its upserts duplicate them."""
    writer = LocalWriter(WriteOptions(
        table_path=str(tmp_path / "t"), table_name="t",
        hudi={"hoodie.datasource.write.recordkey.field": "uuid", "hoodie.datasource.write.partitionpath.field": "",
              "hoodie.datasource.write.precombine.field": "ts", "hoodie.write.table.version": str(version)},
        index=IndexOptions(type=IndexType.BUCKET, bucket_count=8)))
    keys = ["order:1", "order:2", "order:3"]
    writer.write(pa.table({"uuid": keys, "ts": pa.array([1, 1, 1], pa.int64())}))
    rows = read_snapshot(HudiTable.open(str(tmp_path / "t"))).to_pylist()
    placed = {r["_hoodie_record_key"]: int(r["_hoodie_file_name"][1 if r["_hoodie_file_name"].startswith(".") else 0:][:8])
              for r in rows}
    assert [placed[k] for k in keys] == buckets


def test_inspect_table_finds_keys_an_earlier_release_left_outside_their_bucket(tmp_path, monkeypatch, capsys):
    """A version-9 bucket table written with 0.14/0.15's cut (as ingest did before it followed Hudi 1.x)
    holds `order:1..3` in bucket 1, where `HoodieSimpleBucketIndex` at 1.x never looks for them
    (`bucketIdFromFileId` of their file group against `BucketIdentifier.getBucketId`): `inspect table`
    counts and names them. A table written as Hudi 1.x hashes has none."""
    import dataclasses

    from ingest import cli
    from ingest.hudi.config import table_version
    from ingest.hudi.table import bucket_placement

    def write(path: Path) -> None:
        LocalWriter(WriteOptions(
            table_path=str(path), table_name="t",
            hudi={"hoodie.datasource.write.recordkey.field": "uuid", "hoodie.datasource.write.partitionpath.field": "",
                  "hoodie.datasource.write.precombine.field": "ts", "hoodie.write.table.version": "9"},
            index=IndexOptions(type=IndexType.BUCKET, bucket_count=8),
        )).write(pa.table({"uuid": ["order:1", "order:2", "order:3", "plain"], "ts": pa.array([1] * 4, pa.int64())}))

    write(tmp_path / "now")
    assert bucket_placement.check(HudiTable.open(str(tmp_path / "now"))).misplaced == 0
    with monkeypatch.context() as m:
        m.setitem(table_version._VERSIONS, 9, dataclasses.replace(table_version.V9, bucket_keys_cut_1x=False))
        write(tmp_path / "before")
    placement = bucket_placement.check(HudiTable.open(str(tmp_path / "before")))
    assert (placement.keys, placement.misplaced) == (4, 3)
    assert sorted(placement.examples) == [("order:1", 1, 4), ("order:2", 1, 5), ("order:3", 1, 6)]
    assert cli.main(["inspect", "table", str(tmp_path / "before")]) == 0
    assert "3 of 4 keys sit outside the file group of their bucket" in capsys.readouterr().err


@pytest.mark.parametrize(("version", "recorded"), [(6, "region,ts"), (8, "region:SIMPLE,ts:TIMESTAMP"),
                                                  (9, "region:SIMPLE,ts:TIMESTAMP")])
def test_custom_key_generators_partition_fields_are_recorded_as_hudi_of_that_version_records_them(
        tmp_path, version, recorded):
    """`SparkKeyGenUtils.getPartitionColumnsForKeyGenerator(props, tableVersion)` passes `includeTypes` above
    version 6: a Hudi 1.x table records `field:TYPE`, from which `CustomAvroKeyGenerator.getTimestampFields`
    and Spark's `SparkParsePartitionUtil.getPartitionSchema` learn that `ts` is a timestamp partition
    (a string column). A table recorded without types, by Hudi 0.x or an earlier ingest, is continued."""
    hudi = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.keygenerator.type": "CUSTOM",
            "hoodie.datasource.write.partitionpath.field": "region:SIMPLE, ts:TIMESTAMP",
            "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
            "hoodie.keygen.timebased.output.dateformat": "yyyyMMdd",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.write.table.version": str(version)}
    rows = pa.table({"id": ["a"], "region": ["eu"], "ts": pa.array([1_700_000_000_000], pa.int64())})

    def write() -> None:
        LocalWriter(WriteOptions(table_path=str(tmp_path / "t"), table_name="t", hudi=hudi,
                                 index=IndexOptions(type=IndexType.BUCKET, bucket_count=1))).write(rows)

    write()
    props = Path(tmp_path / "t" / ".hoodie" / "hoodie.properties")
    assert HudiTable.open(str(tmp_path / "t")).config.props["hoodie.table.partition.fields"] == recorded
    write()
    untyped = props.read_text().replace("region\\:SIMPLE,ts\\:TIMESTAMP", "region,ts")
    props.write_text(untyped)
    (props.parent / "hoodie.properties.backup").unlink(missing_ok=True)
    assert HudiTable.open(str(tmp_path / "t")).config.props["hoodie.table.partition.fields"] == "region,ts"
    write()
    assert len(HudiTable.open(str(tmp_path / "t")).timeline().completed()) == 3


_MODEL = "org.apache.hudi.common.model."


@pytest.mark.parametrize(("version", "added", "refused"), [
    (6, {"hoodie.compaction.payload.class": _MODEL + "AWSDmsAvroPayload"}, "hoodie.compaction.payload.class"),
    (8, {"hoodie.compaction.payload.class": _MODEL + "PartialUpdateAvroPayload", "hoodie.record.merge.mode": "CUSTOM",
         "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000"}, "hoodie.compaction.payload.class"),
    (9, {"hoodie.table.legacy.payload.class": _MODEL + "AWSDmsAvroPayload",
         "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}, "hoodie.table.legacy.payload.class"),
    # inferMergingConfigsForV9TableCreation, CASE 2: a payload not under deprecation stays in
    # hoodie.compaction.payload.class with merge mode CUSTOM and the payload-based strategy.
    (9, {"hoodie.compaction.payload.class": "com.example.MyPayload", "hoodie.record.merge.mode": "CUSTOM",
         "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000"}, "hoodie.compaction.payload.class"),
    (9, {"hoodie.record.merge.property.hoodie.payload.delete.field": "Op",
         "hoodie.record.merge.property.hoodie.payload.delete.marker": "D"},
     "hoodie.record.merge.property.hoodie.payload.delete.field"),
])
def test_a_table_whose_records_merge_by_another_payload_is_not_written(tmp_path, version, added, refused):
    """Hudi merges by the table's payload class (`HoodieRecordPayload.getPayloadClassName`; at 9 the merge
    properties `inferMergingConfigsForV9TableCreation` records for a deprecated payload, read through
    `HoodieTableConfig.getTableMergeProperties`): `AWSDmsAvroPayload.handleDeleteOperation` drops a
    record whose `Op` is `D`, `PartialUpdateAvroPayload` keeps old values where the new record has
    nulls. ingest writes and compacts whole records by the three built-in payloads, so such a table is
    refused for writing, naming the property, before any file changes; it is still read."""
    w = write_rounds(tmp_path / "t", version, rounds=1)
    props = Path(w.path) / ".hoodie" / "hoodie.properties"
    text = "".join(line for line in props.read_text().splitlines(keepends=True)
                   if line.split("=", 1)[0] not in added)
    props.write_text(text + "".join(f"{k}={v}\n" for k, v in added.items()))
    (Path(w.path) / ".hoodie" / "hoodie.properties.backup").unlink(missing_ok=True)
    before = sorted(str(p.relative_to(w.path)) for p in Path(w.path).rglob("*"))
    with pytest.raises(UnsupportedTable, match=f"{refused}={added[refused]} cannot be written"):
        w.write(random_batch(random.Random(1), 2, keys=12, size=3))
    assert sorted(str(p.relative_to(w.path)) for p in Path(w.path).rglob("*")) == before
    assert our_rows(w.path) == w.expected()


def test_a_table_whose_records_merge_as_partial_updates_is_not_written(tmp_path):
    """`HoodieTableConfig.PARTIAL_UPDATE_MODE` (version 9, default NONE): with IGNORE_DEFAULTS or
    FILL_UNAVAILABLE Hudi's readers merge a record as a partial one; ingest writes whole records, so such
    a table is refused for writing (and still read), NONE or absent is written."""
    w = write_rounds(tmp_path / "t", 9, rounds=1)
    props = Path(w.path) / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.table.partial.update.mode=IGNORE_DEFAULTS\n")
    (Path(w.path) / ".hoodie" / "hoodie.properties.backup").unlink(missing_ok=True)
    table = HudiTable.open(w.path)
    with pytest.raises(UnsupportedTable, match="partial.update.mode=IGNORE_DEFAULTS cannot be written"):
        table.config.check_supported(w.path, write=True)
    assert our_rows(w.path) == w.expected()
