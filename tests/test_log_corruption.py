"""Torn and damaged log files: the reader never crashes and never returns records nobody wrote.

Hudi's log format carries no checksum. What the reader can promise, and what is checked here:

* a truncated last block is CORRUPT and every earlier block reads exactly;
* a damaged byte in the framing (magic, sizes, version, type, header keys and lengths, content
  length, record counts and lengths, footer, total length) makes the block CORRUPT (or, for a few
  fields such as the format version, changes nothing that is decoded);
* a damaged byte inside one record's Avro datum can only change that record: the per-record
  length prefix and strict consumption keep every other record of the block exact. If the datum
  stays well formed (a changed character, a changed number), that one record reads differently,
  as it would in Hudi's reader; likewise a changed character in a header value (an instant, a
  field name in the schema) reads as written;
* blocks the damage does not touch read exactly. One exception, inherited from Hudi: a damaged
  magic also makes the block before it CORRUPT, since a block must be followed by a magic.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

import pytest

from ingest.errors import UnsupportedTable
from ingest.hudi.avro.schema import with_meta_fields
from ingest.hudi.log.data_block import avro_data_block, encode_avro_records
from ingest.hudi.log.delete_block import DeleteRecord, OrderingValue, OrderingWrapper, delete_block
from ingest.hudi.log.log_block import BlockType, HeaderKey, LogBlock, encode_blocks
from ingest.hudi.log.log_reader import DecodedBlock, decode_block, read_log_bytes

SCHEMA = with_meta_fields(
    {
        "type": "record",
        "name": "t_record",
        "namespace": "hoodie.t",
        "fields": [
            {"name": "rider", "type": ["null", "string"], "default": None},
            {"name": "ts", "type": ["null", "long"], "default": None},
            {"name": "fare", "type": ["null", "double"], "default": None},
        ],
    }
)


def rows(instant: str, n: int) -> list[dict]:
    return [
        {
            "_hoodie_commit_time": instant,
            "_hoodie_commit_seqno": f"{instant}_0_{i}",
            "_hoodie_record_key": f"key-{i}",
            "_hoodie_partition_path": "city=x",
            "_hoodie_file_name": "f-0",
            "rider": f"rider-{i}",
            "ts": 1695159649087 + i,
            "fare": 19.5 + i,
        }
        for i in range(n)
    ]


BLOCKS = [
    avro_data_block("20240101000000001", SCHEMA, encode_avro_records(rows("20240101000000001", 4), SCHEMA)),
    delete_block(
        "20240101000000002",
        SCHEMA,
        [
            DeleteRecord("key-1", "city=x"),
            DeleteRecord("key-2", "city=x", OrderingValue(OrderingWrapper.LONG, 1695159649089)),
            DeleteRecord("key-3", None, OrderingValue(OrderingWrapper.STRING, "z")),
        ],
    ),
    LogBlock(
        BlockType.COMMAND,
        (
            (HeaderKey.INSTANT_TIME, "20240101000000003"),
            (HeaderKey.TARGET_INSTANT_TIME, "20240101000000001"),
            (HeaderKey.COMMAND_BLOCK_TYPE, "0"),
        ),
    ),
    avro_data_block("20240101000000004", SCHEMA, encode_avro_records(rows("20240101000000004", 2), SCHEMA)),
]
ORIGINAL = encode_blocks(BLOCKS)
BASE = read_log_bytes(ORIGINAL)
BASE_DECODED = [decode_block(b) for b in BASE]


@dataclass(frozen=True)
class Regions:
    """Where the value bytes of one encoded block lie (absolute offsets)."""

    header_values: list[tuple[int, int, HeaderKey]]
    payloads: list[tuple[int, int]]  # AVRO_DATA: one per record
    delete_avro: tuple[int, int] | None
    delete_version: tuple[int, int] | None
    block_type: tuple[int, int]


def regions(block: LogBlock) -> Regions:
    p = block.offset + 14 + 8 + 4  # magic, size, version, type, header count
    header_values = []
    for key, value in block.header:
        p += 8
        n = len(value.encode())
        header_values.append((p, p + n, key))
        p += n
    start = p + 8
    end = start + len(block.content)
    payloads = []
    if block.block_type == BlockType.AVRO_DATA:
        q = start + 8
        while q < end:
            (length,) = struct.unpack_from(">i", ORIGINAL, q)
            payloads.append((q + 4, q + 4 + length))
            q += 4 + length
    is_delete = block.block_type == BlockType.DELETE
    return Regions(
        header_values,
        payloads,
        (start + 8, end) if is_delete else None,
        (start, start + 4) if is_delete else None,
        (block.offset + 18, block.offset + 22),
    )


REGIONS = [regions(b) for b in BASE]


def within(pos: int, span: tuple[int, int] | None) -> bool:
    return span is not None and span[0] <= pos < span[1]


def read_and_decode(data: bytes) -> list[tuple[LogBlock, DecodedBlock | None]]:
    """What a caller gets; anything but the documented UnsupportedTable escaping fails the test."""
    out = []
    for block in read_log_bytes(data):
        try:
            out.append((block, decode_block(block)))
        except UnsupportedTable:
            out.append((block, None))
    return out


def owner(pos: int) -> int:
    return next(i for i, b in enumerate(BASE) if b.offset <= pos < b.end)


def untouched(positions: list[int]) -> set[int]:
    """Blocks whose bytes, and whose successor's magic, the damage leaves alone."""
    hit = set()
    for pos in positions:
        k = owner(pos)
        hit.add(k)
        if pos < BASE[k].offset + 6 and k > 0:
            hit.add(k - 1)
    return set(range(len(BASE))) - hit


