"""Data blocks cut at `hoodie.logfile.data.block.max.size`, as Hudi's append handle cuts them."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pyarrow as pa
from test_config import base, write

from ingest.config.loader import load_config
from ingest.hudi.log.data_block import decode_avro_content
from ingest.hudi.log.log_block import BlockType
from ingest.hudi.log.log_reader import iter_log_blocks
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.storage import Storage
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

LIMIT = 4096
HUDI = {
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _batch(n: int, first: int = 0) -> pa.Table:
    rng = random.Random(first)
    return pa.table({
        "id": [f"k{i:05d}" for i in range(first, first + n)],
        "part": ["p"] * n,
        "ts": pa.array([1] * n, pa.int64()),
        "note": ["x" * rng.randrange(0, 300) for _ in range(n)],
    })


def test_a_large_batch_is_written_as_several_blocks_within_the_limit(tmp_path):
    """`HoodieAppendHandle.flushToDiskIfRequired`: once the records buffered reach
    `hoodie.logfile.data.block.max.size` (`maxBlockSize / averageRecordSize` records) the handle calls
    `appendDataAndDeleteBlocks(header, false)` and starts a new data block in the same log file;
    deletes follow the data blocks in one DELETE block (`appendDeleteBlocks` only on the last call).
    Each block's records here are within the limit, measured as the bytes the block's records take."""
    path = tmp_path / "t"
    options = WriteOptions(table_path=str(path), table_name="t", hudi=HUDI,
                           index=IndexOptions(type=IndexType.BUCKET, bucket_count=1))
    LocalWriter(dataclasses.replace(options, log_block_max_bytes=LIMIT)).write(_batch(300))
    deletes = _batch(5).append_column("_hoodie_is_deleted", pa.array([True] * 5))
    LocalWriter(dataclasses.replace(options, log_block_max_bytes=LIMIT)).write(
        pa.concat_tables([_batch(100, first=300).append_column("_hoodie_is_deleted", pa.array([False] * 100)),
                          deletes]))

    [log] = [p for p in path.rglob(".*.log.*")]
    blocks = list(iter_log_blocks(Storage(str(log.parent)), log.name))
    kinds = [b.block_type for b in blocks]
    data = [b for b in blocks if b.block_type == BlockType.AVRO_DATA]
    assert len(data) > 4 and kinds[-1] == BlockType.DELETE and kinds.count(BlockType.DELETE) == 1
    assert all(len(b.content) <= LIMIT for b in data)
    records = [r for b in data for r in decode_avro_content(b.content, b.schema)]
    assert len(records) == 400 and len({r["id"] for r in records}) == 400

    expected = {f"k{i:05d}" for i in range(5, 400)}
    ours = read_snapshot(HudiTable.open(str(path)))
    assert sorted(ours.column("id").to_pylist()) == sorted(expected)

    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    theirs = [r["id"] for batch in table.read() for r in batch.to_pylist()]
    assert sorted(theirs) == sorted(expected)


def test_block_cuts_fill_each_block_and_give_an_oversized_record_its_own():
    """`HoodieAppendHandle.flushToDiskIfRequired` flushes before every record once not even one fits
    (`maxBlockSize / averageRecordSize` is 0), so a record larger than the limit is a block alone."""
    from ingest.write.file_group_writer import block_cuts

    sizes = np.array([10, 10, 10, 50, 10, 10])
    ends = np.cumsum(sizes)
    assert block_cuts(ends, 8 + 30) == [3, 4, 6]
    assert block_cuts(ends, 8 + 29) == [2, 3, 4, 6]
    assert block_cuts(ends, 10**6) == [6]


def test_the_limit_is_a_hudi_key_read_into_the_write_options(tmp_path):
    """`HoodieStorageConfig.LOGFILE_DATA_BLOCK_MAX_SIZE` (`hoodie.logfile.data.block.max.size`,
    default 256 MiB), read by `HoodieWriteConfig.getLogFileDataBlockMaxSize`."""
    default = load_config(write(tmp_path, base(tmp_path)))
    assert default.write.log_block_max_bytes == 256 * 1024 * 1024
    config = load_config(write(tmp_path, base(tmp_path)), ["hudi.hoodie.logfile.data.block.max.size=4096"])
    assert config.write.log_block_max_bytes == 4096
