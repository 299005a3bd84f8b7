"""Markers and rollback as Apache Hudi 0.14/0.15 write and read them, so that a Hudi writer can roll
back what ingest left and ingest can roll back what Hudi left.

Each test names the Java class and method whose rule it checks. Situations Hudi would leave behind
are built on a Hudi-written fixture table plus the files Hudi writes (an inflight deltacommit with
its workload profile, `MARKERS.type` and `MARKERS<n>` timeline-server markers).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import fastavro
import pytest
from hudi_avsc import ROLLBACK_METADATA_0_15, ROLLBACK_PLAN_0_15, parse_hudi_text

from ingest.cli import main
from ingest.faults import CRASH_EXIT_CODE
from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import CompactionSettings
from ingest.hudi.log.data_block import avro_data_block, decode_data_block, encode_avro_records
from ingest.hudi.log.log_block import BlockType, CommandType, HeaderKey
from ingest.hudi.log.log_reader import iter_log_blocks
from ingest.hudi.log.log_writer import append_log_blocks
from ingest.hudi.services import compaction, rollback
from ingest.hudi.table import markers
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import read_instant, start
from ingest.index import key_state as ks
from ingest.storage import Storage

# FSUtils' base and log file name patterns (hudi-common `FSUtils`), written out here so the check
# does not lean on the code under test.
BASE_FILE = re.compile(r"^[^/]+_\d+-\d+-\d+_\d+\.parquet$")
LOG_FILE = re.compile(r"^\.(.*)_(.*)\.(log)\.([0-9]*)(_(([0-9]*)-([0-9]*)-([0-9]*)))?$")

FIXTURE = "v6_trips_8i1u"
SF = "city=san_francisco"
SF_GROUP = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
SF_BASE_INSTANT = "20250331030642808"
SF_LOG = f".{SF_GROUP}_{SF_BASE_INSTANT}.log.1_0-26-85"
PROFILE_INSTANT = "20250331030645735"  # its inflight holds the workload profile of an update to SF_GROUP
FAILED = "20250331030700000"
NEW_GROUP = "5b0f7c2e-1d7a-4c55-9a43-3e0d0f6c9a11-0"


def hudi_rollback_metadata(data: bytes) -> dict:
    return next(iter(fastavro.reader(io.BytesIO(data), reader_schema=parse_hudi_text(ROLLBACK_METADATA_0_15))))


def hudi_rollback_plan(data: bytes) -> dict:
    return next(iter(fastavro.reader(io.BytesIO(data), reader_schema=parse_hudi_text(ROLLBACK_PLAN_0_15))))


def assert_every_field_set(metadata: dict) -> None:
    for key, value in metadata.items():
        assert value is not None, key
    for partition, pm in metadata["partitionMetadata"].items():
        assert not partition.startswith(".hoodie"), f"{partition} is not a data partition"
        for key, value in pm.items():
            assert value is not None, f"{partition}: {key} is null"


def completed_rollbacks(table: HudiTable) -> list[dict]:
    timeline = table.timeline()
    return [hudi_rollback_metadata(read_instant(table.storage, i)) for i in timeline.completed(Action.ROLLBACK)]


def hudi_marker_violations(root: Path) -> list[str]:
    """Markers `MarkerBasedRollbackStrategy.getRollbackRequests` would fail on: a CREATE or MERGE
    marker must name a base file (`Objects.requireNonNull(fileId, ...)`), an APPEND marker a log file,
    and each must sit in a data partition."""
    bad = []
    temp = root / ".hoodie" / ".temp"
    for instant_dir in (temp.iterdir() if temp.exists() else []):
        for path in instant_dir.rglob("*"):
            if path.is_dir() or path.name.startswith("MARKERS"):
                continue
            rel = path.relative_to(instant_dir).as_posix()
            data_file, _, io_type = rel.rpartition(".marker.")
            name = data_file.rpartition("/")[2]
            pattern = LOG_FILE if io_type == "APPEND" else BASE_FILE
            if data_file.startswith(".hoodie/") or not pattern.match(name):
                bad.append(rel)
    return bad


# -- ingest's own writer, killed at every fault point of a write --------------------------------------------

WRITER = textwrap.dedent("""
    import sys
    import pyarrow as pa
    from ingest.write.batch import LocalWriter
    from ingest.write.options import IndexOptions, IndexType, WriteOptions

    path, n = sys.argv[1], int(sys.argv[2])
    hudi = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts"}
    options = WriteOptions(table_path=path, table_name="t", hudi=hudi,
                           index=IndexOptions(type=IndexType.KEY, shards=2))
    keys = [f"k{i}" for i in range(6)]
    LocalWriter(options).write(pa.table({
        "id": keys, "part": [f"p{i % 2}" for i in range(6)], "ts": pa.array([n] * 6, pa.int64()),
        "v": [f"{k}-{n}" for k in keys],
    }))
