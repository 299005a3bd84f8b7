"""`_hoodie_commit_seqno` numbered as Hudi's write handles number it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.hudi.log.data_block import decode_avro_content
from ingest.hudi.log.log_block import BlockType
from ingest.hudi.log.log_reader import iter_log_blocks
from ingest.storage import Storage
from ingest.write.batch import LocalWriter
from ingest.write.file_group_writer import InsertMode
from ingest.write.options import IndexOptions, IndexType, WriteOptions

HUDI = {
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _options(path: Path, **kw) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="t", hudi=HUDI,
                        index=IndexOptions(type=IndexType.BUCKET, bucket_count=4), **kw)


def _batch(n: int) -> pa.Table:
    ids = [f"k{i:03d}" for i in reversed(range(n))]
    return pa.table({"id": ids, "part": [f"p{i % 3}" for i in range(n)], "ts": pa.array([1] * n, pa.int64())})


def _log_seqnos(table: Path) -> list[str]:
    out = []
    for log in table.rglob(".*.log.*"):
        storage = Storage(str(log.parent))
        for block in iter_log_blocks(storage, log.name):
            if block.block_type == BlockType.AVRO_DATA:
                out.extend(r["_hoodie_commit_seqno"] for r in decode_avro_content(block.content, block.schema))
    return out


def test_log_records_count_from_one_across_the_tasks_file_groups(tmp_path):
    """`HoodieAppendHandle.populateMetadataFields`: `HoodieRecord.generateSequenceId(instantTime,
    getPartitionId(), RECORD_COUNTER.getAndIncrement())` with `RECORD_COUNTER` a static
    `AtomicLong(1)`: numbering starts at 1 and is not reset per file group, so no two log records of
    one task share a seqno (the Hudi-written log fixture's record is `<instant>_0_1`)."""
    result = LocalWriter(_options(tmp_path / "t")).write(_batch(30))
    seqnos = _log_seqnos(tmp_path / "t")
    assert len(list((tmp_path / "t").rglob(".*.log.*"))) > 1
    assert len(seqnos) == 30
    assert sorted(int(s.rsplit("_", 1)[1]) for s in seqnos) == list(range(1, 31))
    assert {s.rsplit("_", 1)[0] for s in seqnos} == {f"{result.instant}_0"}


def test_base_file_records_count_from_zero_in_file_order(tmp_path):
    """`HoodieAvroParquetWriter.writeAvroWithMetadata`: `prepRecordWithMetadata(..., getWrittenRecordCount(),
    fileName)`, so a base file's records are numbered 0, 1, ... in the order the file holds them (as in
    the Hudi-written fixture base files). That order is the batch's: `HoodieCreateHandle` writes its
    iterator's order, and bulk insert sorts nothing by default (`hoodie.bulkinsert.sort.mode` NONE)."""
    options = dataclasses.replace(_options(tmp_path / "t"), insert_mode=InsertMode.BASE)
    batch = _batch(30)
    LocalWriter(options).write(batch)
    place = {key: i for i, key in enumerate(batch.column("id").to_pylist())}
    files = [f for f in (tmp_path / "t").rglob("*.parquet") if ".hoodie" not in f.parts]
    assert len(files) > 1
    for f in files:
        rows = pq.read_table(f, columns=["_hoodie_commit_seqno", "_hoodie_record_key"]).to_pylist()
        assert [int(r["_hoodie_commit_seqno"].rsplit("_", 1)[1]) for r in rows] == list(range(len(rows)))
        places = [place[r["_hoodie_record_key"]] for r in rows]
        assert places == sorted(places)  # the batch's order, which is not the keys' order
        assert [r["_hoodie_record_key"] for r in rows] != sorted(r["_hoodie_record_key"] for r in rows)
