"""New keys land where Hudi's Merge-On-Read writer puts them for the table's index type.

With an index that cannot index log files (SIMPLE, BLOOM, GLOBAL_*, RECORD_INDEX: ingest's key
index), inserts go to base files, small base-only file slices first, rewritten with the batch's
updates and deletes to them; the bucket index keeps inserts in log files.
"""

from __future__ import annotations

import dataclasses

import hudi_invariants
import pyarrow as pa
import pytest
from test_table_semantics import check_hudi_rs, options_for

from ingest.hudi.avro import schema as avro
from ingest.hudi.parquet.base_file import read_base_file
from ingest.hudi.table.snapshot import context, read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import NULL_COMMIT
from ingest.hudi.timeline.instant import Action
from ingest.spark.sink import HudiSink
from ingest.write.batch import LocalWriter
from ingest.write.options import SmallFileOptions

hudi = pytest.importorskip("hudi")


def batch(keys, ts: int, deleted=()) -> pa.Table:
    return pa.table({
        "uuid": list(keys), "city": ["chennai"] * len(keys), "ts": pa.array([ts] * len(keys), pa.int64()),
        "fare": [float(ts)] * len(keys), "_hoodie_is_deleted": [k in deleted for k in keys],
    })


def live_rows(table: HudiTable) -> dict[str, float]:
    snap = read_snapshot(table)
    return dict(zip(snap.column("uuid").to_pylist(), snap.column("fare").to_pylist(), strict=True))


def hudi_rs_rows(path) -> dict[str, float]:
    rows = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    return dict(zip(rows.column("uuid").to_pylist(), rows.column("fare").to_pylist(), strict=True))


def test_stream_batches_fill_one_small_base_file(spark, tmp_path):
    """`SparkUpsertDeltaCommitPartitioner.getSmallFileCandidates` (index cannot index log files): a
    base-only slice under `hoodie.parquet.small.file.limit` takes the next batch's new keys, and
    `BaseSparkDeltaCommitActionExecutor.handleUpdate` sends that file group's whole share (updates and
    deletes too) through `HoodieMergeHandle`: one file group, a new base file per batch, no log file;
    every key where `HoodieSimpleIndex` looks (the latest base files); hudi-rs reads exactly the rows."""
    path = tmp_path / "table"
    options = options_for(path, "key", "base")
    expected: dict[str, float] = {}
    with HudiSink(options, spark=spark, small_batch_rows=3) as sink:
        for b in range(4):
            keys = [f"k{b}-{i}" for i in range(5)] + (["k0-1", "k0-2"] if b else [])
            deleted = {"k0-2"} if b == 2 else set()
            sink(spark.createDataFrame(batch(keys, b, deleted)), b)
            for k in keys:
                if k in deleted:
                    expected.pop(k, None)
                else:
                    expected[k] = float(b)
    table = HudiTable.open(str(path))
    _, slices = context(table)
    assert len(slices) == 1 and slices[0].base_file is not None and not slices[0].log_files
    assert hudi_invariants.check_keys_in_base_files(table.base_url) == len(expected)
    assert live_rows(table) == expected
    assert hudi_rs_rows(path) == expected
    check_hudi_rs(str(path), table)
    last = table.commit_metadata(table.timeline().completed(Action.DELTA_COMMIT)[-1]).all_write_stats()
    assert [(s.num_inserts, s.num_update_writes, s.num_writes) for s in last] == [(6, 1, len(expected))]  # k0-2 was deleted: an insert again
    assert last[0].prev_commit != NULL_COMMIT and last[0].path.endswith(".parquet")


@pytest.mark.parametrize("version", [6, 8, 9])
def test_a_small_file_merge_names_the_base_file_it_merged(tmp_path, version):
    """Hudi 1.x's `HoodieMergeHandle` sets `prevCommit` to the merged base file's instant and `prevBaseFile` to
    its name (`setPrevBaseFile(baseFileToMerge.getFileName())`); 0.14/0.15's JSON metadata has no such field."""
    path = tmp_path / "t"
    writer = LocalWriter(options_for(path, "key", "base", version=version))
    writer.write(batch(["a", "b"], 1))
    first = HudiTable.open(str(path)).timeline().last_completed(Action.DELTA_COMMIT)
    writer.write(batch(["c"], 2))
    table = HudiTable.open(str(path))
    (stat,) = table.commit_metadata(table.timeline().last_completed(Action.DELTA_COMMIT)).all_write_stats()
    (merged,) = table.commit_metadata(first).all_write_stats()
    assert stat.file_id == merged.file_id and stat.prev_commit == first.timestamp
    assert stat.prev_base_file == (merged.path.rsplit("/", 1)[-1] if version >= 8 else None)


def test_small_file_limit_zero_opens_a_file_group_per_batch(tmp_path):
    """`SparkUpsertDeltaCommitPartitioner.getSmallFileCandidates`: with `hoodie.parquet.small.file.limit`
    <= 0 there are no small files, so each batch's new keys open new file groups (base files)."""
    options = dataclasses.replace(options_for(tmp_path / "t", "key", "base"),
                                  small_files=SmallFileOptions(small_file_limit=0))
    writer = LocalWriter(options)
    for b in range(3):
        writer.write(batch([f"k{b}-{i}" for i in range(4)], b))
    table = HudiTable.open(str(tmp_path / "t"))
    _, slices = context(table)
    assert len(slices) == 3 and all(s.base_file is not None and not s.log_files for s in slices)
    assert hudi_invariants.check_keys_in_base_files(table.base_url) == 12


