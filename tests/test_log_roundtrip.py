"""Log files written by our writer read back exactly: every Avro type Hudi data holds, all block kinds."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.hudi.avro.schema import META_FIELDS, arrow_to_avro, with_meta_fields
from ingest.hudi.log.data_block import avro_data_block, encode_avro_records
from ingest.hudi.log.delete_block import DeleteRecord, OrderingValue, OrderingWrapper, delete_block
from ingest.hudi.log.log_block import BlockType, encode_blocks
from ingest.hudi.log.log_reader import decode_block, iter_log_blocks, read_log_bytes, read_log_file
from ingest.hudi.log.log_writer import append_log_blocks, create_log_file, rollback_block
from ingest.storage import Storage

ARROW = pa.schema(
    [
        pa.field("s", pa.string()),
        pa.field("i", pa.int32()),
        pa.field("l", pa.int64()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("b", pa.bool_()),
        pa.field("by", pa.binary()),
        pa.field("dec", pa.decimal128(10, 2)),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("arr", pa.list_(pa.string())),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
        pa.field(
            "nested",
            pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.list_(pa.struct([pa.field("z", pa.float64())])))]),
        ),
    ]
)
SCHEMA = with_meta_fields(arrow_to_avro(ARROW, "all_types"))


def nullable(strategy):
    return st.none() | strategy


INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
records = st.fixed_dictionaries(
    {
        **{name: nullable(st.text(max_size=20)) for name in META_FIELDS},
        "s": nullable(st.text(max_size=30)),
        "i": nullable(INT32),
        "l": nullable(INT64),
        "f": nullable(st.floats(width=32, allow_nan=False)),
        "d": nullable(st.floats(allow_nan=False)),
        "b": nullable(st.booleans()),
        "by": nullable(st.binary(max_size=20)),
        "dec": nullable(
            st.decimals(min_value=Decimal("-99999999.99"), max_value=Decimal("99999999.99"), places=2)
        ),
        "day": nullable(st.dates()),
        "ts": nullable(st.datetimes(timezones=st.just(dt.timezone.utc))),
        "arr": nullable(st.lists(nullable(st.text(max_size=5)), max_size=4)),
        "m": nullable(st.dictionaries(st.text(max_size=5), nullable(INT64), max_size=4)),
        "nested": nullable(
            st.fixed_dictionaries(
                {
                    "x": nullable(INT32),
                    "y": nullable(
                        st.lists(nullable(st.fixed_dictionaries({"z": nullable(st.floats(allow_nan=False))})), max_size=3)
                    ),
                }
            )
        ),
    }
)
instants = st.from_regex(r"20[0-9]{15}", fullmatch=True)
ordering_values = st.one_of(
    st.none(),
    st.builds(OrderingValue, st.just(OrderingWrapper.BOOLEAN), st.booleans()),
    st.builds(OrderingValue, st.just(OrderingWrapper.INT), INT32),
    st.builds(OrderingValue, st.just(OrderingWrapper.LONG), INT64),
    st.builds(OrderingValue, st.just(OrderingWrapper.FLOAT), st.floats(width=32, allow_nan=False)),
    st.builds(OrderingValue, st.just(OrderingWrapper.DOUBLE), st.floats(allow_nan=False)),
    st.builds(OrderingValue, st.just(OrderingWrapper.BYTES), st.binary(max_size=10)),
    st.builds(OrderingValue, st.just(OrderingWrapper.STRING), st.text(max_size=10)),
    st.builds(OrderingValue, st.just(OrderingWrapper.DATE), INT32),
    st.builds(
        OrderingValue,
        st.just(OrderingWrapper.DECIMAL),
        st.decimals(min_value=-(Decimal(10) ** 15) + 1, max_value=Decimal(10) ** 15 - 1, places=15),
    ),
    st.builds(OrderingValue, st.just(OrderingWrapper.TIME_MICROS), INT64),
    st.builds(OrderingValue, st.just(OrderingWrapper.TIMESTAMP_MICROS), INT64),
)
deletes = st.builds(DeleteRecord, nullable(st.text(max_size=20)), nullable(st.text(max_size=20)), ordering_values)
plans = st.lists(
    st.one_of(
        st.tuples(st.just("data"), instants, st.lists(records, max_size=5)),
        st.tuples(st.just("delete"), instants, st.lists(deletes, max_size=5)),
        st.tuples(st.just("rollback"), instants, instants),
    ),
    min_size=1,
    max_size=6,
)


def build(plan):
    blocks = []
    for kind, instant, payload in plan:
        if kind == "data":
            blocks.append(avro_data_block(instant, SCHEMA, encode_avro_records(payload, SCHEMA)))
        elif kind == "delete":
            blocks.append(delete_block(instant, SCHEMA, payload))
        else:
            blocks.append(rollback_block(instant, payload))
    return blocks


def check(plan, read_blocks):
    assert len(read_blocks) == len(plan)
    for (kind, instant, payload), block in zip(plan, read_blocks, strict=True):
        decoded = decode_block(block)
        assert not decoded.block.is_corrupt, decoded.block.corrupt_reason
        assert block.instant_time == instant
        if kind == "data":
            assert block.block_type == BlockType.AVRO_DATA
            assert list(decoded.records) == payload
        elif kind == "delete":
            assert block.block_type == BlockType.DELETE
            assert list(decoded.deletes) == payload
        else:
            assert block.block_type == BlockType.COMMAND and block.content == b""
            assert block.target_instant_time == payload


@settings(max_examples=60, deadline=None)
@given(plans)
def test_blocks_of_every_kind_round_trip_through_bytes(plan):
    blocks = build(plan)
    data = encode_blocks(blocks)
    read = read_log_bytes(data)
    check(plan, read)
    assert encode_blocks(read) == data


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=plans, second=plans)
def test_written_then_appended_files_read_back(tmp_path_factory, first, second):
    storage = Storage(str(tmp_path_factory.mktemp("log")))
    path = "city=x/.f1-0_20240101000000000.log.1_0-1-0"
    created = create_log_file(storage, path, build(first))
    assert created.offset == 0 and created.size == storage.size(path)
    appended = append_log_blocks(storage, path, build(second))
    assert appended.offset == created.size and appended.size == storage.size(path)
    blocks = read_log_file(storage, path)
    check(first + second, blocks)
    assert blocks[len(first)].offset == appended.offset
    assert list(iter_log_blocks(storage, path)) == blocks


def test_every_type_with_nulls_everywhere_round_trips():
    full = {
        **{name: "m" for name in META_FIELDS},
        "s": "héllo ✓ 𝄞",
        "i": -(2**31),
        "l": 2**63 - 1,
        "f": 1.5,
        "d": -0.1,
        "b": True,
        "by": b"\x00\xff",
        "dec": Decimal("-12345678.90"),
        "day": dt.date(1969, 12, 31),
        "ts": dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=dt.timezone.utc),
        "arr": ["a", None, ""],
        "m": {"k": 1, "n": None},
        "nested": {"x": 7, "y": [{"z": 1.25}, None, {"z": None}]},
    }
    empty = dict.fromkeys(full)
    plan = [("data", "20240101000000001", [full, empty]), ("delete", "20240101000000002", [DeleteRecord(None, None, None)])]
    check(plan, read_log_bytes(encode_blocks(build(plan))))


def test_create_refuses_an_existing_file(tmp_path):
    storage = Storage(str(tmp_path))
    create_log_file(storage, "a.log.1_0-0-0", [rollback_block("2", "1")])
    with pytest.raises(FileExistsError):
        create_log_file(storage, "a.log.1_0-0-0", [rollback_block("3", "1")])
    with pytest.raises(FileNotFoundError):
        append_log_blocks(storage, "absent.log.1_0-0-0", [rollback_block("3", "1")])


def test_object_stores_never_append_but_read_lazily():
    storage = Storage("memory://ingest-log-tests/table")
    path = "p/.f-0_1.log.1_0-0-0"
    storage.delete(path)
    created = create_log_file(storage, path, [rollback_block("002", "001")])
    assert not storage.can_append
    with pytest.raises(OSError, match="cannot append"):
        append_log_blocks(storage, path, [rollback_block("003", "001")])
    (block,) = iter_log_blocks(storage, path)
    assert block.size == created.size and block.target_instant_time == "001"
    storage.delete(path)


def test_appending_after_a_torn_tail_keeps_later_blocks_readable(tmp_path):
    storage = Storage(str(tmp_path))
    path = "x.log.1_0-0-0"
    create_log_file(storage, path, [rollback_block("002", "001")])
    torn = encode_blocks([avro_data_block("003", SCHEMA, encode_avro_records([], SCHEMA))])[:-10]
    storage.append(path, torn)  # a writer died halfway through its block
    append_log_blocks(storage, path, [rollback_block("004", "003")])
    blocks = read_log_file(storage, path)
    assert [b.block_type for b in blocks] == [BlockType.COMMAND, BlockType.CORRUPT, BlockType.COMMAND]
    assert blocks[1].size == len(torn) and blocks[2].instant_time == "004"
