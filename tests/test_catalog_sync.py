"""Catalog sync against real catalogs: a Hive Metastore (Hive 2.3's, from PySpark's jars) and AWS Glue
(moto's server), after every commit of a stream of batches, through the same pipeline-side module the
jobs use (`ingest.pipeline.catalog_sync`).

The scenario: 11 commits across 8 partitions, a nullable column added at the fifth, and partition
`city=b` emptied by deletes at the sixth. What the catalog must hold afterwards is stated here, field
by field, from Hudi's sync code (each test names the classes).
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pytest
from hive_metastore import metastore  # noqa: F401  (a fixture)

from ingest import cli
from ingest.catalog.embedded_metastore import free_port
from ingest.catalog.run import CatalogSyncError
from ingest.catalog.settings import SyncSettings
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.pipeline import hoodie_metrics
from ingest.pipeline.catalog_sync import CatalogSync
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

HUDI = {
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
}
# (key, city, ts, deleted) per commit; from the fifth on, rows carry the new nullable column `tip`.
BATCHES = [
    [("k1", "a", 1, False), ("k2", "b", 1, False)],
    [("k3", "c", 2, False)],
    [("k1", "a", 3, False)],
    [("k4", "d", 4, False)],
    [("k5", "e", 5, False)],                      # adds `tip`
    [("k2", "b", 6, True)],                       # empties city=b
    [("k6", "f", 7, False)],
    [("k3", "c", 8, False)],
    [("k7", "g", 9, False)],
    [("k8", "a", 10, False)],
    [("k9", "h", 11, False)],
]
TIP_FROM = 4
CITIES = ["a", "b", "c", "d", "e", "f", "g", "h"]

# HiveSchemaUtil.convertField over the Parquet schema of the table's Avro schema (meta fields first),
# the partition column left out of the columns (HMSDDLExecutor.createTable).
COLUMNS = [("_hoodie_commit_time", "string"), ("_hoodie_commit_seqno", "string"), ("_hoodie_record_key", "string"),
           ("_hoodie_partition_path", "string"), ("_hoodie_file_name", "string"), ("uuid", "string"),
           ("ts", "bigint"), ("fare", "double"), ("_hoodie_is_deleted", "boolean"), ("tip", "double")]
# Parquet2SparkSchemaUtils types, every field optional, the partition column moved last.
SPARK_FIELDS = [("_hoodie_commit_time", "string"), ("_hoodie_commit_seqno", "string"),
                ("_hoodie_record_key", "string"), ("_hoodie_partition_path", "string"), ("_hoodie_file_name", "string"),
                ("uuid", "string"), ("ts", "long"), ("fare", "double"), ("_hoodie_is_deleted", "boolean"),
                ("tip", "double"), ("city", "string")]
# HiveSyncTool.doSync (MOR, strategy ALL): `_ro`, `_rt`, and the snapshot under the table's own name
# (`hoodie.meta.sync.sync_snapshot_with_table_name`, true by default since Hudi 0.15).
INPUT_FORMATS = {"trips_ro": "org.apache.hudi.hadoop.HoodieParquetInputFormat",
                 "trips_rt": "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat",
                 "trips": "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"}
TABLES = list(INPUT_FORMATS)
OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"


def _rows(batch: list[tuple], tip: bool) -> pa.Table:
    columns = {"uuid": [r[0] for r in batch], "city": [r[1] for r in batch],
               "ts": pa.array([r[2] for r in batch], pa.int64()), "fare": pa.array([float(r[2]) for r in batch]),
               "_hoodie_is_deleted": [r[3] for r in batch]}
    if tip:
        columns["tip"] = pa.array([0.5 * r[2] for r in batch])
    return pa.table(columns)


def sync_settings(**hudi: str) -> SyncSettings:
    given = {**HUDI, "hoodie.table.name": "trips", "hoodie.database.name": "lake",
             "hoodie.datasource.meta.sync.enable": "true", **hudi}
    return SyncSettings.from_hudi(given, failures_allowed=2)


def write_and_sync(url: str, sync: CatalogSync, batches=BATCHES, storage_options=None, first: int = 0) -> list:
    """Commit each batch with LocalWriter, then sync as the jobs do after a commit."""
    writer = LocalWriter(WriteOptions(table_path=url, table_name="trips", hudi=HUDI,
                                      storage_options=storage_options or {},
                                      index=IndexOptions(type=IndexType.BUCKET, bucket_count=2)))
    outcomes = []
    for i, batch in enumerate(batches, start=first):
        assert writer.write(_rows(batch, tip=i >= TIP_FROM)).instant is not None
        outcomes.append(sync.after_commit())
    return outcomes


def hms_sync_and_writer(metastore, path: Path, database: str, **options) -> tuple[CatalogSync, LocalWriter]:  # noqa: F811
    """A sync into `database` of the test's metastore, and a writer of a bucket-indexed trips table at `path`."""
    settings = sync_settings(**{"hoodie.datasource.hive_sync.metastore.uris": metastore.uri,
                                "hoodie.datasource.hive_sync.database": database})
    writer = LocalWriter(WriteOptions(table_path=str(path), table_name="trips", hudi=HUDI, **options,
                                      index=IndexOptions(type=IndexType.BUCKET, bucket_count=2)))
    return CatalogSync(str(path), {}, settings), writer


def last_commit_stamps(path: Path) -> tuple[str, str]:
    """The last deltacommit, and the latest completion time of the commits timeline: the instant
    files' modification times in the timeline's zone (LOCAL here), as Hudi 0.x reads them."""
    timeline = HudiTable.open(str(path)).timeline()
    commits = timeline.completed(Action.DELTA_COMMIT)
    mtimes = [os.stat(path / ".hoodie" / f"{c.timestamp}.deltacommit").st_mtime for c in commits]
    return commits[-1].timestamp, datetime.fromtimestamp(max(mtimes)).strftime("%Y%m%d%H%M%S%f")[:-3]


