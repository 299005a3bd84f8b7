"""The vectorized Avro encoder writes exactly fastavro's bytes, and the AVRO_DATA framing around them.

The reference for record i is `fastavro.schemaless_writer` on row i of
`batch.to_pylist(maps_as_pydicts="lossy")`. Unless a test says otherwise, the fastavro fallback is
forbidden, so a pass proves the vectorized path, not the fallback, produced the bytes.
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import os
import struct
import subprocess
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.errors import BadRecordError, SchemaEvolutionError
from ingest.hudi.avro import avro_encoder, avro_join, avro_pieces
from ingest.hudi.avro.avro_encoder import EncodedRecords, avro_data_block_content, encode_batch
from ingest.hudi.avro.schema import META_FIELDS, arrow_to_avro, with_meta_fields

# -- references -----------------------------------------------------------------------------------


def reference_records(batch: pa.RecordBatch | pa.Table, schema: dict[str, Any]) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = batch.to_pylist(maps_as_pydicts="lossy")
    out = []
    for row in rows:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, row)
        out.append(buf.getvalue())
    return out


def reference_block_content(records: list[bytes]) -> bytes:
    return struct.pack(">ii", 3, len(records)) + b"".join(struct.pack(">i", len(r)) + r for r in records)


@contextmanager
def fallback_forbidden():
    with mock.patch.object(avro_encoder, "_encode_with_fastavro", side_effect=AssertionError("fell back to fastavro")):
        yield


@contextmanager
def fallback_counted():
    real = avro_encoder._encode_with_fastavro
    spy = mock.MagicMock(side_effect=real)
    with mock.patch.object(avro_encoder, "_encode_with_fastavro", spy):
        yield spy


def assert_same_as_fastavro(batch: pa.RecordBatch | pa.Table, schema: dict[str, Any], *, fallback: bool = False) -> EncodedRecords:
    expected = reference_records(batch, schema)
    if fallback:
        with fallback_counted() as spy:
            encoded = encode_batch(batch, schema)
        assert spy.call_count == 1
    else:
        with fallback_forbidden():
            encoded = encode_batch(batch, schema)
    assert encoded.offsets.dtype == np.int64
    assert len(encoded.offsets) == len(expected) + 1
    assert encoded.offsets[0] == 0
    assert encoded.data.size >= encoded.offsets[-1]
    got = [encoded.record(i) for i in range(len(encoded))]
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == e, f"record {i}: got {g.hex()} expected {e.hex()} (row {batch.slice(i, 1).to_pylist()})"
    assert bytes(encoded.data[: int(encoded.offsets[-1])]) == b"".join(expected)
    assert avro_data_block_content(encoded) == reference_block_content(expected)
    return encoded


def one_column(arr: pa.Array, avro_type: Any, name: str = "c") -> tuple[pa.RecordBatch, dict[str, Any]]:
    batch = pa.RecordBatch.from_arrays([arr], names=[name])
    schema = {"type": "record", "name": "r", "namespace": "ns", "fields": [{"name": name, "type": avro_type}]}
    return batch, schema


def check_column(arr: pa.Array, avro_type: Any, *, nullable_too: bool = True) -> None:
    """The column under `avro_type`, and with a null appended under ["null", T] and [T, "null"]."""
    assert_same_as_fastavro(*one_column(arr, avro_type))
    if nullable_too:
        with_null = pa.concat_arrays([arr, pa.nulls(1, arr.type), arr.slice(0, 1)])
        assert_same_as_fastavro(*one_column(with_null, ["null", avro_type]))
        assert_same_as_fastavro(*one_column(with_null, [avro_type, "null"]))


# -- explicit cases -----------------------------------------------------------------------------------

INT64_EDGES = [0, 1, -1, 63, 64, -64, -65, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)] + [
    s * (2**k + d) for k in range(6, 63, 7) for d in (-1, 0) for s in (1, -1)
]


def test_strings():
    values = ["", "a", "héllo", "日本語", "😀 emoji", "x" * 63, "y" * 64, "z" * 300, "\x00nul"]
    check_column(pa.array(values, pa.string()), "string")
    check_column(pa.array(values, pa.large_string()), "string")
    check_column(pa.array(values, pa.string()).dictionary_encode(), "string")
    check_column(pa.array(values, pa.string_view()), "string")


def test_bytes():
    values = [b"", b"\x00", b"\xff\x00\x80", bytes(range(256)), b"q" * 70]
    check_column(pa.array(values, pa.binary()), "bytes")
    check_column(pa.array(values, pa.large_binary()), "bytes")
    check_column(pa.array([b"abcd", b"\x00\x00\x00\x00"], pa.binary(4)), "bytes")


def test_boolean():
    check_column(pa.array([True, False, True, True, False, False, False, True, True]), "boolean")


@pytest.mark.parametrize("dtype", [pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()])
def test_int(dtype):
    info = np.iinfo(dtype.to_pandas_dtype())
    values = sorted({int(info.min), int(info.max), 0, 1, -1 if info.min < 0 else 2, 63, 64})
    check_column(pa.array(values, dtype), "int")
    check_column(pa.array(values, dtype), "long")


def test_long():
    check_column(pa.array(INT64_EDGES, pa.int64()), "long")
    check_column(pa.array([0, 2**32 - 1, 2**31], pa.uint32()), "long")
    check_column(pa.array([0, 2**63 - 1], pa.uint64()), "long")
    check_column(pa.array([2**31 - 1, -(2**31), 0], pa.int64()), "int")


def test_long_varint_length_mixes():
    # one varint length for all rows, and every mix of lengths, including the ninth and tenth bytes
    for k in range(10):
        lo = 0 if k == 0 else 2 ** (7 * k - 1)
        check_column(pa.array([lo, lo + 1], pa.int64()), "long", nullable_too=False)
    rng = np.random.default_rng(7)
    shifts = rng.integers(0, 63, 500)
    values = (rng.integers(0, 2**62, 500) >> shifts) * rng.choice([-1, 1], 500)
    check_column(pa.array(values, pa.int64()), "long")


def float_bits(bits: list[int], width: int) -> np.ndarray:
    kind = (np.uint64, np.float64) if width == 64 else (np.uint32, np.float32)
    return np.array(bits, dtype=kind[0]).view(kind[1])


DOUBLE_BITS = [0, 1 << 63, 1, 0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000,
               0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000123, 0x3FF0000000000000]
FLOAT_BITS = [0, 1 << 31, 1, 0x007FFFFF, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
              0x7FA00001, 0x3F800000]


def test_double():
    check_column(pa.array(float_bits(DOUBLE_BITS, 64)), "double")
    check_column(pa.array(float_bits(FLOAT_BITS, 32)), "double")
    check_column(pa.array([0, -5, 2**53 + 1, -(2**63)], pa.int64()), "double")


def test_float():
    check_column(pa.array(float_bits(FLOAT_BITS, 32)), "float")
    # doubles narrowed to float: rounding, overflow to infinity, NaN payloads
    check_column(pa.array(float_bits(DOUBLE_BITS, 64)), "float")
    check_column(pa.array([1e300, -1e300, 1.0000001, 3.4028235677973366e38, 1e-46]), "float")
    check_column(pa.array([2**24 + 1, 2**60 + 2**36 + 1], pa.int64()), "float")


def test_date():
    days = [datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1970, 1, 1), datetime.date(1969, 12, 31)]
    check_column(pa.array(days, pa.date32()), {"type": "int", "logicalType": "date"})
    millis = [0, -1, 86_400_000 * 3 + 5, -86_400_000 * 500 - 7]
    check_column(pa.array(millis, pa.date64()), {"type": "int", "logicalType": "date"})
    check_column(pa.array([0, -3, 20000], pa.int32()), {"type": "int", "logicalType": "date"})


TIMESTAMP_LOGICALS = ["timestamp-micros", "timestamp-millis", "local-timestamp-micros", "local-timestamp-millis"]
# whole microseconds within Python's datetime range, either side of the epoch
MICROS = [0, 1, -1, 999, -999, 1_000, -1_001, 1_700_000_000_123_456, -62_135_596_800_000_000,
          253_402_300_799_999_999, -1_234_567_890_123_457]


def _in_unit(micros: list[int], unit: str) -> list[int]:
    scale = {"s": 10**-6, "ms": 10**-3, "us": 1, "ns": 1000}[unit]
    values = [int(m * scale) if scale >= 1 else m // round(1 / scale) for m in micros]
    if unit == "ns":
        values = [v for v in values if -(2**63) < v < 2**63] + [1, -1, 1_999, -1_001]
    return values


@pytest.mark.parametrize(
    "logical,tz",
    # naive datetimes under timestamp-* go through mktime: test_naive_timestamps_use_local_time
    [(logical, tz) for logical in TIMESTAMP_LOGICALS for tz in ("UTC", None) if tz or logical.startswith("local")],
)
@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_timestamps(logical, unit, tz):
    arr = pa.array(_in_unit(MICROS, unit), pa.timestamp(unit, tz))
    check_column(arr, {"type": "long", "logicalType": logical})


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_naive_timestamps_use_local_time(monkeypatch, zone):
    # fastavro converts naive datetimes with mktime (machine-local time); we must agree in any zone
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        for logical in ("timestamp-micros", "timestamp-millis"):
            arr = pa.array([0, 1_700_000_000_123_456, -86_400_000_001, 1_710_054_000_000_000], pa.timestamp("us"))
            check_column(arr, {"type": "long", "logicalType": logical})
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize("logical", TIMESTAMP_LOGICALS)
def test_zoned_timestamps(logical):
    arr = pa.array([0, 1_700_000_000_123_456, -86_400_000_001, 1_710_054_000_000_000], pa.timestamp("us", "Europe/Paris"))
    check_column(arr, {"type": "long", "logicalType": logical})
    check_column(pa.array([5, -7], pa.timestamp("ms", "+05:30")), {"type": "long", "logicalType": logical})


def test_times():
    check_column(pa.array([0, 1, 86_399_999], pa.time32("ms")), {"type": "int", "logicalType": "time-millis"})
    check_column(pa.array([0, 86_399], pa.time32("s")), {"type": "int", "logicalType": "time-millis"})
    check_column(pa.array([0, 1_999, 86_399_999_999], pa.time64("us")), {"type": "int", "logicalType": "time-millis"})
    check_column(pa.array([0, 1_999, 86_399_999_999], pa.time64("us")), {"type": "long", "logicalType": "time-micros"})
    check_column(pa.array([0, 1_999, 86_399_999_999_999], pa.time64("ns")), {"type": "long", "logicalType": "time-micros"})
    check_column(pa.array([0, 86_399], pa.time32("s")), {"type": "long", "logicalType": "time-micros"})


def decimal_array(unscaled: list[int | None], precision: int, scale: int) -> pa.Array:
    values = [None if u is None else decimal.Decimal((int(u < 0), tuple(int(d) for d in str(abs(u))), -scale)) for u in unscaled]
    return pa.array(values, pa.decimal128(precision, scale))


def fixed_decimal(precision: int, scale: int, size: int | None = None) -> dict[str, Any]:
    if size is None:
        size = 1
        while 2 ** (8 * size - 1) < 10**precision:
            size += 1
    return {"type": "fixed", "name": f"d{precision}_{scale}_{size}", "size": size, "logicalType": "decimal",
            "precision": precision, "scale": scale}


def bytes_decimal(precision: int, scale: int) -> dict[str, Any]:
    return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}


DECIMAL_UNSCALED = [0, 1, -1, 127, 128, -128, -129, 255, 256, -256, -257, 32767, 32768, -32768, -32769]


@pytest.mark.parametrize("precision,scale", [(1, 0), (5, 2), (10, 2), (18, 18), (19, 4), (38, 0), (38, 38), (20, 5)])
def test_decimals(precision, scale):
    top = 10**precision - 1
    unscaled = [u for u in DECIMAL_UNSCALED if abs(u) <= top] + [top, -top, top // 7, -(top // 3)]
    arr = decimal_array(unscaled, precision, scale)
    check_column(arr, fixed_decimal(precision, scale))
    check_column(arr, bytes_decimal(precision, scale))


def test_decimals_rescaled_and_widened():
    arr = decimal_array([12345, -12345, 0, 99999, -99999], 5, 2)
    # a larger schema scale multiplies the unscaled value; a larger size sign-extends
    check_column(arr, fixed_decimal(8, 4))
    check_column(arr, bytes_decimal(8, 4))
    check_column(arr, fixed_decimal(5, 2, size=20))
    check_column(arr, fixed_decimal(5, 2, size=16))
    check_column(decimal_array([10**37, -(10**37)], 38, 0), fixed_decimal(40, 2))
    check_column(decimal_array([10**37, -(10**37)], 38, 0), bytes_decimal(40, 2))


@pytest.mark.parametrize("size", [1, 2, 7, 8, 9, 12, 15, 16])
def test_fixed_decimals_at_the_limits_of_their_size(size):
    """A fixed(size) decimal holds the two's complement values of `size` bytes, sign-filled in front:
    Avro's `Conversions.DecimalConversion.toFixed` copies the unscaled bytes behind the fill byte, and
    fails on a value whose bytes do not fit (here BadRecordError; fastavro fails too)."""
    top = 2 ** (8 * size - 1)
    digits = len(str(top - 1)) - 1  # every value of this many digits fits
    fit = [10**digits - 1, -(10**digits - 1), 0, -1, 1, 255 % 10**digits, -(256 % 10**digits)]
    check_column(decimal_array(fit, digits, 0), fixed_decimal(digits, 0, size=size))
    if size < 16:
        # one more digit of scale multiplies by ten: the largest values still fit, the next do not
        largest, smallest = (top - 1) // 10, -(top // 10)
        check_column(decimal_array([largest, smallest, 7], digits, 0), fixed_decimal(digits, 1, size=size))
        for bad in (largest + 1, smallest - 1):
            with pytest.raises(BadRecordError, match=rf"does not fit in fixed\({size}\)"):
                encode_batch(*one_column(decimal_array([0, bad], digits, 0), fixed_decimal(digits, 1, size=size)))


def test_decimals_of_other_widths():
    big = [10**49 + 7, -(10**49) - 7, 0, 10**60, -1]
    values = [decimal.Decimal((int(u < 0), tuple(int(d) for d in str(abs(u))), -10)) for u in big]
    arr256 = pa.array(values, pa.decimal256(70, 10))
    check_column(arr256, fixed_decimal(70, 10))
    check_column(arr256, bytes_decimal(70, 10))
    small = [decimal.Decimal("1.23"), decimal.Decimal("-9.99"), decimal.Decimal("0.00")]
    check_column(pa.array(small, pa.decimal32(3, 2)), fixed_decimal(3, 2))
    check_column(pa.array(small, pa.decimal64(12, 2)), bytes_decimal(12, 2))


def test_enum():
    schema = {"type": "enum", "name": "color", "symbols": ["RED", "GREEN", "BLUE"] + [f"S{i}" for i in range(70)]}
    check_column(pa.array(["RED", "BLUE", "GREEN", "S69", "RED"]), schema)
    check_column(pa.array(["RED", "S3"]).dictionary_encode(), schema)


def test_fixed():
    schema = {"type": "fixed", "name": "four", "size": 4}
    check_column(pa.array([b"abcd", b"\x00\x01\x02\x03"], pa.binary(4)), schema)
    check_column(pa.array([b"abcd", b"\x00\x01\x02\x03"], pa.binary()), schema)
    check_column(pa.array([b"abcd", b"wxyz", b"1234"], pa.binary(4)).slice(1), schema)


def test_null_type():
    assert_same_as_fastavro(*one_column(pa.array([1, 2, 3]), "null"))
    assert_same_as_fastavro(*one_column(pa.nulls(3), ["null", "string"]))


def test_arrays():
    long_list = list(range(-70, 70))
    values = [[], [1], [1, -2, 3], long_list, [2**63 - 1]]
    check_column(pa.array(values, pa.list_(pa.int64())), {"type": "array", "items": "long"})
    check_column(pa.array(values, pa.large_list(pa.int64())), {"type": "array", "items": "long"})
    check_column(pa.array([[None, "a"], [], [""], [None]], pa.list_(pa.string())),
                 {"type": "array", "items": ["null", "string"]})
    nested = [[[1], []], [], [[], [], [2, 3]], [[4] * 65]]
    check_column(pa.array(nested, pa.list_(pa.list_(pa.int32()))),
                 {"type": "array", "items": {"type": "array", "items": "int"}})
    fixed = pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.int16(), 2)).slice(1)
    check_column(fixed, {"type": "array", "items": "int"})


def test_maps():
    values = [[], [("a", 1)], [("é", None), ("", 2**40)], [(f"k{i}", i) for i in range(70)]]
    check_column(pa.array(values, pa.map_(pa.string(), pa.int64())), {"type": "map", "values": ["null", "long"]})
    structs = [[("x", {"a": "s", "b": [1.5]})], []]
    arrow = pa.map_(pa.string(), pa.struct([("a", pa.string()), ("b", pa.list_(pa.float64()))]))
    record = {"type": "record", "name": "v", "fields": [{"name": "a", "type": "string"},
                                                         {"name": "b", "type": {"type": "array", "items": "double"}}]}
    check_column(pa.array(structs, arrow), {"type": "map", "values": record})


def test_nested_records_with_nulls_at_every_level():
    inner = pa.struct([pa.field("x", pa.int64()), pa.field("y", pa.string(), nullable=True)])
    outer = pa.struct([pa.field("inner", inner), pa.field("tags", pa.list_(pa.string())), pa.field("d", pa.decimal128(12, 3))])
    values = [
        {"inner": {"x": 1, "y": "a"}, "tags": ["t"], "d": decimal.Decimal("-1.500")},
        {"inner": None, "tags": None, "d": None},
        None,
        {"inner": {"x": -(2**63), "y": None}, "tags": [], "d": decimal.Decimal("999999999.999")},
    ]
    arr = pa.array(values, outer)
    schema = arrow_to_avro(pa.schema([pa.field("c", outer)]), "t")
    assert_same_as_fastavro(pa.RecordBatch.from_arrays([arr], names=["c"]), schema)


def test_values_hidden_under_null_parents_are_not_checked():
    # a null struct may hide children that would be invalid on their own (Arrow allows it)
    child = pa.array([5, None, 3_000_000_000], pa.int64())
    mask = pa.array([False, True, True])
    arr = pa.StructArray.from_arrays([child, pa.array(["RED", "nope", "nope"])], names=["n", "e"], mask=mask)
    record = {"type": "record", "name": "s", "fields": [
        {"name": "n", "type": "int"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["RED"]}},
    ]}
    assert_same_as_fastavro(*one_column(arr, ["null", record]))
    # and lists whose null rows still own child values
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), pa.array([1, None, 2]),
                                     mask=pa.array([True, False]))
    assert lists.to_pylist() == [None, [2]]
    assert_same_as_fastavro(*one_column(lists, ["null", {"type": "array", "items": "long"}]))


def test_meta_fields_first_and_extra_columns_ignored():
    batch = pa.RecordBatch.from_pydict({
        "extra": [1, 2],
        "id": [1, 2],
        **{name: [f"{name}-a", None] for name in META_FIELDS},
    })
    schema = with_meta_fields(arrow_to_avro(pa.schema([pa.field("id", pa.int64())]), "t"))
    assert_same_as_fastavro(batch, schema)


def test_missing_nullable_field_is_null():
    batch = pa.RecordBatch.from_pydict({"a": [1, 2]})
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": "long"},
        {"name": "gone", "type": ["null", "string"], "default": None},
        {"name": "gone2", "type": ["string", "null"]},
        {"name": "nothing", "type": "null"},
    ]}
    assert_same_as_fastavro(batch, schema)


def test_missing_required_field_fails():
    batch = pa.RecordBatch.from_pydict({"a": [1, 2]})
    schema = {"type": "record", "name": "r", "fields": [{"name": "b", "type": "long"}]}
    with pytest.raises(SchemaEvolutionError, match="b"):
        encode_batch(batch, schema)


def test_tables_slices_and_row_slices(monkeypatch):
    batch = pa.RecordBatch.from_pydict({
        "s": ["a", None, "ccc", "dd", None, "e", "f"],
        "l": [[1], None, [], [2, 3], [4], None, []],
        "m": pa.array([[("k", 1)], [], None, [("a", None)], [], [("z", 2)], None], pa.map_(pa.string(), pa.int64())),
    })
    schema = arrow_to_avro(batch.schema, "t")
    monkeypatch.setattr(avro_encoder, "ROWS_PER_SLICE", 3)
    assert_same_as_fastavro(batch, schema)
    assert_same_as_fastavro(batch.slice(2), schema)
    assert_same_as_fastavro(batch.slice(1, 4), schema)
    table = pa.Table.from_batches([batch.slice(0, 2), batch.slice(2)])
    assert table.column(0).num_chunks == 2
    assert_same_as_fastavro(table, schema)
    assert_same_as_fastavro(batch.slice(0, 0), schema)


def test_64_bit_offsets(monkeypatch):
    # joins past 2 GiB switch to large_binary; force that path on small data
    monkeypatch.setattr(avro_join, "_BINARY_LIMIT", 0)
    batch = pa.RecordBatch.from_pydict({
        "s": ["a", None, "ccc"],
        "l": pa.array([[1, 2], None, []], pa.list_(pa.int64())),
        "m": pa.array([[("k", "v")], [], None], pa.map_(pa.string(), pa.string())),
        "d": [1.5, None, -0.0],
    })
    assert_same_as_fastavro(batch, arrow_to_avro(batch.schema, "t"))


def _fixed_runs_batch() -> tuple[pa.RecordBatch, dict[str, Any]]:
    n = 7
    batch = pa.RecordBatch.from_pydict({
        "t": pa.array(["20240101000000000"] * n),  # 17 bytes: two 8-byte lanes and a tail byte
        "p": pa.array([f"region-{i % 3}" for i in range(n)]),
        "f": pa.array([bytes([i, 0xFF, i]) for i in range(n)], pa.binary(3)),
        "d": pa.array([1.5 * i - 2 for i in range(n)]),
        "e": pa.array([""] * n),
        "w": pa.array([decimal.Decimal(f"-{i}1234567890123456789012345678901234567.8") for i in range(n)], pa.decimal256(40, 1)),
        "v": pa.array(["x" * i for i in range(n)]),  # lengths vary: ends a run
        "k": pa.array([f"key-{i}" for i in range(n)]),
        "s": pa.array([None if i % 2 else {"x": f"s{i}"} for i in range(n)], pa.struct([("x", pa.string())])),
        "l": pa.array([["ab", "cd"][: i % 3] for i in range(n)], pa.list_(pa.string())),
    })
    fields = [
        {"name": "t", "type": "string"},
        {"name": "p", "type": ["null", "string"]},
        {"name": "f", "type": {"type": "fixed", "name": "f3", "size": 3}},
        {"name": "d", "type": "double"},
        {"name": "e", "type": "string"},
        {"name": "w", "type": fixed_decimal(40, 1)},
        {"name": "v", "type": "string"},
        {"name": "k", "type": "string"},
        {"name": "s", "type": ["null", {"type": "record", "name": "s", "fields": [{"name": "x", "type": "string"}]}]},
        {"name": "l", "type": {"type": "array", "items": "string"}},
    ]
    return batch, {"type": "record", "name": "r", "fields": fields}


def test_fixed_size_runs_are_joined_as_one_piece(monkeypatch):
    """Neighbouring pieces whose rows all have one length (constant-length strings, fixed, decimals,
    doubles, branch and length bytes) are copied side by side before the join, and the records stay
    those of Avro's `GenericDatumWriter.write` through a `BinaryEncoder`, framed as
    `HoodieAvroDataBlock.serializeRecords` frames them (4-byte length, then the record)."""
    batch, schema = _fixed_runs_batch()
    named: dict[str, Any] = {}
    parsed = fastavro.parse_schema(schema, named)
    children = {name: batch.column(name) for name in batch.schema.names}
    pieces = avro_pieces._coalesce(
        avro_encoder._Encoder(named).record_fields(batch.num_rows, parsed["fields"], None, avro_encoder._Ctx(""), children))
    runs = avro_join._fixed_runs(pieces, batch.num_rows)
    # t (with its length byte), p (branch, length, bytes), f, d, e, w and v's length byte: one chunk
    assert isinstance(runs[0], avro_pieces._Chunk) and runs[0].size == 1 + 17 + 2 + 8 + 3 + 8 + 1 + 17 + 1
    assert len(runs) < len(pieces)
    assert_same_as_fastavro(batch, schema)
    assert_same_as_fastavro(batch.slice(2), schema)
    monkeypatch.setattr(avro_encoder, "ROWS_PER_SLICE", 3)
    assert_same_as_fastavro(batch.slice(1), schema)
    monkeypatch.setattr(avro_join, "_BINARY_LIMIT", 0)
    assert_same_as_fastavro(batch, schema)


@pytest.mark.parametrize("dtype", [
    pa.int64(), pa.float32(), pa.string(), pa.binary(), pa.bool_(), pa.date32(), pa.timestamp("us", "UTC"),
    pa.decimal128(7, 3), pa.list_(pa.int32()), pa.map_(pa.string(), pa.int8()), pa.struct([("a", pa.int64())]),
])
def test_all_null_columns(dtype):
    arr = pa.nulls(4, dtype)
    schema = arrow_to_avro(pa.schema([pa.field("c", dtype)]), "t")
    assert_same_as_fastavro(pa.RecordBatch.from_arrays([arr], names=["c"]), schema)


def test_empty_batch_and_empty_record():
    batch = pa.RecordBatch.from_pydict({"a": pa.array([], pa.int64())})
    encoded = encode_batch(batch, arrow_to_avro(batch.schema, "t"))
    assert len(encoded) == 0 and encoded.offsets.tolist() == [0]
    assert avro_data_block_content(encoded) == struct.pack(">ii", 3, 0)
    no_fields = {"type": "record", "name": "r", "fields": []}
    assert_same_as_fastavro(pa.RecordBatch.from_pydict({"a": [1, 2, 3]}), no_fields)


ENCODE_IN_A_FRESH_PROCESS = """
import json, sys
import pyarrow as pa
from ingest.hudi.avro.avro_encoder import avro_data_block_content, encode_batch
batch = pa.ipc.open_file(sys.argv[1]).read_all()
print(avro_data_block_content(encode_batch(batch, json.loads(sys.argv[2]))).hex())
print("pandas" in sys.modules)
"""


def test_encoding_does_not_import_pandas(tmp_path):
    """The encoder builds its Arrow values from buffers, never from Python objects (pyarrow imports
    pandas for those: a third of a second in a fresh Spark worker). The content is still what
    `HoodieAvroDataBlock.serializeRecords` writes: version, count, then each record's length and bytes."""
    batch = pa.RecordBatch.from_pydict({"s": ["a", None, "ccc"], "n": [1, -2, None], "k": ["x1", "x2", "x3"]})
    schema = arrow_to_avro(batch.schema, "r")
    with pa.OSFile(str(tmp_path / "batch.arrow"), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)
    root = str(Path(avro_encoder.__file__).resolve().parents[3])  # the ingest package under test
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run([sys.executable, "-c", ENCODE_IN_A_FRESH_PROCESS, str(tmp_path / "batch.arrow"), json.dumps(schema)],
                          env=env, cwd=root, capture_output=True, text=True, timeout=120, check=True)
    content, pandas_imported = done.stdout.split()
    assert bytes.fromhex(content) == reference_block_content(reference_records(batch, schema))
    assert pandas_imported == "False"


