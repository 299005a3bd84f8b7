"""Tables Hudi wrote (versions 8 and 9, with and without a metadata table, and a version-6 one) continued
by ingest over more than thirty commits of upserts, deletes and inserts across partitions, with the table services the
version allows run inline after each commit (small thresholds): hudi-rs then reads exactly the rows a
reference model expects, before and after each compaction.
"""

from __future__ import annotations

import hudi_invariants
import pyarrow as pa
import pytest
from conftest import unzip_fixture_table
from service_tables import FixtureWriter, allowed_services, run_allowed_services

from ingest.hudi.table.metadata_table import present as metadata_table_present
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable

hudi = pytest.importorskip("hudi")

COMMITS = 32
# The v9 fixtures hold an insert overwrite and a clustering: they are continued both without archival and
# with it (the clean deletes the replaced groups before archival may take their replacecommits away).
NO_ARCHIVAL = {"hoodie.archive.automatic": "false"}
CONTINUED = [
    ("v6_trips_8i1u", "uuid", "city", "ts", {}),              # version 6
    ("v8_trips_8i3u1d", "uuid", "city", "ts", {}),            # version 8, with a metadata table
    ("v9_txns_simple_nometa", "txn_id", "region", "txn_ts", NO_ARCHIVAL),
    ("v9_txns_simple_meta", "txn_id", "region", "txn_ts", NO_ARCHIVAL),
    ("v9_txns_simple_nometa", "txn_id", "region", "txn_ts", {}),
    ("v9_txns_simple_meta", "txn_id", "region", "txn_ts", {}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "key", "part", "order", "settings"), CONTINUED)
def test_a_hudi_written_table_continued_over_many_commits_reads_as_the_model(tmp_path, name, key, part, order,
                                                                            settings):
    """`HoodieWriteConfig.WRITE_TABLE_VERSION` of the table itself (no upgrade), its metadata table removed
    first (`HoodieTable.maybeDeleteMetadataTable`); then 32 deltacommits as `HoodieAppendHandle` writes them
    at 8/9, each followed by the inline services `BaseHoodieWriteClient.postCommit` runs where ingest runs
    them at that version (compaction `ScheduleCompactionActionExecutor`/`RunCompactionActionExecutor`,
    `CleanActionExecutor`, `HoodieTimelineArchiver`). hudi-rs's snapshot equals the model every eight
    commits, right after every compaction and at the end; ours equals it too, and the invariants hold
    (new keys in base files: `HoodieSimpleIndex.canIndexLogFiles()` is false)."""
    path = unzip_fixture_table(name, tmp_path)
    version = HudiTable.open(str(path)).version
    w = FixtureWriter(path, key, part, order)
    assert w.ours() == w.hudi_rs() == w.expected(), "the fixture as Hudi wrote it reads the same on both sides"
    compactions = 0
    for n in range(COMMITS):
        w.write_round()
        if n % 8 == 7:
            assert w.hudi_rs() == w.expected(), f"before the services after commit {n}"
        run = run_allowed_services(w.table, **settings)
        if run.compacted:
            compactions += 1
            assert w.hudi_rs() == w.expected(), f"after compaction {run.compacted} (commit {n})"

    table = w.table
    assert table.version.number == version.number, "written at its own version, never upgraded"
    assert not metadata_table_present(table) and not (path / ".hoodie" / "metadata").exists()
    assert ("compaction" not in allowed_services(version)) or compactions > 0, "small thresholds: compactions ran"
    assert w.hudi_rs() == w.expected() == w.ours()
    counts = hudi_invariants.check(path, bucket_index=False)
    assert counts["timeline"] > 0 and counts["schemas"] > 0 and counts["keys_in_base_files"] == len(w.expected())
    assert counts["partition_values"] == len(w.expected())


def test_a_version_6_overwrite_with_latest_table_merges_its_log_records_by_ordering_value(tmp_path):
    """The version-6 fixture's payload is `OverwriteWithLatestAvroPayload` with ordering field `ts`, the
    0.14/0.15 default. Their readers and compactor merge a file slice's log records with the payload's
    `preCombine` (`HoodieMergedLogRecordScanner.Builder`: `HoodiePreCombineAvroRecordMerger`,
    `HoodieRecordUtils.mergerToPreCombineMode`), which keeps the larger ordering value
    (`OverwriteWithLatestAvroPayload.preCombine`: "pick the payload with greatest ordering value"), then
    merge the result into the base file's record with `combineAndGetUpdateValue`, which takes the log
    record whatever its ordering value. Our reads and compactions of such a table give what theirs give.
    (hudi-rs 0.5.0 lets the last write win throughout: on the logged key it shows the older update.)"""
    from ingest.hudi.config.service_settings import CompactionSettings
    from ingest.hudi.services import compaction

    path = unzip_fixture_table("v6_trips_8i1u", tmp_path)
    table = HudiTable.open(str(path))
    assert table.config.payload_class.endswith("OverwriteWithLatestAvroPayload")
    w = FixtureWriter(path, "uuid", "city", "ts")
    logged, based = "9909a8b1-2d15-4d3d-8ec9-efc48c536a00", "334e26e9-8355-45cc-97c6-c31daf0df330"
    fares = {r["uuid"]: (r["ts"], r["fare"]) for r in read_snapshot(table).to_pylist()}
    assert fares[logged][1] == 25.0  # the fixture's UPDATE, in a log file

    def upsert(key: str, ts: int, fare: float) -> None:
        row = dict(w.existing[key], ts=ts, fare=fare)
        w.writer.write(pa.Table.from_pylist([row], schema=w.schema))

    def read(key: str) -> tuple[int, float]:
        row = next(r for r in read_snapshot(HudiTable.open(str(path))).to_pylist() if r["uuid"] == key)
        return row["ts"], row["fare"]

    upsert(logged, fares[logged][0] - 1000, 1.0)   # older than the log record it meets: preCombine keeps that
    upsert(based, fares[based][0] - 1000, 2.0)     # older than the base file's row: the log record wins
    assert read(logged) == fares[logged]
    assert read(based) == (fares[based][0] - 1000, 2.0)
    upsert(logged, fares[logged][0] + 1000, 3.0)   # newer: it wins
    assert read(logged) == (fares[logged][0] + 1000, 3.0)

    def rows() -> list[tuple]:
        snapshot = read_snapshot(HudiTable.open(str(path))).drop_columns(["_hoodie_file_name"])
        return sorted(tuple(r.values()) for r in snapshot.to_pylist())

    before = rows()
    instant = compaction.schedule(HudiTable.open(str(path)), CompactionSettings(), force=True)
    compaction.execute(HudiTable.open(str(path)), instant)
    assert not any(s.log_files for s in HudiTable.open(str(path)).view().latest_file_slices())
    assert rows() == before  # the compaction keeps what the readers saw