def spark_schema_fields(text: str) -> list[tuple[str, str]]:
    schema = json.loads(text)
    assert schema["type"] == "struct"
    assert all(f["nullable"] is True and f["metadata"] == {} for f in schema["fields"])
    return [(f["name"], f["type"]) for f in schema["fields"]]


def expected_parameters(path: Path) -> dict[str, str]:
    last, completion = last_commit_stamps(path)
    return {"EXTERNAL": "TRUE", "spark.sql.sources.provider": "hudi", "spark.sql.sources.schema.numParts": "1",
            "spark.sql.sources.schema.numPartCols": "1", "spark.sql.sources.schema.partCol.0": "city",
            "last_commit_time_sync": last, "last_commit_completion_time_sync": completion}


def check_outcomes(outcomes: list) -> None:
    """What each sync reported: tables created by the first, the schema changed by the fifth only,
    each new partition added (to every table) by the commit that wrote it, nothing ever dropped."""
    assert all(o is not None and o.ok for o in outcomes)
    new_partitions = [2, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1]
    for i, outcome in enumerate(outcomes):
        (result,) = outcome.results
        assert result.created == (TABLES if i == 0 else [])
        assert result.schema_updated == (TABLES if i == TIP_FROM else [])
        assert (result.added, result.updated, result.dropped) == (len(TABLES) * new_partitions[i], 0, 0), i


# -- Hive Metastore ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_hive_metastore_holds_what_hive_sync_registers(metastore, tmp_path):  # noqa: F811
    """HiveSyncTool.syncHoodieTable (MOR: `_ro` with HoodieParquetInputFormat, `_rt` with
    HoodieParquetRealtimeInputFormat), HMSDDLExecutor.createTable / updateTableDefinition (CASCADE) /
    addPartitionsToTable, SparkDataSourceTableUtils.getSparkTableProperties / getSparkSerdeProperties,
    HoodieHiveSyncClient.updateLastCommitTimeSynced, TimelineUtils.getDroppedPartitions (a partition
    emptied by deletes is not dropped)."""
    from hmsclient import hmsclient

    path = tmp_path / "trips"
    settings = sync_settings(**{"hoodie.datasource.hive_sync.metastore.uris": metastore.uri,
                                "hoodie.datasource.hive_sync.database": "lake_hms"})
    check_outcomes(write_and_sync(str(path), CatalogSync(str(path), {}, settings)))

    port = int(metastore.uri.rsplit(":", 1)[1])
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        assert client.get_database("lake_hms").description == "automatically created by hoodie"
        assert sorted(client.get_all_tables("lake_hms")) == sorted(TABLES)
        for name, input_format in INPUT_FORMATS.items():
            table = client.get_table("lake_hms", name)
            assert (table.tableType, table.owner) == ("EXTERNAL_TABLE", getpass.getuser())
            assert [(c.name, c.type) for c in table.sd.cols] == COLUMNS
            assert [(c.name, c.type) for c in table.partitionKeys] == [("city", "string")]
            assert (table.sd.location, table.sd.inputFormat, table.sd.outputFormat) == \
                (f"file:{path}", input_format, OUTPUT_FORMAT)
            assert table.sd.serdeInfo.serializationLib == SERDE
            assert table.sd.serdeInfo.parameters == {
                "path": f"file:{path}", "hoodie.query.as.ro.table": str(name == "trips_ro").lower(),
                "serialization.format": "1"}
            params = dict(table.parameters)
            params.pop("transient_lastDdlTime")  # the metastore's own
            assert spark_schema_fields(params.pop("spark.sql.sources.schema.part.0")) == SPARK_FIELDS
            assert params == expected_parameters(path)
            partitions = client.get_partitions("lake_hms", name, -1)
            assert sorted(p.values[0] for p in partitions) == CITIES, "city=b stays: emptied, not dropped"
            for p in partitions:
                assert p.sd.location == f"file:{path}/city={p.values[0]}"
                assert (p.sd.inputFormat, p.sd.serdeInfo.serializationLib) == (input_format, SERDE)
                assert [(c.name, c.type) for c in p.sd.cols] == COLUMNS, "CASCADE brought `tip` to old partitions"

    # A Spark with Hive support sees the same: its catalog restores the data source tables from the
    # spark.sql.sources.* properties; a table synced without them (sync_as_datasource=false) is a
    # plain Hive table that DESCRIBE and SHOW PARTITIONS read without Hudi's jars.
    plain = dataclasses.replace(settings, table="plain", sync_as_datasource=False)
    assert CatalogSync(str(path), {}, plain).after_commit().ok
    out = spark_with_hive(metastore.uri, tmp_path / "warehouse", "lake_hms")
    assert out["tables"] == ["plain", "plain_ro", "plain_rt", "trips", "trips_ro", "trips_rt"]
    for name in INPUT_FORMATS:
        restored = out["restored"][name]
        assert restored["provider"] == "hudi" and restored["partition_columns"] == ["city"]
        assert spark_schema_fields(restored["schema"]) == SPARK_FIELDS
        assert restored["partitions"] == [f"city={c}" for c in CITIES]
        assert "DATA_SOURCE_NOT_FOUND" in out["describe_error"][name], \
            "Spark resolves provider hudi through Hudi's data source: without Hudi's bundle it cannot"
    for name in ("plain_ro", "plain_rt", "plain"):
        described = out["describe"][name]
        assert described[:len(COLUMNS) + 1] == [[n, t] for n, t in COLUMNS] + [["city", "string"]]
        assert out["show_partitions"][name] == [f"city={c}" for c in CITIES]