def test_named_type_references():
    schema = {"type": "record", "name": "r", "namespace": "n", "fields": [
        {"name": "a", "type": {"type": "fixed", "name": "f4", "size": 4}},
        {"name": "b", "type": ["null", "f4"]},
        {"name": "c", "type": {"type": "enum", "name": "e", "symbols": ["X", "Y"]}},
        {"name": "d", "type": {"type": "array", "items": "n.e"}},
    ]}
    batch = pa.RecordBatch.from_pydict({
        "a": pa.array([b"1234", b"abcd"], pa.binary(4)),
        "b": pa.array([None, b"wxyz"], pa.binary(4)),
        "c": ["Y", "X"],
        "d": [["X", "Y", "Y"], []],
    })
    assert_same_as_fastavro(batch, schema)


# -- fallback --------------------------------------------------------------------------------------


def test_multi_branch_union_falls_back():
    batch = pa.RecordBatch.from_pydict({"a": ["x", None, "y"]})
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": ["null", "long", "string"]}]}
    assert_same_as_fastavro(batch, schema, fallback=True)


def test_duplicate_map_keys_fall_back():
    arr = pa.array([[("a", 1), ("b", 2), ("a", 3)], [("c", 4)]], pa.map_(pa.string(), pa.int64()))
    assert_same_as_fastavro(*one_column(arr, {"type": "map", "values": "long"}), fallback=True)


