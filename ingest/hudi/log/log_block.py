"""Hudi log blocks: the model and the byte framing `HoodieLogFormatWriter.appendBlocks` writes.

A log file is a sequence of blocks, each framed as (all integers big-endian)::

    magic         6 bytes  "#HUDI#"
    block size    int64    bytes after this field, up to and including the total length field
    format ver.   int32    1 (HoodieLogFormat.CURRENT_VERSION)
    block type    int32    BlockType ordinal
    header        map      int32 count, then per entry: int32 key ordinal, int32 length, UTF-8 bytes
    content len.  int64
    content       bytes
    footer        map      same encoding (Hudi writes it empty: 4 zero bytes)
    total length  int64    bytes from the magic up to, not including, this field (= block size + 6)

The trailing total length lets a reader tell a torn block from a whole one. Hudi keeps header
and footer in a `HashMap` keyed by enum, whose iteration order is arbitrary, so a block's header is
kept here as an ordered sequence: re-encoding a decoded block then reproduces its bytes exactly.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1  # HoodieLogFormat.CURRENT_VERSION

# Bytes of a block with empty header, content and footer, counted like the block size field.
MIN_BLOCK_SIZE = 4 + 4 + 4 + 8 + 4 + 8
# Bytes in front of the counted part: the magic and the block size field.
FRAME_PREFIX = len(MAGIC) + 8
# Hudi reads sizes into Java ints; nothing larger is a block it could have written or read.
MAX_BLOCK_SIZE = 2**31 - 1


class BlockType(IntEnum):
    """`HoodieLogBlock.HoodieLogBlockType`, written as its ordinal."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


# Blocks of records (`HoodieDataBlock`'s kinds this format knows).
DATA_BLOCKS = frozenset({BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.CDC_DATA})


class HeaderKey(IntEnum):
    """`HoodieLogBlock.HeaderMetadataType`, written as its ordinal.

    Hudi 0.14/0.15 (table version 6) know ordinals 0-6; IS_PARTIAL and
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS came with Hudi 1.x (table version 8), and a 0.x
    reader fails on them, so a v6 writer must not use them. Footers use the same keys: Hudi
    0.14/0.15 decode footers with this enum (1.x has an empty FooterMetadataType), and no Hudi
    version writes a footer entry.
    """

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class CommandType(IntEnum):
    """`HoodieCommandBlock.HoodieCommandBlockTypeEnum`; the header carries the ordinal as text."""

    ROLLBACK_BLOCK = 0


Metadata = tuple[tuple[HeaderKey, str], ...]


@dataclass(frozen=True)
class LogBlock:
    """One block of a log file, as framed on disk.

    `offset` is where the block's magic starts in its file and `size` how many bytes it spans
    there (magic through the total length field); a block built in memory has offset -1 and
    size 0. A CORRUPT block read from a file spans the bytes up to the next magic (or the end of
    the file) and carries them as its content; `corrupt_reason` says what was wrong.
    """

    block_type: BlockType
    header: Metadata = ()
    content: bytes = b""
    footer: Metadata = ()
    format_version: int = LOG_FORMAT_VERSION
    offset: int = -1
    size: int = 0
    corrupt_reason: str | None = None

    def __post_init__(self) -> None:
        # Accept lists and int ordinals, keep tuples of enums: equal blocks then compare equal.
        object.__setattr__(self, "block_type", BlockType(self.block_type))
        object.__setattr__(self, "header", normalize_metadata(self.header))
        object.__setattr__(self, "footer", normalize_metadata(self.footer))
        object.__setattr__(self, "content", bytes(self.content))

    def get(self, key: HeaderKey) -> str | None:
        """The header value of `key`, or None."""
        for k, v in self.header:
            if k == key:
                return v
        return None

    @property
    def instant_time(self) -> str | None:
        return self.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        return self.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        """The writer schema (Avro JSON text) of a data or delete block."""
        return self.get(HeaderKey.SCHEMA)

    @property
    def is_corrupt(self) -> bool:
        return self.block_type == BlockType.CORRUPT

    @property
    def end(self) -> int:
        """The file offset just past this block."""
        return self.offset + self.size


def normalize_metadata(pairs: Iterable[tuple[HeaderKey | int, str]]) -> Metadata:
    """Header or footer pairs as a tuple keyed by `HeaderKey`; a key may appear once (it is a map)."""
    out: list[tuple[HeaderKey, str]] = []
    seen: set[HeaderKey] = set()
    for key, value in pairs:
        k = HeaderKey(key)
        if k in seen:
            raise ValueError(f"log block metadata has {k.name} twice")
        if not isinstance(value, str):
            raise TypeError(f"log block metadata {k.name} must be a str, got {type(value).__name__}")
        seen.add(k)
        out.append((k, value))
    return tuple(out)


def encode_metadata(pairs: Iterable[tuple[HeaderKey | int, str]]) -> bytes:
    """`HoodieLogBlock.getLogMetadataBytes`: int32 count, then (int32 ordinal, int32 length, UTF-8)."""
    entries = normalize_metadata(pairs)
    parts = [struct.pack(">i", len(entries))]
    for key, value in entries:
        raw = value.encode("utf-8")
        parts.append(struct.pack(">ii", int(key), len(raw)))
        parts.append(raw)
    return b"".join(parts)


def block_parts(
    block_type: BlockType,
    header: Iterable[tuple[HeaderKey | int, str]],
    content: Sequence[bytes | memoryview],
    footer: Iterable[tuple[HeaderKey | int, str]] = (),
) -> list[bytes | memoryview]:
    """One framed block as the pieces a writer sends to the file in order, `content` not copied:
    a data block's content is most of a log file's bytes, and copying it is what the write costs."""
    if BlockType(block_type) == BlockType.CORRUPT:
        raise ValueError("CORRUPT blocks are a reader's verdict, never written")
    header_bytes = encode_metadata(header)
    footer_bytes = encode_metadata(footer)
    content_size = sum(memoryview(p).nbytes for p in content)
    block_size = 4 + 4 + len(header_bytes) + 8 + content_size + len(footer_bytes) + 8
    if block_size > MAX_BLOCK_SIZE:
        raise ValueError(f"log block of {block_size} bytes exceeds what Hudi can read ({MAX_BLOCK_SIZE})")
    return [
        MAGIC + struct.pack(">qii", block_size, LOG_FORMAT_VERSION, int(block_type)) + header_bytes
        + struct.pack(">q", content_size),
        *content,
        footer_bytes + struct.pack(">q", block_size + len(MAGIC)),
    ]


def encode_block(
    block_type: BlockType,
    header: Iterable[tuple[HeaderKey | int, str]],
    content: bytes,
    footer: Iterable[tuple[HeaderKey | int, str]] = (),
) -> bytes:
    """One framed block, byte for byte as `HoodieLogFormatWriter.appendBlocks` writes it."""
    return b"".join(block_parts(block_type, header, (content,), footer))


def encode_log_block(block: LogBlock) -> bytes:
    """`encode_block` of a `LogBlock` (its offset, size and format version are not used)."""
    return encode_block(block.block_type, block.header, block.content, block.footer)


def encode_blocks(blocks: Sequence[LogBlock]) -> bytes:
    return b"".join(encode_log_block(b) for b in blocks)
