"""Tables and settings ingest cannot write are refused before Spark starts, in one line, leaving
nothing behind: the same answer from `ingest validate-config`, the jobs and the library's writer."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from service_tables import HUDI_SETTINGS, options_for

from ingest import cli
from ingest.errors import TimelineError, UnsupportedTable
from ingest.hudi.config.service_settings import CleanSettings, CompactionSettings, ServiceSettings
from ingest.hudi.services import archiver, cleaner, compaction
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.write.batch import LocalWriter
from ingest.write.index_bootstrap import Manifest
from ingest.write.options import IndexOptions, IndexType, WriteOptions

SCHEMA = "uuid STRING NOT NULL, city STRING, ts BIGINT, fare DOUBLE"


def rows() -> pa.Table:
    return pa.table({"uuid": ["a", "b"], "city": ["chennai", "sao_paulo"], "ts": pa.array([1, 1], pa.int64()),
                     "fare": [1.0, 2.0]})


def pipeline(tmp_path: Path, table: Path, hudi: dict | None = None) -> Path:
    config = {
        "table": {"path": str(table), "name": "trips"},
        "hudi": {**HUDI_SETTINGS, **(hudi or {})},
        "source": {"kafka": {"bootstrap_servers": "localhost:1", "topics": ["trips"]}, "schema": SCHEMA},
        "stream": {"checkpoint": str(tmp_path / "checkpoint")},
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def files(table: Path) -> dict[str, int]:
    return {str(p.relative_to(table)): p.stat().st_size for p in sorted(table.rglob("*")) if p.is_file()}


def refused(capsys, config: Path, table: Path, *sets: str) -> str:
    """validate-config and `ingest stream` both exit 2 with the same one line; the table is untouched."""
    before = files(table)
    overrides = [a for s in sets for a in ("--set", s)]
    assert cli.main(["validate-config", str(config), *overrides]) == 2
    checked = capsys.readouterr().err
    assert cli.main(["stream", "--config", str(config), *overrides]) == 2
    streamed = capsys.readouterr().err.strip().splitlines()
    assert checked.count("\n") == 1 and streamed[-1] == checked.strip()
    assert files(table) == before
    return checked.strip()


def test_changing_the_index_type_of_a_key_indexed_table_is_refused_by_validation(tmp_path, capsys):
    """`BucketIdentifier.bucketIdFromFileId`: a bucket index finds file groups by the bucket number in
    the first 8 characters of their id; a key-indexed table's file groups carry none."""
    table = tmp_path / "trips"
    LocalWriter(WriteOptions(str(table), "trips", hudi=HUDI_SETTINGS, index=IndexOptions(type=IndexType.KEY))
                ).write(rows())
    config = pipeline(tmp_path, table)
    line = refused(capsys, config, table, "hudi.hoodie.index.type=BUCKET")
    assert line.startswith(f"ingest: error: --set: hudi.hoodie.index.type: {table}: file group ")
    assert line.endswith("was not written by a bucket index; continue this table with SIMPLE "
                         "(or another hoodie.index.type but BUCKET)")
    assert "'key'" not in line
    assert cli.main(["validate-config", str(config)]) == 0


def test_changing_the_index_type_of_a_bucket_table_is_refused_by_validation(tmp_path, capsys):
    """`BucketIdentifier.bucketIdFromFileId`: a bucket table's file groups are buckets; a key index
    would add file groups with no bucket number that Hudi's bucket writers cannot place."""
    table = tmp_path / "trips"
    LocalWriter(options_for(table, buckets=2)).write(rows())
    config = pipeline(tmp_path, table)  # hoodie.index.type left at its default, SIMPLE
    line = refused(capsys, config, table)
    assert line == (f"ingest: error: {config}: hudi.hoodie.index.type: {table}: the table records "
                    "hoodie.index.type=BUCKET (its file groups are buckets); continue it with BUCKET")
    assert cli.main(["validate-config", str(config), "--set", "hudi.hoodie.index.type=BUCKET",
                     "--set", "hudi.hoodie.bucket.index.num.buckets=2"]) == 0


