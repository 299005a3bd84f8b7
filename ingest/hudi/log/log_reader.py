"""Reading Hudi log files block by block, with Hudi's handling of torn and corrupt blocks.

A block is CORRUPT, as in `HoodieLogFileReader.isBlockCorrupted`, when its magic is wrong, its
block size is implausible or runs past the end of the file, the total length at its end does not
match the block size, or at least six bytes follow it and they are not the next magic. Like
`createCorruptBlock` / `scanForNextAvailableBlockOffset`, the CORRUPT block then spans up to the
next `#HUDI#` (searched from just after the bad block's magic) or the end of the file, and
reading resumes there. Where Hudi throws instead (a block whose header, type or lengths do not
add up inside a well-framed block), this reader yields a CORRUPT block spanning the frame; so it
does for a format version other than 1, which Hudi would parse as version 1 whatever it says. A
tail of fewer than six bytes, which Hudi skips silently, is yielded as a CORRUPT block too.

Reading never raises for what a file contains; it raises only OSError from storage. Content is
decoded separately (`decode_block`), where an undecodable content makes the block CORRUPT.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import IO, Any

import pyarrow as pa

from ingest.errors import LogFormatError, UnsupportedTable
from ingest.hudi.avro.schema import AvroSchema
from ingest.hudi.log.data_block import decode_data_block
from ingest.hudi.log.delete_block import DeleteRecord, decode_delete_block
from ingest.hudi.log.log_block import (
    FRAME_PREFIX,
    LOG_FORMAT_VERSION,
    MAGIC,
    MAX_BLOCK_SIZE,
    MIN_BLOCK_SIZE,
    BlockType,
    CommandType,
    HeaderKey,
    LogBlock,
    Metadata,
)
from ingest.storage import Storage

_SCAN_CHUNK = 1 << 20  # Hudi scans 1 MiB at a time for the next magic


class _Malformed(Exception):
    """Inside a well-framed block, bytes that are no block; becomes a CORRUPT block."""


class _Source:
    """Random access to a log file's bytes; a log file is read at a fixed size."""

    def __init__(self, f: IO[bytes], size: int):
        self.f = f
        self.size = size

    def read_at(self, pos: int, n: int) -> bytes:
        n = max(0, min(n, self.size - pos))
        self.f.seek(pos)
        parts, got = [], 0
        while got < n:
            chunk = self.f.read(n - got)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def find_magic(self, start: int) -> int:
        """The offset of the next magic at or after `start`, or the file size if there is none."""
        pos = start
        while pos < self.size:
            buf = self.read_at(pos, _SCAN_CHUNK + len(MAGIC) - 1)
            i = buf.find(MAGIC)
            if i >= 0:
                return pos + i
            pos += _SCAN_CHUNK
        return self.size


class _Cursor:
    """Strict big-endian reads inside one block's bytes."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _take(self, n: int, what: str) -> bytes:
        if n < 0 or n > self.remaining:
            raise _Malformed(f"{what} of {n} bytes runs past the block ({self.remaining} left)")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def int32(self, what: str) -> int:
        return struct.unpack(">i", self._take(4, what))[0]

    def int64(self, what: str) -> int:
        return struct.unpack(">q", self._take(8, what))[0]

    def metadata(self, what: str) -> Metadata:
        count = self.int32(f"{what} entry count")
        if count < 0 or 8 * count > self.remaining:
            raise _Malformed(f"{what} declares {count} entries")
        entries: list[tuple[HeaderKey, str]] = []
        for _ in range(count):
            ordinal = self.int32(f"{what} key")
            try:
                key = HeaderKey(ordinal)
            except ValueError:
                raise _Malformed(f"{what} key ordinal {ordinal} is not a HeaderMetadataType") from None
            if any(k == key for k, _ in entries):
                raise _Malformed(f"{what} has {key.name} twice")
            length = self.int32(f"{what} {key.name} length")
            raw = self._take(length, f"{what} {key.name}")
            try:
                entries.append((key, raw.decode("utf-8")))
            except UnicodeDecodeError:
                raise _Malformed(f"{what} {key.name} is not UTF-8") from None
        return tuple(entries)


def _parse_frame(body: bytes) -> tuple[int, BlockType, Metadata, bytes, Metadata]:
    """Version, type, header, content and footer of a block's bytes after its size field."""
    c = _Cursor(body)
    version = c.int32("format version")
    if version != LOG_FORMAT_VERSION:
        # Hudi has only ever written 1 in this layout (0 was the header-less layout of 2017).
        raise _Malformed(f"log format version {version}; Hudi writes {LOG_FORMAT_VERSION}")
    ordinal = c.int32("block type")
    try:
        block_type = BlockType(ordinal)
    except ValueError:
        raise _Malformed(f"block type ordinal {ordinal} is not a HoodieLogBlockType") from None
    if block_type == BlockType.CORRUPT:
        raise _Malformed("a block written as CORRUPT")
    header = c.metadata("header")
    content_length = c.int64("content length")
    content = c._take(content_length, "content")
    footer = c.metadata("footer")
    if c.remaining != 8:
        raise _Malformed(f"{c.remaining - 8} bytes between the footer and the total length")
    return version, block_type, header, content, footer