def test_an_int_column_widened_to_long_is_altered_in_the_metastore(metastore, tmp_path):  # noqa: F811
    """An int column arriving as long makes the table's column long (`promotion.widens`); the sync
    changes it to bigint in both tables and, with CASCADE, in their partitions, as HiveSyncTool's
    `HMSDDLExecutor.updateTableDefinition` does for Hudi's own widening (Hive's
    `ColumnType.areColTypesCompatible` takes int to bigint)."""
    from hmsclient import hmsclient

    path = tmp_path / "trips"
    sync, writer = hms_sync_and_writer(metastore, path, "lake_widen")
    results = []
    for kind, rows in ((pa.int32(), [("k1", "a"), ("k2", "b")]), (pa.int64(), [("k1", "a"), ("k3", "c")])):
        batch = _rows([(k, c, 1, False) for k, c in rows], tip=False).append_column(
            "n", pa.array([2**40 if kind == pa.int64() else 7] * len(rows), kind))
        writer.write(batch)
        outcome = sync.after_commit()
        assert outcome.ok
        results.append(outcome.results[0])
    assert results[1].schema_updated == TABLES
    port = int(metastore.uri.rsplit(":", 1)[1])
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        for name in INPUT_FORMATS:
            table = client.get_table("lake_widen", name)
            assert [(c.name, c.type) for c in table.sd.cols][-1] == ("n", "bigint")
            partitions = client.get_partitions("lake_widen", name, -1)
            assert sorted(p.values[0] for p in partitions) == ["a", "b", "c"]
            assert all([(c.name, c.type) for c in p.sd.cols][-1] == ("n", "bigint") for p in partitions)


def test_a_nested_field_added_fails_the_sync_naming_the_metastore_setting(metastore, tmp_path):  # noqa: F811
    """With `write.nested_field_additions`, a struct column gains a field. Hive 2.3's metastore refuses the
    alter (`HiveAlterHandler.alterTable`: "The following columns have types incompatible with the existing
    columns in their respective positions") while `hive.metastore.disallow.incompatible.col.type.changes`
    is true, its default, as it refuses Hudi's own sync of the change. The commit stays, the sync fails
    naming the column, both types and the setting, and the registered tables keep the old type."""
    from hmsclient import hmsclient

    path = tmp_path / "trips"
    sync, writer = hms_sync_and_writer(metastore, path, "lake_nested", nested_field_additions=True)
    outcomes = []
    for fields, rows in (([("a", pa.int32())], [("k1", "a"), ("k2", "b")]),
                         ([("a", pa.int32()), ("b", pa.string())], [("k1", "a"), ("k3", "c")])):
        values = [{"a": 1, "b": "x"} if len(fields) == 2 else {"a": 1}] * len(rows)
        batch = _rows([(k, c, 1, False) for k, c in rows], tip=False).append_column(
            "m", pa.array(values, pa.struct(fields)))
        writer.write(batch)
        outcomes.append(sync.after_commit())
    assert outcomes[0].ok and not outcomes[1].ok
    assert ("the metastore refuses to change column types of trips_ro (m from struct<a:int> to "
            "struct<a:int,b:string>): hive.metastore.disallow.incompatible.col.type.changes is true") in outcomes[1].error
    assert len(HudiTable.open(str(path)).timeline().completed(Action.DELTA_COMMIT)) == 2
    port = int(metastore.uri.rsplit(":", 1)[1])
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        for name in INPUT_FORMATS:
            assert [(c.name, c.type) for c in client.get_table("lake_nested", name).sd.cols][-1] == ("m", "struct<a:int>")


SPARK_SCRIPT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    uri, warehouse, db = sys.argv[1:4]
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("hive.metastore.uris", uri).config("spark.sql.warehouse.dir", warehouse)
             .enableHiveSupport().getOrCreate())
    out = {"tables": sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {db}").collect()),
           "restored": {}, "describe_error": {}, "describe": {}, "show_partitions": {}}
    catalog = spark._jsparkSession.sharedState().externalCatalog()
    for name in ("trips_ro", "trips_rt", "trips"):
        t = catalog.getTable(db, name)
        names = catalog.listPartitionNames(db, name, spark._jvm.scala.Option.empty())
        out["restored"][name] = {
            "provider": t.provider().get(), "schema": t.schema().json(),
            "partition_columns": [t.partitionColumnNames().apply(i) for i in range(t.partitionColumnNames().size())],
            "partitions": sorted(names.apply(i) for i in range(names.size()))}
        try:
            spark.sql(f"DESCRIBE {db}.{name}").collect()
        except Exception as e:
            out["describe_error"][name] = str(e)[:300]
    for name in ("plain_ro", "plain_rt", "plain"):
        out["describe"][name] = [[r.col_name, r.data_type] for r in spark.sql(f"DESCRIBE {db}.{name}").collect()]
        out["show_partitions"][name] = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {db}.{name}").collect())
    print("RESULT " + json.dumps(out))