def test_a_slice_with_log_files_is_not_a_small_file(tmp_path):
    """`getSmallFileCandidates` skips slices with log files ("We can not pad slices with existing
    log-files w/o compacting these"): after an update-only batch wrote a log, new keys open a new
    file group instead of joining the logs."""
    writer = LocalWriter(options_for(tmp_path / "t", "key", "base"))
    writer.write(batch(["a", "b"], 1))
    writer.write(batch(["a"], 2))           # an update: a log file in the only group
    writer.write(batch(["c", "d"], 3))      # new keys
    table = HudiTable.open(str(tmp_path / "t"))
    _, slices = context(table)
    assert sorted(len(s.log_files) for s in slices) == [0, 1]
    assert hudi_invariants.check_keys_in_base_files(table.base_url) == 4
    assert live_rows(table) == {"a": 2.0, "b": 1.0, "c": 3.0, "d": 3.0}


def test_new_file_groups_are_sized_by_max_file_size_over_record_size(tmp_path):
    """`UpsertPartitioner.assignInserts` with auto split: new file groups of `hoodie.parquet.max.file.size`
    / `averageBytesPerRecord` records, which is `hoodie.copyonwrite.record.size.estimate` while no commit
    wrote more than the small file limit: 25 keys, 10 per file group, make 3 file groups."""
    options = dataclasses.replace(options_for(tmp_path / "t", "key", "base"), file_group_max_bytes=10 * 1024,
                                  small_files=SmallFileOptions(small_file_limit=0, record_size_estimate=1024))
    LocalWriter(options).write(batch([f"k{i:02d}" for i in range(25)], 1))
    table = HudiTable.open(str(tmp_path / "t"))
    _, slices = context(table)
    assert len(slices) == 3
    sizes = sorted(read_base_file(table.storage, s.base_file.path, columns=[avro.RECORD_KEY]).num_rows for s in slices)
    assert sum(sizes) == 25


def test_a_key_deleted_in_a_log_comes_back_to_its_file_group(tmp_path):
    """A delete in a log leaves the key in its group's base file, where `HoodieSimpleIndex` (base files
    only, `HoodieIndexUtils.getLatestBaseFilesForPartition`) still finds it; Hudi tags the key's next
    version as an update of that group (`HoodieAppendHandle`), so it goes there, not to a new base file
    where Hudi's index would find the key twice."""
    writer = LocalWriter(options_for(tmp_path / "t", "key", "base"))
    writer.write(batch(["a", "b"], 1))
    writer.write(batch(["a"], 2, deleted={"a"}))   # a delete block in the group's log
    result = writer.write(batch(["a", "c"], 3))     # a again, and a new key
    table = HudiTable.open(str(tmp_path / "t"))
    assert hudi_invariants.check_keys_in_base_files(table.base_url) == 3
    assert live_rows(table) == {"a": 3.0, "b": 1.0, "c": 3.0}
    assert (result.counts["updates"], result.counts["inserts"]) == (1, 1)
    assert hudi_rs_rows(tmp_path / "t") == {"a": 3.0, "b": 1.0, "c": 3.0}


def test_a_small_base_file_hudi_wrote_takes_new_keys_keeping_its_records_meta_fields(hudi_table_copy):
    """Continuing a table Hudi wrote with its default (SIMPLE) index: a new key in a partition whose
    file group is one small base file is merged into it (`SparkUpsertDeltaCommitPartitioner` small
    file, `HoodieMergeHandle`): same file id, a new base file; records not touched keep Hudi's
    `_hoodie_commit_time`/`_hoodie_commit_seqno` and get the new `_hoodie_file_name`
    (`HoodieMergeHandle.writeToFile` with metadata preserved); hudi-rs reads exactly the rows."""
    from test_sink import FIXTURE_SETTINGS

    from ingest.write.options import IndexOptions, IndexType, WriteOptions

    path = hudi_table_copy("v6_trips_8i1u")
    table = HudiTable.open(str(path))
    _, slices = context(table)
    chennai = next(s for s in slices if s.partition_path == "city=chennai")
    assert chennai.base_file is not None and not chennai.log_files
    before = read_base_file(table.storage, chennai.base_file.path).to_pylist()
    expected = hudi_rs_rows(path)
    row = {"ts": 1700000000000, "uuid": "new-1", "rider": "rider-X", "driver": "driver-X", "fare": 13.0,
           "city": "chennai"}
    LocalWriter(WriteOptions(table_path=str(path), table_name="v6_trips_8i1u", hudi=FIXTURE_SETTINGS,
                             index=IndexOptions(type=IndexType.KEY, shards=2))).write(
        pa.Table.from_pylist([row], pa.schema([("ts", pa.int64()), ("uuid", pa.string()), ("rider", pa.string()),
                                                ("driver", pa.string()), ("fare", pa.float64()), ("city", pa.string())])))
    table = HudiTable.open(str(path))
    _, slices = context(table)
    merged = next(s for s in slices if s.partition_path == "city=chennai")
    assert merged.file_id == chennai.file_id and not merged.log_files
    assert merged.base_file.name.instant > chennai.base_file.name.instant
    after = {r["uuid"]: r for r in read_base_file(table.storage, merged.base_file.path).to_pylist()}
    for old in before:
        kept = after[old["uuid"]]
        assert (kept[avro.COMMIT_TIME], kept[avro.COMMIT_SEQNO]) == (old[avro.COMMIT_TIME], old[avro.COMMIT_SEQNO])
        assert kept[avro.FILE_NAME] == merged.base_file.name.name
    assert after["new-1"][avro.COMMIT_TIME] == merged.base_file.name.instant
    assert hudi_invariants.check_keys_in_base_files(table.base_url) == len(expected) + 1
    expected["new-1"] = 13.0
    assert hudi_rs_rows(path) == expected