def assert_untouched_blocks_exact(result, positions) -> None:
    by_offset = {block.offset: decoded for block, decoded in result}
    keep = untouched(positions)
    for j in keep:
        assert by_offset.get(BASE[j].offset) == BASE_DECODED[j], f"block {j} changed"
    allowed = {BASE[j].offset for j in keep} | {BASE[owner(p)].offset for p in positions}
    for block, decoded in result:
        if decoded is not None and not decoded.block.is_corrupt:
            assert block.offset in allowed, f"a block appeared at {block.offset}"


def classify(pos: int) -> tuple[str, object]:
    r = REGIONS[owner(pos)]
    for i, span in enumerate(r.payloads):
        if within(pos, span):
            return "payload", i
    if within(pos, r.delete_avro):
        return "delete", None
    for start, end, key in r.header_values:
        if start <= pos < end:
            return "header", key
    return "framing", None


def check_single_mutation(pos: int, data: bytes) -> str:
    result = read_and_decode(data)
    assert_untouched_blocks_exact(result, [pos])
    k = owner(pos)
    kind, detail = classify(pos)
    original = BASE_DECODED[k]
    mine = [(b, d) for b, d in result if b.offset == BASE[k].offset]
    for _, decoded in mine:
        if decoded is None:  # UnsupportedTable: only a damaged type or delete version can claim that
            assert within(pos, REGIONS[k].block_type) or within(pos, REGIONS[k].delete_version)
            return "detected"
    if not mine or all(d.block.is_corrupt for _, d in mine):
        return "detected"
    ((block, decoded),) = mine
    if decoded == original:
        return "exact"
    if original.records is None and original.deletes is None:  # a command: only its header can differ
        assert kind == "header" and detail != HeaderKey.COMMAND_BLOCK_TYPE, (pos, block)
        return "residual"
    assert block.format_version == 1
    items, expected = (decoded.records, original.records) if original.records is not None else (
        decoded.deletes,
        original.deletes,
    )
    assert items is not None and len(items) == len(expected), "a damaged block changed its record count"
    differing = [i for i, (a, b) in enumerate(zip(items, expected, strict=True)) if a != b]
    if kind == "framing":
        # e.g. the format version or data block version: accepted, and nothing decoded changes
        assert not differing and block.instant_time == BASE[k].instant_time, (pos, block)
        return "exact"
    if kind == "payload":
        assert differing in ([], [detail]), "damage in one record's datum changed another record"
    elif kind == "delete":
        assert len(differing) <= 1, "damage in one delete changed several"
    elif kind == "header" and detail != HeaderKey.SCHEMA:
        assert not differing, "a damaged header value changed the records"
    return "residual"


