"""A writer stalled past its lease has its instant rolled back by the writer that took the lease over, while
its Spark tasks, which do not stall with its driver, may still be writing. Hudi's readers take the files and
log blocks of an instant that is no longer on the timeline for committed once it is older than the
timeline's first instant (`HoodieTimeline.containsOrBeforeTimelineStarts`, asked by
`AbstractHoodieLogRecordReader.scanInternal` for each data block and by `HoodieFileGroup.isFileSliceCommitted`
for each slice), so nothing of such an instant may stay behind unless a rollback command block drops it
(`AbstractHoodieLogRecordReader`: a ROLLBACK_BLOCK removes the blocks of its TARGET_INSTANT_TIME read before
it). These tests build the interleavings with real writers and check what each reader sees.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from ingest.errors import ConcurrentWriterError
from ingest.hudi.log.log_block import BlockType
from ingest.hudi.log.log_reader import read_log_file
from ingest.hudi.services import rollback
from ingest.hudi.table.snapshot import ReadContext, merged_blocks, read_snapshot, scan_logs
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.hudi.timeline.timeline import CompletedInstants
from ingest.write import fence, tasks
from ingest.write.batch import LocalEngine, LocalWriter, incoming_avro_schema, open_for_write
from ingest.write.commit import begin, complete_transaction
from ingest.write.file_group_writer import TaskIdentity, cut_back
from ingest.write.options import IndexOptions, IndexType, WriteOptions
from ingest.write.plan import build_plan

VERSIONS = [6, 8]


def opts(path: Path, version: int, index: IndexType = IndexType.BUCKET) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="t", hudi={
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.write.table.version": str(version),
    }, index=IndexOptions(type=index, bucket_count=1))


def rows(*records) -> pa.Table:
    return pa.table({"id": [r[0] for r in records], "part": [r[1] for r in records],
                     "ts": pa.array([r[2] for r in records], pa.int64()), "v": [r[3] for r in records]})


def ours(path: Path) -> set[tuple]:
    return {(r["id"], r["part"], r["ts"], r["v"]) for r in read_snapshot(HudiTable.open(str(path))).to_pylist()}


def hudi_rs(path: Path) -> list[tuple]:
    import hudi

    out = []
    for batch in hudi.HudiTableBuilder.from_base_uri(str(path)).build().read():
        out.extend((r["id"], r["part"], r["ts"], r["v"]) for r in batch.to_pylist())
    return sorted(out)


def data_files(path: Path) -> dict[str, bytes]:
    return {str(f.relative_to(path)): f.read_bytes() for f in path.rglob("*")
            if f.is_file() and ".hoodie" not in f.relative_to(path).parts}


class Stalled:
    """A writer that began its instant and planned its write, then stalled before its tasks ran."""

    def __init__(self, path: Path, version: int, data: pa.Table, index: IndexType = IndexType.BUCKET):
        options = opts(path, version, index)
        table, self.options = open_for_write(options, data.schema)
        self.prepared = LocalEngine().prepare(data, self.options, "ts")
        self.txn = begin(table, incoming_avro_schema(data.schema, "t"), "upsert",
                         heartbeat_settings=self.options.heartbeat)
        self.plan = build_plan(self.txn, self.options)
        self.routed = tasks.route(self.plan, tasks.conform(self.plan, self.prepared.records))

    def task_rows(self, part: str) -> pa.Table:
        """The rows one Spark task of the write gets: here, one partition's."""
        return self.routed.filter(pa.compute.equal(self.routed.column("part"), part))


def rival(path: Path, version: int, data: pa.Table, index: IndexType = IndexType.BUCKET) -> None:
    """Another writer's commit: it takes the lease the stalled writer lost and rolls the stalled instant back."""
    LocalWriter(opts(path, version, index)).write(data)


def stray_blocks_read_once_archived(path: Path, instant: str) -> list[str]:
    """Instants of the blocks a reader merges once the active timeline starts after `instant` (archival
    passed it): what `containsOrBeforeTimelineStarts` lets through, less what command blocks drop."""
    table = HudiTable.open(str(path))
    timeline = table.timeline()
    completed = CompletedInstants(frozenset(i.timestamp for i in timeline.completed()), archived_before=instant + "1")
    ctx = ReadContext.of(table, table.schema(timeline), completed)
    found = []
    for slice_ in table.view(timeline).latest_file_slices():
        found.extend(b.instant_time for b in merged_blocks(scan_logs(ctx, slice_)) if b.instant_time == instant)
    return found