def test_missing_field_with_default_falls_back():
    batch = pa.RecordBatch.from_pydict({"a": [1, 2]})
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": "long"},
        {"name": "b", "type": "string", "default": "dflt"},
    ]}
    assert_same_as_fastavro(batch, schema, fallback=True)


def test_unsupported_type_pair_falls_back():
    assert_same_as_fastavro(*one_column(pa.array([True, False]), "long"), fallback=True)


# -- bad data --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arr,avro_type,message",
    [
        (pa.array([1, None, 3]), "long", "null value"),
        (pa.array(["a", None]), "string", "null value"),
        (pa.array([1, 2**31]), "int", "int range"),
        (pa.array([2**64 - 1], pa.uint64()), "long", "long range"),
        (pa.array(["RED", "PINK"]), {"type": "enum", "name": "E", "symbols": ["RED"]}, "enum symbols"),
        (pa.array([b"abc"], pa.binary()), {"type": "fixed", "name": "F", "size": 4}, "fixed size"),
        (decimal_array([12345], 5, 2), fixed_decimal(4, 2), "4 digits"),
        (decimal_array([12345], 5, 3), fixed_decimal(5, 2), "scale"),
        # fits the precision, but not the fixed size once rescaled to the schema's scale
        (decimal_array([99], 2, 0), fixed_decimal(2, 2), "does not fit"),
        (pa.array([[1, None]], pa.list_(pa.int64())), {"type": "array", "items": "long"}, "record 0"),
    ],
)
def test_bad_values_name_the_field(arr, avro_type, message):
    batch, schema = one_column(arr, avro_type, name="col")
    with pytest.raises(BadRecordError, match=message) as info:
        encode_batch(batch, schema)
    assert "col" in str(info.value)


