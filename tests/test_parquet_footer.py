"""The footer rewrite's short way (`footer._spliced`): the same bytes as decoding and encoding all of it.

The key/values are the ones Hudi's `HoodieBloomFilterWriteSupport.finalizeMetadata` adds (bloom
filter, its type code, min/max record keys) after parquet-avro's `AvroWriteSupport` schema key;
the splice only changes how they get into the footer, so every check here compares bytes.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.hudi.parquet import footer

KEY_VALUES = [("parquet.avro.schema", '{"type":"record"}'), ("writer.model.name", "avro"),
              ("hoodie_bloom_filter_type_code", "DYNAMIC_V0"), ("org.apache.hudi.bloomfilter", "A" * 5000),
              ("hoodie_min_record_key", "k-0"), ("hoodie_max_record_key", "k-9")]

TABLES = {
    "flat": pa.table({"k": [f"k-{i}" for i in range(10)], "n": list(range(10))}),
    "twenty columns": pa.table({f"c{i}": list(range(10)) for i in range(20)}),  # column orders' long list form
    "struct and decimal": pa.table({
        "s": pa.array([{"x": 1, "y": "a"}, None] * 5, pa.struct([("x", pa.int64()), ("y", pa.string())])),
        "d": pa.array([None, 1] * 5, pa.decimal128(12, 2)),
        "t": pa.array(list(range(10)), pa.timestamp("us", tz="UTC"))}),
    "list with a null element": pa.table({"l": pa.array([[1, None]] * 10, pa.list_(pa.int64()))}),
    "map": pa.table({"m": pa.array([[("k", 1)]] * 10, pa.map_(pa.string(), pa.int64()))}),
}


def _written(table: pa.Table, row_group_size: int | None) -> bytes:
    """A file as `encode_base_file` has pyarrow write it, before the rewrite."""
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, table.schema, version="1.0", data_page_version="1.0", compression="snappy",
                          write_statistics=True, write_page_index=True, store_schema=False) as writer:
        writer.write_table(table, row_group_size=row_group_size)
    return sink.getvalue()


def _footer(data: bytes) -> bytes:
    return data[len(data) - 8 - int.from_bytes(data[-8:-4], "little"):-8]


@pytest.mark.parametrize("name", sorted(TABLES))
@pytest.mark.parametrize("row_group_size", [None, 3])
def test_splicing_gives_the_bytes_of_the_full_rewrite(name, row_group_size):
    """The root renamed, the row groups kept, Hudi's key/values put in: byte for byte what decoding and
    encoding the whole FileMetaData gives, and the short way is taken (no list changes its layout)."""
    data = _written(TABLES[name], row_group_size)
    created_by = pq.read_metadata(pa.BufferReader(data)).created_by
    assert footer._spliced(_footer(data), "hoodie.orders.orders_record", KEY_VALUES, True, created_by) is not None
    spliced = footer.rewrite_footer(data, "hoodie.orders.orders_record", KEY_VALUES, True, created_by=created_by)
    full = footer.rewrite_footer(data, "hoodie.orders.orders_record", KEY_VALUES, True)
    assert spliced == full
    meta = pq.read_metadata(pa.BufferReader(spliced))
    assert {k.decode(): v.decode() for k, v in meta.metadata.items()} == dict(KEY_VALUES)
    assert meta.schema.to_arrow_schema().names == TABLES[name].column_names
    assert pq.read_table(pa.BufferReader(spliced)).equals(TABLES[name])


def test_a_list_going_to_the_two_level_layout_is_decoded_in_full():
    """parquet-avro's `repeated <element> array` changes column paths inside the row groups: the
    splice declines, and the full rewrite gives the file."""
    table = pa.table({"l": pa.array([[1, 2]] * 10, pa.list_(pa.field("element", pa.int64(), nullable=False)))})
    data = _written(table, None)
    created_by = pq.read_metadata(pa.BufferReader(data)).created_by
    assert footer._spliced(_footer(data), "r", KEY_VALUES, True, created_by) is None
    rewritten = footer.rewrite_footer(data, "r", KEY_VALUES, True, created_by=created_by)
    assert rewritten == footer.rewrite_footer(data, "r", KEY_VALUES, True)
    assert pq.read_metadata(pa.BufferReader(rewritten)).schema.column(0).path == "l.array"


def test_an_unexpected_tail_is_decoded_in_full():
    """A `created_by` other than the footer's own (a footer not laid out as assumed) is not spliced."""
    data = _written(TABLES["flat"], None)
    assert footer._spliced(_footer(data), "r", KEY_VALUES, True, "parquet-mr version 1.13.1") is None
    assert footer.rewrite_footer(data, "r", KEY_VALUES, True, created_by="parquet-mr version 1.13.1") \
        == footer.rewrite_footer(data, "r", KEY_VALUES, True)
