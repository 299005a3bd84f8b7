"""Blocks our encoder builds from scratch are read by an independent reader (hudi-rs).

The Hudi-written tables are copied and their log file replaced by one we write for the same,
committed instant; hudi-rs then reads the table's snapshot.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from ingest.hudi.log.data_block import avro_data_block, encode_avro_records
from ingest.hudi.log.delete_block import DeleteRecord, OrderingValue, OrderingWrapper, delete_block
from ingest.hudi.log.log_reader import read_log_file
from ingest.hudi.log.log_writer import create_log_file
from ingest.storage import Storage

hudi = pytest.importorskip("hudi")


def snapshot(table: Path) -> dict[str, dict]:
    result = hudi.HudiTableBuilder.from_base_uri(str(table)).build().read()
    rows = (result if isinstance(result, pa.Table) else pa.Table.from_batches(result)).to_pylist()
    return {r["rider"]: r for r in rows}


def replace_log(table: Path, build) -> None:
    (log,) = [p for p in table.rglob("*") if p.is_file() and ".log." in p.name and ".hoodie" not in p.parts]
    storage = Storage(str(log.parent))
    (old,) = read_log_file(storage, log.name)
    log.unlink()
    create_log_file(storage, log.name, [build(old, log)])


def test_hudi_rs_reads_a_data_block_we_encode(hudi_table_copy):
    table = hudi_table_copy("v6_trips_8i1u")
    assert snapshot(table)["rider-D"]["fare"] == 25.0

    def build(old, log):
        instant = old.instant_time
        row = {
            "_hoodie_commit_time": instant,
            "_hoodie_commit_seqno": f"{instant}_0_1",
            "_hoodie_record_key": "9909a8b1-2d15-4d3d-8ec9-efc48c536a00",
            "_hoodie_partition_path": "city=san_francisco",
            "_hoodie_file_name": log.name[1:].split("_")[0],
            "ts": 1695046462179,
            "uuid": "9909a8b1-2d15-4d3d-8ec9-efc48c536a00",
            "rider": "rider-D",
            "driver": "driver-Ünïcode",
            "fare": 26.5,
            "city": "san_francisco",
        }
        return avro_data_block(instant, old.schema, encode_avro_records([row], old.schema))

    replace_log(table, build)
    rows = snapshot(table)
    assert (rows["rider-D"]["fare"], rows["rider-D"]["driver"]) == (26.5, "driver-Ünïcode")
    assert rows["rider-A"]["fare"] == 19.10 and len(rows) == 8


@pytest.mark.parametrize(
    "ordering",
    [
        None,
        OrderingValue(OrderingWrapper.INT, 0),
        OrderingValue(OrderingWrapper.LONG, 1695159649087),
        OrderingValue(OrderingWrapper.STRING, "z"),
    ],
)
def test_hudi_rs_applies_a_delete_block_we_encode(hudi_table_copy, ordering):
    table = hudi_table_copy("v6_trips_8i3d")

    def build(old, log):
        keys = ["334e26e9-8355-45cc-97c6-c31daf0df330", "9909a8b1-2d15-4d3d-8ec9-efc48c536a00"]
        return delete_block(old.instant_time, old.schema, [DeleteRecord(k, "city=san_francisco", ordering) for k in keys])

    replace_log(table, build)
    assert sorted(snapshot(table)) == ["rider-C", "rider-E", "rider-F", "rider-G", "rider-I", "rider-J"]
