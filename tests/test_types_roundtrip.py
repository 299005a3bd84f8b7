"""Every type a table can hold survives a write and a read exactly, in base files and in log blocks,
for our reader and for hudi-rs."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.hudi.table.snapshot import context, read_slice, read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.file_group_writer import InsertMode
from ingest.write.options import IndexOptions, IndexType, WriteOptions

hudi = pytest.importorskip("hudi")

SCHEMA = pa.schema([
    ("id", pa.string()),
    ("part", pa.string()),
    ("ts", pa.int64()),
    ("text", pa.string()),
    ("i32", pa.int32()),
    ("i64", pa.int64()),
    ("f32", pa.float32()),
    ("f64", pa.float64()),
    ("flag", pa.bool_()),
    ("raw", pa.binary()),
    ("money", pa.decimal128(12, 2)),
    ("wide", pa.decimal128(38, 10)),
    ("day", pa.date32()),
    ("at", pa.timestamp("us", tz="UTC")),
    ("ints", pa.list_(pa.int64())),
    ("words", pa.list_(pa.string())),
    ("attrs", pa.map_(pa.string(), pa.int64())),
    ("nested", pa.struct([("name", pa.string()), ("scores", pa.list_(pa.float64())),
                          ("inner", pa.struct([("when", pa.date32())]))])),
])

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def value_for(field: pa.Field):
    t = field.type
    if pa.types.is_string(t):
        return texts
    if pa.types.is_int32(t):
        return st.integers(-(2**31), 2**31 - 1)
    if pa.types.is_int64(t):
        return st.integers(-(2**63), 2**63 - 1)
    if pa.types.is_float32(t):
        return st.floats(width=32, allow_nan=False)
    if pa.types.is_float64(t):
        return st.floats(allow_nan=False)
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_binary(t):
        return st.binary(max_size=8)
    if pa.types.is_decimal(t):
        return st.decimals(min_value=-(10 ** (t.precision - t.scale)) + 1, max_value=10 ** (t.precision - t.scale) - 1,
                           places=t.scale, allow_nan=False, allow_infinity=False)
    if pa.types.is_date32(t):
        return st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31))
    if pa.types.is_timestamp(t):
        return st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                            timezones=st.just(dt.timezone.utc))
    if pa.types.is_list(t):
        return st.lists(st.one_of(st.none(), value_for(t.value_field)), max_size=3)
    if pa.types.is_map(t):
        return st.dictionaries(texts, st.one_of(st.none(), value_for(t.item_field)), max_size=3).map(
            lambda d: list(d.items()))
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: st.one_of(st.none(), value_for(f)) for f in t})
    raise AssertionError(t)


def rows(n_keys: int):
    data_fields = [f for f in SCHEMA if f.name not in ("id", "part", "ts")]
    row = st.fixed_dictionaries({f.name: st.one_of(st.none(), value_for(f)) for f in data_fields})
    return st.lists(row, min_size=n_keys, max_size=n_keys)


def table_of(values: list[dict], ts: int) -> pa.Table:
    records = [{"id": f"k{i}", "part": ["a", "b"][i % 2], "ts": ts, **v} for i, v in enumerate(values)]
    return pa.Table.from_pylist(records, schema=SCHEMA)


def normalize(table: pa.Table) -> list[dict]:
    out = table.select(SCHEMA.names).to_pylist()
    return sorted(out, key=lambda r: r["id"])


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=rows(6), second=rows(6))
def test_types_round_trip_through_base_files_and_log_blocks(tmp_path_factory, first, second):
    path = tmp_path_factory.mktemp("types")
    options = WriteOptions(table_path=str(path), table_name="types", hudi={
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts",
    }, index=IndexOptions(type=IndexType.BUCKET, bucket_count=1), insert_mode=InsertMode.BASE)
    writer = LocalWriter(options)
    writer.write(table_of(first, ts=1))          # base files
    table = HudiTable.open(str(path))
    assert normalize(read_snapshot(table)) == normalize(table_of(first, ts=1))
    updates = table_of(second, ts=2).slice(0, 3)  # half the keys updated through a log block
    writer.write(updates)
    expected = {r["id"]: r for r in normalize(table_of(first, ts=1))}
    expected.update({r["id"]: r for r in normalize(updates)})
    got = normalize(read_snapshot(table))
    assert got == sorted(expected.values(), key=lambda r: r["id"])

    ctx, slices = context(table)
    reader = hudi.HudiTableBuilder.from_base_uri(str(path)).build().create_file_group_reader_with_options()
    for s in slices:
        assert s.base_file is not None
        theirs = pa.Table.from_batches([reader.read_file_slice_from_paths(s.base_file.path,
                                                                          [lf.path for lf in s.log_files])])
        assert normalize(theirs) == normalize(read_slice(ctx, s))


def test_extreme_values_round_trip(table_dir):
    options = WriteOptions(table_path=str(table_dir), table_name="edge", hudi={
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts",
    }, index=IndexOptions(type=IndexType.BUCKET, bucket_count=1))
    extremes = [
        {"text": "ünïcode ✓ 𝄞 \u0000 end", "i32": -(2**31), "i64": 2**63 - 1, "f32": 3.4028234663852886e38,
         "f64": -0.0, "flag": True, "raw": b"", "money": Decimal("-9999999999.99"),
         "wide": Decimal("9999999999999999999999999999.9999999999"), "day": dt.date(1, 1, 1),
         "at": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc),
         "ints": [], "words": [""], "attrs": [], "nested": {"name": "", "scores": [float("inf")], "inner": None}},
        {k: None for k in SCHEMA.names if k not in ("id", "part", "ts")},
    ]
    LocalWriter(options).write(table_of(extremes, ts=1))
    assert normalize(read_snapshot(HudiTable.open(str(table_dir)))) == normalize(table_of(extremes, ts=1))