@pytest.mark.parametrize("prop, value, says", [
    ("hoodie.table.version", "5", "hoodie.table.version=5: table version 5 is neither read nor written"),
    ("hoodie.populate.meta.fields", "false", "hoodie.populate.meta.fields=false: ingest writes tables with "
                                             "meta fields only"),
    ("hoodie.table.type", "COPY_ON_WRITE", "hoodie.table.type=COPY_ON_WRITE: ingest writes "
                                           "MERGE_ON_READ tables only"),
    # `HoodieTableConfig.CDC_ENABLED`: Hudi's writers add change-data-capture log files (`HoodieCDCLogger`).
    ("hoodie.table.cdc.enabled", "true", "hoodie.table.cdc.enabled=true cannot be written (ingest writes no "
                                         "change-data-capture log files)"),
    # `BOOTSTRAP_BASE_PATH`: skeleton base files, joined with the source's files when read.
    ("hoodie.bootstrap.base.path", "/data/source", "hoodie.bootstrap.base.path=/data/source cannot be written"),
    # `DROP_PARTITION_COLUMNS`: `HoodieSparkSqlWriter` drops the partition columns from the records it writes.
    ("hoodie.datasource.write.drop.partition.columns", "true", "hoodie.datasource.write.drop.partition.columns"
                                                               "=true cannot be written"),
    # Hudi 1.2's `SLASH_SEPARATED_DATE_PARTITIONING`: its key generators write `2024-03-15` as `2024/03/15`.
    ("hoodie.datasource.write.slash.separated.date.partitioning", "true",
     "hoodie.datasource.write.slash.separated.date.partitioning=true cannot be written (ingest writes a partition "
     "value as one folder)"),
    # `ARCHIVELOG_FOLDER`: `HoodieTableMetaClient.getArchivePath` reads the archive from this folder.
    ("hoodie.archivelog.folder", "history", "hoodie.archivelog.folder=history cannot be written (ingest archives "
                                            "into .hoodie/archived)"),
])
def test_a_table_ingest_cannot_write_is_refused_naming_its_property(tmp_path, capsys, prop, value, says):
    """`HoodieTableConfig.populateMetaFields` (`hoodie.populate.meta.fields`, default true), `getTableType`,
    `getTableVersion` and the table properties that make Hudi's writers write other files than ingest's:
    what the table is made of, refused by validation, every job and the writer itself before anything (a
    lease file, an instant) is written."""
    table = tmp_path / "trips"
    options = WriteOptions(str(table), "trips", hudi=HUDI_SETTINGS, index=IndexOptions(type=IndexType.KEY))
    LocalWriter(options).write(rows())
    props = table / ".hoodie" / "hoodie.properties"
    text = "\n".join(line for line in props.read_text().splitlines() if not line.startswith(prop + "="))
    props.write_text(f"{text}\n{prop}={value}\n")
    line = refused(capsys, pipeline(tmp_path, table), table)
    assert line.startswith(f"ingest: error: {props}: {says}")
    before = files(table)
    with pytest.raises(UnsupportedTable, match=re.escape(says.split(":")[0])):
        LocalWriter(options).write(rows())
    assert files(table) == before


def test_a_table_whose_record_keys_hudi_generated_is_refused(tmp_path, capsys):
    """Hudi 0.14+ writes a table without `hoodie.table.recordkey.fields` when it generates every record's key
    (`AutoRecordKeyGeneratorWrapper`, a Spark SQL table without a primary key), and its own writers then
    refuse a record key field (`HoodieWriterUtils.validateTableConfig`: "if incoming record key is non
    empty, table config should also be non empty"). ingest's keyed updates and deletes would match none of
    those records, so the table is refused before anything is written."""
    table = tmp_path / "trips"
    options = WriteOptions(str(table), "trips", hudi=HUDI_SETTINGS, index=IndexOptions(type=IndexType.KEY))
    LocalWriter(options).write(rows())
    props = table / ".hoodie" / "hoodie.properties"
    props.write_text("\n".join(line for line in props.read_text().splitlines()
                               if not line.startswith("hoodie.table.recordkey.fields=")) + "\n")
    says = "hoodie.table.recordkey.fields is not set: the table's records carry keys Hudi generated"
    assert refused(capsys, pipeline(tmp_path, table), table).startswith(f"ingest: error: {props}: {says}")
    before = files(table)
    with pytest.raises(UnsupportedTable, match=says):
        LocalWriter(options).write(rows())
    assert files(table) == before
    # Table services take keys from the meta fields: they still run.
    assert cli.main(["compact", str(table)]) == 0


