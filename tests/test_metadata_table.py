"""A table with Hudi's metadata table: removed before ingest writes, as a Hudi writer with
`hoodie.metadata.enable=false` removes it (`HoodieTable.maybeDeleteMetadataTable`).

The situation is built from the Hudi-written fixture `v6_trips_8i1u` plus what a Hudi writer with the
metadata table on leaves: `hoodie.table.metadata.partitions` naming its partitions and the
`.hoodie/metadata` folder (the v8 fixture's, copied: its content does not matter here).
"""

from __future__ import annotations

import shutil
import zipfile

import pyarrow as pa
import pytest
from conftest import fixtures_dir

from ingest import cli
from ingest.hudi.config import properties_file
from ingest.hudi.config.table_config import TableConfigKey
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.file_group_writer import InsertMode
from ingest.write.options import IndexOptions, IndexType, WriteOptions

FIXTURE = "v6_trips_8i1u"
SETTINGS = {
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
}


def with_metadata_table(table_dir, tmp_path) -> None:
    """What a Hudi writer with the metadata table on leaves (`HoodieTableConfig.setMetadataPartitionState`)."""
    props_path = table_dir / ".hoodie" / "hoodie.properties"
    props = properties_file._parse(props_path.read_bytes())
    props["hoodie.table.metadata.partitions"] = "files,record_index"
    props["hoodie.table.metadata.partitions.inflight"] = ""
    props_path.write_bytes(properties_file.encode(props, "Updated at 2026-01-01T00:00:00Z"))
    with zipfile.ZipFile(fixtures_dir() / "tables" / "v8_trips_8i3u1d.zip") as zf:
        members = [m for m in zf.namelist() if "/.hoodie/metadata/" in m and not m.startswith("__MACOSX")]
        zf.extractall(tmp_path / "v8", members)
    shutil.copytree(tmp_path / "v8" / "v8_trips_8i3u1d" / ".hoodie" / "metadata", table_dir / ".hoodie" / "metadata")


def rows(n: int) -> pa.Table:
    return pa.table({"ts": pa.array([1700000000000 + i for i in range(n)], pa.int64()),
                     "uuid": [f"new-{i}" for i in range(n)], "rider": ["r"] * n, "driver": ["d"] * n,
                     "fare": [1.0] * n, "city": ["chennai"] * n})


def test_a_write_removes_the_metadata_table_properties_first_then_the_folder(hudi_table_copy, tmp_path, caplog):
    """`HoodieTableMetadataUtil.deleteMetadataTable`: `clearMetadataPartitions` (both keys emptied,
    through `HoodieTableConfig.update`'s backup protocol), then the folder deleted."""
    table_dir = hudi_table_copy(FIXTURE)
    with_metadata_table(table_dir, tmp_path)
    assert HudiTable.open(str(table_dir)).config.get(TableConfigKey.METADATA_PARTITIONS)
    before = read_snapshot(HudiTable.open(str(table_dir))).num_rows

    options = WriteOptions(table_path=str(table_dir), table_name=FIXTURE, hudi=SETTINGS,
                           index=IndexOptions(type=IndexType.KEY, shards=2), insert_mode=InsertMode.BASE)
    with caplog.at_level("WARNING"):
        LocalWriter(options).write(rows(3))

    table = HudiTable.open(str(table_dir))
    assert table.config.raw(TableConfigKey.METADATA_PARTITIONS) == ""
    assert table.config.raw(TableConfigKey.METADATA_PARTITIONS_INFLIGHT) == ""
    assert properties_file.valid_checksum(table.config.props)
    assert not (table_dir / ".hoodie" / "metadata").exists()
    assert not (table_dir / ".hoodie" / "hoodie.properties.backup").exists()
    assert any("removed the metadata table" in m for m in caplog.messages)
    assert read_snapshot(table).num_rows == before + 3
    hudi = pytest.importorskip("hudi")
    assert hudi.HudiTableBuilder.from_base_uri(str(table_dir)).build().get_schema() is not None


def test_a_folder_left_by_a_crash_after_the_properties_is_removed_by_a_service(hudi_table_copy, tmp_path, capsys):
    """A crash between the two steps leaves the key empty and the folder: no reader uses it
    (`HoodieTableConfig.isMetadataTableAvailable` is false), and the next writer deletes the folder."""
    table_dir = hudi_table_copy(FIXTURE)
    with_metadata_table(table_dir, tmp_path)
    properties_file.modify(HudiTable.open(str(table_dir)).storage,
                           {"hoodie.table.metadata.partitions": "", "hoodie.table.metadata.partitions.inflight": ""})
    assert (table_dir / ".hoodie" / "metadata").is_dir()
    assert cli.main(["clean", "--path", str(table_dir)]) == 0
    assert not (table_dir / ".hoodie" / "metadata").exists()


def test_tables_ingest_creates_say_they_have_no_metadata_table(tmp_path):
    options = WriteOptions(table_path=str(tmp_path / "t"), table_name="t", hudi=SETTINGS)
    LocalWriter(options).write(rows(1))
    text = (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()
    assert "\nhoodie.table.metadata.partitions=\n" in text
    assert not (tmp_path / "t" / ".hoodie" / "metadata").exists()