def test_duplicate_field_names_fail():
    # Arrow allows them, but no Python dict (so no fastavro record) can hold both
    arr = pa.StructArray.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"])
    record = {"type": "record", "name": "s", "fields": [{"name": "a", "type": "long"}]}
    with pytest.raises(SchemaEvolutionError, match="c.a appears more than once"):
        encode_batch(*one_column(arr, record))
    batch = pa.RecordBatch.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(SchemaEvolutionError, match="a appears more than once"):
        encode_batch(batch, {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]})


def test_bad_value_names_the_record(monkeypatch):
    monkeypatch.setattr(avro_encoder, "ROWS_PER_SLICE", 4)
    batch, schema = one_column(pa.array([[1], [], [2], [3], [], [4, None]], pa.list_(pa.int64())),
                               {"type": "array", "items": "long"})
    with pytest.raises(BadRecordError, match=r"record 5\b"):
        encode_batch(batch, schema)


# -- properties ------------------------------------------------------------------------------------

INT_RANGES = {
    pa.int8(): (-(2**7), 2**7 - 1), pa.int16(): (-(2**15), 2**15 - 1), pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1), pa.uint8(): (0, 2**8 - 1), pa.uint16(): (0, 2**16 - 1),
    pa.uint32(): (0, 2**32 - 1),
}
UNIT_BOUNDS = {  # Python datetime's range (years 1-9999) in each unit; int64 for nanoseconds
    "s": (-62_135_596_800, 253_402_300_799),
    "ms": (-62_135_596_800_000, 253_402_300_799_999),
    "us": (-62_135_596_800_000_000, 253_402_300_799_999_999),
    "ns": (-(2**63) + 1, 2**63 - 1),
}