def test_truncating_inside_the_last_block_leaves_the_earlier_blocks_intact():
    last = BASE[-1]
    for cut in range(last.offset + 1, len(ORIGINAL)):
        blocks = read_log_bytes(ORIGINAL[:cut])
        assert blocks[:-1] == BASE[:-1], cut
        tail = blocks[-1]
        assert tail.is_corrupt and tail.offset == last.offset and tail.end == cut, cut
        assert tail.content == ORIGINAL[last.offset : cut]
        assert [decode_block(b) for b in blocks[:-1]] == BASE_DECODED[:-1]


def test_truncating_anywhere_never_crashes_and_keeps_whole_blocks():
    for cut in range(len(ORIGINAL)):
        blocks = read_log_bytes(ORIGINAL[:cut])
        whole = [b for b in BASE if b.end <= cut]  # a partial magic after a block is no damage to it
        assert blocks[: len(whole)] == whole
        assert all(b.is_corrupt for b in blocks[len(whole) :])
        assert sum(b.size for b in blocks) == cut


def test_every_single_byte_flip_is_detected_or_confined():
    tally: dict[str, int] = {}
    for pos in range(len(ORIGINAL)):
        for mask in (0x01, 0x80):
            data = bytearray(ORIGINAL)
            data[pos] ^= mask
            outcome = check_single_mutation(pos, bytes(data))
            tally[outcome] = tally.get(outcome, 0) + 1
    assert tally.get("detected", 0) > 0 and tally.get("residual", 0) > 0


@pytest.mark.parametrize("seed", range(4))
def test_random_mutations_never_crash_nor_touch_other_blocks(seed):
    rng = random.Random(seed)
    for _ in range(100):
        data = bytearray(ORIGINAL)
        positions = sorted(rng.sample(range(len(data)), rng.choice((1, 1, 2, 3, 8))))
        for pos in positions:
            data[pos] ^= rng.randrange(1, 256)
        if len(positions) == 1:
            check_single_mutation(positions[0], bytes(data))
        else:
            assert_untouched_blocks_exact(read_and_decode(bytes(data)), positions)


def test_garbage_before_between_and_after_blocks_is_skipped_as_corrupt():
    junk = b"\x00garbage\xff"
    data = junk + ORIGINAL[: BASE[1].offset] + junk + ORIGINAL[BASE[1].offset :] + b"#HU"
    blocks = read_log_bytes(data)
    kinds = [b.block_type for b in blocks]
    # The junk before block 1 sits where a magic must follow block 0: Hudi's rule makes block 0
    # CORRUPT with it (one span up to block 1's magic).
    assert kinds == [BlockType.CORRUPT, BlockType.CORRUPT] + [b.block_type for b in BASE[1:]] + [BlockType.CORRUPT]
    assert blocks[0].size == len(junk) and blocks[1].size == BASE[1].offset + len(junk)
    assert [(b.header, b.content) for b in blocks[2:-1]] == [(b.header, b.content) for b in BASE[1:]]
    assert blocks[-1].content == b"#HU" and sum(b.size for b in blocks) == len(data)


def test_a_file_of_nothing_but_magics_and_zeros_reads():
    for data in (b"", b"#HUDI#", b"#HUDI#" * 5, b"\x00" * 64, b"#HUDI#" + b"\x00" * 40, b"#HUDI#" + b"\xff" * 40):
        blocks = read_log_bytes(data)
        assert all(b.is_corrupt for b in blocks) and sum(b.size for b in blocks) == len(data)