@pytest.mark.parametrize("version, marker", [(6, "file"), (8, "file"), (9, "file"), (6, "commit")])
def test_a_table_whose_schema_hudi_evolved_on_read_is_refused(tmp_path, capsys, version, marker):
    """Hudi's schema on read (`hoodie.schema.on.read.enable`, `ALTER TABLE ... RENAME COLUMN`) keeps an
    InternalSchema history in `.hoodie/.schema/` (`FileBasedInternalSchemaStorageManager`) and the latest
    schema in each commit's `latest_schema` (`SerDeHelper.LATEST_SCHEMA`); readers map old files' columns by
    field id from the latest schema-changing commit's (`TableSchemaResolver.getTableInternalSchemaFromCommitMetadata`).
    A commit without it, as ingest writes them, would drop that mapping: validation, the writer and every
    table service refuse such a table before anything is written."""
    table = tmp_path / "trips"
    options = WriteOptions(str(table), "trips", hudi={**HUDI_SETTINGS, "hoodie.write.table.version": str(version)},
                           index=IndexOptions(type=IndexType.KEY))
    LocalWriter(options).write(rows())
    hudi_table = HudiTable.open(str(table))
    last = hudi_table.timeline().last_completed(Action.DELTA_COMMIT)
    history = json.dumps({"schemas": [{"max_column_id": 8, "version_id": int(last.timestamp), "type": "record",
                                       "fields": [{"id": 5, "name": "uuid", "optional": False, "type": "string"}]}]})
    if marker == "file":
        (table / ".hoodie" / ".schema").mkdir()
        (table / ".hoodie" / ".schema" / f"{last.timestamp}.schemacommit").write_text(history)
        says = f".hoodie/.schema/{last.timestamp}.schemacommit"
    else:
        path = table / ".hoodie" / f"{last.timestamp}.deltacommit"
        metadata = json.loads(path.read_text())
        metadata["extraMetadata"]["latest_schema"] = history
        path.write_text(json.dumps(metadata, indent=2))
        says = f"deltacommit {last.timestamp} carries latest_schema"
    line = refused(capsys, pipeline(tmp_path, table, {"hoodie.write.table.version": str(version)}), table)
    assert f"its schema is kept by Hudi's schema on read ({says})" in line
    before = files(table)
    with pytest.raises(UnsupportedTable, match=re.escape(says)):
        LocalWriter(options).write(rows())
    with pytest.raises(UnsupportedTable, match=re.escape(says)):
        compaction.schedule(HudiTable.open(str(table)), CompactionSettings(), force=True)
    with pytest.raises(UnsupportedTable, match=re.escape(says)):
        cleaner.clean(HudiTable.open(str(table)), CleanSettings(), force=True)
    with pytest.raises(UnsupportedTable, match=re.escape(says)):
        archiver.archive(HudiTable.open(str(table)), ServiceSettings())
    assert files(table) == before


def options_at(table: Path) -> WriteOptions:
    return WriteOptions(str(table), table.name, hudi={**HUDI_SETTINGS, "hoodie.datasource.write.precombine.field": "ts"},
                        index=IndexOptions(type=IndexType.KEY))


HUDI_UPDATE = "20251220210130911"  # the v8 fixture's last deltacommit: an update, in the latest slice's log


def make_partial(table: Path) -> None:
    """Hudi's update block of HUDI_UPDATE turned into a partial update (`IS_PARTIAL`), as Hudi 1.x's MERGE
    INTO writes one when it sets some columns (here all: the records do not matter, the header does)."""
    from ingest.hudi.log.log_block import BlockType, HeaderKey
    from ingest.hudi.log.log_reader import read_log_file
    from ingest.hudi.log.log_writer import create_log_file
    from ingest.storage import Storage

    (log,) = table.glob(f"city=*/.*_{HUDI_UPDATE}.log.*")
    storage, rel = Storage(str(table)), str(log.relative_to(table))
    (block,) = read_log_file(storage, rel)
    assert block.block_type is BlockType.AVRO_DATA
    log.unlink()
    create_log_file(storage, rel, [dataclasses.replace(block, header=(*block.header, (HeaderKey.IS_PARTIAL, "true")))])