@pytest.mark.parametrize("index", list(IndexType))
@pytest.mark.parametrize("version", VERSIONS)
def test_a_task_writes_nothing_for_an_instant_rolled_back_before_it_ran(table_dir, version, index):
    """Both indexes' tasks: the bucket task, and the key index's shard and file-group tasks."""
    rival(table_dir, version, rows(("a", "p", 1, "x")), index)
    stalled = Stalled(table_dir, version, rows(("a", "p", 2, "stalled"), ("c", "r", 2, "stalled")), index)
    rival(table_dir, version, rows(("b", "q", 3, "y")), index)
    before = data_files(table_dir)

    with pytest.raises(fence.InstantRolledBackError, match=rf"instant {stalled.txn.instant_time} was rolled back while "
                                                      r"its tasks ran: rollback \d{17} \(completed\) names it; writing nothing"):
        LocalEngine().run(stalled.plan, stalled.prepared)
    assert data_files(table_dir) == before
    assert ours(table_dir) == {("a", "p", 1, "x"), ("b", "q", 3, "y")}
    assert hudi_rs(table_dir) == [("a", "p", 1, "x"), ("b", "q", 3, "y")]


@pytest.mark.parametrize("version", VERSIONS)
def test_tasks_take_back_what_they_wrote_for_an_instant_rolled_back_while_they_ran(table_dir, version):
    """Task 1 wrote before the rollback was planned (the rollback sees its marker and undoes its write);
    task 2 wrote after (its marker came too late for the plan): both tasks check their instant after
    writing, and task 2 takes back its append (a cut) and its new file group (a delete)."""
    rival(table_dir, version, rows(("a", "p", 1, "x"), ("b", "q", 1, "x")))
    stalled = Stalled(table_dir, version, rows(("a", "p", 2, "stalled"), ("b", "q", 2, "stalled"),
                                               ("c", "r", 2, "stalled")))
    instant = stalled.txn.instant_time
    task1 = tasks._bucket_writes(stalled.plan, stalled.task_rows("p"), TaskIdentity(0, 0, 0))
    rival(table_dir, version, rows(("d", "s", 3, "y")))
    after_rollback = data_files(table_dir)
    task2 = tasks._bucket_writes(stalled.plan, pa.concat_tables([stalled.task_rows("q"), stalled.task_rows("r")]),
                                 TaskIdentity(1, 0, 0))
    assert {s.partition_path for s in task2.stats} == {"q", "r"}
    assert ours(table_dir) == {("a", "p", 1, "x"), ("b", "q", 1, "x"), ("d", "s", 3, "y")}
    if version == 6:  # the hazard: task 2's blocks count as committed once archival passes the instant
        assert stray_blocks_read_once_archived(table_dir, instant)

    assert (table_dir / ".hoodie" / ".temp" / instant).exists(), "task 2's markers, made after the rollback"
    for result in (task1, task2):
        with pytest.raises(fence.InstantRolledBackError, match="the files this task wrote are taken back"):
            tasks._fenced(stalled.plan, result)
    assert data_files(table_dir) == after_rollback
    assert not (table_dir / ".hoodie" / ".temp" / instant).exists(), "markers left for a rolled-back instant"
    assert not stray_blocks_read_once_archived(table_dir, instant)
    assert ours(table_dir) == {("a", "p", 1, "x"), ("b", "q", 1, "x"), ("d", "s", 3, "y")}
    assert hudi_rs(table_dir) == [("a", "p", 1, "x"), ("b", "q", 1, "x"), ("d", "s", 3, "y")]


def test_blocks_another_writer_appended_after_are_rolled_back_in_place(table_dir):
    """Table version 6 appends to a slice's log file: when another writer appended after the stalled
    task's blocks, cutting them would cut its blocks too, so the task appends the rollback command block
    the rollback that missed its marker would have written (the rollback's instant, the stalled one as
    target), and readers drop its blocks even once the timeline starts after them."""
    rival(table_dir, 6, rows(("a", "p", 1, "x")))
    stalled = Stalled(table_dir, 6, rows(("a", "p", 2, "stalled")))
    instant = stalled.txn.instant_time
    rival(table_dir, 6, rows(("d", "s", 3, "y")))  # rolls the stalled instant back
    (rollback,) = HudiTable.open(str(table_dir)).timeline().completed(Action.ROLLBACK)
    written = tasks._bucket_writes(stalled.plan, stalled.task_rows("p"), TaskIdentity(0, 0, 0))
    rival(table_dir, 6, rows(("a", "p", 4, "z")))  # appends after the stalled task's block
    (log_path,) = {s.path for s in written.stats}
    assert [b.instant_time for b in read_log_file(HudiTable.open(str(table_dir)).storage, log_path)][-2] == instant
    assert stray_blocks_read_once_archived(table_dir, instant)

    with pytest.raises(fence.InstantRolledBackError):
        tasks._fenced(stalled.plan, written)
    last = read_log_file(HudiTable.open(str(table_dir)).storage, log_path)[-1]
    assert last.block_type is BlockType.COMMAND
    assert (last.instant_time, last.target_instant_time) == (rollback.timestamp, instant)
    assert not stray_blocks_read_once_archived(table_dir, instant)
    assert ours(table_dir) == {("a", "p", 4, "z"), ("d", "s", 3, "y")}
    assert hudi_rs(table_dir) == [("a", "p", 4, "z"), ("d", "s", 3, "y")]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_stalled_driver_never_completes_an_instant_another_writer_rolled_back(table_dir, version):
    """The driver checks once more just before the commit file: completing an instant whose files a
    rollback deleted would publish a commit that names missing files."""
    rival(table_dir, version, rows(("a", "p", 1, "x")))
    stalled = Stalled(table_dir, version, rows(("a", "p", 2, "stalled")))
    result = LocalEngine().run(stalled.plan, stalled.prepared)
    rival(table_dir, version, rows(("b", "q", 3, "y")))
    with pytest.raises(ConcurrentWriterError, match=f"instant {stalled.txn.instant_time} was rolled back"):
        complete_transaction(stalled.txn, list(result.stats), planned_sizes=stalled.plan.planned_sizes())
    timeline = HudiTable.open(str(table_dir)).timeline()
    assert timeline.get(stalled.txn.instant_time) is None
    assert ours(table_dir) == {("a", "p", 1, "x"), ("b", "q", 3, "y")}
    assert hudi_rs(table_dir) == [("a", "p", 1, "x"), ("b", "q", 3, "y")]


