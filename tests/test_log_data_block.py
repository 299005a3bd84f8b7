"""AVRO_DATA content: pre-encoded payload paths, strict decoding, schema evolution; PARQUET/CDC reads."""

from __future__ import annotations

import io
import json
import struct

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.errors import BadRecordError, LogFormatError, SchemaEvolutionError, UnsupportedTable
from ingest.hudi.avro.schema import to_json
from ingest.hudi.log.data_block import (
    avro_data_block,
    avro_record_count,
    data_block_header,
    decode_avro_content,
    decode_data_block,
    encode_avro_buffer,
    encode_avro_payloads,
    encode_avro_records,
)
from ingest.hudi.log.log_block import BlockType, HeaderKey, LogBlock, encode_blocks
from ingest.hudi.log.log_reader import decode_block, read_log_bytes

V1 = {
    "type": "record",
    "name": "t_record",
    "namespace": "hoodie.t",
    "fields": [
        {"name": "id", "type": ["null", "string"], "default": None},
        {"name": "n", "type": ["null", "long"], "default": None},
    ],
}
V2 = {**V1, "fields": V1["fields"] + [{"name": "tip", "type": ["null", "double"], "default": None}]}
ROWS = [{"id": "a", "n": 1}, {"id": None, "n": -(2**40)}, {"id": "ü" * 50, "n": None}]


def datums(rows, schema=V1):
    out = []
    for r in rows:
        b = io.BytesIO()
        fastavro.schemaless_writer(b, fastavro.parse_schema(schema), r)
        out.append(b.getvalue())
    return out


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=12), st.binary(max_size=7), st.binary(max_size=7))
def test_payload_and_buffer_paths_frame_identically(payloads, before, after):
    expected = struct.pack(">ii", 3, len(payloads)) + b"".join(struct.pack(">i", len(p)) + p for p in payloads)
    assert encode_avro_payloads(payloads) == expected
    buffer = before + b"".join(payloads) + after
    offsets = np.cumsum([len(before)] + [len(p) for p in payloads])
    assert encode_avro_buffer(buffer, offsets) == expected
    assert encode_avro_buffer(memoryview(buffer), list(offsets)) == expected


def test_records_path_matches_payload_path_and_decodes():
    content = encode_avro_records(ROWS, V1)
    assert content == encode_avro_payloads(datums(ROWS))
    assert avro_record_count(content) == 3
    assert decode_avro_content(content, V1) == ROWS
    assert decode_avro_content(content, to_json(V1)) == ROWS


def test_buffer_offsets_are_checked():
    with pytest.raises(ValueError):
        encode_avro_buffer(b"abc", [0, 2, 1])
    with pytest.raises(ValueError):
        encode_avro_buffer(b"abc", [0, 4])
    with pytest.raises(ValueError):
        encode_avro_buffer(b"abc", [])


def test_a_newer_schema_with_an_added_nullable_column_reads_old_blocks():
    content = encode_avro_records(ROWS, V1)
    assert decode_avro_content(content, V1, V2) == [{**r, "tip": None} for r in ROWS]
    block = avro_data_block("001", V1, content)
    assert decode_block(block, V2).records == tuple({**r, "tip": None} for r in ROWS)


def test_an_incompatible_reader_schema_is_a_schema_error_not_corruption():
    content = encode_avro_records(ROWS, V1)
    wrong = {**V1, "fields": [{"name": "id", "type": "int"}]}
    with pytest.raises(SchemaEvolutionError):
        decode_avro_content(content, V1, wrong)
    with pytest.raises(SchemaEvolutionError):
        decode_block(avro_data_block("001", V1, content), wrong)


def test_records_that_do_not_fit_the_schema_are_bad_records():
    with pytest.raises(BadRecordError, match="record 1"):
        encode_avro_records([{"id": "a", "n": 1}, {"id": 5, "n": 1}], V1)


def frame(version: int, count: int, records: list[bytes], trailing: bytes = b"") -> bytes:
    return struct.pack(">ii", version, count) + b"".join(struct.pack(">i", len(r)) + r for r in records) + trailing


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\x00\x00\x03",
        frame(4, 3, datums(ROWS)),  # a content version Hudi never wrote
        frame(0, 3, datums(ROWS)),
        frame(3, 4, datums(ROWS)),  # one record more than present
        frame(3, 2, datums(ROWS)),  # one record less: bytes left over
        frame(3, -1, []),
        frame(3, 3, datums(ROWS), b"\x00"),  # trailing byte
        frame(3, 1, [datums(ROWS)[0] + b"\x00"]),  # datum shorter than its length
        frame(3, 1, [datums(ROWS)[0][:-1]]),  # datum longer than its length
        frame(3, 1, [b"\x02\xff\xfe"]),  # not UTF-8 (and short)
        frame(3, 1, [b"\x06"]),  # union branch out of range
        struct.pack(">ii", 3, 1) + struct.pack(">i", -5),
        struct.pack(">ii", 3, 1) + struct.pack(">i", 1000) + b"\x00",
    ],
)
def test_content_that_does_not_add_up_is_a_decoding_failure(content):
    with pytest.raises(LogFormatError):
        decode_avro_content(content, V1)
    block = avro_data_block("001", V1, content)
    decoded = decode_block(read_log_bytes(encode_blocks([block]))[0])
    assert decoded.block.is_corrupt and decoded.records is None
    assert decoded.block.instant_time == "001"  # the header survives for diagnosis
    assert "AVRO_DATA" in decoded.block.corrupt_reason


