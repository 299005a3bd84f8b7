"""File groups a Hudi-written replacecommit retired (an insert overwrite and a clustering, in the v9 fixture):
the cleaner deletes them once the replacecommit is older than the earliest commit to retain, and archival
keeps the replacecommit on the active timeline until then, so no reader sees those groups again."""

from __future__ import annotations

import io
import posixpath

import fastavro
import hudi_invariants
import pytest
from hudi_avsc import hudi_schema
from service_tables import FixtureWriter, data_files

from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import CleanSettings, ServiceSettings
from ingest.hudi.services import archiver, cleaner
from ingest.hudi.table.file_names import BaseFileName, LogFileName
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action, State
from ingest.hudi.timeline.timeline import read_instant

pytest.importorskip("hudi")

FIXTURE = ("v9_txns_simple_nometa", "txn_id", "region", "txn_ts")
# Archival as soon as there are more than 4 commits, down to 2; cleaning only when asked.
ARCHIVE_EAGERLY = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "4", "hoodie.cleaner.commits.retained": "1",
                   "hoodie.clean.automatic": "false"}


def replaced_group_files(path, replaced) -> set[str]:
    """The files (relative paths) of the groups in `replaced`, as they lie in the partitions."""
    out = set()
    for rel in data_files(path):
        name = posixpath.basename(rel)
        parsed = BaseFileName.parse(name) or LogFileName.parse(name)
        if parsed is not None and (posixpath.dirname(rel), parsed.file_id) in replaced:
            out.add(rel)
    return out


def test_clean_deletes_the_groups_a_hudi_replacecommit_retired_and_records_them(hudi_table_copy):
    """`CleanPlanner.getFilesToCleanKeepingLatestCommits` -> `getReplacedFilesEligibleToClean`: every slice of a
    group replaced before the earliest commit to retain (`getReplacedFileGroupsBefore`) is deleted, listed in the
    plan's `filePathsToBeDeletedPerPartition` and in the clean metadata's `partitionMetadata` (`CleanActionExecutor`);
    `getPartitionsForInstants` counts the replaced groups' partitions. Reads are unchanged on both sides."""
    path = hudi_table_copy(FIXTURE[0])
    w = FixtureWriter(path, *FIXTURE[1:])
    table = HudiTable.open(str(path))
    replaced = table.replaced_file_groups(table.timeline())
    doomed = replaced_group_files(path, replaced)
    assert doomed, "the fixture's insert overwrite and clustering left the groups they replaced"

    (result,) = cleaner.clean(table, CleanSettings(commits_retained=1), force=True)

    assert not replaced_group_files(path, replaced), "every file of a replaced group is gone"
    assert doomed <= set(result.deleted) and not result.failed
    instant = table.timeline().get(result.instant)
    plan_schema = hudi_schema("HoodieCleanerPlan") or avro_models.CLEANER_PLAN
    meta_schema = hudi_schema("HoodieCleanMetadata") or avro_models.CLEAN_METADATA
    requested = read_instant(table.storage, instant.to(State.REQUESTED), table.layout)
    plan = next(iter(fastavro.reader(io.BytesIO(requested), reader_schema=fastavro.parse_schema(plan_schema))))
    planned = {info["filePath"][len(table.base_url.rstrip("/")) + 1:]
               for infos in plan["filePathsToBeDeletedPerPartition"].values() for info in infos}
    assert doomed <= planned
    assert plan["partitionsToBeDeleted"] == []  # groups remain in every partition
    done = read_instant(table.storage, instant, table.layout)
    meta = next(iter(fastavro.reader(io.BytesIO(done), reader_schema=fastavro.parse_schema(meta_schema))))
    recorded = {posixpath.join(p, name) for p, m in meta["partitionMetadata"].items() for name in m["successDeleteFiles"]}
    assert doomed <= recorded and meta["totalFilesDeleted"] == len(result.deleted)
    assert w.ours() == w.hudi_rs() == w.expected()
    hudi_invariants.check(str(path), bucket_index=False)


def test_archival_keeps_a_replacecommit_whose_replaced_groups_still_have_files(hudi_table_copy):
    """`ClusteringUtils.getEarliestInstantToRetainForClustering` (0.15: `getOldestInstantToRetainForClustering`),
    a bound of `TimelineArchiverV2.getCommitInstantsToArchive` (0.15: `HoodieTimelineArchiver`): with no clean yet
    the first replacecommit is kept, so its replaced groups, whose files are all there, stay replaced for both
    readers; once a clean has retained only commits after it (and deleted those groups) it may go."""
    path = hudi_table_copy(FIXTURE[0])
    w = FixtureWriter(path, *FIXTURE[1:])
    table = HudiTable.open(str(path))
    first_replace = table.timeline().filter(actions=[Action.REPLACE_COMMIT, Action.CLUSTERING])[0]
    replaced_files = replaced_group_files(path, table.replaced_file_groups(table.timeline()))
    settings = ServiceSettings.from_mapping(ARCHIVE_EAGERLY)

    archived = archiver.archive(table, settings).archived
    assert archived and max(archived) < first_replace.timestamp, "archival stops before the replacecommit"
    assert table.timeline().get(first_replace.timestamp) is not None
    assert replaced_group_files(path, table.replaced_file_groups(table.timeline())) == replaced_files
    assert w.ours() == w.hudi_rs() == w.expected()

    cleaner.clean(table, settings.clean, force=True)
    assert first_replace.timestamp in archiver.archive(table, settings).archived, "cleaned, it may be archived"
    assert w.ours() == w.hudi_rs() == w.expected()
    hudi_invariants.check(str(path), bucket_index=False)
