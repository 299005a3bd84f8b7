"""A clustering Hudi scheduled on a table ingest writes (HoodieStreamer's async clustering, `call
run_clustering`): once it completes, the file groups its plan names are replaced whole, and whatever was
written into them after the plan is gone from every read. So, as Hudi's own writers, ingest writes nothing
into them while the clustering is pending, and notices its completion whenever it comes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from model import Op
from service_tables import HUDI_SETTINGS, FixtureWriter, data_files, hudi_rs_rows, our_rows, to_table

from ingest.errors import ClusteringConflict, IngestError
from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import CleanSettings
from ingest.hudi.services.cleaner import earliest_commit_to_retain
from ingest.hudi.services.clustering_plan import pending_clustering_groups
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.timeline import Timeline
from ingest.hudi.timeline.timeline_layout import TimelineLayout
from ingest.spark.sink import HudiSink
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

CLUSTERING = "20260307135840454"  # the v9 fixture's clustering, which completed at ...840902
AFTER = "20260307135840975"       # the deltacommit that followed it


def key_index_writer(path: Path) -> LocalWriter:
    return LocalWriter(WriteOptions(table_path=str(path), table_name="trips", hudi=HUDI_SETTINGS,
                                    index=IndexOptions(type=IndexType.KEY)))


def schedule_clustering(table: HudiTable, instant: str, groups: list[tuple[str, str]]) -> None:
    """What `SparkClusteringPlanActionExecutor` leaves at table version 6 once the clustering started: a
    `<t>.replacecommit.requested` holding a `HoodieRequestedReplaceMetadata` with operation type CLUSTER and
    a plan naming each group's latest slice, and an empty `.inflight`."""
    slices = {(s.partition_path, s.file_id): s for s in table.view().latest_file_slices()}
    infos = [{"dataFilePath": table.storage.url(slices[g].base_file.path), "deltaFilePaths": [], "fileId": g[1],
              "partitionPath": g[0], "bootstrapFilePath": "", "version": 1} for g in groups]
    plan = avro_models.serialize(avro_models.REQUESTED_REPLACE_METADATA, {
        "operationType": "CLUSTER",
        "clusteringPlan": {"inputGroups": [{"slices": infos, "metrics": {}, "numOutputFileGroups": 1, "version": 1}],
                           "strategy": {"strategyClassName": "org.apache.hudi.client.clustering.run.strategy."
                                                             "SparkSortAndSizeExecutionStrategy",
                                        "strategyParams": {}, "version": 1},
                           "extraMetadata": {}, "version": 1, "preserveHoodieMetadata": True},
        "extraMetadata": {}, "version": 1})
    table.storage.write(f".hoodie/{instant}.replacecommit.requested", plan)
    table.storage.write(f".hoodie/{instant}.replacecommit.inflight", b"")


def files_of_groups(path, groups) -> set[str]:
    ids = {f for _, f in groups}
    return {f for f in data_files(path) if any(i in f for i in ids)}


