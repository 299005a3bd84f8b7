"""Tables Hudi wrote (versions 8 and 9, with and without a metadata table, and a version-6 one) continued
by ingest over more than thirty commits of upserts, deletes and inserts across partitions, with the table services the
version allows run inline after each commit (small thresholds): hudi-rs then reads exactly the rows a
reference model expects, before and after each compaction.
"""

from __future__ import annotations

import hudi_invariants
import pytest
from conftest import unzip_fixture_table
from service_tables import FixtureWriter, allowed_services, run_allowed_services

from ingest.hudi.table.metadata_table import present as metadata_table_present
from ingest.hudi.table.table import HudiTable

hudi = pytest.importorskip("hudi")

COMMITS = 32
# Known bug (the services at 8/9): the v9 fixtures hold an insert overwrite and a clustering; our clean
# leaves the file groups they replaced (Hudi's `CleanPlanner.getReplacedFilesEligibleToClean` deletes them)
# and archival then moves the replacecommits out of the active timeline, so both readers see those groups
# again. Strict: the cases pass (and must be un-marked) once that is fixed. Until then the v9 fixtures are
# also continued without archival, which they pass.
REPLACED_GROUPS_RESURRECT = pytest.mark.xfail(strict=True, reason="clean keeps replaced file groups; archival then "
                                              "archives their replacecommit and they are read again")
NO_ARCHIVAL = {"hoodie.archive.automatic": "false"}
CONTINUED = [
    ("v6_trips_8i1u", "uuid", "city", "ts", {}),              # version 6
    ("v8_trips_8i3u1d", "uuid", "city", "ts", {}),            # version 8, with a metadata table
    ("v9_txns_simple_nometa", "txn_id", "region", "txn_ts", NO_ARCHIVAL),
    ("v9_txns_simple_meta", "txn_id", "region", "txn_ts", NO_ARCHIVAL),
    pytest.param("v9_txns_simple_nometa", "txn_id", "region", "txn_ts", {}, marks=REPLACED_GROUPS_RESURRECT),
    pytest.param("v9_txns_simple_meta", "txn_id", "region", "txn_ts", {}, marks=REPLACED_GROUPS_RESURRECT),
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