""")


def spark_with_hive(uri: str, warehouse: Path, database: str) -> dict:
    """A separate Spark process (the test session's has no Hive support) on the metastore."""
    done = subprocess.run([sys.executable, "-c", SPARK_SCRIPT, uri, str(warehouse), database],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


# -- a metastore that is down ---------------------------------------------------------------------------


def test_a_metastore_that_is_down_leaves_commits_and_the_next_sync_catches_up(metastore, tmp_path):  # noqa: F811
    """HiveSyncTool.syncHoodieTable: with no `last_commit_time_sync` in the catalog every partition on
    storage is compared with the catalog's (syncAllPartitions, HoodieSyncClient.getPartitionEvents), so
    the first sync that works registers what the failed ones missed. Failures are ingest's own rule:
    counted, named, and fatal only past write.sync_failures_allowed (here 2)."""
    path = tmp_path / "trips"
    dead = f"thrift://127.0.0.1:{free_port()}"
    down = sync_settings(**{"hoodie.datasource.hive_sync.metastore.uris": dead,
                            "hoodie.datasource.hive_sync.database": "lake_down"})
    sync = CatalogSync(str(path), {}, down)
    outcomes = write_and_sync(str(path), sync, BATCHES[:2])
    assert [o.text() for o in outcomes] == [" sync=failed(1)", " sync=failed(2)"]
    assert f"catalog sync to the Hive Metastore at {dead}, table lake_down.trips failed" in outcomes[1].error
    figures = hoodie_metrics.commit_figures("20240101000000000", [], seconds=1.0, counts={}, quarantined=0,
                                            sync=outcomes[1])
    assert figures.ingest["syncConsecutiveFailures"] == 2 and figures.streamer == {}

    with pytest.raises(CatalogSyncError, match=r"Hive Metastore at .*, table lake_down.trips failed.*"
                                               r"3 consecutive failed syncs; write.sync_failures_allowed is 2"):
        write_and_sync(str(path), sync, BATCHES[2:3], first=2)
    assert len(HudiTable.open(str(path)).timeline().completed(Action.DELTA_COMMIT)) == 3, "every commit stands"

    back = CatalogSync(str(path), {}, dataclasses.replace(down, metastore_uris=metastore.uri))
    (outcome,) = write_and_sync(str(path), back, BATCHES[3:4], first=3)
    assert outcome.text() == " sync=ok" and back.consecutive_failures == 0
    (result,) = outcome.results
    assert (result.created, result.added) == (TABLES, 3 * 4), "a, b, c and d in every table"
    figures = hoodie_metrics.commit_figures("20240101000000000", [], seconds=1.0, counts={}, quarantined=0,
                                            sync=outcome)
    assert figures.ingest["syncConsecutiveFailures"] == 0
    assert set(figures.streamer) == {"HiveSyncTool"}, "HoodieStreamerMetrics.updateStreamerMetaSyncMetrics"



def test_a_table_hudi_wrote_syncs_from_its_own_properties(metastore, hudi_table_copy, capsys):  # noqa: F811
    """A table Hudi's Spark writer made (v6_trips_8i3d), synced by `ingest sync --path`: the name, database
    and partition field come from its hoodie.properties, the extractor is inferred from its hive-style
    partitioning (HoodieSyncConfig.META_SYNC_PARTITION_EXTRACTOR_CLASS: HiveStylePartitionValueExtractor),
    columns from its latest commit's schema (HiveSchemaUtil.convertField) and every partition on storage is
    registered (HiveSyncTool.syncAllPartitions)."""
    from hmsclient import hmsclient

    path = hudi_table_copy("v6_trips_8i3d")
    assert cli.main(["sync", "--path", str(path), "--set",
                     f"hoodie.datasource.hive_sync.metastore.uris={metastore.uri}",
                     "--set", "hoodie.datasource.hive_sync.database=lake_fixture"]) == 0
    assert "created v6_trips_8i3d_ro,v6_trips_8i3d_rt,v6_trips_8i3d, partitions +9 ~0 -0" in capsys.readouterr().out
    port = int(metastore.uri.rsplit(":", 1)[1])
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        for name in ("v6_trips_8i3d_ro", "v6_trips_8i3d_rt", "v6_trips_8i3d"):
            table = client.get_table("lake_fixture", name)
            assert [(c.name, c.type) for c in table.sd.cols] == [*COLUMNS[:5], ("ts", "bigint"), ("uuid", "string"),
                                                                  ("rider", "string"), ("driver", "string"),
                                                                  ("fare", "double")]
            assert [(c.name, c.type) for c in table.partitionKeys] == [("city", "string")]
            partitions = {p.values[0]: p.sd.location for p in client.get_partitions("lake_fixture", name, -1)}
            assert partitions == {c: f"file:{path}/city={c}" for c in ("chennai", "san_francisco", "sao_paulo")}


# -- ingest sync and the jobs -----------------------------------------------------------------------------


def test_ingest_sync_on_demand_registers_the_table_and_a_rerun_changes_nothing(metastore, tmp_path, capsys):  # noqa: F811
    """The standalone HiveSyncTool run: a table synced by `ingest sync --path` holds what a synced stream's
    holds; a second run finds `last_commit_time_sync` current and nothing written since
    (HoodieSyncClient.getWrittenPartitionsSince), so it changes nothing."""
    from hmsclient import hmsclient

    path = tmp_path / "trips"
    write_and_sync(str(path), CatalogSync(str(path), {}, None), BATCHES[:4])
    command = ["sync", "--path", str(path), "--set", f"hudi.hoodie.datasource.hive_sync.metastore.uris={metastore.uri}",
               "--set", "hoodie.datasource.hive_sync.database=lake_cli"]
    assert cli.main(command) == 0
    assert "created trips_ro,trips_rt,trips, partitions +12 ~0 -0" in capsys.readouterr().out
    port = int(metastore.uri.rsplit(":", 1)[1])
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        before = {n: client.get_table("lake_cli", n) for n in INPUT_FORMATS}
        assert cli.main(command) == 0
        assert "partitions +0 ~0 -0" in capsys.readouterr().out
        for name, table in before.items():
            again = client.get_table("lake_cli", name)
            assert again.sd == table.sd and again.partitionKeys == table.partitionKeys
            assert sorted(p.values[0] for p in client.get_partitions("lake_cli", name, -1)) == ["a", "b", "c", "d"]
            params = {k: v for k, v in again.parameters.items() if k != "transient_lastDdlTime"}
            assert params == {k: v for k, v in table.parameters.items() if k != "transient_lastDdlTime"}
    assert cli.main(["sync", "--path", str(path), "--set", "hoodie.datasource.hive_sync.batch_num=0"]) == 2
    assert "batch_num" in capsys.readouterr().err


# -- AWS Glue --------------------------------------------------------------------------------------------


@pytest.fixture
def aws():
    """moto's server on loopback: Glue, and S3 holding the table (bucket `lake`)."""
    boto3 = pytest.importorskip("boto3")
    pytest.importorskip("s3fs")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    credentials = {"aws_access_key_id": "k", "aws_secret_access_key": "s", "region_name": "us-east-1"}
    boto3.client("s3", endpoint_url=endpoint, **credentials).create_bucket(Bucket="lake")
    yield endpoint, boto3.client("glue", endpoint_url=endpoint, **credentials), \
        boto3.client("s3", endpoint_url=endpoint, **credentials)
    server.stop()


def _s3_completion(s3, keys: list[str]) -> str:
    moments = [s3.head_object(Bucket="lake", Key=k)["LastModified"].timestamp() for k in keys]
    return datetime.fromtimestamp(max(moments)).strftime("%Y%m%d%H%M%S%f")[:-3]


def glue_sync(endpoint: str, database: str) -> tuple[dict, SyncSettings]:
    """Storage options for moto's S3 and sync settings for its Glue, registering into `database`."""
    options = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
               "skip_instance_cache": True}
    return options, sync_settings(**{
        "hoodie.meta.sync.client.tool.class": "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
        "hoodie.datasource.hive_sync.database": database, "hoodie.aws.glue.endpoint": endpoint,
        "hoodie.aws.glue.region": "us-east-1", "hoodie.aws.access.key": "k", "hoodie.aws.secret.key": "s"})


@pytest.mark.slow
def test_glue_holds_what_aws_glue_catalog_sync_registers(aws, tmp_path):
    """AWSGlueCatalogSyncClient.createTable (EXTERNAL=TRUE, `hudi.metadata-listing-enabled`, the Spark
    properties; location `s3aToS3`), addPartitionsToTable (the table's descriptor at s3://base/partition),
    updateLastCommitTimeSynced; HoodieSyncClient.getPartitionEvents compares locations without scheme, so
    s3:// in Glue against the s3a:// table is no change. Then a compaction scheduled before a commit and
    finished after it (TimelineUtils.getCommitsTimelineAfter's "hollow" instant): `last_commit_time_sync`
    stays the latest instant, `last_commit_completion_time_sync` becomes the latest completion
    (HoodieActiveTimeline.getLatestCompletionTime), nothing else changes."""
    from ingest import services
    from ingest.hudi.config.service_settings import ServiceSettings

    endpoint, glue, s3 = aws
    url = "s3a://lake/trips"
    options, settings = glue_sync(endpoint, "lake_glue")
    sync = CatalogSync(url, options, settings)
    check_outcomes(write_and_sync(url, sync, storage_options=options))

    commits = HudiTable.open(url, options).timeline().completed(Action.DELTA_COMMIT)
    delta_keys = [f"trips/.hoodie/{c.timestamp}.deltacommit" for c in commits]
    assert glue.get_database(Name="lake_glue")["Database"]["Description"] == (
        "Automatically created by org.apache.hudi.aws.sync.AWSGlueCatalogSyncClient")  # AWSGlueCatalogSyncClient.createDatabase
    assert sorted(t["Name"] for t in glue.get_tables(DatabaseName="lake_glue")["TableList"]) == sorted(TABLES)
    for name, input_format in INPUT_FORMATS.items():
        table = glue.get_table(DatabaseName="lake_glue", Name=name)["Table"]
        sd = table["StorageDescriptor"]
        assert table["TableType"] == "EXTERNAL_TABLE"
        assert [(c["Name"], c["Type"]) for c in sd["Columns"]] == COLUMNS
        assert [(c["Name"], c["Type"]) for c in table["PartitionKeys"]] == [("city", "string")]
        assert (sd["Location"], sd["InputFormat"], sd["OutputFormat"]) == ("s3://lake/trips", input_format, OUTPUT_FORMAT)
        assert sd["SerdeInfo"] == {"SerializationLibrary": SERDE, "Parameters": {
            "path": url, "hoodie.query.as.ro.table": str(name == "trips_ro").lower(), "serialization.format": "1"}}
        params = dict(table["Parameters"])
        assert spark_schema_fields(params.pop("spark.sql.sources.schema.part.0")) == SPARK_FIELDS
        assert params == {"EXTERNAL": "TRUE", "hudi.metadata-listing-enabled": "FALSE",
                          "spark.sql.sources.provider": "hudi", "spark.sql.sources.schema.numParts": "1",
                          "spark.sql.sources.schema.numPartCols": "1", "spark.sql.sources.schema.partCol.0": "city",
                          "last_commit_time_sync": commits[-1].timestamp,
                          "last_commit_completion_time_sync": _s3_completion(s3, delta_keys)}
        partitions = glue.get_partitions(DatabaseName="lake_glue", TableName=name)["Partitions"]
        assert sorted(p["Values"][0] for p in partitions) == CITIES, "city=b stays: emptied, not dropped"
        for p in partitions:
            assert p["StorageDescriptor"]["Location"] == f"s3://lake/trips/city={p['Values'][0]}"
            assert p["StorageDescriptor"]["InputFormat"] == input_format

    # A compaction planned before the next commit, finished after it.
    plan = services.compact(url, ServiceSettings.from_mapping({}), execute=False, storage_options=options)
    assert plan.scheduled is not None
    (later,) = write_and_sync(url, sync, [[("k1", "a", 12, False)]], storage_options=options, first=11)
    assert later.ok
    import time
    time.sleep(1.1)  # S3 times are in seconds: the compaction completes in a later one
    services.compact(url, ServiceSettings.from_mapping({}), instant=plan.scheduled, storage_options=options)
    outcome = sync.after_commit()
    (result,) = outcome.results
    assert (result.created, result.schema_updated, result.added, result.updated, result.dropped) == ([], [], 0, 0, 0)
    commits = HudiTable.open(url, options).timeline().completed(Action.DELTA_COMMIT)
    delta_keys = [f"trips/.hoodie/{c.timestamp}.deltacommit" for c in commits]
    for name in INPUT_FORMATS:
        params = glue.get_table(DatabaseName="lake_glue", Name=name)["Table"]["Parameters"]
        assert params["last_commit_time_sync"] == commits[-1].timestamp > plan.scheduled
        assert params["last_commit_completion_time_sync"] == \
            _s3_completion(s3, [*delta_keys, f"trips/.hoodie/{plan.scheduled}.commit"]) > \
            _s3_completion(s3, delta_keys)


@pytest.mark.slow
def test_backfill_syncs_after_every_commit_and_ingest_sync_config_reruns_idempotently(
        spark, metastore, tmp_path, caplog, capsys):  # noqa: F811
    """HoodieSparkSqlWriter.metaSync / StreamSync.runMetaSync: the sync runs after each commit of the job,
    its partitions are those the commit wrote (HoodieSyncClient.getWrittenPartitionsSince); `ingest sync
    --config` with the same file then finds nothing to do."""
    import logging

    import pyarrow.parquet as pq
    import yaml

    export = tmp_path / "export"
    export.mkdir()
    for i, part in enumerate(["p0", "p1", "p2"]):
        pq.write_table(pa.table({"id": [f"k{i}"], "part": [part], "ts": pa.array([1], pa.int64())}),
                       export / f"f{i}.parquet")
    config = tmp_path / "backfill.yaml"
    config.write_text(yaml.safe_dump({
        "table": {"path": str(tmp_path / "table"), "name": "events", "database": "lake_jobs"},
        "hudi": {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
                 "hoodie.datasource.write.precombine.field": "ts", "hoodie.index.type": "BUCKET",
                 "hoodie.bucket.index.num.buckets": 1,
                 "hoodie.datasource.write.streaming.checkpoint.identifier": "events-backfill",
                 "hoodie.datasource.meta.sync.enable": True,
                 "hoodie.datasource.hive_sync.metastore.uris": metastore.uri},
        "source": {"files": {"path": str(export), "format": "parquet", "max_files_per_trigger": 1},
                   "schema": "id STRING NOT NULL, part STRING NOT NULL, ts BIGINT NOT NULL"},
    }))
    with caplog.at_level(logging.INFO):
        assert cli.main(["backfill", "--config", str(config)]) == 0
    batches = [r.getMessage() for r in caplog.records
               if r.getMessage().startswith("backfill batch ") and " instant " in r.getMessage()]
    assert len(batches) == 3 and all(line.endswith(" sync=ok") for line in batches), batches
    synced = [r.getMessage() for r in caplog.records if r.getMessage().startswith("synced lake_jobs.")]
    assert [s.split(": ", 1)[1].split(" in ")[0] for s in synced] == [
        "created events_ro,events_rt,events, partitions +3 ~0 -0", "partitions +3 ~0 -0", "partitions +3 ~0 -0"]
    capsys.readouterr()
    assert cli.main(["sync", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "synced lake_jobs.{events_ro,events_rt,events}" in out and "partitions +0 ~0 -0" in out


# -- the demo --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_demo_with_sync_prints_the_registered_tables_and_partitions(tmp_path):
    """`ingest demo --sync`: the embedded metastore gets `orders_ro`, `orders_rt` and `orders` (HiveSyncTool's
    MOR names) partitioned by region, every region the demo writes registered (the demo deletes single
    orders, never a whole region, so nothing is dropped: TimelineUtils.getDroppedPartitions)."""
    pytest.importorskip("hmsclient", reason="the ingest[hive] extra is not installed")
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": f"{repo}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "ingest", "demo", "--dir", str(tmp_path / "demo"), "--sync"],
                          capture_output=True, text=True, timeout=900, env=env, cwd=repo)
    assert done.returncode == 0, done.stderr[-4000:]
    shown = done.stdout.split("\nRegistered in the embedded Hive Metastore (thrift://127.0.0.1:")[1]
    shown = shown.split("\nEverything stays in ")[0]
    assert "database default:" in shown
    rows = {line.split()[0]: line.split()[1:] for line in shown.splitlines() if line.startswith("orders")}
    # Hudi's 5 meta fields, order_id, amount, updated_at; region is the partition key, not a column.
    expected = ["8", "region=amer", "region=apac", "region=emea"]
    assert rows == {"orders_ro": expected, "orders_rt": expected, "orders": expected}
    assert " sync=ok" in done.stderr and "synced default.{orders_ro,orders_rt,orders}" in done.stderr


@pytest.mark.parametrize(("extractor", "path", "values"), [
    # SinglePartPartitionValueExtractor: `partitionPath.replace('/', '-')` (a TimestampBasedKeyGenerator's folders).
    ("SinglePartPartitionValueExtractor", "2024/01/05", ["2024-01-05"]),
    ("SinglePartPartitionValueExtractor", "a=b", ["a=b"]),
    # HiveStylePartitionValueExtractor: `split("=")` must give two parts (Java drops trailing empty ones).
    ("HiveStylePartitionValueExtractor", "city=x", ["x"]),
    ("HiveStylePartitionValueExtractor", "city=x=", ["x"]),
    ("HiveStylePartitionValueExtractor", "city=a=b", ValueError),
    ("HiveStylePartitionValueExtractor", "x", ValueError),
    # MultiPartKeysValueExtractor: each folder, `=`-split into two parts when it holds one.
    ("MultiPartKeysValueExtractor", "a=1/b/c=3", ["1", "b", "3"]),
    ("MultiPartKeysValueExtractor", "", []),
    ("MultiPartKeysValueExtractor", "a=1=2/b", ValueError),
    # SlashEncodedDayPartitionValueExtractor: three numbers (maybe `name=`-prefixed) as a yyyy-MM-dd date.
    ("SlashEncodedDayPartitionValueExtractor", "year=2024/m=1/5", ["2024-01-05"]),
    ("SlashEncodedDayPartitionValueExtractor", "2024/02/30", ValueError),
    ("SlashEncodedDayPartitionValueExtractor", "2024/02", ValueError),
    ("NonPartitionedExtractor", "", []),
])
def test_partition_value_extractors_cut_paths_as_hudis_do(extractor, path, values):
    """`extractPartitionValuesInPath` of each of Hudi's extractors (org.apache.hudi.hive), failing where it throws."""
    settings = SyncSettings.from_hudi({**HUDI, "hoodie.datasource.hive_sync.partition_extractor_class":
                                       f"org.apache.hudi.hive.{extractor}"})
    if values is ValueError:
        with pytest.raises(ValueError):
            settings.extractor.values(path)
    else:
        assert settings.extractor.values(path) == values


def test_a_column_named_in_capitals_is_not_altered_at_every_sync(metastore, tmp_path):  # noqa: F811
    """The metastore keeps column names in lower case; `HiveSchemaUtil.getSchemaDifference` compares them so
    (`toLowerCase`, and types with `equalsIgnoreCase`), so a table with a column `userId` syncs its schema
    once, not at every commit (which would rewrite every partition's columns, CASCADE)."""
    path = tmp_path / "trips"
    sync, writer = hms_sync_and_writer(metastore, path, "lake_case")
    results = []
    for i, city in enumerate(["a", "b", "a"]):
        writer.write(_rows([(f"k{i}", city, i, False)], tip=False).append_column("userId", pa.array([f"u{i}"])))
        outcome = sync.after_commit()
        assert outcome.ok
        results.append(outcome.results[0])
    assert results[0].created == TABLES
    assert [r.schema_updated for r in results[1:]] == [[], []]


@pytest.mark.parametrize(("given", "expected"), [
    ({}, [("t_ro", True), ("t_rt", False), ("t", False)]),
    ({"hoodie.meta.sync.sync_snapshot_with_table_name": "false"}, [("t_ro", True), ("t_rt", False)]),
    ({"hoodie.datasource.hive_sync.skip_ro_suffix": "true"}, [("t", False), ("t_rt", False)]),
    ({"hoodie.datasource.hive_sync.skip_ro_suffix": "true", "hoodie.meta.sync.sync_snapshot_with_table_name": "false"},
     [("t", True), ("t_rt", False)]),
    ({"hoodie.datasource.hive_sync.table.strategy": "ro"}, [("t", True)]),
    ({"hoodie.datasource.hive_sync.table.strategy": "RT"}, [("t", False)]),
])
def test_the_tables_a_merge_on_read_table_is_registered_as(given, expected):
    """`HiveSyncTool.doSync` for MERGE_ON_READ: strategy RO or RT syncs `<table>` alone; ALL syncs the
    read-optimized table (`initTableNameVars`: `<table>_ro`, or `<table>` with `skip_ro_suffix`), then
    `<table>_rt`, then with `hoodie.meta.sync.sync_snapshot_with_table_name` (`HoodieSyncConfig`, default
    true) the snapshot as `<table>`; a name synced twice ends as the later (`updateSerdeProperties`
    changes the input format too)."""
    from ingest.catalog.registration import table_names

    settings = SyncSettings.from_hudi({"hoodie.table.name": "t", "hoodie.datasource.meta.sync.enable": "true", **given})
    assert table_names(settings) == expected


def test_an_unknown_table_strategy_names_the_key():
    from ingest.errors import ConfigError

    with pytest.raises(ConfigError, match="hoodie.datasource.hive_sync.table.strategy: 'both' is not one of ALL, RO, RT"):
        SyncSettings.from_hudi({"hoodie.table.name": "t", "hoodie.datasource.hive_sync.table.strategy": "both"})


def test_glue_changes_a_widened_column_in_every_partition_too(aws, tmp_path):
    """`AWSGlueCatalogSyncClient.updateTableSchema`: with partition fields and a column whose type changed
    (`schemaDiff.getUpdateColumnTypes()`), every partition is updated with the table's new descriptor
    (`updatePartitionsToTable`), so engines that read a partition's own columns read the new type."""
    endpoint, glue, _ = aws
    url = "s3a://lake/widen"
    options, settings = glue_sync(endpoint, "lake_glue_widen")
    sync = CatalogSync(url, options, settings)
    writer = LocalWriter(WriteOptions(table_path=url, table_name="trips", hudi=HUDI, storage_options=options,
                                      index=IndexOptions(type=IndexType.BUCKET, bucket_count=2)))
    for kind, rows in ((pa.int32(), [("k1", "a"), ("k2", "b")]), (pa.int64(), [("k3", "c")])):
        batch = _rows([(k, c, 1, False) for k, c in rows], tip=False).append_column(
            "n", pa.array([2**40 if kind == pa.int64() else 7] * len(rows), kind))
        writer.write(batch)
        assert sync.after_commit().ok
    for name in TABLES:
        sd = glue.get_table(DatabaseName="lake_glue_widen", Name=name)["Table"]["StorageDescriptor"]
        assert sd["Columns"][-1]["Type"] == "bigint"
        partitions = glue.get_partitions(DatabaseName="lake_glue_widen", TableName=name)["Partitions"]
        assert sorted(p["Values"][0] for p in partitions) == ["a", "b", "c"]
        assert all(p["StorageDescriptor"]["Columns"][-1] == {"Name": "n", "Type": "bigint", "Comment": ""}
                   for p in partitions), [p["StorageDescriptor"]["Columns"][-1] for p in partitions]


def test_adding_a_partition_another_sync_added_meanwhile_does_not_fail(metastore, tmp_path):  # noqa: F811
    """`HMSDDLExecutor.addPartitionsToTable` adds with `client.add_partitions(partitions, true, false)`: if not
    exists. Two syncs of one table (ingest's and Hudi's, or two jobs) may both find a partition missing."""
    from ingest.catalog.hms import HiveMetastore
    from ingest.catalog.registration import partition_definition, table_definitions
    from ingest.hudi.avro import schema as avro

    path = tmp_path / "trips"
    settings = sync_settings(**{"hoodie.datasource.hive_sync.metastore.uris": metastore.uri,
                                "hoodie.datasource.hive_sync.database": "lake_twice"})
    outcomes = write_and_sync(str(path), CatalogSync(str(path), {}, settings), BATCHES[:1])
    assert outcomes[0].ok
    definition = table_definitions(settings, str(path), avro.with_meta_fields(HudiTable.open(str(path)).schema()))[0]
    client = HiveMetastore(metastore.uri)
    try:
        registered = client.partitions("lake_twice", definition.name)
        client.add_partitions("lake_twice", definition, [partition_definition(settings, str(path), "city=a")])
        assert client.partitions("lake_twice", definition.name) == registered
    finally:
        client.close()


def test_a_table_moved_to_another_base_path_is_registered_again_there(metastore, tmp_path):  # noqa: F811
    """`HiveSyncTool.syncHoodieTable`: when the metastore's table sits elsewhere than the base path
    (`FSUtils.comparePathsWithoutScheme`), the table is replaced (`recreateAndSyncHiveTable`,
    `HoodieHiveSyncClient.createOrReplaceTable`: created under a temporary name, the old one dropped, the
    new one renamed) and every partition on storage registered again, at the new location. Without it,
    the tables kept the old location and the partitions not written since the move kept theirs."""
    import shutil

    from hmsclient import hmsclient

    old, new = tmp_path / "old" / "trips", tmp_path / "new" / "trips"
    settings = sync_settings(**{"hoodie.datasource.hive_sync.metastore.uris": metastore.uri,
                                "hoodie.datasource.hive_sync.database": "lake_moved"})
    assert all(o.ok for o in write_and_sync(str(old), CatalogSync(str(old), {}, settings), BATCHES[:4]))
    shutil.copytree(old, new)
    moved = CatalogSync(str(new), {}, settings)
    outcome = moved.after_commit()
    assert outcome.ok
    (result,) = outcome.results
    assert (result.created, result.recreated) == ([], TABLES)
    assert (result.added, result.updated, result.dropped) == (len(TABLES) * 4, 0, 0)
    port = int(metastore.uri.rsplit(":", 1)[1])
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        assert sorted(client.get_all_tables("lake_moved")) == sorted(TABLES), "no temporary table left"
        for name in TABLES:
            table = client.get_table("lake_moved", name)
            assert table.sd.location == f"file:{new}"
            assert table.sd.serdeInfo.parameters["path"] == f"file:{new}"
            assert table.parameters["last_commit_time_sync"] == last_commit_stamps(new)[0]
            locations = {p.values[0]: p.sd.location for p in client.get_partitions("lake_moved", name, -1)}
            assert locations == {c: f"file:{new}/city={c}" for c in CITIES[:4]}
    again = moved.after_commit()
    assert again.ok and (again.results[0].recreated, again.results[0].added) == ([], 0)


def test_every_sync_points_the_table_and_its_serde_path_at_the_base_path(metastore, tmp_path):  # noqa: F811
    """`HoodieHiveSyncClient.updateLastCommitTimeSynced` sets the table's location and the serde `path` to
    the base path at every sync, so a location that names the same path by another scheme or authority (no
    move, `comparePathsWithoutScheme`) is put back, with no table replaced."""
    from hmsclient import hmsclient

    path = tmp_path / "trips"
    sync, writer = hms_sync_and_writer(metastore, path, "lake_location")
    writer.write(_rows(BATCHES[0], tip=False))
    assert sync.after_commit().ok
    port = int(metastore.uri.rsplit(":", 1)[1])
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        for name in TABLES:
            table = client.get_table("lake_location", name)
            table.sd.location = f"file://{path}"
            table.sd.serdeInfo.parameters.pop("path")
            client.alter_table("lake_location", name, table)
        writer.write(_rows(BATCHES[1], tip=False))
        outcome = sync.after_commit()
        assert outcome.ok and outcome.results[0].recreated == []
        for name in TABLES:
            table = client.get_table("lake_location", name)
            assert (table.sd.location, table.sd.serdeInfo.parameters.get("path")) == (f"file:{path}", f"file:{path}")


def test_glue_registers_a_moved_table_again_at_its_new_location(aws, tmp_path):
    """`AWSGlueCatalogSyncClient.createOrReplaceTable` (through `recreateAndSyncHiveTable`): a temporary
    table is created and dropped first (`validateSchemaAndProperties`), then the table is dropped and
    created at the new base path, and its partitions registered there."""
    endpoint, glue, s3 = aws
    old, new = "s3a://lake/before/trips", "s3a://lake/moved/trips"  # moto's S3 is shared by the tests
    options, settings = glue_sync(endpoint, "lake_glue_moved")
    assert all(o.ok for o in write_and_sync(old, CatalogSync(old, options, settings), BATCHES[:2],
                                            storage_options=options))
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="lake", Prefix="before/"):
        for obj in page["Contents"]:
            s3.copy_object(Bucket="lake", Key="moved/" + obj["Key"][len("before/"):], CopySource={"Bucket": "lake", "Key": obj["Key"]})
    outcome = CatalogSync(new, options, settings).after_commit()
    assert outcome.ok and outcome.results[0].recreated == TABLES
    assert sorted(t["Name"] for t in glue.get_tables(DatabaseName="lake_glue_moved")["TableList"]) == sorted(TABLES)
    for name in TABLES:
        table = glue.get_table(DatabaseName="lake_glue_moved", Name=name)["Table"]
        assert table["StorageDescriptor"]["Location"] == "s3://lake/moved/trips"
        assert table["Parameters"]["hudi.metadata-listing-enabled"] == "FALSE"
        partitions = glue.get_partitions(DatabaseName="lake_glue_moved", TableName=name)["Partitions"]
        assert {p["Values"][0]: p["StorageDescriptor"]["Location"] for p in partitions} == {
            c: f"s3://lake/moved/trips/city={c}" for c in CITIES[:3]}


def test_a_catalog_table_without_location_is_not_replaced(aws, tmp_path):
    """`HiveSyncTool.syncHoodieTable` compares the catalog table's location with the base path
    (`FSUtils.comparePathsWithoutScheme`), which fails on a table with none (a view): Hudi's sync stops
    there, and so does ingest's, naming the table, rather than dropping what holds the name."""
    endpoint, glue, _ = aws
    url = "s3a://lake/nolocation/trips"
    options, settings = glue_sync(endpoint, "lake_glue_view")
    glue.create_database(DatabaseInput={"Name": "lake_glue_view"})
    glue.create_table(DatabaseName="lake_glue_view", TableInput={"Name": "trips_ro", "TableType": "VIRTUAL_VIEW",
                                                                 "ViewOriginalText": "select 1"})
    (outcome,) = write_and_sync(url, CatalogSync(url, options, settings), BATCHES[:1], storage_options=options)
    assert not outcome.ok
    assert "lake_glue_view.trips_ro exists in AWS Glue" in outcome.error and "without a location" in outcome.error
    assert glue.get_table(DatabaseName="lake_glue_view", Name="trips_ro")["Table"]["TableType"] == "VIRTUAL_VIEW"