def edgy_integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    edges = [v for v in {lo, hi, 0, 1, -1, 63, 64, -64, -65, 2**31 - 1, -(2**31), 2**32, 2**56, -(2**56)} if lo <= v <= hi]
    return st.one_of(st.sampled_from(sorted(edges)), st.integers(lo, hi))


def float_values(width: int) -> st.SearchStrategy[float]:
    fmt, ufmt, bits = ("<d", "<Q", 64) if width == 64 else ("<f", "<I", 32)
    specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 5e-324, 1.5, -2.25]
    from_bits = st.integers(0, 2**bits - 1).map(lambda b: struct.unpack(fmt, struct.pack(ufmt, b))[0])
    return st.one_of(st.sampled_from(specials), from_bits, st.floats(width=width))


def decimal_types() -> st.SearchStrategy[pa.DataType]:
    return st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: pa.decimal128(p, s)))


LEAF_TYPES = [
    pa.bool_(), *INT_RANGES, pa.float32(), pa.float64(), pa.string(), pa.large_string(), pa.binary(),
    pa.large_binary(), pa.date32(),
    *(pa.timestamp(unit, tz) for unit in UNIT_BOUNDS for tz in (None, "UTC")),
]

arrow_types = st.recursive(
    st.one_of(st.sampled_from(LEAF_TYPES), decimal_types()),
    lambda inner: st.one_of(
        st.tuples(inner, st.booleans()).map(lambda t: pa.list_(pa.field("element", t[0], t[1]))),
        st.tuples(inner, st.booleans()).map(lambda t: pa.large_list(pa.field("element", t[0], t[1]))),
        st.tuples(inner, st.booleans()).map(lambda t: pa.map_(pa.string(), pa.field("value", t[0], t[1]))),
        st.lists(st.tuples(inner, st.booleans()), min_size=1, max_size=4).map(
            lambda fs: pa.struct([pa.field(f"f{i}", t, nullable) for i, (t, nullable) in enumerate(fs)])
        ),
    ),
    max_leaves=6,
)


