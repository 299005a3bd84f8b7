"""The cheap paths a small-file merge takes through base files: each must give exactly the bytes and
values of the general path it replaces (a merged file is byte-identical to the one written before)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.hudi.avro import schema as S
from ingest.hudi.parquet.base_file import (
    AVRO_SCHEMA_KEY,
    BLOOM_FILTER_KEY,
    WRITER_MODEL_KEY,
    BaseFileOptions,
    _java_min_max,
    _may_hold_high_chars,
    encode_avro_parquet,
    read_base_file,
    read_base_file_and_footer,
    read_footer,
)
from ingest.hudi.parquet.encodings import dictionary_columns
from ingest.hudi.parquet.footer import rename_root, rewrite_footer
from ingest.storage import Storage

# No list anywhere: the footer differs from pyarrow's in the root's name only.
FLAT = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("n", pa.int64()),
    pa.field("amount", pa.decimal128(12, 2)),
    pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("attrs", pa.map_(pa.string(), pa.int64())),
    pa.field("meta", pa.struct([pa.field("channel", pa.string()), pa.field("priority", pa.int64())]), nullable=False),
])


def _flat_table(n: int = 50) -> pa.Table:
    return pa.table({
        "id": [f"k{i:04d}" for i in range(n)],
        "n": [i if i % 7 else None for i in range(n)],
        "amount": [Decimal(f"{i}.25") for i in range(n)],
        "ts": [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i) for i in range(n)],
        "attrs": [[("a", i)] if i % 3 else None for i in range(n)],
        "meta": [{"channel": "web" if i % 2 else "app", "priority": i % 4} for i in range(n)],
    }, schema=FLAT)


def test_root_rename_gives_the_full_rewrites_bytes():
    """parquet-avro's `AvroSchemaConverter.convert` names the message after the Avro record's full
    name, and `HoodieAvroWriteSupport.finalizeWrite` adds Hudi's key/values: written by pyarrow's
    writer and with only the root renamed, the file equals the general Thrift rewrite's, byte for byte."""
    table = _flat_table()
    writer_schema = S.arrow_to_avro(FLAT, "orders")
    extra = [(BLOOM_FILTER_KEY, "AAAA" * 100), ("hoodie_min_record_key", "k0000")]
    ours = encode_avro_parquet(table, writer_schema, BaseFileOptions(), extra)

    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, version="1.0", data_page_version="1.0", compression="snappy",
                          data_page_size=1 << 20, dictionary_pagesize_limit=1 << 20, write_page_index=True,
                          use_dictionary=dictionary_columns(table), store_schema=False) as writer:
        writer.write_table(table)
    key_values = [(AVRO_SCHEMA_KEY, S.to_json(writer_schema)), (WRITER_MODEL_KEY, "avro"), *extra]
    full_name = f"{writer_schema['namespace']}.{writer_schema['name']}" if writer_schema.get("namespace") \
        else writer_schema["name"]
    assert ours == rewrite_footer(sink.getvalue().to_pybytes(), full_name, key_values, True)
    assert rename_root(ours, full_name) == ours  # renaming to the name it has changes nothing
    assert pq.ParquetFile(pa.BufferReader(ours)).metadata.schema.to_arrow_schema().names == FLAT.names
    assert pq.read_table(pa.BufferReader(ours)).equals(table)


def test_root_rename_refuses_what_is_no_parquet_file():
    """`ParquetFileReader.readFooter` requires the `PAR1` magic at the end; so does the rename."""
    with pytest.raises(Exception, match="PAR1"):
        rename_root(b"not a parquet file at all", "x")


def test_merge_read_gives_read_base_file_and_read_footer_of_a_hudi_written_file(hudi_table_copy):
    """`HoodieMergeHandle` reads every record of the old base file and Hudi's bloom index reads its
    footer (`HoodieAvroParquetReader.readBloomFilter`): the one-read path gives both exactly as the two
    separate reads do, on a base file Hudi wrote."""
    table = hudi_table_copy("v6_trips_8i1u")
    storage = Storage(str(table))
    path = next(str(p.relative_to(table)) for p in sorted(table.rglob("*.parquet")) if ".hoodie" not in p.parts)
    footer = read_footer(storage, path)
    schema = S.avro_to_arrow(footer.avro_schema)
    kept = pa.schema([f for f in schema if f.name != S.FILE_NAME])
    rows, both = read_base_file_and_footer(storage, path, schema=kept)
    assert rows.equals(read_base_file(storage, path, schema=kept))
    assert rows.num_rows == footer.num_rows > 0 and S.FILE_NAME not in rows.column_names
    assert both == footer
    assert both.bloom_filter().serialize() == footer.bloom_filter().serialize()
    assert both.bloom_filter().might_contain_all(rows.column(S.RECORD_KEY)).all()


@pytest.mark.parametrize("keys, high", [
    (["a", "zz", "\ud7ff"], False),          # below U+E000: UTF-8 and UTF-16 orders agree
    (["a", "\ue000"], True),                 # private use area, above every surrogate
    (["a", "\U0001f600b"], True),            # a supplementary character: surrogates in Java
])
def test_high_character_scan_flags_where_java_order_differs(keys, high):
    """Hudi's min/max keys use `String.compareTo` (`HoodieBloomFilterWriteSupport.addKey`), which compares
    UTF-16 code units; only keys with a character at or above U+E000 order differently from UTF-8 bytes,
    and the byte scan must send exactly those to the slow path."""
    column = pa.chunked_array([pa.array(keys[:1]), pa.array(keys[1:])])
    assert _may_hold_high_chars(column) is high
    java = sorted(keys, key=lambda s: s.encode("utf-16-be", "surrogatepass"))
    assert _java_min_max(column) == (java[0], java[-1])
