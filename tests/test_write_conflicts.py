"""A write that another writer's instant overlapped while it ran is not committed (`ingest.write.conflicts`).

Hudi's writers under optimistic concurrency control run `SimpleConcurrentFileWritesConflictResolutionStrategy`
before they commit: a commit, deltacommit or replacecommit that completed since the write began, or a
compaction or clustering scheduled since, conflicts when it shares a file group with the write
(`getCandidateInstants`, `hasConflict`), unless it is a compaction requested before the write's instant
(`resolveConflict`). A Hudi clustering scheduled while ingest appends to a group it plans to replace would
otherwise drop those rows from every read once it completes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from model import Op
from service_tables import hudi_rs_rows, our_rows, to_table
from test_pending_clustering import key_index_writer, schedule_clustering

from ingest.errors import ConcurrentWriterError, WriteConflict
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.hudi.timeline.timeline import Timeline
from ingest.storage import Storage
from ingest.write import conflicts
from ingest.write.batch import LocalEngine

OVERLAP = "Cannot resolve conflicts for overlapping writes"


@dataclass
class DuringWrite(LocalEngine):
    """Runs `action` once, after the batch's files are written and before its commit: what another
    writer does while this one's tasks run."""

    action: Callable[[], None] | None = None

    def run(self, plan, prepared):
        result = super().run(plan, prepared)
        if self.action is not None:
            action, self.action = self.action, None
            action()
        return result


def first_table(path: Path):
    w = key_index_writer(path)
    w.write(to_table([Op(f"k{i}", city, 1, False, {"fare": float(i)})
                      for i, city in enumerate(["chennai", "chennai", "sao_paulo", "sao_paulo"])]))
    table = HudiTable.open(str(path))
    groups = {s.partition_path: (s.partition_path, s.file_id) for s in table.view().latest_file_slices()}
    return w, table, groups


def completed_deltacommits(path: Path) -> list[str]:
    return sorted(i.timestamp for i in HudiTable.open(str(path)).timeline().completed(Action.DELTA_COMMIT))


def test_a_clustering_scheduled_during_the_write_on_its_file_group_fails_it_then_the_write_goes_again(tmp_path):
    path = tmp_path / "t"
    w, table, groups = first_table(path)
    before_rows, before_commits = our_rows(path), completed_deltacommits(path)
    scheduled = []

    def schedule() -> None:
        scheduled.append(table.timeline().new_instant_time())
        schedule_clustering(table, scheduled[0], [groups["city=chennai"]])

    w.engine = DuringWrite(action=schedule)
    update = to_table([Op("k0", "chennai", 2, False, {"fare": 10.0})])
    with pytest.raises(WriteConflict, match=OVERLAP) as caught:
        w.write(update)
    assert isinstance(caught.value, ConcurrentWriterError)  # the sink writes such a batch again (BatchRetry)
    assert scheduled[0] in str(caught.value) and groups["city=chennai"][1] in str(caught.value)
    assert completed_deltacommits(path) == before_commits
    assert our_rows(path) == before_rows and set(hudi_rs_rows(path)) == before_rows

    for f in (path / ".hoodie").glob(f"{scheduled[0]}.replacecommit.*"):
        f.unlink()  # the clustering is rolled back
    w.engine = LocalEngine()
    w.write(update)
    expected = {(k, c, t, f) for k, c, t, f in before_rows if k != "k0"} | {("k0", "chennai", 2, 10.0)}
    assert our_rows(path) == expected
    assert sorted(hudi_rs_rows(path)) == sorted(expected)


def test_a_clustering_of_other_file_groups_scheduled_during_the_write_lets_it_commit(tmp_path):
    path = tmp_path / "t"
    w, table, groups = first_table(path)
    w.engine = DuringWrite(action=lambda: schedule_clustering(table, table.timeline().new_instant_time(),
                                                               [groups["city=sao_paulo"]]))
    w.write(to_table([Op("k0", "chennai", 2, False, {"fare": 10.0})]))
    assert ("k0", "chennai", 2, 10.0) in our_rows(path)


def test_a_partition_deleted_during_the_write_fails_it(tmp_path):
    """A `delete_partition` (a replacecommit that replaces the partition's file groups and writes none)
    completing while ingest writes into that partition."""
    path = tmp_path / "t"
    w, table, groups = first_table(path)
    before_commits = completed_deltacommits(path)

    def delete_partition() -> None:
        t = table.timeline().new_instant_time()
        partition, file_id = groups["city=chennai"]
        table.storage.write(f".hoodie/{t}.replacecommit.requested", b"")
        table.storage.write(f".hoodie/{t}.replacecommit.inflight", b"")
        table.storage.write(f".hoodie/{t}.replacecommit", json.dumps({
            "partitionToWriteStats": {}, "partitionToReplaceFileIds": {partition: [file_id]},
            "compacted": False, "extraMetadata": {}, "operationType": "DELETE_PARTITION"}).encode())

    w.engine = DuringWrite(action=delete_partition)
    with pytest.raises(WriteConflict, match=rf"{OVERLAP} .*actionType=replacecommit"):
        w.write(to_table([Op("k1", "chennai", 2, False, {"fare": 11.0})]))
    assert completed_deltacommits(path) == before_commits