def test_cut_back_never_cuts_another_writers_blocks(table_dir):
    """A task that finds its log file longer than its plan cuts only blocks of its own instant (an earlier
    attempt of its own): `HoodieLogFormatWriter` only ever appends, so blocks of another instant there are
    another writer's committed ones."""
    rival(table_dir, 6, rows(("a", "p", 1, "x")))
    stalled = Stalled(table_dir, 6, rows(("a", "p", 2, "stalled")))
    (target,) = [t for t in stalled.plan.targets.values() if t.latest_log]
    path = target.path(target.latest_log)
    rival(table_dir, 6, rows(("a", "p", 3, "y")))
    storage = HudiTable.open(str(table_dir)).storage
    grown = storage.read(path)
    assert len(grown) > target.latest_log_size
    with pytest.raises(ConcurrentWriterError, match=rf"holds blocks of instant\(s\) \d{{17}} past the "
                                                    rf"{target.latest_log_size} bytes"):
        cut_back(storage, path, target.latest_log_size, len(grown), stalled.txn.instant_time)
    assert storage.read(path) == grown


@pytest.mark.parametrize("version", VERSIONS)
def test_a_rollback_also_undoes_what_the_failed_writes_tasks_wrote_after_its_plan(table_dir, version):
    """Task 1 of the stalled write ran before another writer planned its rollback, task 2 after, so the
    plan names task 1's files only. Task 2 may have looked for a rollback before the plan was recorded, so
    the rollback lists the instant's markers again when it carries the plan out, and undoes task 2's
    append and new file group too."""
    rival(table_dir, version, rows(("a", "p", 1, "x"), ("b", "q", 1, "x")))
    stalled = Stalled(table_dir, version, rows(("a", "p", 2, "stalled"), ("b", "q", 2, "stalled"),
                                               ("c", "r", 2, "stalled")))
    instant = stalled.txn.instant_time
    tasks._bucket_writes(stalled.plan, stalled.task_rows("p"), TaskIdentity(0, 0, 0))
    storage = HudiTable.open(str(table_dir)).storage
    requested, _, planned = rollback.request_rollback(storage, HudiTable.open(str(table_dir)).timeline(), instant)
    assert {r.partition_path for r in planned} == {"p"}
    task2 = tasks._bucket_writes(stalled.plan, pa.concat_tables([stalled.task_rows("q"), stalled.task_rows("r")]),
                                 TaskIdentity(1, 0, 0))
    assert {s.partition_path for s in task2.stats} == {"q", "r"}
    if version == 6:
        assert stray_blocks_read_once_archived(table_dir, instant)

    rollback.resume(storage, HudiTable.open(str(table_dir)).timeline(), requested)
    assert not stray_blocks_read_once_archived(table_dir, instant)
    assert not [f for f in (table_dir / "r").rglob("*") if f.is_file()]
    assert ours(table_dir) == {("a", "p", 1, "x"), ("b", "q", 1, "x")}
    assert hudi_rs(table_dir) == [("a", "p", 1, "x"), ("b", "q", 1, "x")]
    with pytest.raises(fence.InstantRolledBackError):  # the tasks' own look finds nothing left to take back
        tasks._fenced(stalled.plan, task2)
    assert ours(table_dir) == {("a", "p", 1, "x"), ("b", "q", 1, "x")}
