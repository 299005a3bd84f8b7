"""A merged base file's bloom filter, grown from the old file's instead of hashing every key again."""

from __future__ import annotations

import pyarrow as pa
import pytest
from test_table_semantics import options_for

from ingest.hudi.avro.schema import RECORD_KEY
from ingest.hudi.parquet import bloom_filter as bloom
from ingest.hudi.parquet.base_file import BLOOM_FILTER_KEY, read_base_file, read_footer
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter

OLD = [f"key-{i:04d}" for i in range(0, 300, 2)]
ADDED = [f"key-{i:04d}" for i in range(1, 40, 2)]


def fresh(kind: str, num_entries: int, keys, fpp: float = 0.0001, max_entries: int | None = None) -> bloom.BloomFilter:
    filt = bloom.create_bloom_filter(kind, num_entries, fpp, max_entries or 4 * num_entries)
    filt.add_all(sorted(keys))
    return filt


@pytest.mark.parametrize("kind", [bloom.SIMPLE, bloom.DYNAMIC_V0])
def test_a_grown_filter_is_the_filter_of_every_key(kind):
    """`HoodieBloomFilterWriteSupport.addKey`: a merge's new file gets a fresh filter
    (`BloomFilterFactory.createBloomFilter`) holding every key it writes; for one row of
    `InternalDynamicBloomFilter` (and a `SimpleBloomFilter`) that is the old keys' bits plus the added
    keys', whatever the order."""
    held = bloom.parse_bloom_filter(fresh(kind, 1000, OLD).to_string(), kind)
    grown = bloom.extended(held, len(OLD), bloom.create_bloom_filter(kind, 1000, 0.0001, 4000), pa.array(ADDED))
    assert grown is not None
    assert grown.to_string() == fresh(kind, 1000, OLD + ADDED).to_string()


def test_a_filter_is_not_grown_where_its_rows_depend_on_the_order():
    """`InternalDynamicBloomFilter.add`: past `nr` keys a new row starts, so the rows depend on the
    order the keys come in; such a filter, or one of other settings, is built afresh."""
    held = bloom.parse_bloom_filter(fresh(bloom.DYNAMIC_V0, 160, OLD).to_string(), bloom.DYNAMIC_V0)
    assert bloom.extended(held, len(OLD), bloom.create_bloom_filter(bloom.DYNAMIC_V0, 160, 0.0001, 640),
                          pa.array(ADDED)) is None
    held = bloom.parse_bloom_filter(fresh(bloom.DYNAMIC_V0, 1000, OLD).to_string(), bloom.DYNAMIC_V0)
    assert bloom.extended(held, len(OLD), bloom.create_bloom_filter(bloom.DYNAMIC_V0, 2000, 0.0001, 8000),
                          pa.array(ADDED)) is None


def batch(keys, ts: int, deleted=()) -> pa.Table:
    return pa.table({"uuid": list(keys), "city": ["chennai"] * len(keys), "ts": pa.array([ts] * len(keys), pa.int64()),
                     "fare": [float(ts)] * len(keys), "_hoodie_is_deleted": [k in deleted for k in keys]})


def test_merged_files_hold_the_filter_of_their_keys(tmp_path):
    """`HoodieMergeHandle` writes the small file's kept, updated and new records through
    `HoodieBloomFilterWriteSupport.addKey`: the footer's filter is the one of exactly the keys in the
    file, with deletes (filter built afresh) and without (filter grown)."""
    path = tmp_path / "table"
    writer = LocalWriter(options_for(path, "key", "base"))
    writer.write(batch(OLD, 1))
    writer.write(batch(OLD[:10] + ADDED, 2))                      # updates and new keys: grown
    writer.write(batch(OLD[10:20] + ["key-9001"], 3, deleted=OLD[10:15]))  # deletes: afresh
    table = HudiTable.open(str(path))
    checked = 0
    for instant in table.timeline().completed()[1:]:
        for stat in table.commit_metadata(instant).all_write_stats():
            keys = read_base_file(table.storage, stat.path, columns=[RECORD_KEY]).column(RECORD_KEY).to_pylist()
            footer = read_footer(table.storage, stat.path)
            assert footer.metadata[BLOOM_FILTER_KEY] == fresh(
                bloom.DYNAMIC_V0, bloom.DEFAULT_NUM_ENTRIES, keys, bloom.DEFAULT_FPP,
                bloom.DEFAULT_DYNAMIC_MAX_ENTRIES).to_string()
            checked += 1
    assert checked >= 2