def values_of(t: pa.DataType, nullable: bool) -> st.SearchStrategy[Any]:
    base: st.SearchStrategy[Any]
    if pa.types.is_boolean(t):
        base = st.booleans()
    elif t in INT_RANGES:
        base = edgy_integers(*INT_RANGES[t])
    elif pa.types.is_float32(t) or pa.types.is_float64(t):
        base = float_values(t.bit_width)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        base = st.one_of(st.text(st.characters(codec="utf-8"), max_size=12), st.text(min_size=60, max_size=80))
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        base = st.binary(max_size=70)
    elif pa.types.is_date32(t):
        base = st.dates()
    elif pa.types.is_timestamp(t):
        base = edgy_integers(*UNIT_BOUNDS[t.unit])
    elif pa.types.is_decimal(t):
        top = 10**t.precision - 1
        base = edgy_integers(-top, top).map(
            lambda u, s=t.scale: decimal.Decimal((int(u < 0), tuple(int(d) for d in str(abs(u))), -s))
        )
    elif pa.types.is_map(t):
        item = t.item_field
        pair = st.tuples(st.text(max_size=4), values_of(item.type, item.nullable))
        base = st.lists(pair, max_size=4, unique_by=lambda kv: kv[0])
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field
        base = st.lists(values_of(item.type, item.nullable), max_size=4)
    elif pa.types.is_struct(t):
        base = st.fixed_dictionaries({f.name: values_of(f.type, f.nullable) for f in t})
    else:
        raise AssertionError(t)
    return st.one_of(st.none(), base) if nullable else base


