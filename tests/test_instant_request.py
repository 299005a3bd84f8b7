"""A new instant's requested file is created only if absent, as `HoodieActiveTimeline.createNewInstant`
creates it (`createFileInMetaPath(fileName, Option.empty(), false)` -> `createImmutableFileInPath`,
`fs.create(path, false)`): a writer that took the same instant time as another never shares its instant.

Hudi 0.14/0.15 writers take their instant time without a lock, so a Hudi writer can request the very
millisecond ingest picks after ingest listed the timeline. The tests list the timeline, let a second
writer request the instant time ingest is about to take, then let ingest request."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from ingest.hudi.services.compaction_plan import CompactionPlan
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.heartbeat import HeartbeatSettings
from ingest.hudi.timeline.heartbeat import path as heartbeat_path
from ingest.hudi.timeline.instant import Action, Instant, InstantTimeGenerator, State, instant_after
from ingest.hudi.timeline.timeline import InstantTaken, request
from ingest.write.batch import LocalWriter
from ingest.write.commit import request_delta_commit
from ingest.write.options import IndexOptions, IndexType, WriteOptions

HUDI = {
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
}
# Far past the clock, so the instant time ingest takes next is known: the one after it.
PINNED = "29991231235959000"
# The requested deltacommit of a Hudi 1.x writer holds its requested metadata; 0.14/0.15 leave it empty.
HUDI_REQUESTED = b'{\n  "partitionToWriteStats" : { },\n  "operationType" : "UPSERT"\n}'


def rows(*records) -> pa.Table:
    return pa.table({"id": [r[0] for r in records], "part": [r[1] for r in records],
                     "ts": pa.array([r[2] for r in records], pa.int64()), "v": [r[3] for r in records]})


@pytest.fixture
def table_at(request, tmp_path):
    """A table with one commit, at `version`, on local disk or (param "s3") moto's S3 server."""
    def make(version: int, place: str) -> HudiTable:
        options = {}
        path = str(tmp_path / f"t{version}")
        if place == "s3":
            options = request.getfixturevalue("s3")
            path = f"s3://lake/t{version}-{os.getpid()}-{time.monotonic_ns()}"
        LocalWriter(WriteOptions(table_path=path, table_name="t", storage_options=options,
                                 hudi={**HUDI, "hoodie.write.table.version": str(version)},
                                 index=IndexOptions(type=IndexType.BUCKET, bucket_count=2))).write(
            rows(("a", "p", 1, "x")))
        return HudiTable.open(path, options)
    return make


def _pin_clock(monkeypatch, zone: str) -> str:
    """Make the next instant time ingest takes in `zone` known; returns it."""
    monkeypatch.setitem(InstantTimeGenerator._last, zone, PINNED)
    return instant_after(PINNED)


def _hudi_requests(table: HudiTable, timestamp: str, action: Action, content: bytes) -> str:
    """A second writer's requested file at `timestamp` (its heartbeat too, as `startCommit` starts it first)."""
    rel = table.layout.path(Instant(timestamp, action, State.REQUESTED))
    table.storage.write(rel, content)
    if action is Action.DELTA_COMMIT:
        table.storage.touch(heartbeat_path(timestamp))
    return rel


@pytest.mark.parametrize("place", ["local", "s3"])
@pytest.mark.parametrize("version", [6, 8])
def test_a_write_never_adopts_an_instant_another_writer_requested_after_it_listed(
        table_at, monkeypatch, version, place):
    """`HoodieActiveTimeline.createNewInstant` fails on an existing requested file (`fs.create(path,
    false)`): ingest's write takes a later instant time and leaves the other writer's requested file
    (layout 2 names it without a completion time too) and heartbeat as they were."""
    table = table_at(version, place)
    listed = table.timeline()  # ingest lists, then the Hudi writer requests the time ingest takes next
    taken = _pin_clock(monkeypatch, listed.zone)
    theirs = _hudi_requests(table, taken, Action.DELTA_COMMIT, HUDI_REQUESTED)

    requested, beat = request_delta_commit(table, listed, HeartbeatSettings())
    try:
        assert requested.timestamp > taken and requested.action is Action.DELTA_COMMIT
        assert table.storage.read(theirs) == HUDI_REQUESTED
        assert table.storage.exists(heartbeat_path(taken))  # theirs: never deleted
        pending = {i.timestamp for i in table.timeline().pending(Action.DELTA_COMMIT)}
        assert pending == {taken, requested.timestamp}
    finally:
        beat.stop()


def test_an_empty_requested_file_of_another_writer_is_not_adopted_and_is_retried_a_bounded_time(table_at,
                                                                                                 monkeypatch):
    """Hudi 0.14/0.15's requested deltacommit is empty, as ingest's: an existing empty file is no sign that
    it is ingest's own. Without a zone `request` reports the clash; with one it tries later times, a bounded
    number of them."""
    table = table_at(6, "local")
    taken = _pin_clock(monkeypatch, "UTC")
    _hudi_requests(table, taken, Action.DELTA_COMMIT, b"")
    with pytest.raises(InstantTaken, match=taken):
        request(table.storage, taken, Action.DELTA_COMMIT, layout=table.layout)
    later = taken
    for _ in range(5):
        later = instant_after(later)
        _hudi_requests(table, later, Action.DELTA_COMMIT, b"")
    monkeypatch.setitem(InstantTimeGenerator._last, "UTC", PINNED)
    with pytest.raises(InstantTaken, match="tried 5 instant time"):
        request(table.storage, taken, Action.DELTA_COMMIT, layout=table.layout, zone="UTC")


@pytest.mark.parametrize("version", [6, 9])
def test_a_compaction_plan_requested_at_a_taken_time_moves_later_and_its_own_is_kept(table_at, monkeypatch,
                                                                                      version):
    """Table services request their plans the same way (`HoodieActiveTimeline.saveToCompactionRequested`:
    `createFileInMetaPath(..., false)`): another writer's plan at the time is left alone and the plan goes
    to a later time; a file holding exactly this plan is this writer's own create whose answer was lost
    (a retried conditional PUT is refused), so the instant is kept, not requested twice."""
    table = table_at(version, "local")
    plan = CompactionPlan(operations=()).to_bytes(table.version)
    other = CompactionPlan(operations=(), extra_metadata={"by": "hudi"}).to_bytes(table.version)
    taken = _pin_clock(monkeypatch, "UTC")
    theirs = _hudi_requests(table, taken, Action.COMPACTION, other)

    mine = request(table.storage, taken, Action.COMPACTION, plan, table.layout, zone="UTC")
    assert mine.timestamp > taken and table.storage.read(theirs) == other
    again = request(table.storage, mine.timestamp, Action.COMPACTION, plan, table.layout, zone="UTC")
    assert again == mine and table.storage.read(table.layout.path(mine)) == plan

