"""A small base file that takes new keys is rewritten in the order Hudi's merge handle writes it."""

from __future__ import annotations

import hudi_invariants
import pyarrow as pa
from test_sink import FIXTURE_SETTINGS

from ingest.hudi.avro import schema as avro
from ingest.hudi.parquet.base_file import read_base_file
from ingest.hudi.table.snapshot import context
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.merge_order import hash_map_order
from ingest.write.options import IndexOptions, IndexType, WriteOptions

TRIPS = pa.schema([("ts", pa.int64()), ("uuid", pa.string()), ("rider", pa.string()), ("driver", pa.string()),
                   ("fare", pa.float64()), ("city", pa.string())])


def java_bucket(key: str, capacity: int) -> int:
    """`HashMap`'s bucket of a string key, from `String.hashCode` computed here on its own."""
    h = 0
    for unit in key.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def _slice(table: HudiTable, partition: str):
    _, slices = context(table)
    return next(s for s in slices if s.partition_path == partition)


def test_merged_small_file_keeps_the_old_file_order_then_adds_new_keys_in_hash_map_order(hudi_table_copy):
    """`HoodieMergeHandle.write` walks the old base file in its order, writing an updated key's new
    version where the old one stood and copying the rest (`writeToFile` with metadata preserved);
    `HoodieMergeHandle.close` then calls `writeIncomingRecords`, which writes the keys the file did
    not hold in the iteration order of `keyToNewRecords` (`ExternalSpillableMap.iterator`, a
    `HashMap`'s values). Records written with metadata are numbered by the parquet writer's count
    (`HoodieAvroParquetWriter.writeAvroWithMetadata`: `getWrittenRecordCount()`), so an updated or new
    record's `_hoodie_commit_seqno` is its place in the file. Hudi's own file for sao_paulo holds its
    keys out of sort order, which the merge must keep."""
    path = hudi_table_copy("v6_trips_8i1u")
    table = HudiTable.open(str(path))
    small = _slice(table, "city=sao_paulo")
    assert small.base_file is not None and not small.log_files
    old = read_base_file(table.storage, small.base_file.path).to_pylist()
    old_keys = [r[avro.RECORD_KEY] for r in old]
    assert old_keys != sorted(old_keys)  # Hudi wrote them unsorted
    updated = old_keys[0]
    # Three incoming records: a map of capacity 16. New keys whose map order is neither their sort
    # order nor the order they arrive in.
    new_keys = ["bb-new", "aa-new", "qq-new"]
    expected_new = sorted(new_keys, key=lambda k: java_bucket(k, 16))
    assert len({java_bucket(k, 16) for k in new_keys}) == 3
    assert expected_new not in (sorted(new_keys), new_keys, sorted(new_keys, reverse=True))

    rows = [{"ts": 1700000000000, "uuid": updated, "rider": "r", "driver": "d", "fare": 1.0, "city": "sao_paulo"}]
    rows += [{"ts": 1700000000000, "uuid": k, "rider": "r", "driver": "d", "fare": 2.0, "city": "sao_paulo"}
             for k in new_keys]
    result = LocalWriter(WriteOptions(table_path=str(path), table_name="v6_trips_8i1u", hudi=FIXTURE_SETTINGS,
                                      index=IndexOptions(type=IndexType.KEY, shards=2))).write(
        pa.Table.from_pylist(rows, TRIPS))

    table = HudiTable.open(str(path))
    merged = _slice(table, "city=sao_paulo")
    assert merged.file_id == small.file_id and merged.base_file.name.instant == result.instant
    after = read_base_file(table.storage, merged.base_file.path).to_pylist()
    assert [r[avro.RECORD_KEY] for r in after] == old_keys + expected_new
    assert after[0]["fare"] == 1.0 and after[0][avro.COMMIT_TIME] == result.instant
    assert (after[1][avro.COMMIT_TIME], after[1][avro.COMMIT_SEQNO]) == (old[1][avro.COMMIT_TIME],
                                                                         old[1][avro.COMMIT_SEQNO])
    written = [0, 2, 3, 4]
    assert [after[i][avro.COMMIT_SEQNO] for i in written] == [f"{result.instant}_0_{i}" for i in written]
    assert {r[avro.FILE_NAME] for r in after} == {merged.base_file.name.name}
    assert hudi_invariants.check(path, bucket_index=False)["keys_in_base_files"] == 11


def test_hash_map_order_is_the_order_of_javas_own_hash_map(spark):
    """`HoodieMergeHandle.writeIncomingRecords` iterates `ExternalSpillableMap`, whose in-memory
    part is a `java.util.HashMap` (`new HashMap<>()`): the order is checked against a `HashMap`
    built in Spark's JVM with the same keys put in the same order, across several resizes (16 up to
    1024 buckets) and with keys sharing buckets."""
    jvm = spark.sparkContext._jvm
    for n in (3, 12, 13, 100, 700):
        keys = [f"order-{i * 7919 % 100_000}" for i in range(n)]
        java_map = jvm.java.util.HashMap()
        for k in keys:
            java_map.put(k, k)
        java_order = list(java_map.keySet().toArray())
        ours = [keys[i] for i in hash_map_order(pa.array(keys), n)]
        assert ours == java_order, n
        # only part of the map's keys iterated, in the same relative order
        part = keys[::3]
        assert [part[i] for i in hash_map_order(pa.array(part), n)] == [k for k in java_order if k in set(part)]
