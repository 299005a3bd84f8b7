"""Log block framing: enum ordinals, header encoding, the frame's byte layout."""

from __future__ import annotations

import struct

import pytest

from ingest.hudi.log.log_block import (
    MAGIC,
    BlockType,
    CommandType,
    HeaderKey,
    LogBlock,
    encode_block,
    encode_blocks,
    encode_metadata,
)
from ingest.hudi.log.log_reader import read_log_bytes


def test_enum_ordinals_match_hudi():
    assert [(t.name, int(t)) for t in BlockType] == [
        ("COMMAND", 0),
        ("DELETE", 1),
        ("CORRUPT", 2),
        ("AVRO_DATA", 3),
        ("HFILE_DATA", 4),
        ("PARQUET_DATA", 5),
        ("CDC_DATA", 6),
    ]
    assert [(k.name, int(k)) for k in HeaderKey] == [
        ("INSTANT_TIME", 0),
        ("TARGET_INSTANT_TIME", 1),
        ("SCHEMA", 2),
        ("COMMAND_BLOCK_TYPE", 3),
        ("COMPACTED_BLOCK_TIMES", 4),
        ("RECORD_POSITIONS", 5),
        ("BLOCK_IDENTIFIER", 6),
        ("IS_PARTIAL", 7),
        ("BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS", 8),
    ]
    assert int(CommandType.ROLLBACK_BLOCK) == 0


def test_metadata_encoding_keeps_order_and_counts_utf8_bytes():
    raw = encode_metadata([(HeaderKey.SCHEMA, "é"), (HeaderKey.INSTANT_TIME, "1")])
    assert raw == (
        struct.pack(">i", 2)
        + struct.pack(">ii", 2, 2)
        + "é".encode()
        + struct.pack(">ii", 0, 1)
        + b"1"
    )
    assert encode_metadata([]) == b"\x00\x00\x00\x00"


def test_metadata_rejects_a_key_twice_and_non_text_values():
    with pytest.raises(ValueError, match="INSTANT_TIME twice"):
        encode_metadata([(HeaderKey.INSTANT_TIME, "1"), (0, "2")])
    with pytest.raises(TypeError):
        encode_metadata([(HeaderKey.INSTANT_TIME, 1)])


def test_frame_layout_field_by_field():
    header = [(HeaderKey.INSTANT_TIME, "20240101000000000")]
    content = b"\x01\x02\x03"
    raw = encode_block(BlockType.DELETE, header, content)
    header_bytes = encode_metadata(header)
    body = 4 + 4 + len(header_bytes) + 8 + len(content) + 4 + 8
    assert raw[:6] == MAGIC
    assert struct.unpack_from(">q", raw, 6)[0] == body == len(raw) - 14
    assert struct.unpack_from(">ii", raw, 14) == (1, int(BlockType.DELETE))
    assert raw[22 : 22 + len(header_bytes)] == header_bytes
    pos = 22 + len(header_bytes)
    assert struct.unpack_from(">q", raw, pos)[0] == len(content)
    assert raw[pos + 8 : pos + 8 + len(content)] == content
    assert raw[pos + 8 + len(content) : pos + 12 + len(content)] == b"\x00\x00\x00\x00"  # empty footer
    # The trailing total length counts from the magic up to, not including, itself.
    assert struct.unpack_from(">q", raw, len(raw) - 8)[0] == len(raw) - 8


def test_corrupt_blocks_are_never_written():
    with pytest.raises(ValueError):
        encode_block(BlockType.CORRUPT, [], b"")


def test_blocks_read_back_with_offsets_sizes_and_accessors():
    blocks = [
        LogBlock(BlockType.AVRO_DATA, ((HeaderKey.SCHEMA, "{}"), (HeaderKey.INSTANT_TIME, "001")), b"abc"),
        LogBlock(
            BlockType.COMMAND,
            (
                (HeaderKey.INSTANT_TIME, "003"),
                (HeaderKey.COMMAND_BLOCK_TYPE, "0"),
                (HeaderKey.TARGET_INSTANT_TIME, "001"),
            ),
        ),
        LogBlock(BlockType.HFILE_DATA, ((HeaderKey.INSTANT_TIME, "004"),), b"x" * 100, ((HeaderKey.SCHEMA, "f"),)),
    ]
    data = encode_blocks(blocks)
    read = read_log_bytes(data)
    assert [b.block_type for b in read] == [b.block_type for b in blocks]
    assert [(b.header, b.content, b.footer) for b in read] == [(b.header, b.content, b.footer) for b in blocks]
    assert read[0].offset == 0 and read[1].offset == read[0].end and read[2].end == len(data)
    assert read[0].instant_time == "001" and read[0].schema == "{}" and read[0].target_instant_time is None
    assert read[1].target_instant_time == "001" and read[1].get(HeaderKey.COMMAND_BLOCK_TYPE) == "0"
    assert not any(b.is_corrupt for b in read)
    assert encode_blocks(read) == data
