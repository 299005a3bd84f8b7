"""The driver reads what one commit needs once, and still every time what may have changed."""

from __future__ import annotations

from pathlib import Path

from service_tables import HUDI_SETTINGS
from test_refused_tables import rows

from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import CommitMetadata
from ingest.hudi.timeline.instant import Action, State
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions


def written(tmp_path: Path) -> Path:
    table = tmp_path / "trips"
    options = WriteOptions(str(table), "trips", hudi=HUDI_SETTINGS, index=IndexOptions(type=IndexType.KEY))
    LocalWriter(options).write(rows())
    return table


def test_a_completed_instant_is_parsed_once_per_handle_a_pending_one_each_time(tmp_path):
    """`HoodieActiveTimeline.transitionState` creates a completed instant's file with
    `createImmutableFileInPath` (write once): one handle's steps (the replay check, the schema) share
    one parse of it. A requested or inflight file may still be rewritten
    (`HoodieActiveTimeline.transitionRequestedToInflight` fills the inflight), so it is read each time."""
    path = written(tmp_path)
    table = HudiTable.open(str(path))
    done = table.timeline().completed(Action.DELTA_COMMIT)[-1]
    first = table.commit_metadata(done)
    assert table.commit_metadata(done) is first
    assert HudiTable.open(str(path)).commit_metadata(done) is not first  # a new handle reads afresh
    assert HudiTable.open(str(path)).commit_metadata(done) == first

    inflight = done.to(State.INFLIGHT)
    inflight_file = path / ".hoodie" / f"{done.timestamp}.deltacommit.inflight"
    inflight_file.write_bytes(CommitMetadata(operation_type="UPSERT").encode(table.version))
    assert table.commit_metadata(inflight).operation_type == "UPSERT"
    inflight_file.write_bytes(CommitMetadata(operation_type="INSERT").encode(table.version))
    assert table.commit_metadata(inflight).operation_type == "INSERT"