@st.composite
def batches(draw) -> pa.RecordBatch:
    fields = draw(st.lists(st.tuples(arrow_types, st.booleans()), min_size=1, max_size=5))
    schema = pa.schema([pa.field(f"c{i}", t, nullable) for i, (t, nullable) in enumerate(fields)])
    if draw(st.booleans()):
        schema = pa.schema([pa.field(name, pa.string()) for name in META_FIELDS] + list(schema))
    n = draw(st.integers(0, 8))
    columns = []
    for field in schema:
        values = draw(st.lists(values_of(field.type, field.nullable), min_size=n, max_size=n))
        columns.append(pa.array(values, field.type))
    batch = pa.RecordBatch.from_arrays(columns, schema=schema)
    skip = draw(st.integers(0, min(n, 2)))
    return batch.slice(skip)


def table_schema(batch: pa.RecordBatch) -> dict[str, Any]:
    data = pa.schema([f for f in batch.schema if f.name not in META_FIELDS])
    avro = arrow_to_avro(data, "prop")
    return with_meta_fields(avro) if META_FIELDS[0] in batch.schema.names else avro


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batch=batches(), rows_per_slice=st.sampled_from([2, 5, 65_536]))
def test_property_same_bytes_as_fastavro(batch, rows_per_slice):
    with mock.patch.object(avro_encoder, "ROWS_PER_SLICE", rows_per_slice):
        assert_same_as_fastavro(batch, table_schema(batch))