""")


def run_script(script: str, *args: str, crash_at: str | None = None) -> int:
    """Run `script` in a fresh process, killed at the fault point `crash_at`; its exit code."""
    env = {k: v for k, v in os.environ.items() if k != "INGEST_CRASH_AT"}
    if crash_at:
        env["INGEST_CRASH_AT"] = crash_at
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode in (0, CRASH_EXIT_CODE), done.stderr[-3000:]
    return done.returncode


def run_writer(path: Path, n: int, crash_at: str | None = None) -> int:
    return run_script(WRITER, str(path), str(n), crash_at=crash_at)


COMPACTOR = textwrap.dedent("""
    import sys
    from ingest.hudi.services import compaction
    from ingest.hudi.table.table import HudiTable

    compaction.execute(HudiTable.open(sys.argv[1]), sys.argv[2])
""")


def run_compaction(path: Path, instant: str, crash_at: str | None = None) -> int:
    return run_script(COMPACTOR, str(path), instant, crash_at=crash_at)


@pytest.mark.slow
def test_markers_after_every_crash_name_only_hudi_data_files(tmp_path):
    """`MarkerBasedRollbackStrategy.getRollbackRequests` (0.15): every CREATE/MERGE marker must name a
    base file and every APPEND marker a log file of a data partition, or the whole rollback fails;
    `BaseRollbackActionExecutor.finishRollback`: the failed instant's files go before the completed
    rollback; the rollback metadata reads with Hudi 0.15's `HoodieRollbackMetadata` schema, every field
    set. Our key-index segments, which have no marker, never outlive the instant that wrote them."""
    path = tmp_path / "t"
    assert run_writer(path, 0) == 0
    storage = Storage(str(path))
    crashes = ["after_data_write", "mid_rollback", "before_rollback_complete", "mid_commit", "after_commit"]
    for n, point in enumerate(crashes, start=1):
        assert run_writer(path, n, point) == CRASH_EXIT_CODE, point
        assert hudi_marker_violations(path) == [], point
        timeline = HudiTable.open(str(path)).timeline()
        if point == "before_rollback_complete":
            # The failed write is already off the timeline, the rollback not yet complete.
            assert not timeline.pending(Action.DELTA_COMMIT)
            assert [i.state for i in timeline.pending(Action.ROLLBACK)] == [State.INFLIGHT]
    assert run_writer(path, 9) == 0
    table = HudiTable.open(str(path))
    timeline = table.timeline()
    assert not timeline.pending()
    rollbacks = completed_rollbacks(table)
    assert len(rollbacks) == 2, "the instants of after_data_write and mid_commit, each rolled back once"
    for metadata in rollbacks:
        assert_every_field_set(metadata)
    rolled_back = {c for m in rollbacks for c in m["commitsRollback"]}
    segments = [e.name for e in storage.walk_files(ks.INDEX_ROOT)]
    assert segments and not [s for s in segments if s.split(".")[0] in rolled_back]
    rows = {(r["id"], r["ts"], r["v"]) for r in read_snapshot(table).to_pylist()}
    assert rows == {(f"k{i}", 9, f"k{i}-9") for i in range(6)}

    # The table services' fault point that leaves markers: a compaction killed midway.
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    assert run_compaction(path, instant, "mid_compaction") == CRASH_EXIT_CODE
    assert list(markers.list_markers(storage, instant)) and hudi_marker_violations(path) == []
    assert run_compaction(path, instant) == 0
    assert HudiTable.open(str(path)).timeline().get(instant).state is State.COMPLETED


def test_segments_of_an_instant_hudi_rolled_back_are_deleted_by_the_next_writer(tmp_path):
    """`MarkerBasedRollbackStrategy` rolls back only files its markers name, so a Hudi writer rolling
    back our failed instant leaves our key-index segments; once archival moved the timeline's start
    past that instant they would look committed. The next writer deletes them by instant time."""
    path = tmp_path / "t"
    assert run_writer(path, 0) == 0
    assert run_writer(path, 1, "after_data_write") == CRASH_EXIT_CODE
    table = HudiTable.open(str(path))
    failed = table.timeline().pending(Action.DELTA_COMMIT)[0].timestamp
    # As a Hudi writer does it: plan from the markers, delete, remove the instant, complete.
    rollback.rollback(table.storage, table.timeline(), failed)
    plan = hudi_rollback_plan(read_instant(table.storage, table.timeline().completed(Action.ROLLBACK)[0].to(
        State.REQUESTED)))
    assert all(not r["partitionPath"].startswith(".hoodie") for r in plan["RollbackRequests"])
    left = [e.path for e in table.storage.walk_files(ks.INDEX_ROOT) if e.name.startswith(failed)]
    assert left, "Hudi's rollback does not know our segments"
    assert run_writer(path, 2) == 0
    assert not [p for p in left if table.storage.exists(p)]
    rows = {(r["id"], r["ts"]) for r in read_snapshot(HudiTable.open(str(path))).to_pylist()}
    assert rows == {(f"k{i}", 2) for i in range(6)}


# -- what a Hudi writer leaves behind, rolled back by ingest ----------------------------------------------


def failed_hudi_write(root: Path, *, marker_kind: str | None) -> dict:
    """A deltacommit Hudi's Spark writer left inflight on the fixture: an update appended to the SF log
    file and an insert into a new file group (a base file in chennai), with the markers Hudi writes."""
    storage = Storage(str(root))
    hoodie = root / ".hoodie"
    (hoodie / f"{FAILED}.deltacommit.requested").write_bytes(b"")
    (hoodie / f"{FAILED}.deltacommit.inflight").write_bytes(
        (hoodie / f"{PROFILE_INSTANT}.deltacommit.inflight").read_bytes())
    log_path = f"{SF}/{SF_LOG}"
    block = next(b for b in iter_log_blocks(storage, log_path) if b.block_type is BlockType.AVRO_DATA)
    schema = block.schema
    records = [{**r, "fare": 999.0} for r in decode_data_block(block)]
    append_log_blocks(storage, log_path, [avro_data_block(FAILED, schema, encode_avro_records(records, schema))])
    chennai = next((root / "city=chennai").glob("*.parquet"))
    new_base = f"city=chennai/{NEW_GROUP}_1-7-9_{FAILED}.parquet"
    shutil.copyfile(chennai, root / new_base)
    lines = [f"{new_base}.marker.CREATE", f"{log_path}.marker.APPEND"]
    folder = root / ".hoodie" / ".temp" / FAILED
    if marker_kind == "TIMELINE_SERVER_BASED":
        folder.mkdir(parents=True)
        (folder / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
        (folder / "MARKERS0").write_text(lines[0] + "\n")
        (folder / "MARKERS1").write_text(lines[1] + "\n")
    elif marker_kind == "DIRECT":
        for line in lines:
            (folder / line).parent.mkdir(parents=True, exist_ok=True)
            (folder / line).write_bytes(b"")
    return {"log": log_path, "log_size": storage.size(log_path), "new_base": new_base}


def rows_of(root: Path) -> list[tuple]:
    return sorted((r["uuid"], r["fare"]) for r in read_snapshot(HudiTable.open(str(root))).to_pylist())


def hudi_rs_rows(root: Path) -> list[tuple]:
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(str(root)).build()
    return sorted((r["uuid"], r["fare"]) for b in table.read() for r in b.to_pylist())


def last_block(storage: Storage, path: str):
    blocks = list(iter_log_blocks(storage, path))
    return blocks[-1]


@pytest.mark.parametrize("marker_kind", ["TIMELINE_SERVER_BASED", "DIRECT"])
def test_rollback_of_a_hudi_write_reads_both_marker_kinds(hudi_table_copy, marker_kind):
    """`MarkerBasedRollbackUtils.getAllMarkerPaths` with `MarkerUtils.readMarkerType` and
    `readTimelineServerBasedMarkersFromFileSystem`; `MarkerBasedRollbackStrategy.getRollbackRequests`
    (0.15): a CREATE marker's base file is deleted (request carries its fileId and instant), an APPEND
    marker of an older slice's log file gets a rollback block, planned as `{log file name: its
    length}`; `BaseRollbackHelper.maybeDeleteAndCollectStats` fills `rollbackLogFiles` (full path:
    size after) and `logFilesFromFailedCommit` (the plan's entries)."""
    root = hudi_table_copy(FIXTURE)
    before = rows_of(root)
    left = failed_hudi_write(root, marker_kind=marker_kind)
    storage = Storage(str(root))
    assert main(["rollback", str(root), FAILED]) == 0

    table = HudiTable.open(str(root))
    timeline = table.timeline()
    assert timeline.get(FAILED) is None
    rollback_instant = timeline.last_completed(Action.ROLLBACK)
    plan = hudi_rollback_plan(read_instant(storage, rollback_instant.to(State.REQUESTED)))
    requests = {(r["partitionPath"], r["fileId"]): r for r in plan["RollbackRequests"]}
    assert requests[("city=chennai", NEW_GROUP)]["filesToBeDeleted"] == [storage.url(left["new_base"])]
    assert requests[("city=chennai", NEW_GROUP)]["latestBaseInstant"] == FAILED
    append = requests[(SF, SF_GROUP)]
    assert append["latestBaseInstant"] == SF_BASE_INSTANT and append["filesToBeDeleted"] == []
    assert append["logBlocksToBeDeleted"] == {SF_LOG: left["log_size"]}

    assert not storage.exists(left["new_base"])
    block = last_block(storage, left["log"])
    assert block.block_type is BlockType.COMMAND
    assert block.get(HeaderKey.TARGET_INSTANT_TIME) == FAILED
    assert block.get(HeaderKey.COMMAND_BLOCK_TYPE) == str(int(CommandType.ROLLBACK_BLOCK))
    assert block.get(HeaderKey.INSTANT_TIME) == rollback_instant.timestamp

    metadata = hudi_rollback_metadata(read_instant(storage, rollback_instant))
    assert_every_field_set(metadata)
    sf = metadata["partitionMetadata"][SF]
    assert sf["rollbackLogFiles"] == {storage.url(left["log"]): storage.size(left["log"])}
    assert sf["logFilesFromFailedCommit"] == {SF_LOG: left["log_size"]}
    assert metadata["partitionMetadata"]["city=chennai"]["successDeleteFiles"] == [storage.url(left["new_base"])]
    assert metadata["totalFilesDeleted"] == 1
    assert not (root / ".hoodie" / ".temp" / FAILED).exists()
    assert rows_of(root) == before
    assert hudi_rs_rows(root) == before


def test_rollback_of_a_hudi_write_without_markers_lists_files(hudi_table_copy):
    """`ListingBasedRollbackStrategy.getRollbackRequests` (what Hudi runs with
    `hoodie.rollback.using.markers=false`), DELTA_COMMIT case: every base file of the failed instant
    is deleted (`getSerializablePathFilter`), and each updated file group of its (inflight) commit
    metadata whose slice began before it gets a rollback block (`getRollbackRequestToAppend`:
    `{constructAbsolutePath(basePath, stat.path): totalWriteBytes or 1}`)."""
    root = hudi_table_copy(FIXTURE)
    before = rows_of(root)
    left = failed_hudi_write(root, marker_kind=None)
    storage = Storage(str(root))
    assert main(["rollback", str(root), FAILED]) == 0

    timeline = HudiTable.open(str(root)).timeline()
    rollback_instant = timeline.last_completed(Action.ROLLBACK)
    plan = hudi_rollback_plan(read_instant(storage, rollback_instant.to(State.REQUESTED)))
    append = [r for r in plan["RollbackRequests"] if r["logBlocksToBeDeleted"]]
    assert [(r["partitionPath"], r["fileId"], r["latestBaseInstant"]) for r in append] == [
        (SF, SF_GROUP, SF_BASE_INSTANT)]
    assert append[0]["logBlocksToBeDeleted"] == {storage.url(""): 1}  # the profile's stat has no path
    assert not storage.exists(left["new_base"])
    block = last_block(storage, left["log"])
    assert block.block_type is BlockType.COMMAND and block.get(HeaderKey.TARGET_INSTANT_TIME) == FAILED
    assert_every_field_set(hudi_rollback_metadata(read_instant(storage, rollback_instant)))
    assert rows_of(root) == before
    assert hudi_rs_rows(root) == before


def test_a_pending_hudi_rollback_naming_files_by_a_qualified_path_deletes_them(hudi_table_copy):
    """`BaseRollbackHelper.deleteFiles` deletes `new Path(fileToDelete)` and finds its partition with
    `FSUtils.getRelativePartitionPath`, which compares paths without scheme or authority: a Hudi writer
    on local storage plans `file:/...` (Hadoop's qualified listing), on S3 `s3a://...`, whatever URL
    ingest opened the table by. Resuming such a plan deletes those files; a file a plan names outside
    the table is left alone and reported as a failed delete."""
    root = hudi_table_copy(FIXTURE)
    before = rows_of(root)
    left = failed_hudi_write(root, marker_kind="DIRECT")
    storage = Storage(str(root))
    table = HudiTable.open(str(root))
    stranger = root.parent / "not-the-table.parquet"
    stranger.write_bytes(b"keep")
    requests = rollback.plan_rollback(storage, table.timeline(), table.timeline().get(FAILED))
    plan = {
        "instantToRollback": {"commitTime": FAILED, "action": "deltacommit"},
        "RollbackRequests": [
            {**r, "filesToBeDeleted": [f"file:{u}" for u in r["filesToBeDeleted"]]}
            for r in (req.to_avro(storage) for req in requests)
        ] + [{"partitionPath": "city=chennai", "fileId": "", "latestBaseInstant": "",
              "filesToBeDeleted": [f"file:{root}/../{stranger.name}"], "logBlocksToBeDeleted": {}}],
        "version": 1,
    }
    assert any(r["filesToBeDeleted"] for r in plan["RollbackRequests"][:-1])
    pending = Instant("20250331030800000", Action.ROLLBACK, State.REQUESTED)
    storage.write(f".hoodie/{pending.file_name}", avro_models.serialize(avro_models.ROLLBACK_PLAN, plan))

    done = rollback.resume(storage, HudiTable.open(str(root)).timeline(), pending)
    assert not storage.exists(left["new_base"])
    assert stranger.read_bytes() == b"keep"
    chennai = hudi_rollback_metadata(read_instant(storage, done))["partitionMetadata"]["city=chennai"]
    assert chennai["successDeleteFiles"] == [storage.url(left["new_base"])]
    assert chennai["failedDeleteFiles"] == [f"file:{root}/../{stranger.name}"]
    assert rows_of(root) == before
    assert hudi_rs_rows(root) == before


def test_rollback_block_on_storage_without_append_uses_hudis_rollover_token(hudi_table_copy):
    """`BaseRollbackHelper.maybeDeleteAndCollectStats` builds its log writer without a write token, so
    where the latest log file cannot be appended to `HoodieLogFormatWriter` rolls over to the next
    version named with `HoodieLogFormat.UNKNOWN_WRITE_TOKEN` (`1-0-1`, `WriterBuilder.build`)."""
    root = hudi_table_copy(FIXTURE)
    failed_hudi_write(root, marker_kind="DIRECT")
    storage = Storage(f"memory://{root.name}-{os.getpid()}")
    for file in root.rglob("*"):
        if file.is_file():
            storage.write(file.relative_to(root).as_posix(), file.read_bytes())
    assert not storage.can_append
    done = rollback.rollback(storage, HudiTable.open(storage.base_url).timeline(), FAILED)
    rolled = f"{SF}/.{SF_GROUP}_{SF_BASE_INSTANT}.log.2_1-0-1"
    block = last_block(storage, rolled)
    assert block.block_type is BlockType.COMMAND and block.get(HeaderKey.TARGET_INSTANT_TIME) == FAILED
    metadata = hudi_rollback_metadata(read_instant(storage, done))
    assert metadata["partitionMetadata"][SF]["rollbackLogFiles"] == {storage.url(rolled): storage.size(rolled)}
    storage.delete_tree("")


@pytest.mark.parametrize("marker_kind", ["TIMELINE_SERVER_BASED", None])
def test_resuming_a_compaction_hudi_left_inflight_removes_its_files(hudi_table_copy, marker_kind):
    """A compaction a Hudi executor left inflight: its files are found through its timeline-server
    markers (`MarkerBasedRollbackUtils.getAllMarkerPaths`), or with none by listing the instant's base
    files (`ListingBasedRollbackStrategy`, COMPACTION case outside a restore:
    `listBaseFilesToBeDeleted`), and removed before the compaction runs again."""
    root = hudi_table_copy(FIXTURE)
    before = rows_of(root)
    table = HudiTable.open(str(root))
    instant = compaction.schedule(table, CompactionSettings(), force=True)
    assert instant is not None
    start(table.storage, table.timeline().get(instant))
    stray = f"{SF}/{SF_GROUP}_7-77-0_{instant}.parquet"
    shutil.copyfile(next((root / SF).glob("*.parquet")), root / stray)
    if marker_kind:
        folder = root / ".hoodie" / ".temp" / instant
        folder.mkdir(parents=True)
        (folder / "MARKERS.type").write_text(marker_kind)
        (folder / "MARKERS0").write_text(f"{stray}.marker.CREATE\n")
    compaction.execute(HudiTable.open(str(root)), instant)
    assert not (root / stray).exists()
    assert HudiTable.open(str(root)).timeline().get(instant).state is State.COMPLETED
    assert rows_of(root) == before
    assert hudi_rs_rows(root) == before


def test_markers_refuse_files_hudi_cannot_roll_back(tmp_path):
    """`MarkerBasedRollbackStrategy.getRollbackRequests`: `Objects.requireNonNull(fileId, "Cannot find
    valid fileId from path")` for a CREATE marker naming no base file: such a marker is never written."""
    storage = Storage(str(tmp_path))
    with pytest.raises(ValueError, match="base or log file"):
        markers.create(storage, FAILED, ".hoodie/.aux/ingest/key_index/0001", f"{FAILED}.delta.parquet",
                       markers.IOType.CREATE)
    assert not (tmp_path / ".hoodie").exists()
