"""Cleaning: which slices each policy deletes, what it never deletes, the plan and metadata files as
Hudi reads them, and reads that do not change."""

from __future__ import annotations

import io
import random

import fastavro
import pytest
from hudi_avsc import hudi_schema
from model import Op
from service_tables import CITIES, ModelWriter, data_files, hudi_rs_rows, our_rows, random_batch, rows

from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import (
    CleanerPolicy,
    CleanSettings,
    CompactionSettings,
    ServiceSettings,
)
from ingest.hudi.services import cleaner, compaction
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.timeline.instant import Action, State
from ingest.hudi.timeline.timeline import read_instant


def compacted_table(path, rounds: int, writes_per_round: int = 2, seed: int = 1) -> ModelWriter:
    """Each round: some writes, then a compaction: every file group gains a slice per round."""
    rng = random.Random(seed)
    w = ModelWriter(path)
    n = 0
    for _ in range(rounds):
        for _ in range(writes_per_round):
            w.write(random_batch(rng, n, keys=6, size=6))
            n += 1
        instant = compaction.schedule(w.table, CompactionSettings(), force=True)
        if instant is not None:
            compaction.execute(w.table, instant)
    return w


def slices_per_group(table) -> dict[tuple[str, str], list[str]]:
    return {(g.partition_path, g.file_id): [s.base_instant for s in g.slices] for g in table.view().file_groups()}


def test_keep_latest_file_versions(tmp_path):
    path = tmp_path / "t"
    w = compacted_table(path, 4)
    before = slices_per_group(w.table)
    assert max(len(v) for v in before.values()) >= 4
    (result,) = cleaner.clean(w.table, CleanSettings(policy=CleanerPolicy.KEEP_LATEST_FILE_VERSIONS,
                                                     file_versions_retained=2), force=True)
    after = slices_per_group(w.table)
    assert after == {k: v[-2:] for k, v in before.items()}
    assert result.deleted and not result.failed
    assert our_rows(path) == w.expected()
    assert sorted(hudi_rs_rows(path)) == sorted(w.expected())
    # Deleted files are exactly the planned ones, and gone.
    plan = cleaner.read_plan(w.table, result.instant)
    assert set(result.deleted) == {p for paths in plan.files.values() for p in paths}
    assert not (set(result.deleted) & data_files(path))


def test_keep_latest_commits_keeps_what_reads_as_of_retained_commits_need(tmp_path):
    path = tmp_path / "t"
    w = compacted_table(path, 5)
    table = w.table
    timeline = table.timeline()
    settings = CleanSettings(commits_retained=3)
    ectr = cleaner.earliest_commit_to_retain(timeline, settings)
    commits = timeline.completed(*cleaner.COMMIT_ACTIONS)
    assert ectr == commits[len(commits) - 3]
    before = slices_per_group(table)
    retained = [i.timestamp for i in commits[len(commits) - 3:]]
    as_of_before = {ts: rows(read_snapshot(table, as_of=ts)) for ts in retained}
    (result,) = cleaner.clean(table, settings, force=True)
    after = slices_per_group(w.table)
    for key, slices in before.items():
        older = [s for s in slices if s < ectr.timestamp]
        kept = {slices[-1]} | ({older[-1]} if older else set()) | {s for s in slices if s >= ectr.timestamp}
        assert set(after[key]) == kept, key
    assert result.deleted
    assert our_rows(path) == w.expected()
    # Reads as of every retained commit are unchanged: that is what the policy retains.
    assert {ts: rows(read_snapshot(w.table, as_of=ts)) for ts in retained} == as_of_before
    # Metadata as Hudi fills it.
    meta = avro_models.deserialize(read_instant(table.storage, w.table.timeline().get(result.instant)))
    assert meta["earliestCommitToRetain"] == ectr.timestamp and meta["version"] == 2
    assert meta["totalFilesDeleted"] == len(result.deleted)
    assert meta["lastCompletedCommitTimestamp"] == commits[-1].timestamp
    part = next(iter(meta["partitionMetadata"].values()))
    assert part["policy"] == "KEEP_LATEST_COMMITS" and all("/" not in f for f in part["successDeleteFiles"])


def test_too_few_commits_cleans_nothing_and_writes_no_instant(tmp_path):
    w = compacted_table(tmp_path / "t", 2)
    assert cleaner.clean(w.table, CleanSettings(), force=True) == []  # 10 commits retained by default
    assert not w.table.timeline().filter(actions=[Action.CLEAN])