def test_a_hudi_partial_update_is_refused_before_anything_is_written(hudi_table_copy, tmp_path, capsys):
    """Hudi 1.x's MERGE INTO on a Merge-On-Read table of version 8 or more writes the columns it sets as a
    partial block (`IS_PARTIAL`, `HoodieAppendHandle` with `hoodie.write.partial.update.schema`), which
    `KeyBasedFileGroupRecordBuffer` merges field by field into the previous version. ingest does not merge
    partial records: a writer meeting one in another writer's deltacommit refuses the table before its own
    instant is requested, so nothing changes."""
    table = hudi_table_copy("v8_trips_8i3u1d")
    make_partial(table)
    line = refused(capsys, pipeline(tmp_path, table), table)
    assert line.endswith(f"AVRO_DATA block at offset 0 (instant {HUDI_UPDATE}) holds partial updates (IS_PARTIAL, "
                         "as Spark's MERGE INTO writes them): ingest does not merge partial records"), line
    before = files(table)
    with pytest.raises(UnsupportedTable, match=rf"block at offset 0 \(instant {HUDI_UPDATE}\) holds partial updates"):
        LocalWriter(options_at(table)).write(rows())
    assert files(table) == before
    # Compaction would merge the block: refused before its plan is written (and the metadata table removed).
    assert cli.main(["compact", str(table)]) == 1
    assert "holds partial updates" in capsys.readouterr().err
    assert files(table) == before
    # Cleaning and archival read no log block: they are not refused.
    for service in ("clean", "archive"):
        assert cli.main([service, str(table)]) == 0, capsys.readouterr().err


def test_a_partial_update_hudi_compacted_away_is_not_read(hudi_table_copy):
    """Once the slice is compacted (here by ingest, before the block became partial, as Hudi's compaction
    would merge it), its log file stays until cleaned but no reader reads it: ingest writes again."""
    table = hudi_table_copy("v8_trips_8i3u1d")
    hudi_table = HudiTable.open(str(table))
    compaction.execute(hudi_table, compaction.schedule(hudi_table, CompactionSettings(), force=True))
    make_partial(table)
    assert LocalWriter(options_at(table)).write(rows()).instant is not None


V6_UPDATE = "20250331030645735"  # the v6 fixture's update: one AVRO_DATA block in a log file of the latest slice


@pytest.mark.parametrize("partial", ["merged block", "compacted block"])
def test_a_log_compaction_decides_which_partial_blocks_are_read(hudi_table_copy, partial):
    """Hudi's log compaction (`LogCompactionExecutionHelper`) writes a block with `COMPACTED_BLOCK_TIMES`
    that readers take in place of the blocks it merged (`scanInternalV2`). The writer's check reads the
    blocks as reads merge them: a partial block the compacted block replaced is not read, and the table
    is written; a compacted block that is itself partial is, and the table is refused, unchanged."""
    from ingest.hudi.log.log_block import BlockType, HeaderKey, LogBlock, encode_log_block
    from ingest.hudi.log.log_reader import read_log_file
    from ingest.hudi.log.log_writer import create_log_file
    from ingest.storage import Storage

    table = hudi_table_copy("v6_trips_8i1u")
    storage = Storage(str(table))
    (log,) = table.glob("city=*/.*.log.*")
    rel = str(log.relative_to(table))
    (update,) = read_log_file(storage, rel)
    partial_header = (HeaderKey.IS_PARTIAL, "true")
    if partial == "merged block":
        log.unlink()
        create_log_file(storage, rel, [dataclasses.replace(update, header=(*update.header, partial_header))])
    compacted = "20250331030700000"
    storage.write(f".hoodie/{compacted}.logcompaction.requested", b"")
    storage.write(f".hoodie/{compacted}.logcompaction.inflight", b"")
    header = [(k, compacted if k is HeaderKey.INSTANT_TIME else v) for k, v in update.header]
    header.append((HeaderKey.COMPACTED_BLOCK_TIMES, V6_UPDATE))
    if partial == "compacted block":
        header.append(partial_header)
    new_rel = rel.replace(".log.1_", ".log.2_")
    storage.write(new_rel, encode_log_block(LogBlock(BlockType.AVRO_DATA, header, update.content, update.footer)))
    metadata = json.loads(storage.read(f".hoodie/{V6_UPDATE}.deltacommit"))
    for stats in metadata["partitionToWriteStats"].values():
        for stat in stats:
            stat["path"] = new_rel
    storage.write(f".hoodie/{compacted}.deltacommit", json.dumps(metadata, indent=2).encode())

    if partial == "merged block":
        assert LocalWriter(options_at(table)).write(rows()).instant is not None
        # Known to the index now: later writes do not read the log compaction's slices again.
        assert Manifest.read(HudiTable.open(str(table))).covers(compacted)
        return
    before = files(table)
    with pytest.raises(UnsupportedTable, match=rf"\(instant {compacted}\) holds partial updates"):
        LocalWriter(options_at(table)).write(rows())
    assert files(table) == before