def corrupt_block_instant(block: LogBlock) -> str | None:
    """The INSTANT_TIME a corrupt block's own header still names, if its header survived.

    A torn block (the file cut inside it) keeps its header when the cut falls after it; that tells
    a failed write's torn tail (normal: `AbstractHoodieLogRecordReader` skips it, the rollback removes
    the instant) from a committed block that lost its bytes (data lost: to be reported)."""
    if block.instant_time is not None:  # well framed, content undecodable: header kept
        return block.instant_time
    data = block.content
    if data[: len(MAGIC)] != MAGIC:
        return None
    c = _Cursor(data[FRAME_PREFIX:])
    try:
        c.int32("format version")
        c.int32("block type")
        header = c.metadata("header")
    except _Malformed:
        return None
    return dict(header).get(HeaderKey.INSTANT_TIME)


def ends_in_whole_block(storage: Storage, path: str, size: int) -> bool:
    """Whether the first `size` bytes of the log file end with a whole block, checked from the end as
    Hudi's reverse reader does (`HoodieLogFileReader.hasPrev`/`prev`: the total length the block
    wrote last points back at its magic and its block size). Two small reads, no scan."""
    if size < FRAME_PREFIX + 8:
        return False
    (total_length,) = struct.unpack(">q", storage.read_range(path, size - 8, size))
    start = size - 8 - total_length  # the total length counts everything before itself
    if total_length < FRAME_PREFIX or start < 0:
        return False
    head = storage.read_range(path, start, start + FRAME_PREFIX)
    if head[: len(MAGIC)] != MAGIC:
        return False
    (block_size,) = struct.unpack_from(">q", head, len(MAGIC))
    return block_size + len(MAGIC) == total_length


def _corrupt(src: _Source, pos: int, end: int, reason: str) -> LogBlock:
    return LogBlock(
        BlockType.CORRUPT, content=src.read_at(pos, end - pos), offset=pos, size=end - pos, corrupt_reason=reason
    )


def _read_block(src: _Source, pos: int) -> LogBlock:
    head = src.read_at(pos, FRAME_PREFIX)
    if head[: len(MAGIC)] != MAGIC:
        if len(head) < len(MAGIC):
            return _corrupt(src, pos, src.size, f"the file ends in {len(head)} bytes that are no whole block")
        return _corrupt(src, pos, src.find_magic(pos + 1), "no magic where a block starts")
    scan_from = pos + len(MAGIC)  # Hudi searches for the next block from just after this magic
    if len(head) < FRAME_PREFIX:
        return _corrupt(src, pos, src.find_magic(scan_from), "the file ends inside the block size")
    (block_size,) = struct.unpack_from(">q", head, len(MAGIC))
    end = pos + FRAME_PREFIX + block_size
    if not MIN_BLOCK_SIZE <= block_size <= MAX_BLOCK_SIZE:
        return _corrupt(src, pos, src.find_magic(scan_from), f"implausible block size {block_size}")
    if end > src.size:
        return _corrupt(
            src, pos, src.find_magic(scan_from), f"block size {block_size} runs past the end of the file"
        )
    tail = src.read_at(end - 8, 8 + len(MAGIC))
    (total_length,) = struct.unpack_from(">q", tail, 0)
    if total_length != block_size + len(MAGIC):
        return _corrupt(
            src,
            pos,
            src.find_magic(scan_from),
            f"total length {total_length} at the block's end does not match block size {block_size}",
        )
    if len(tail) - 8 >= len(MAGIC) and tail[8:] != MAGIC:
        return _corrupt(src, pos, src.find_magic(scan_from), "the bytes after the block are no magic")
    try:
        version, block_type, header, content, footer = _parse_frame(src.read_at(pos + FRAME_PREFIX, block_size))
    except _Malformed as e:
        return _corrupt(src, pos, end, str(e))
    return LogBlock(block_type, header, content, footer, version, pos, end - pos)


def _iter_source(src: _Source) -> Iterator[LogBlock]:
    pos = 0
    while pos < src.size:
        block = _read_block(src, pos)
        yield block
        pos = block.end


def iter_log_blocks(storage: Storage, path: str, size: int | None = None) -> Iterator[LogBlock]:
    """The blocks of the log file `path` (of its first `size` bytes), read lazily one block at a time."""
    size = storage.size(path) if size is None else size
    with storage.open(path) as f:
        yield from _iter_source(_Source(f, size))


def blocks_between(storage: Storage, path: str, start: int, end: int) -> list[LogBlock]:
    """The whole blocks in bytes [start, end) of a log file; torn ones left out (they were never part
    of a commit)."""
    return [b for b in iter_log_bytes(storage.read_range(path, start, end)) if b.block_type is not BlockType.CORRUPT]