def _write(storage: Storage, name: str, metadata: dict | None = None) -> str:
    storage.write(f".hoodie/{name}", json.dumps(metadata).encode() if metadata is not None else b"")
    return name


def _stats(partition: str, file_id: str) -> dict:
    return {"partitionToWriteStats": {partition: [{"fileId": file_id, "partitionPath": partition}]},
            "operationType": "UPSERT"}


def test_which_instants_conflict_with_a_write(tmp_path):
    """`hasConflict`: a shared (partition, file id); `resolveConflict`: a compaction requested before the
    write's instant does not conflict, a deltacommit that completed meanwhile does; instants completed
    before the write read the timeline are not candidates."""
    storage = Storage(str(tmp_path))
    ours = "300"
    changed = frozenset({("p", "g1-0")})
    old = [_write(storage, "100.deltacommit", _stats("p", "g1-0")),
           _write(storage, "200.compaction.requested"), _write(storage, f"{ours}.deltacommit.requested")]
    before = Timeline.from_file_names(old)

    compaction_done = [*old, _write(storage, "200.commit", {**_stats("p", "g1-0"), "operationType": "COMPACT"})]
    conflicts.check(storage, before, Timeline.from_file_names(compaction_done), ours, changed)

    other = [*compaction_done, _write(storage, "310.deltacommit.requested"),
             _write(storage, "310.deltacommit", _stats("p", "g2-0"))]
    conflicts.check(storage, before, Timeline.from_file_names(other), ours, changed)  # another file group

    same = [*other, _write(storage, "320.deltacommit.requested"), _write(storage, "320.deltacommit", _stats("p", "g1-0"))]
    with pytest.raises(WriteConflict, match=rf"{OVERLAP} .*instantTime=320.*'g1-0' in partition 'p'"):
        conflicts.check(storage, before, Timeline.from_file_names(same), ours, changed)
    conflicts.check(storage, before, Timeline.from_file_names(same), ours, frozenset())  # it changed nothing


def test_the_spark_sink_writes_a_conflicting_batch_again_from_a_fresh_timeline(spark, tmp_path, monkeypatch):
    """The conflict is found by the driver before it commits; the sink's retry (`BatchRetry`, as Hudi's
    streaming sink retries) rolls the attempt back and writes the batch into the table as it now is."""
    from service_tables import HUDI_SETTINGS

    from ingest.spark.sink import HudiSink, SparkEngine
    from ingest.write.options import BatchRetry, IndexOptions, IndexType, WriteOptions

    path = tmp_path / "t"
    options = WriteOptions(table_path=str(path), table_name="trips", hudi=HUDI_SETTINGS,
                           index=IndexOptions(type=IndexType.KEY, shards=2),
                           batch_retry=BatchRetry(attempts=2, interval_ms=0))
    first = [Op(f"k{i}", "chennai" if i % 2 else "sao_paulo", 1, False, {"fare": float(i)}) for i in range(6)]
    update = [Op("k1", "chennai", 2, False, {"fare": 10.0}), Op("k2", "sao_paulo", 2, False, {"fare": 20.0})]
    with HudiSink(options, spark=spark) as sink:
        sink(spark.createDataFrame(to_table(first)), 0)
        table = HudiTable.open(str(path))
        (partition, file_id), = [(s.partition_path, s.file_id) for s in table.view().latest_file_slices()
                                 if s.partition_path == "city=chennai"]
        deleted = []
        run = SparkEngine.run

        def run_then_delete_partition(self, plan, prepared):
            result = run(self, plan, prepared)
            if not deleted:  # a Hudi `delete_partition` completes while the first attempt's tasks ran
                deleted.append(table.timeline().new_instant_time())
                t = deleted[0]
                for name, body in ((f"{t}.replacecommit.requested", b""), (f"{t}.replacecommit.inflight", b""),
                                   (f"{t}.replacecommit", json.dumps({
                                       "partitionToWriteStats": {}, "partitionToReplaceFileIds": {partition: [file_id]},
                                       "compacted": False, "extraMetadata": {},
                                       "operationType": "DELETE_PARTITION"}).encode())):
                    table.storage.write(f".hoodie/{name}", body)
            return result

        monkeypatch.setattr(SparkEngine, "run", run_then_delete_partition)
        sink(spark.createDataFrame(to_table(update)), 1)
    # chennai's first rows went with the partition; the retry wrote k1 into a new file group there.
    expected = {(o.key, o.partition, o.ts, o.values["fare"]) for o in first if o.partition == "sao_paulo" and o.key != "k2"}
    expected |= {(o.key, o.partition, o.ts, o.values["fare"]) for o in update}
    assert our_rows(path) == expected
    assert sorted(hudi_rs_rows(path)) == sorted(expected)
    assert len(completed_deltacommits(path)) == 2  # the first batch, and the retried one once