def _variant(avro_type: Any, flip: st.DataObject) -> Any:
    """Another schema fastavro writes the same data with: union order, decimal/timestamp/number forms."""
    if isinstance(avro_type, list):
        branches = [_variant(b, flip) for b in avro_type]
        return branches[::-1] if flip.draw(st.booleans()) else branches
    if not isinstance(avro_type, dict):
        if avro_type in ("int", "float") and flip.draw(st.booleans()):
            return {"int": "long", "float": "double"}[avro_type]
        return avro_type
    kind, logical = avro_type["type"], avro_type.get("logicalType")
    if kind == "record":
        return {**avro_type, "fields": [{**f, "type": _variant(f["type"], flip)} for f in avro_type["fields"]]}
    if kind == "array":
        return {**avro_type, "items": _variant(avro_type["items"], flip)}
    if kind == "map":
        return {**avro_type, "values": _variant(avro_type["values"], flip)}
    if logical == "decimal":
        extra_scale = flip.draw(st.integers(0, 2))
        precision, scale = avro_type["precision"] + extra_scale, avro_type["scale"] + extra_scale
        if flip.draw(st.booleans()):
            return bytes_decimal(precision, scale)
        size = fixed_decimal(precision, scale)["size"] + flip.draw(st.integers(0, 3))
        return {**avro_type, "size": size, "precision": precision, "scale": scale}
    if logical and "timestamp" in logical:
        local = logical.startswith("local-")
        unit = flip.draw(st.sampled_from(["millis", "micros"]))
        return {**avro_type, "logicalType": f"{'local-' if local else ''}timestamp-{unit}"}
    return avro_type


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batch=batches(), flip=st.data())
def test_property_schema_variants(batch, flip):
    schema = _variant(table_schema(batch), flip)
    assert_same_as_fastavro(batch, schema)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["RED", "GREEN", "BLUE"]), st.booleans()), max_size=10))
def test_property_enums(values):
    arr = pa.array([None if missing else v for v, missing in values], pa.string())
    enum = {"type": "enum", "name": "c", "symbols": ["BLUE", "GREEN", "RED"]}
    assert_same_as_fastavro(*one_column(arr, ["null", enum]))
