"""A bulk load's task takes its base files' data columns in runs (`tasks._widen`), not all at once.

The files must not depend on how the rows were taken: each new base file holds its group's rows in
record-key order, numbered from 0 (`HoodieCreateHandle` via `HoodieRecord.generateSequenceId`), whatever
the run size. And the point of runs, a task holding one run's copy of the data at a time, is checked
on Arrow's allocator while each base file is written.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.hudi.avro import schema as avro
from ingest.hudi.table.table import HudiTable
from ingest.write import file_group_writer, tasks
from ingest.write.batch import LocalWriter
from ingest.write.file_group_writer import InsertMode
from ingest.write.options import IndexOptions, IndexType, WriteOptions

ROWS = 20_000
WIDE = 400  # bytes of one string column per row: about 8 MB of data columns in all


def batch() -> pa.Table:
    ids = list(range(ROWS))
    return pa.table({
        "id": pa.array([f"k{(i * 7919) % ROWS:06d}" for i in ids]),
        "part": pa.array([f"p{i % 4}" for i in ids]),
        "ts": pa.array(ids, pa.int64()),
        "payload": pa.array([f"{i:08d}" * (WIDE // 8) for i in ids]),
    })


def options(path) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="runs", hudi={
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts",
    }, index=IndexOptions(type=IndexType.BUCKET, bucket_count=4), insert_mode=InsertMode.BASE)


def base_files(path) -> dict[tuple[str, str], pa.Table]:
    """Each base file's rows by (partition, bucket), less the columns that name the instant or file."""
    table = HudiTable.open(str(path))
    stats = table.commit_metadata(table.timeline().last_completed()).all_write_stats()
    out = {}
    for stat in stats:
        rows = pq.read_table(table.storage.url(stat.path))
        bucket = stat.file_id[:8]  # Hudi's bucket file ids start with the bucket number
        out[(stat.partition_path, bucket)] = rows.drop_columns(
            [avro.COMMIT_TIME, avro.COMMIT_SEQNO, avro.FILE_NAME]).append_column(
            "seqno_number", pa.array([s.rsplit("_", 1)[1] for s in rows.column(avro.COMMIT_SEQNO).to_pylist()]))
    return out


def test_runs_cut_consecutive_groups_at_the_limit():
    assert tasks._runs([], 10) == []
    assert tasks._runs([4, 4, 4, 4], 8) == [[0, 1], [2, 3]]
    assert tasks._runs([4, 5, 3, 20, 1], 8) == [[0], [1, 2], [3], [4]]  # a group over the limit runs alone
    assert tasks._runs([1, 1, 1], 100) == [[0, 1, 2]]


@pytest.mark.parametrize("run_bytes", [1, 1 << 20])
def test_base_files_do_not_depend_on_the_run_size(tmp_path, monkeypatch, run_bytes):
    LocalWriter(options(tmp_path / "one_take")).write(batch())
    monkeypatch.setattr(tasks, "RUN_BYTES", run_bytes)
    LocalWriter(options(tmp_path / "runs")).write(batch())
    want, got = base_files(tmp_path / "one_take"), base_files(tmp_path / "runs")
    assert len(want) == 16 and sum(t.num_rows for t in want.values()) == ROWS
    assert got.keys() == want.keys()
    for key, rows in want.items():
        assert got[key].equals(rows), key
        keys = rows.column(avro.RECORD_KEY).to_pylist()
        assert keys == sorted(keys)
        assert rows.column("seqno_number").to_pylist() == [str(n) for n in range(rows.num_rows)]


def held_while_writing(path, monkeypatch) -> int:
    """Arrow bytes allocated, at the most, as each base file's write begins."""
    seen = []
    write = file_group_writer._write_base_file

    def counting(*args, **kwargs):
        seen.append(pa.total_allocated_bytes())
        return write(*args, **kwargs)

    monkeypatch.setattr(file_group_writer, "_write_base_file", counting)
    data = batch()
    LocalWriter(options(path)).write(data)
    return max(seen)


def test_a_bulk_task_holds_one_run_of_data_columns_at_a_time(tmp_path, monkeypatch):
    data_bytes = batch().nbytes
    monkeypatch.setattr(tasks, "RUN_BYTES", 1 << 40)  # one take of every group
    one_take = held_while_writing(tmp_path / "one", monkeypatch)
    monkeypatch.setattr(tasks, "RUN_BYTES", data_bytes // 8)
    in_runs = held_while_writing(tmp_path / "runs", monkeypatch)
    # One take holds a second copy of all the data columns; runs of an eighth hold an eighth of one.
    assert one_take - in_runs > data_bytes // 2, (one_take, in_runs, data_bytes)
