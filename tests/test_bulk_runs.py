"""A write task takes its file groups' rows in runs, not all at once: a bulk load's base files on the
bucket index (`tasks._widen`), every file group of the key index's write pass (`tasks._file_group_writes`).

The files must not depend on how the rows were taken: each new base file holds its group's rows in
the order the batch gave them (as Hudi's bulk insert, whose sort mode is NONE by default), numbered from 0 (`HoodieCreateHandle` via `HoodieRecord.generateSequenceId`), whatever
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
from ingest.write.options import IndexOptions, IndexType, SmallFileOptions, WriteOptions

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


INDEXES = {
    # Bulk load on the bucket index: new file groups as base files.
    "bucket": dict(index=IndexOptions(type=IndexType.BUCKET, bucket_count=4), insert_mode=InsertMode.BASE),
    # The default configuration (the key index, new keys into base files): a small file size limit
    # spreads the keys over several new file groups per partition.
    "key": dict(index=IndexOptions(type=IndexType.KEY), insert_mode=None, file_group_max_bytes=1 << 20,
                small_files=SmallFileOptions(record_size_estimate=WIDE)),
}


def options(path, index: str = "bucket") -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="runs", hudi={
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts",
    }, **INDEXES[index])


def base_files(path) -> dict[tuple[str, str], pa.Table]:
    """Each base file's rows by (partition, its first record key), less the columns that name the
    instant or file (new file ids derive from the instant)."""
    table = HudiTable.open(str(path))
    stats = table.commit_metadata(table.timeline().last_completed()).all_write_stats()
    out = {}
    for stat in stats:
        rows = pq.read_table(table.storage.url(stat.path))
        first = rows.column(avro.RECORD_KEY)[0].as_py()
        out[(stat.partition_path, first)] = rows.drop_columns(
            [avro.COMMIT_TIME, avro.COMMIT_SEQNO, avro.FILE_NAME]).append_column(
            "seqno_number", pa.array([s.rsplit("_", 1)[1] for s in rows.column(avro.COMMIT_SEQNO).to_pylist()]))
    return out


def test_runs_cut_consecutive_groups_at_the_limit():
    assert tasks._runs([], 10) == []
    assert tasks._runs([4, 4, 4, 4], 8) == [[0, 1], [2, 3]]
    assert tasks._runs([4, 5, 3, 20, 1], 8) == [[0], [1, 2], [3], [4]]  # a group over the limit runs alone
    assert tasks._runs([1, 1, 1], 100) == [[0, 1, 2]]
    assert tasks._runs([0, 0], 5) == [[0, 1]]  # groups without rows (deletes only) run too


@pytest.mark.parametrize("index", sorted(INDEXES))
@pytest.mark.parametrize("run_bytes", [1, 1 << 20])
def test_base_files_do_not_depend_on_the_run_size(tmp_path, monkeypatch, run_bytes, index):
    monkeypatch.setattr(tasks, "RUN_BYTES", 1 << 40)  # one take of every group
    LocalWriter(options(tmp_path / "one_take", index)).write(batch())
    monkeypatch.setattr(tasks, "RUN_BYTES", run_bytes)
    LocalWriter(options(tmp_path / "runs", index)).write(batch())
    place = {key: i for i, key in enumerate(batch().column("id").to_pylist())}
    want, got = base_files(tmp_path / "one_take"), base_files(tmp_path / "runs")
    assert len(want) >= 8 and sum(t.num_rows for t in want.values()) == ROWS
    assert got.keys() == want.keys()
    for key, rows in want.items():
        assert got[key].equals(rows), key
        if index == "bucket":  # the key index's pass hands rows on in the order its lookup leaves them
            places = [place[k] for k in rows.column(avro.RECORD_KEY).to_pylist()]
            assert places == sorted(places)
        assert rows.column("seqno_number").to_pylist() == [str(n) for n in range(rows.num_rows)]


def held_while_writing(path, monkeypatch, index: str) -> int:
    """Arrow bytes allocated, at the most, as each base file's write begins."""
    seen = []
    write = file_group_writer._write_base_file

    def counting(*args, **kwargs):
        seen.append(pa.total_allocated_bytes())
        return write(*args, **kwargs)

    monkeypatch.setattr(file_group_writer, "_write_base_file", counting)
    data = batch()
    LocalWriter(options(path, index)).write(data)
    return max(seen)


@pytest.mark.parametrize("index", sorted(INDEXES))
def test_a_write_task_holds_one_run_of_rows_at_a_time(tmp_path, monkeypatch, index):
    data_bytes = batch().nbytes
    monkeypatch.setattr(tasks, "RUN_BYTES", 1 << 40)  # one take of every group
    one_take = held_while_writing(tmp_path / "one", monkeypatch, index)
    monkeypatch.setattr(tasks, "RUN_BYTES", data_bytes // 8)
    in_runs = held_while_writing(tmp_path / "runs", monkeypatch, index)
    # One take holds a second copy of all the data columns; runs of an eighth hold an eighth of one.
    assert one_take - in_runs > data_bytes // 2, (one_take, in_runs, data_bytes)