def test_another_writers_commit_that_does_not_parse_is_refused_before_the_lease(tmp_path):
    """A deltacommit file another writer left torn: the writer's check reads its metadata before the lease
    and fails there, naming it, so no instant of its own is requested on a table it cannot read."""
    table = tmp_path / "trips"
    LocalWriter(options_for(table)).write(rows())
    (done,) = [p for p in (table / ".hoodie").glob("*.deltacommit")]
    torn = table / ".hoodie" / "20000101000000000.deltacommit"  # not the latest: the schema is read from that
    torn.write_bytes(done.read_bytes()[:40])
    before = files(table)
    with pytest.raises(TimelineError, match="20000101000000000"):
        LocalWriter(options_for(table)).write(rows())
    assert files(table) == before


def test_a_bucket_table_written_with_more_buckets_is_refused_naming_the_count(tmp_path, capsys):
    """`BucketIdentifier.getBucketId` hashes a key modulo the bucket count, which Hudi does not record in
    `hoodie.properties`: a file group numbered at or past the count given tells the table has more buckets,
    and every key would go to another bucket than Hudi's writers send it to."""
    table = tmp_path / "trips"
    LocalWriter(options_for(table, buckets=8)).write(pa.table({
        "uuid": [f"k{i}" for i in range(40)], "city": ["chennai"] * 40, "ts": pa.array([1] * 40, pa.int64()),
        "fare": [1.0] * 40}))
    buckets = {int(p.name[1:9]) for p in table.rglob(".*.log.*")}
    assert max(buckets) >= 2, buckets
    properties = table / ".hoodie" / "hoodie.properties"  # as Hudi's writers leave it: no bucket count
    properties.write_text("".join(line for line in properties.read_text().splitlines(keepends=True)
                                  if not line.startswith("hoodie.bucket.index.num.buckets=")))
    config = pipeline(tmp_path, table, {"hoodie.index.type": "BUCKET"})
    line = refused(capsys, config, table, "hudi.hoodie.bucket.index.num.buckets=2")
    assert line.startswith(f"ingest: error: --set: hudi.hoodie.bucket.index.num.buckets: {table}: file group ")
    assert line.endswith("the table has more buckets than 2; set hoodie.bucket.index.num.buckets to the count it "
                         "was written with")
    data = {k: v for k, v in files(table).items() if not k.startswith(".hoodie/")}
    with pytest.raises(Exception, match="hoodie.bucket.index.num.buckets.*more buckets than 2"):
        LocalWriter(options_for(table, buckets=2)).write(rows())  # the writer's plan refuses it too
    assert {k: v for k, v in files(table).items() if not k.startswith(".hoodie/")} == data


@pytest.mark.parametrize("folder", ["partition_bucket_index_meta", "consistent_hashing_metadata"])
def test_a_table_with_hudis_bucket_index_metadata_is_refused(tmp_path, capsys, folder):
    """`HoodieTableMetaClient.PARTITION_BUCKET_INDEX_HASHING_FOLDER`: Hudi's writers give each partition the
    bucket count its rule says (`NumBucketsFunction`); `HASHING_METADATA_FOLDER_NAME`: consistent hashing.
    ingest follows neither, and refuses the table before anything is written: by validation, and by a
    writer before it takes the lease."""
    table = tmp_path / "trips"
    LocalWriter(options_for(table, buckets=2)).write(rows())
    meta = table / ".hoodie" / ".bucket_index" / folder / "configs"
    meta.mkdir(parents=True)
    (meta / "00000000000000000.hashing_config").write_text("{}")
    before = files(table)
    with pytest.raises(UnsupportedTable, match=rf"\.hoodie/\.bucket_index/{folder}: .*; not written"):
        LocalWriter(options_for(table, buckets=2)).write(rows())
    assert files(table) == before
    config = pipeline(tmp_path, table, {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 2})
    assert f".hoodie/.bucket_index/{folder}" in refused(capsys, config, table)


def test_partition_level_bucket_numbers_are_refused_in_the_config(tmp_path, capsys):
    config = pipeline(tmp_path, tmp_path / "trips", {"hoodie.index.type": "BUCKET",
                                                     "hoodie.bucket.index.partition.expressions": "chennai,16"})
    assert cli.main(["validate-config", str(config)]) == 2
    assert "hoodie.bucket.index.partition.expressions" in capsys.readouterr().err