def test_no_write_goes_into_a_file_group_a_pending_clustering_replaces(tmp_path):
    """`SparkRejectUpdateStrategy.handleUpdate` (the default `hoodie.clustering.updates.strategy`): an update
    or delete of a key in a file group under pending clustering fails the write with "Not allowed to update
    the clustering file group ..."; `UpsertPartitioner.filterSmallFilesInClustering`: new keys do not fill
    such a group as a small file. Other file groups take writes as before."""
    path = tmp_path / "t"
    w = key_index_writer(path)
    w.write(to_table([Op(f"k{i}", city, 1, False, {"fare": float(i)})
                      for i, city in enumerate(["chennai", "chennai", "sao_paulo", "sao_paulo"])]))
    table = HudiTable.open(str(path))
    (chennai,) = [(s.partition_path, s.file_id) for s in table.view().latest_file_slices()
                  if s.partition_path == "city=chennai"]
    instant = table.timeline().new_instant_time()
    schedule_clustering(table, instant, [chennai])
    assert pending_clustering_groups(table.storage, table.timeline()) == {chennai: instant}
    planned = files_of_groups(path, [chennai])

    for ops in ([Op("k0", "chennai", 2, False, {"fare": 10.0})], [Op("k1", "chennai", 2, True)]):
        with pytest.raises(ClusteringConflict, match=(
                r"Not allowed to update the clustering file group HoodieFileGroupId\{partitionPath='city=chennai', "
                rf"fileId='{chennai[1]}'\}}\. .*clustering {instant}")):
            w.write(to_table(ops))
        assert files_of_groups(path, [chennai]) == planned
    w.write(to_table([Op("k9", "chennai", 3, False, {"fare": 9.0}), Op("k2", "sao_paulo", 3, False, {"fare": 20.0})]))
    assert files_of_groups(path, [chennai]) == planned  # k9 went to a new file group, not the small one
    expected = {("k0", "city=chennai", 1, 0.0), ("k1", "city=chennai", 1, 1.0), ("k2", "city=sao_paulo", 3, 20.0),
                ("k3", "city=sao_paulo", 1, 3.0), ("k9", "city=chennai", 3, 9.0)}
    assert our_rows(path) == {(k, p.split("=")[1], t, f) for k, p, t, f in expected}
    assert sorted(hudi_rs_rows(path)) == sorted((k, p.split("=")[1], t, f) for k, p, t, f in expected)


def test_an_insert_overwrite_plans_no_clustering(tmp_path):
    """`ClusteringUtils.getRequestedReplaceMetadata`: "few operations create requested file without any
    content. Assume these are not clustering"; `getClusteringPlan`: a plan only with operation type CLUSTER."""
    path = tmp_path / "t"
    w = key_index_writer(path)
    w.write(to_table([Op("k0", "chennai", 1, False, {"fare": 1.0})]))
    table = HudiTable.open(str(path))
    first = table.timeline().new_instant_time()
    table.storage.write(f".hoodie/{first}.replacecommit.requested", b"")
    second = table.timeline().new_instant_time()
    table.storage.write(f".hoodie/{second}.replacecommit.requested", avro_models.serialize(
        avro_models.REQUESTED_REPLACE_METADATA, {"operationType": "INSERT_OVERWRITE", "version": 1}))
    assert pending_clustering_groups(table.storage, table.timeline()) == {}
    w.write(to_table([Op("k0", "chennai", 2, False, {"fare": 2.0})]))
    assert our_rows(path) == {("k0", "chennai", 2, 2.0)}