def test_slices_a_pending_compaction_needs_are_kept(tmp_path):
    path = tmp_path / "t"
    w = compacted_table(path, 3)
    rng = random.Random(9)
    w.write(random_batch(rng, 99, keys=6, size=6))
    table = w.table
    pending = compaction.schedule(table, CompactionSettings(), force=True)
    assert pending is not None
    plan = compaction.read_plan(table.storage, pending)
    for i in range(100, 103):
        w.write(random_batch(rng, i, keys=6, size=6))
    cleaner.clean(w.table, CleanSettings(policy=CleanerPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
                  force=True)
    for op in plan.operations:
        for name in ([op.data_file] if op.data_file else []) + list(op.delta_files):
            assert w.table.storage.exists(f"{op.partition_path}/{name}"), f"{name} is needed by {pending}"
    compaction.execute(w.table, pending)
    assert our_rows(path) == w.expected()
    assert sorted(hudi_rs_rows(path)) == sorted(w.expected())


def test_latest_slice_is_never_deleted(tmp_path):
    w = compacted_table(tmp_path / "t", 3, writes_per_round=1)
    w.write(random_batch(random.Random(2), 50, keys=6, size=6))  # the latest slices have logs too
    latest = {p for s in w.table.view().latest_file_slices() for p in s.paths}
    for settings in (CleanSettings(policy=CleanerPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
                     CleanSettings(commits_retained=1)):
        cleaner.clean(w.table, settings, force=True)
        assert latest <= data_files(tmp_path / "t")
    assert our_rows(tmp_path / "t") == w.expected()


def test_incremental_cleaning_looks_only_at_partitions_written_since(tmp_path):
    path = tmp_path / "t"
    w = compacted_table(path, 4)
    settings = CleanSettings(commits_retained=2)
    first = cleaner.clean(w.table, settings, force=True)
    assert first
    # Writes to one partition only, then compactions of it.
    only = CITIES[0]
    keys = [k for k in (f"key-{i}" for i in range(6)) if CITIES[int(k.split("-")[1]) % 3] == only]
    def one_partition_round(n: int) -> None:
        w.write([Op(keys[0], only, n, False, {"fare": float(n)})])
        compaction.execute(w.table, compaction.schedule(w.table, CompactionSettings(), force=True))

    for n in range(200, 203):
        one_partition_round(n)
    cleaner.clean(w.table, settings, force=True)  # its horizon now lies among one-partition commits
    for n in range(203, 206):
        one_partition_round(n)
    timeline = w.table.timeline()
    ectr = cleaner.earliest_commit_to_retain(timeline, settings)
    parts = cleaner._partitions_to_clean(w.table, timeline, settings, ectr, tracked=())
    assert parts == [f"city={only}"]
    plan = cleaner.plan_clean(w.table, timeline, settings)
    assert set(plan.files) <= {f"city={only}"}
    assert our_rows(path) == w.expected()


def test_crashed_clean_is_finished_from_its_plan(tmp_path):
    path = tmp_path / "t"
    w = compacted_table(path, 3)
    settings = CleanSettings(policy=CleanerPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    instant = cleaner.schedule(w.table, settings, force=True)
    plan = cleaner.read_plan(w.table, instant)
    first = next(p for paths in plan.files.values() for p in paths)
    w.table.storage.delete(first)  # the interrupted attempt got this far
    (result,) = cleaner.clean(w.table, settings)
    assert result.instant == instant and result.failed == (first,)
    assert w.table.timeline().get(instant).is_completed
    assert our_rows(path) == w.expected()


def test_plan_and_metadata_read_with_hudis_schemas(tmp_path):
    w = compacted_table(tmp_path / "t", 3)
    (result,) = cleaner.clean(w.table, CleanSettings(policy=CleanerPolicy.KEEP_LATEST_FILE_VERSIONS,
                                                     file_versions_retained=1), force=True)
    timeline = w.table.timeline()
    instant = timeline.get(result.instant)
    requested = read_instant(w.table.storage, instant.to(State.REQUESTED))
    inflight = read_instant(w.table.storage, instant.to(State.INFLIGHT))
    done = read_instant(w.table.storage, instant)
    assert inflight == requested  # Hudi repeats the plan in the inflight file
    plan_schema, meta_schema = hudi_schema("HoodieCleanerPlan"), hudi_schema("HoodieCleanMetadata")
    if plan_schema is None:
        # Without Hudi's files: the structure verified against HoodieCleanerPlan/HoodieCleanMetadata.avsc.
        assert [f["name"] for f in avro_models.CLEANER_PLAN["fields"]] == [
            "earliestInstantToRetain", "lastCompletedCommitTimestamp", "policy", "filesToBeDeletedPerPartition",
            "version", "filePathsToBeDeletedPerPartition", "partitionsToBeDeleted", "extraMetadata"]
        assert [f["name"] for f in avro_models.CLEAN_METADATA["fields"]] == [
            "startCleanTime", "timeTakenInMillis", "totalFilesDeleted", "earliestCommitToRetain",
            "lastCompletedCommitTimestamp", "partitionMetadata", "version", "bootstrapPartitionMetadata",
            "extraMetadata"]
        plan_schema, meta_schema = avro_models.CLEANER_PLAN, avro_models.CLEAN_METADATA
    plan = next(iter(fastavro.reader(io.BytesIO(requested), reader_schema=fastavro.parse_schema(plan_schema))))
    assert plan["policy"] == "KEEP_LATEST_FILE_VERSIONS" and plan["version"] == 2
    assert plan["earliestInstantToRetain"] is None and plan["filesToBeDeletedPerPartition"] == {}
    infos = [i for infos in plan["filePathsToBeDeletedPerPartition"].values() for i in infos]
    assert infos and all(i["filePath"].startswith(w.table.base_url) and i["isBootstrapBaseFile"] is False
                         for i in infos)
    meta = next(iter(fastavro.reader(io.BytesIO(done), reader_schema=fastavro.parse_schema(meta_schema))))
    assert meta["startCleanTime"] == result.instant and meta["earliestCommitToRetain"] == ""
    assert meta["totalFilesDeleted"] == len(infos)
    assert sum(len(p["successDeleteFiles"]) for p in meta["partitionMetadata"].values()) == len(infos)


def test_trigger_counts_commits_since_the_last_clean(tmp_path):
    w = compacted_table(tmp_path / "t", 4)
    settings = ServiceSettings.from_mapping({"hoodie.cleaner.commits.retained": "2",
                                             "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4"})
    assert cleaner.clean(w.table, settings.clean)
    assert cleaner.commits_since_last_clean(w.table, w.table.timeline()) == 0
    assert cleaner.schedule(w.table, settings.clean) is None
    w.write([Op("key-1", CITIES[1], 999, False, {"fare": 9.0})])
    assert cleaner.commits_since_last_clean(w.table, w.table.timeline()) == 1


@pytest.mark.parametrize("policy", list(CleanerPolicy))
def test_reads_unchanged_by_cleaning(tmp_path, policy):
    path = tmp_path / "t"
    w = compacted_table(path, 4, seed=4)
    cleaner.clean(w.table, CleanSettings(policy=policy, commits_retained=1, file_versions_retained=1), force=True)
    assert our_rows(path) == w.expected()
    assert sorted(hudi_rs_rows(path)) == sorted(w.expected())


def test_a_table_opened_by_a_relative_path_plans_absolute_paths(tmp_path, monkeypatch):
    """`CleanActionExecutor.deleteFilesFunc` deletes each plan entry's `filePath` as given, resolved
    against its own process's working directory (and `BaseRollbackHelper` refuses a path outside the base
    path): a table opened by a relative path must still plan absolute ones, or a Hudi writer (or ingest
    run from another folder) finishing the clean deletes nothing and records it done."""
    monkeypatch.chdir(tmp_path)
    w = compacted_table("t", 3)
    assert w.table.base_url == str(tmp_path / "t")
    (result,) = cleaner.clean(w.table, CleanSettings(policy=CleanerPolicy.KEEP_LATEST_FILE_VERSIONS,
                                                     file_versions_retained=1), force=True)
    requested = read_instant(w.table.storage, w.table.timeline().get(result.instant).to(State.REQUESTED))
    planned = [i["filePath"] for infos in next(iter(fastavro.reader(io.BytesIO(requested))))[
        "filePathsToBeDeletedPerPartition"].values() for i in infos]
    assert planned and all(p.startswith(str(tmp_path / "t") + "/") for p in planned)


def test_a_hudi_plan_naming_files_by_a_qualified_path_deletes_them(tmp_path):
    """`CleanActionExecutor.deleteFilesFunc` deletes `new Path(filePath)` as the plan gives it: a Hudi
    writer's plan names local files `file:/...` (Hadoop's qualified listing) and S3 ones `s3a://...`,
    whatever URL ingest opened the table by. Finishing such a plan deletes those files; a file it names
    outside the table is left alone and reported as a failed delete."""
    w = compacted_table(tmp_path / "t", 3)
    instant = cleaner.schedule(w.table, CleanSettings(policy=CleanerPolicy.KEEP_LATEST_FILE_VERSIONS,
                                                      file_versions_retained=1), force=True)
    requested = w.table.timeline().get(instant).to(State.REQUESTED)
    plan = next(iter(fastavro.reader(io.BytesIO(read_instant(w.table.storage, requested)))))
    planned = [i["filePath"][len(w.table.base_url) + 1:]
               for infos in plan["filePathsToBeDeletedPerPartition"].values() for i in infos]
    stranger = tmp_path / "not-the-table.parquet"
    stranger.write_bytes(b"keep")
    partition = next(iter(plan["filePathsToBeDeletedPerPartition"]))
    for infos in plan["filePathsToBeDeletedPerPartition"].values():
        for info in infos:
            info["filePath"] = "file:" + info["filePath"]
    plan["filePathsToBeDeletedPerPartition"][partition].append(
        {"filePath": f"file:{w.table.base_url}/../{stranger.name}", "isBootstrapBaseFile": False})
    w.table.storage.write(f".hoodie/{requested.file_name}", avro_models.serialize(avro_models.CLEANER_PLAN, plan))

    result = cleaner.execute(w.table, instant)
    assert planned and sorted(result.deleted) == sorted(planned)
    assert not any(w.table.storage.exists(p) for p in planned)
    assert stranger.read_bytes() == b"keep"
    metadata = avro_models.deserialize(read_instant(w.table.storage, w.table.timeline().get(instant)))
    assert metadata["partitionMetadata"][partition]["failedDeleteFiles"] == [stranger.name]
    assert metadata["totalFilesDeleted"] == len(planned)
    assert our_rows(w.path) == w.expected()