def instants_between(storage: Storage, path: str, start: int, end: int) -> set[str]:
    """The INSTANT_TIMEs of the whole blocks in bytes [start, end) of a log file."""
    return {b.instant_time for b in blocks_between(storage, path, start, end) if b.instant_time is not None}


def iter_log_bytes(data: bytes) -> Iterator[LogBlock]:
    """The blocks of a log file held in memory."""
    return _iter_source(_Source(io.BytesIO(data), len(data)))


def read_log_file(storage: Storage, path: str) -> list[LogBlock]:
    """All blocks of the log file `path`, in file order (CORRUPT ones included)."""
    return list(iter_log_blocks(storage, path))


def read_log_bytes(data: bytes) -> list[LogBlock]:
    return list(iter_log_bytes(data))


# -- decoding -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodedBlock:
    """A block with its decoded content.

    `records` is set for data blocks (AVRO_DATA, CDC_DATA, PARQUET_DATA), `deletes` for DELETE
    blocks. When the content does not decode, `block` is the same block turned CORRUPT (header
    kept, reason given) and neither is set.
    """

    block: LogBlock
    records: tuple[dict[str, Any], ...] | None = None
    deletes: tuple[DeleteRecord, ...] | None = None


def _check_command(block: LogBlock) -> None:
    command = block.get(HeaderKey.COMMAND_BLOCK_TYPE)
    if command != str(int(CommandType.ROLLBACK_BLOCK)):
        raise LogFormatError(f"COMMAND_BLOCK_TYPE {command!r} is not a HoodieCommandBlockTypeEnum ordinal")
    if block.target_instant_time is None:
        raise LogFormatError("rollback command has no TARGET_INSTANT_TIME")
    if block.content:
        raise LogFormatError(f"command block carries {len(block.content)} content bytes; Hudi writes none")


OPERATION_FIELD = "_hoodie_operation"  # HoodieRecord.OPERATION_METADATA_FIELD
_DELETING_OPERATIONS = ("D", "-U")   # HoodieOperation.isDelete / isUpdateBefore


def refuse_unmergeable(block: LogBlock) -> None:
    """Refuse a data block whose records Hudi merges otherwise than whole and by key: a partial update
    (`IS_PARTIAL`: `KeyBasedFileGroupRecordBuffer` merges it field by field into the previous version),
    or records whose operation metadata field says they delete (`hoodie.allow.operation.metadata.field`,
    Flink's changelog mode: `HoodieAppendHandle` writes deletes as data records with operation D, which
    1.x's readers take for deletes, `isDeleteHoodieOperation`)."""
    where = f"{block.block_type.name} block at offset {block.offset} (instant {block.instant_time})"
    if (block.get(HeaderKey.IS_PARTIAL) or "").lower() == "true":
        raise UnsupportedTable(f"{where} holds partial updates (IS_PARTIAL, as Spark's MERGE INTO writes "
                               "them): ingest does not merge partial records")
    schema = block.schema
    if schema is None or OPERATION_FIELD not in schema:
        return
    writer = json.loads(schema)
    fields = [f for f in writer.get("fields", []) if f.get("name") == OPERATION_FIELD]
    if not fields:
        return
    try:
        operations = decode_data_block(block, {**writer, "fields": fields})
    except (LogFormatError, pa.ArrowException):
        return  # content that does not decode: the read reports the block as corrupt
    deleting = sorted({r.get(OPERATION_FIELD) for r in operations} & set(_DELETING_OPERATIONS))
    if deleting:
        raise UnsupportedTable(f"{where} holds records whose {OPERATION_FIELD} is {', '.join(deleting)} "
                               "(Hudi's operation metadata field, Flink changelog mode): ingest does not merge "
                               "by operation")


def decode_block(block: LogBlock, reader_schema: AvroSchema | str | None = None) -> DecodedBlock:
    """Decode a block's content; a content that does not decode exactly yields a CORRUPT block.

    Raises UnsupportedTable for HFILE_DATA blocks and Java-serialized (version 1/2) delete blocks,
    and SchemaEvolutionError when `reader_schema` cannot read a data block's writer schema.
    """
    if block.is_corrupt:
        return DecodedBlock(block)
    try:
        if block.instant_time is None:
            raise LogFormatError("no INSTANT_TIME header")
        if block.block_type == BlockType.COMMAND:
            _check_command(block)
            return DecodedBlock(block)
        if block.block_type == BlockType.DELETE:
            return DecodedBlock(block, deletes=tuple(decode_delete_block(block)))
        if block.block_type == BlockType.HFILE_DATA:
            raise UnsupportedTable(
                f"HFILE_DATA block at offset {block.offset}: metadata-table blocks are not decoded"
            )
        refuse_unmergeable(block)
        return DecodedBlock(block, records=tuple(decode_data_block(block, reader_schema)))
    except LogFormatError as e:
        reason = f"{block.block_type.name} block does not decode: {e}"
        return DecodedBlock(replace(block, block_type=BlockType.CORRUPT, corrupt_reason=reason))