def test_a_hudi_clustering_pending_then_completing_around_ingest_writes(hudi_table_copy, tmp_path):
    """On the Hudi 1.1 table (version 9) whose clustering is rewound to pending: updates of its keys are
    refused, new keys go elsewhere. Then Hudi completes the clustering, requested before ingest's last
    commit and completed after it: the key index notices (it records the writes pending when it was last
    brought up to date), so the next update goes to the key's new file group, where readers find it."""
    path = hudi_table_copy("v9_txns_simple_nometa")
    timeline = path / ".hoodie" / "timeline"
    aside = tmp_path / "aside"
    aside.mkdir()
    (completed,) = timeline.glob(f"{CLUSTERING}_*.replacecommit")
    outputs = sorted(path.glob(f"region=*/*_{CLUSTERING}.parquet"))
    for f in [completed, *outputs]:
        target = aside / f.relative_to(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(f, target)
    for f in [*timeline.glob(f"{AFTER}*"), *path.glob(f"region=*/*_{AFTER}.parquet")]:
        f.unlink()
    table = HudiTable.open(str(path))
    planned = pending_clustering_groups(table.storage, table.timeline())
    assert len(planned) == 5 and set(planned.values()) == {CLUSTERING}
    before = {f for f in data_files(path) if any(g[1] in f for g in planned)}

    w = FixtureWriter(path, "txn_id", "region", "txn_ts")
    with pytest.raises(ClusteringConflict, match="Not allowed to update the clustering file group"):
        w.write_round()  # an update, a delete and an insert; every live key is in a planned group
    assert {f for f in data_files(path) if any(g[1] in f for g in planned)} == before
    w.rounds = 0
    w.model = type(w.model)(event_time=True)
    w.model.apply([Op(k, r["region"], r["txn_ts"], False, r) for k, r in w.existing.items()])
    new_only = [dict(w.existing[w.templates[0]], txn_id="fresh-1", txn_ts=w.top + 1)]
    w.writer.write(pa.Table.from_pylist(new_only, schema=w.schema).append_column(
        "_hoodie_is_deleted", pa.array([False])))
    w.model.apply([Op("fresh-1", new_only[0]["region"], w.top + 1, False, new_only[0])])
    assert {f for f in data_files(path) if any(g[1] in f for g in planned)} == before
    assert w.ours() == w.expected()

    for f in aside.rglob("*"):  # Hudi's clustering job completes
        if f.is_file():
            shutil.move(f, path / f.relative_to(aside))
    assert pending_clustering_groups(table.storage, HudiTable.open(str(path)).timeline()) == {}
    w.write_round()
    assert w.ours() == w.expected()
    assert w.hudi_rs() == w.expected()


def test_a_pending_clustering_caps_the_earliest_commit_to_retain():
    """`CleanerUtils.getEarliestCommitToRetain`: "Earliest commit to retain must not be later than the earliest
    pending commit", over 1.x's `getCommitsAndCompactionTimeline` (COMMIT, DELTA_COMMIT, REPLACE_COMMIT,
    CLUSTERING, COMPACTION): the slices a pending clustering reads stay until it completes."""
    names = [f"{t}_{t + 1}.deltacommit" for t in (100, 200, 300, 500, 600, 700)]
    layout = TimelineLayout(2, ".hoodie/timeline")
    settings = CleanSettings(commits_retained=2)
    assert earliest_commit_to_retain(Timeline.from_file_names(names, layout), settings).timestamp == "600"
    pending = Timeline.from_file_names([*names, "400.clustering.requested", "400.clustering.inflight"], layout)
    assert earliest_commit_to_retain(pending, settings).timestamp == "300"


def test_the_spark_sink_fails_the_batch_and_writes_it_once_the_clustering_is_gone(spark, tmp_path):
    """In Spark the refusal comes from a write task, before it writes, as one error line naming Hudi's rule;
    the batch is written when it runs again after the clustering completed or was rolled back."""
    path = tmp_path / "t"
    options = WriteOptions(table_path=str(path), table_name="trips", hudi=HUDI_SETTINGS,
                           index=IndexOptions(type=IndexType.KEY, shards=2))
    first = [Op(f"k{i}", "chennai" if i % 2 else "sao_paulo", 1, False, {"fare": float(i)}) for i in range(6)]
    update = [Op("k1", "chennai", 2, False, {"fare": 10.0}), Op("k2", "sao_paulo", 2, False, {"fare": 20.0})]
    with HudiSink(options, spark=spark) as sink:
        sink(spark.createDataFrame(to_table(first)), 0)
        table = HudiTable.open(str(path))
        (chennai,) = [(s.partition_path, s.file_id) for s in table.view().latest_file_slices()
                      if s.partition_path == "city=chennai"]
        instant = table.timeline().new_instant_time()
        schedule_clustering(table, instant, [chennai])
        planned = files_of_groups(path, [chennai])
        with pytest.raises(IngestError, match=r"writing batch 1 .* failed: ClusteringConflict: Not allowed to update "
                                              r"the clustering file group"):
            sink(spark.createDataFrame(to_table(update)), 1)
        assert files_of_groups(path, [chennai]) == planned
        for name in (f"{instant}.replacecommit.inflight", f"{instant}.replacecommit.requested"):
            table.storage.delete(f".hoodie/{name}")  # Hudi rolls the clustering back
        sink(spark.createDataFrame(to_table(update)), 1)
    expected = {(o.key, o.partition, o.ts, o.values["fare"]) for o in first if o.key not in ("k1", "k2")}
    expected |= {(o.key, o.partition, o.ts, o.values["fare"]) for o in update}
    assert our_rows(path) == expected
    assert sorted(hudi_rs_rows(path)) == sorted(expected)
