"""Instant times follow the table's `hoodie.table.timeline.timezone`, and come after every instant."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest

from ingest.hudi.config.table_config import PROPERTIES_PATH
from ingest.hudi.config.timeline_zone import LOCAL, UTC
from ingest.hudi.services.compaction import CompactionPlan
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action, format_instant, parse_instant
from ingest.hudi.timeline.timeline import request
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

ZONE_KEY = "hoodie.table.timeline.timezone"


@pytest.fixture
def six_hours_ahead_of_utc(monkeypatch):
    """The writer's local zone is UTC+6."""
    monkeypatch.setenv("TZ", "Etc/GMT-6")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def hours_from(instant: str, zone: str) -> float:
    now = parse_instant(format_instant(datetime.now(timezone.utc), zone))
    return (parse_instant(instant) - now).total_seconds() / 3600


def writer(path) -> LocalWriter:
    return LocalWriter(WriteOptions(table_path=str(path), table_name="t", hudi={
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part"},
        index=IndexOptions(type=IndexType.BUCKET, bucket_count=1)))


def rows(i: int) -> pa.Table:
    return pa.table({"id": [f"k{i}"], "part": ["p"]})


def test_tables_without_a_zone_get_instants_in_the_writers_local_zone(table_dir, six_hours_ahead_of_utc):
    """`HoodieTableConfig.TIMELINE_TIMEZONE` defaults to `HoodieTimelineTimeZone.LOCAL`, and
    `HoodieInstantTimeGenerator.formatDateWitTimeZone` then formats in `ZoneId.systemDefault()`; tables we
    create say UTC explicitly and keep getting UTC times. A new instant also follows every pending one:
    `BaseHoodieWriteClient.startCommit` checks "Latest pending compaction instant time must be earlier
    than this instant time"."""
    writer(table_dir).write(rows(0))
    table = HudiTable.open(str(table_dir))
    assert table.config.props[ZONE_KEY] == UTC
    first = table.timeline().last_completed().timestamp
    assert abs(hours_from(first, UTC)) < 0.1

    # Hudi's own tables carry no zone: their timeline is LOCAL.
    props = table_dir / PROPERTIES_PATH
    props.write_text("".join(line for line in props.read_text().splitlines(keepends=True)
                             if not line.startswith(ZONE_KEY)))
    table = HudiTable.open(str(table_dir))
    assert table.config.timeline_zone == LOCAL
    writer(table_dir).write(rows(1))
    second = HudiTable.open(str(table_dir)).timeline().last_completed(Action.DELTA_COMMIT).timestamp
    assert abs(hours_from(second, LOCAL)) < 0.1, "a LOCAL timeline gets local times (UTC+6 here)"
    assert abs(hours_from(second, UTC) - 6) < 0.1

    ahead = format_instant(datetime.now(timezone.utc) + timedelta(seconds=3), LOCAL)
    request(table.storage, ahead, Action.COMPACTION, CompactionPlan(operations=()).to_bytes())
    writer(table_dir).write(rows(2))
    third = HudiTable.open(str(table_dir)).timeline().last_completed(Action.DELTA_COMMIT).timestamp
    assert third > ahead > second > first


def test_hudi_written_tables_keep_a_local_timeline(fixture_tables):
    """Hudi's Spark writer records no `hoodie.table.timeline.timezone`; `HoodieTableConfig.getTimelineTimezone`
    then answers `HoodieTimelineTimeZone.LOCAL`, and so does every timeline we load of such a table."""
    for name in ("v6_trips_8i1u", "v6_trips_8i3d"):
        table = HudiTable.open(str(fixture_tables[name]))
        assert ZONE_KEY not in table.config.props
        assert table.config.timeline_zone == LOCAL
        assert table.timeline().zone == LOCAL
