"""A compaction (or clustering) that a Hudi compactor rolls back keeps its plan: `HoodieTable.rollbackInflightCompaction`
schedules and runs the rollback with `deleteInstants` false, then `revertInstantFromInflightToRequested` puts the
compaction back to requested, and it runs again from its plan. A compactor that stops inside that leaves a pending
rollback naming the inflight compaction. Removing the compaction instead would drop its plan, and at table version 6
the log files written since it was scheduled (named with its instant) would belong to no slice."""

from __future__ import annotations

import random

import pytest
from service_tables import ModelWriter, hudi_rs_rows, our_rows, random_batch

from ingest.errors import TimelineError
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.services import compaction, rollback
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action, State


def readers_agree(path, w: ModelWriter, version: int, compaction_pending: bool) -> None:
    """Our reader (Hudi's merge of a pending compaction's log files with the slice before it,
    `getLatestMergedFileSlicesBeforeOrOn`) reads the model's rows; so does hudi-rs, except at table version 6
    while a compaction is pending, where hudi-rs 0.5 leaves out the logs written into the pending
    compaction's slice (so it does for a compaction Hudi scheduled, without any rollback)."""
    assert our_rows(path) == w.expected()
    if version >= 8 or not compaction_pending:
        assert sorted(hudi_rs_rows(path)) == sorted(w.expected())


def stopped_inside_a_compaction_rollback(path, version: int) -> tuple[ModelWriter, random.Random, str, str]:
    """A table with compaction C inflight, a write after C was scheduled, and the rollback Hudi's compactor
    recorded for C (`scheduleRollback`) before it stopped: (writer, its random source, C, the rollback)."""
    w = ModelWriter(path, buckets=2, version=version)
    rng = random.Random(version)
    for n in range(1, 4):
        w.write(random_batch(rng, n, keys=12, size=7))
    c = compaction.schedule(w.table, ServiceSettings().compaction, force=True)
    compaction.start_execution(w.table, c).heartbeat.release()  # inflight; its executor is gone
    w.write(random_batch(rng, 4, keys=12, size=7))
    timeline = w.table.timeline()
    requested, _, _ = rollback.request_rollback(w.table.storage, timeline, c, timeline.new_instant_time())
    return w, rng, c, requested.timestamp


@pytest.mark.parametrize("version", [6, 8, 9])
def test_a_write_leaves_a_compactors_rollback_to_it_and_the_compactor_finishes_it_keeping_the_plan(tmp_path, version):
    path = tmp_path / "t"
    w, rng, c, rb = stopped_inside_a_compaction_rollback(path, version)
    w.write(random_batch(rng, 5, keys=12, size=7))  # not the writer's to finish, nor a reason to fail
    timeline = HudiTable.open(str(path)).timeline()
    assert timeline.get(c).state is State.INFLIGHT and timeline.get(rb).state is State.REQUESTED
    readers_agree(path, w, version, compaction_pending=True)

    compaction.execute(HudiTable.open(str(path)), c)  # finishes the rollback, then runs C from its plan
    timeline = HudiTable.open(str(path)).timeline()
    assert (timeline.get(rb).state, timeline.get(c).state) == (State.COMPLETED, State.COMPLETED)
    assert timeline.get(c).action is Action.COMPACTION
    w.write(random_batch(rng, 6, keys=12, size=7))
    readers_agree(path, w, version, compaction_pending=False)


@pytest.mark.parametrize("version", [6, 9])
def test_resuming_a_compaction_rollback_puts_the_compaction_back_to_requested(tmp_path, version):
    path = tmp_path / "t"
    w, _, c, rb = stopped_inside_a_compaction_rollback(path, version)
    table = HudiTable.open(str(path))
    timeline = table.timeline()
    rollback.resume(table.storage, timeline, timeline.get(rb))
    timeline = table.timeline()
    assert timeline.get(rb).state is State.COMPLETED
    assert timeline.get(c).state is State.REQUESTED and timeline.get(c).action is Action.COMPACTION
    assert compaction.read_plan(table.storage, c, timeline.layout).operations  # the plan is kept
    readers_agree(path, w, version, compaction_pending=True)


def test_a_rollback_whose_compaction_completed_since_is_not_carried_out(tmp_path):
    path = tmp_path / "t"
    w, rng, c, rb = stopped_inside_a_compaction_rollback(path, 9)
    table = HudiTable.open(str(path))
    timeline = table.timeline()
    # C completed by an executor that took the rollback on the timeline for one it need not heed (as ingest's
    # did before it finished such rollbacks first): the rollback is stale.
    execution = compaction.Execution(timeline.get(c), compaction.read_plan(table.storage, c, timeline.layout),
                                     compaction.job_for(table, timeline, c, None), compaction.ExecutionHeartbeat(
                                         table.storage, c, 60.0), frozenset({rb}))
    execution.heartbeat.claim()
    stats = compaction.run_locally(execution.job, execution.plan.operations)
    compaction.complete_execution(table, execution, stats)
    files = sorted(p.name for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    with pytest.raises(TimelineError, match=rf"rollback {rb} rolls back compaction {c}, which has completed since"):
        rollback.resume(table.storage, table.timeline(), table.timeline().get(rb))
    assert sorted(p.name for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts) == files
    w.write(random_batch(rng, 5, keys=12, size=7))  # writes go on
    readers_agree(path, w, 9, compaction_pending=False)


def test_a_version_9_rollback_plan_names_the_file_group_and_instant_of_each_log_file_created(tmp_path):
    """`MarkerBasedRollbackStrategy.createRollbackRequestForCreateAndMerge` (1.x): a CREATE marker, which at
    table version 8+ also names a log file, becomes `HoodieRollbackRequest(partitionPath, fileId,
    instantToRollback.requestedTime(), [path], {})`."""
    from ingest.hudi.table import markers
    from ingest.hudi.timeline.timeline import request, start

    w = ModelWriter(tmp_path / "t", buckets=2, version=9)
    w.write(random_batch(random.Random(1), 1, keys=12, size=7))
    table = w.table
    timeline = table.timeline()
    failed = timeline.new_instant_time()
    start(table.storage, request(table.storage, failed, Action.DELTA_COMMIT, layout=timeline.layout),
          layout=timeline.layout)
    slice_ = table.view().latest_file_slices()[0]
    name = f".{slice_.file_id}_{failed}.log.1_0-1-1"
    markers.create(table.storage, failed, slice_.partition_path, name, markers.IOType.CREATE)
    table.storage.write(f"{slice_.partition_path}/{name}", b"")
    timeline = table.timeline()
    (req,) = rollback.plan_rollback(table.storage, timeline, timeline.get(failed))
    assert (req.partition_path, req.file_id, req.latest_base_instant) == (slice_.partition_path, slice_.file_id, failed)
    assert [p.rsplit("/", 1)[-1] for p in req.files_to_delete] == [name]