def test_older_content_versions_with_the_same_layout_still_read():
    for version in (1, 2):
        assert decode_avro_content(frame(version, 3, datums(ROWS)), V1) == ROWS


@pytest.mark.parametrize(
    "schema",
    [
        "not json",
        '{"type": "record", "name": "r", "fields": [{"name": "a", "type": "nope"}]}',
        json.dumps({**V1, "fields": V1["fields"] + [V1["fields"][0]]}),  # a field name twice
    ],
)
def test_an_unusable_writer_schema_is_a_decoding_failure(schema):
    content = encode_avro_records(ROWS, V1)
    with pytest.raises(LogFormatError):
        decode_avro_content(content, schema)
    block = LogBlock(BlockType.AVRO_DATA, data_block_header("001", schema), content)
    assert decode_block(block).block.is_corrupt


def test_data_blocks_need_an_instant_and_a_schema():
    content = encode_avro_records(ROWS, V1)
    assert decode_block(LogBlock(BlockType.AVRO_DATA, ((HeaderKey.INSTANT_TIME, "1"),), content)).block.is_corrupt
    assert decode_block(LogBlock(BlockType.AVRO_DATA, ((HeaderKey.SCHEMA, to_json(V1)),), content)).block.is_corrupt


def test_cdc_blocks_are_framed_like_avro_blocks():
    block = LogBlock(BlockType.CDC_DATA, data_block_header("001", V1), encode_avro_records(ROWS, V1))
    assert decode_block(block).records == tuple(ROWS)


def parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def test_parquet_blocks_hold_a_whole_parquet_file():
    table = pa.table({"id": ["a", None], "n": pa.array([1, 2], pa.int64())})
    block = LogBlock(BlockType.PARQUET_DATA, data_block_header("001", V1), parquet_bytes(table))
    assert block.content[:4] == b"PAR1"  # no version or length prefix in front of the file
    read = read_log_bytes(encode_blocks([block]))[0]
    assert decode_block(read).records == ({"id": "a", "n": 1}, {"id": None, "n": 2})
    assert decode_data_block(read, V2) == [{"id": "a", "n": 1, "tip": None}, {"id": None, "n": 2, "tip": None}]
    damaged = LogBlock(BlockType.PARQUET_DATA, block.header, block.content[:-9])
    assert decode_block(damaged).block.is_corrupt


def test_hfile_blocks_are_refused_not_corrupt():
    block = LogBlock(BlockType.HFILE_DATA, data_block_header("001", V1), b"HFILE")
    with pytest.raises(UnsupportedTable):
        decode_block(block)


def test_a_partial_update_block_is_refused_not_read_as_whole_records():
    """`KeyBasedFileGroupRecordBuffer.processDataBlock` (1.x): a block with `IS_PARTIAL=true` (Spark's MERGE
    INTO assigning some columns, `hoodie.write.partial.update.schema`) holds records of the columns it sets,
    merged field by field into the key's previous version; read as whole records, every other column would
    come back null. ingest does not merge partial records, and says so."""
    partial = {**V1, "fields": [V1["fields"][1]]}
    content = encode_avro_records([{"n": 5}], partial)
    block = LogBlock(BlockType.AVRO_DATA, [*data_block_header("001", partial), (HeaderKey.IS_PARTIAL, "true")],
                     content)
    with pytest.raises(UnsupportedTable, match=r"AVRO_DATA block at offset .* \(instant 001\) holds partial updates"):
        decode_block(block, V1)
    assert decode_block(LogBlock(BlockType.AVRO_DATA, [*data_block_header("001", partial),
                                                       (HeaderKey.IS_PARTIAL, "false")], content), V1).records


OPERATION = {**V1, "fields": [{"name": "_hoodie_operation", "type": ["null", "string"], "default": None},
                              *V1["fields"]]}


def test_records_an_operation_field_marks_as_deletes_are_refused():
    """`HoodieAppendHandle.prepareRecord` with `hoodie.allow.operation.metadata.field` (Flink's changelog mode)
    writes a delete as a data record whose `_hoodie_operation` is D (and an update's old image as -U); 1.x's
    readers take both for deletes (`isDeleteHoodieOperation`). Read as data they would stay live. Blocks of
    inserts and updates only read as before, without the field."""
    kept = encode_avro_records([{"_hoodie_operation": "I", "id": "a", "n": 1},
                                {"_hoodie_operation": "U", "id": "b", "n": 2}], OPERATION)
    assert decode_block(avro_data_block("001", OPERATION, kept), V1).records == (
        {"id": "a", "n": 1}, {"id": "b", "n": 2})
    for op in ("D", "-U"):
        content = encode_avro_records([{"_hoodie_operation": "I", "id": "a", "n": 1},
                                       {"_hoodie_operation": op, "id": "b", "n": 2}], OPERATION)
        with pytest.raises(UnsupportedTable, match=f"_hoodie_operation is {op} "):
            decode_block(avro_data_block("002", OPERATION, content), V1)


def test_an_operation_block_that_does_not_decode_is_corrupt_not_an_error():
    """The check for changelog deletes decodes the operation field; content that does not decode is left to
    the read, which reports the block as CORRUPT (as Hudi's reader skips it), also when the writer's check
    before its lease meets it (`refuse_unmergeable`)."""
    from ingest.hudi.log.log_reader import refuse_unmergeable

    content = encode_avro_records([{"_hoodie_operation": "D", "id": "a", "n": 1}], OPERATION)
    torn = avro_data_block("003", OPERATION, content[: len(content) // 2])
    assert refuse_unmergeable(torn) is None
    assert decode_block(torn, V1).block.is_corrupt
