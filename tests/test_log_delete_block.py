"""DELETE content v3: the wrapper union's bytes, ordering values by field type, strict decoding."""

from __future__ import annotations

import struct
from decimal import Decimal

import pytest

from ingest.errors import BadRecordError, LogFormatError, UnsupportedTable
from ingest.hudi.log.delete_block import (
    NO_ORDERING_VALUE,
    DeleteRecord,
    OrderingValue,
    OrderingWrapper,
    decode_delete_content,
    delete_block,
    encode_delete_content,
    ordering_value,
)
from ingest.hudi.log.log_block import BlockType, HeaderKey, LogBlock
from ingest.hudi.log.log_reader import decode_block


def avro_of(deletes) -> bytes:
    content = encode_delete_content(deletes)
    version, length = struct.unpack_from(">ii", content, 0)
    assert version == 3 and length == len(content) - 8
    return content[8:]


def test_wrapper_union_branches_are_hudi_0_14_order():
    assert [(w.record_name, int(w)) for w in OrderingWrapper] == [
        ("BooleanWrapper", 1),
        ("IntWrapper", 2),
        ("LongWrapper", 3),
        ("FloatWrapper", 4),
        ("DoubleWrapper", 5),
        ("BytesWrapper", 6),
        ("StringWrapper", 7),
        ("DateWrapper", 8),
        ("DecimalWrapper", 9),
        ("TimeMicrosWrapper", 10),
        ("TimestampMicrosWrapper", 11),
    ]


def test_exact_bytes_of_a_delete_list():
    # array block of 1 item: key union->string "k", partition union->string "p", IntWrapper(0); end of array
    assert avro_of([DeleteRecord("k", "p")]) == b"\x02" + b"\x02\x02k" + b"\x02\x02p" + b"\x04\x00" + b"\x00"
    assert avro_of([DeleteRecord("k", None, None)]) == b"\x02\x02\x02k\x00\x00\x00"
    assert avro_of([DeleteRecord("k", "p", OrderingValue(OrderingWrapper.LONG, 5))])[-3:] == b"\x06\x0a\x00"
    assert avro_of([]) == b"\x00"
    assert DeleteRecord("k", "p").ordering_value == NO_ORDERING_VALUE == OrderingValue(OrderingWrapper.INT, 0)


@pytest.mark.parametrize(
    ("value", "unscaled_bytes"),
    [
        (Decimal("0"), b"\x00"),
        (Decimal("-1E-15"), b"\xff"),
        (Decimal("127E-15"), b"\x7f"),
        (Decimal("128E-15"), b"\x00\x80"),
        (Decimal("-128E-15"), b"\x80"),
        (Decimal("-129E-15"), b"\xff\x7f"),
        (Decimal("1.5"), (1500000000000000).to_bytes(7, "big", signed=True)),
        # 30 digits: more than Python's default decimal context holds
        (Decimal("-999999999999999.999999999999999"), (-(10**30) + 1).to_bytes(13, "big", signed=True)),
    ],
)
def test_decimal_wrapper_holds_javas_shortest_twos_complement_at_scale_15(value, unscaled_bytes):
    avro = avro_of([DeleteRecord(None, None, OrderingValue(OrderingWrapper.DECIMAL, value))])
    # array count, two null unions, DecimalWrapper branch 9 (zigzag 0x12), bytes length, bytes, end
    assert avro == b"\x02\x00\x00\x12" + bytes([2 * len(unscaled_bytes)]) + unscaled_bytes + b"\x00"
    (d,) = decode_delete_content(encode_delete_content([DeleteRecord(None, None, OrderingValue(OrderingWrapper.DECIMAL, value))]))
    assert d.ordering_value.value == value and d.ordering_value.value.as_tuple().exponent == -15


def test_ordering_value_follows_the_ordering_fields_avro_type():
    assert ordering_value(["null", "long"], 5) == OrderingValue(OrderingWrapper.LONG, 5)
    assert ordering_value("int", 5) == OrderingValue(OrderingWrapper.INT, 5)
    assert ordering_value("string", "x") == OrderingValue(OrderingWrapper.STRING, "x")
    assert ordering_value("double", 1) == OrderingValue(OrderingWrapper.DOUBLE, 1.0)
    assert ordering_value({"type": "int", "logicalType": "date"}, 3) == OrderingValue(OrderingWrapper.DATE, 3)
    ts = {"type": "long", "logicalType": "timestamp-micros"}
    assert ordering_value(ts, 7) == OrderingValue(OrderingWrapper.LONG, 7)
    assert ordering_value(ts, 7, consistent_logical_timestamp=True) == OrderingValue(OrderingWrapper.TIMESTAMP_MICROS, 7)
    dec = {"type": "fixed", "name": "fixed", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2}
    assert ordering_value(["null", dec], Decimal("1.25")).wrapper == OrderingWrapper.DECIMAL
    assert ordering_value("long", None) is None
    with pytest.raises(BadRecordError):
        ordering_value({"type": "record", "name": "r", "fields": []}, {})


@pytest.mark.parametrize(
    ("wrapper", "value"),
    [
        (OrderingWrapper.INT, 2**31),
        (OrderingWrapper.INT, True),
        (OrderingWrapper.LONG, "5"),
        (OrderingWrapper.BOOLEAN, 1),
        (OrderingWrapper.STRING, b"x"),
        (OrderingWrapper.DECIMAL, Decimal("1E-16")),  # would need rounding at scale 15
        (OrderingWrapper.DECIMAL, Decimal("1E+15")),  # 31 digits at scale 15
    ],
)
def test_ordering_values_that_do_not_fit_their_wrapper_are_bad_records(wrapper, value):
    with pytest.raises(BadRecordError):
        OrderingValue(wrapper, value)


def test_java_serialized_versions_are_refused_not_treated_as_corrupt():
    for version in (1, 2):
        content = struct.pack(">ii", version, 3) + b"\xac\xed\x00"
        with pytest.raises(UnsupportedTable, match=f"version {version}"):
            decode_delete_content(content)
        with pytest.raises(UnsupportedTable):
            decode_block(LogBlock(BlockType.DELETE, ((HeaderKey.INSTANT_TIME, "1"),), content))


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\x00\x00\x03",
        struct.pack(">ii", 4, 1) + b"\x00",
        struct.pack(">ii", 3, 2) + b"\x00",  # declared length longer than the bytes
        struct.pack(">ii", 3, 2) + b"\x00\x00",  # the datum ends after one byte
        struct.pack(">ii", 3, 3) + b"\x02\x00\x00\x1a\x00"[:3],  # truncated item
        struct.pack(">ii", 3, 5) + b"\x02\x00\x00\x1a\x00",  # orderingVal branch 13 does not exist
        struct.pack(">ii", 3, 6) + b"\x02\x00\x00\x12\x00\x00",  # DecimalWrapper without bytes
    ],
)
def test_delete_content_that_does_not_add_up_is_a_decoding_failure(content):
    with pytest.raises(LogFormatError):
        decode_delete_content(content)
    decoded = decode_block(LogBlock(BlockType.DELETE, ((HeaderKey.INSTANT_TIME, "1"),), content))
    assert decoded.block.is_corrupt and decoded.deletes is None


def test_delete_block_header_carries_instant_and_schema():
    block = delete_block("20240101000000000", '{"type":"record","name":"r","fields":[]}', [DeleteRecord("k", "p")])
    assert block.block_type == BlockType.DELETE
    assert block.instant_time == "20240101000000000" and block.schema.startswith("{")
    assert decode_block(block).deletes == (DeleteRecord("k", "p"),)
