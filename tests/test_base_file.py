"""Base files: what we write reads back exactly (pyarrow, Spark, hudi-rs), carries Hudi's footer, and
Hudi-written base files read exactly through the same code."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import fixtures_dir

from ingest.errors import BadRecordError, SchemaEvolutionError
from ingest.hudi.avro import schema as S
from ingest.hudi.parquet import bloom_filter as bloom
from ingest.hudi.parquet.base_file import (
    AVRO_SCHEMA_KEY,
    BLOOM_FILTER_KEY,
    BLOOM_TYPE_CODE_KEY,
    MAX_RECORD_KEY,
    MIN_RECORD_KEY,
    WRITER_MODEL_KEY,
    BaseFileOptions,
    encode_base_file,
    read_base_file,
    read_footer,
    write_base_file,
)
from ingest.storage import Storage

UTC = dt.timezone.utc

DATA_SCHEMA = pa.schema([
    pa.field("s", pa.string()),
    pa.field("i", pa.int32()),
    pa.field("l", pa.int64(), nullable=False),
    pa.field("f", pa.float32()),
    pa.field("d", pa.float64()),
    pa.field("b", pa.bool_()),
    pa.field("by", pa.binary()),
    pa.field("dec", pa.decimal128(12, 3)),
    pa.field("dec38", pa.decimal128(38, 10)),
    pa.field("day", pa.date32()),
    pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("tags", pa.list_(pa.field("element", pa.string()))),  # no null element: 2-level
    pa.field("nums", pa.list_(pa.field("element", pa.int64()))),  # a null element: 3-level
    pa.field("attrs", pa.map_(pa.string(), pa.int64())),
    pa.field("rec", pa.struct([
        pa.field("x", pa.int64()),
        pa.field("items", pa.list_(pa.field("element", pa.struct([pa.field("z", pa.string()), pa.field("w", pa.float64())])))),
        pa.field("grid", pa.list_(pa.field("element", pa.list_(pa.field("element", pa.int32()))))),
    ])),
    # a 2-level list of one-field records: readers must take the `array` group as the element
    pa.field("singles", pa.list_(pa.field("element", pa.struct([pa.field("v", pa.int64())])))),
])

ROWS = [
    dict(s="plain", i=1, l=10, f=1.5, d=0.1, b=True, by=b"\x00\xff", dec=Decimal("1.234"),
         dec38=Decimal("1234567890123456789012345678.0123456789"), day=dt.date(2024, 2, 29),
         ts=dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC), tags=["a", "ü"], nums=[1, None, 3],
         attrs=[("k", 1), ("n", None)], rec={"x": 5, "items": [{"z": "q", "w": 2.5}], "grid": [[1, 2], []]}, singles=[{"v": 1}, {"v": None}]),
    dict(s="ünïcødé \U0001f600 中文", i=None, l=-1, f=None, d=None, b=False, by=None, dec=None, dec38=None, day=None,
         ts=None, tags=None, nums=None, attrs=None, rec=None, singles=None),
    dict(s=None, i=-(2**31), l=2**63 - 1, f=-0.0, d=1e308, b=None, by=b"", dec=Decimal("-999999999.999"),
         dec38=Decimal("-0.0000000001"), day=dt.date(1900, 1, 1), ts=dt.datetime(1960, 6, 1, 0, 0, 0, 1, tzinfo=UTC),
         tags=[], nums=[], attrs=[], rec={"x": None, "items": None, "grid": None}, singles=[]),
    dict(s="", i=7, l=0, f=3.25, d=-2.5, b=True, by=b"bytes", dec=Decimal("0.000"), dec38=Decimal("0E-10"),
         day=dt.date(2100, 12, 31), ts=dt.datetime(1970, 1, 1, tzinfo=UTC), tags=["x"], nums=[None],
         attrs=[("only", 42)], rec={"x": 1, "items": [{"z": None, "w": None}, {"z": "r", "w": 1.0}], "grid": [[3]]},
         singles=[{"v": 7}]),
]


def writer_schema(table_name: str = "trips") -> S.AvroSchema:
    return S.with_meta_fields(S.arrow_to_avro(DATA_SCHEMA, table_name))


def make_table(rows=ROWS, keys=None, schema=None) -> pa.Table:
    schema = schema or writer_schema()
    keys = keys or [f"key-{i:03d}" for i in range(len(rows))]
    records = []
    for i, (row, key) in enumerate(zip(rows, keys, strict=True)):
        meta = {"_hoodie_commit_time": "20250101000000000", "_hoodie_commit_seqno": f"20250101000000000_0_{i}",
                "_hoodie_record_key": key, "_hoodie_partition_path": "p=1", "_hoodie_file_name": "f.parquet"}
        records.append({**meta, **row})
    return pa.Table.from_pylist(records, schema=S.avro_to_arrow(schema))


@pytest.fixture
def storage(tmp_path) -> Storage:
    return Storage(str(tmp_path / "table"))


def raw_footer(data: bytes) -> bytes:
    length = int.from_bytes(data[-8:-4], "little")
    return data[-8 - length : -8]


def schema_text(meta: pq.FileMetaData) -> str:
    return str(meta.schema).split("\n", 1)[1]  # without the object's address


def footer_key_order(data: bytes) -> list[str]:
    """Footer keys in file order (pyarrow's dict does not keep it): where each key's bytes start."""
    footer = raw_footer(data)
    keys = [AVRO_SCHEMA_KEY, WRITER_MODEL_KEY, BLOOM_TYPE_CODE_KEY, BLOOM_FILTER_KEY, MIN_RECORD_KEY, MAX_RECORD_KEY]
    # A Thrift binary is its length then its bytes; values never hold these names with that prefix.
    found = {k: footer.find(bytes([len(k)]) + k.encode()) for k in keys}
    return [k for k in sorted(found, key=found.get) if found[k] >= 0]


# -- our files ------------------------------------------------------------------------------------


def test_every_type_reads_back_exactly(storage):
    table = make_table()
    stats = write_base_file(storage, "p=1/f.parquet", table, writer_schema())
    back = read_base_file(storage, "p=1/f.parquet")
    assert back.schema == table.schema
    assert back.to_pylist() == table.to_pylist()
    assert back.equals(table)
    assert stats.record_count == 4
    assert stats.file_size == storage.size("p=1/f.parquet")
    meta = pq.read_metadata(storage.full_path("p=1/f.parquet"))
    assert stats.total_uncompressed_size == sum(
        meta.row_group(0).column(j).total_uncompressed_size for j in range(meta.num_columns))
    projected = read_base_file(storage, "p=1/f.parquet", columns=["rec", "_hoodie_record_key"])
    assert projected.column_names == ["_hoodie_record_key", "rec"]  # the schema's order
    assert projected.column("rec").to_pylist() == table.column("rec").to_pylist()


def test_parquet_schema_is_parquet_avros(storage):
    write_base_file(storage, "f.parquet", make_table(), writer_schema())
    meta = pq.read_metadata(storage.full_path("f.parquet"))
    text = str(meta.schema)
    assert "required group field_id=-1 hoodie.trips.trips_record {" in text  # root: the Avro full name
    assert meta.format_version == "1.0"
    columns = {meta.schema.column(i).path: meta.schema.column(i) for i in range(meta.num_columns)}
    assert sorted(columns) == sorted([
        *S.META_FIELDS, "s", "i", "l", "f", "d", "b", "by", "dec", "dec38", "day", "ts",
        "tags.array",  # parquet-avro's default 2-level list
        "nums.list.element",  # holds a null element: 3-level, as write-old-list-structure=false
        "attrs.key_value.key", "attrs.key_value.value",
        "rec.x", "rec.items.array.z", "rec.items.array.w", "rec.grid.array.array", "singles.array.v",
    ])
    assert columns["tags.array"].max_definition_level == 2 and columns["tags.array"].max_repetition_level == 1
    assert columns["rec.grid.array.array"].max_repetition_level == 2
    assert columns["l"].max_definition_level == 0  # Avro "long" without null: required
    assert columns["_hoodie_record_key"].logical_type.type == "STRING"
    assert columns["ts"].physical_type == "INT64"
    timestamp = json.loads(columns["ts"].logical_type.to_json())
    assert (timestamp["Type"], timestamp["isAdjustedToUTC"], timestamp["timeUnit"]) == ("Timestamp", True, "microseconds")
    assert columns["ts"].converted_type == "TIMESTAMP_MICROS"
    assert columns["day"].physical_type == "INT32" and columns["day"].logical_type.type == "DATE"
    avro_fields = {f["name"]: f for f in writer_schema()["fields"]}
    for name in ("dec", "dec38"):
        assert columns[name].physical_type == "FIXED_LEN_BYTE_ARRAY"
        assert columns[name].length == avro_fields[name]["type"][1]["size"]
    assert columns["by"].physical_type == "BYTE_ARRAY" and columns["by"].logical_type.type == "NONE"
    assert re.search(r"optional group field_id=-1 tags \(List\) \{\s+repeated binary field_id=-1 array \(String\);", text)
    assert re.search(r"optional group field_id=-1 items \(List\) \{\s+repeated group field_id=-1 array \{", text)
    assert re.search(r"optional group field_id=-1 attrs \(Map\) \{\s+repeated group field_id=-1 key_value \{", text)


def test_decimal_sizes_match_avro_fixed_sizes(storage):
    fields = [pa.field(f"d{p}", pa.decimal128(p, 0)) for p in range(1, 39)]
    schema = S.with_meta_fields(S.arrow_to_avro(pa.schema(fields), "dec"))
    table = make_table([{f"d{p}": Decimal(10**p - 1) for p in range(1, 39)}], schema=schema)
    write_base_file(storage, "f.parquet", table, schema)
    meta = pq.read_metadata(storage.full_path("f.parquet"))
    sizes = {meta.schema.column(i).path: meta.schema.column(i).length for i in range(5, meta.num_columns)}
    assert sizes == {f["name"]: f["type"][1]["size"] for f in schema["fields"][5:]}
    assert read_base_file(storage, "f.parquet").equals(table)


def test_footer_has_hudis_keys(storage):
    keys = ["m-2", "a-1", "z-9", "b-0"]
    table = make_table(keys=keys)
    data, stats = encode_base_file(table, writer_schema())
    meta = pq.read_metadata(pa.BufferReader(data)).metadata
    assert {k.decode() for k in meta} == {AVRO_SCHEMA_KEY, WRITER_MODEL_KEY, MIN_RECORD_KEY, MAX_RECORD_KEY,
                                          BLOOM_FILTER_KEY, BLOOM_TYPE_CODE_KEY}
    assert meta[AVRO_SCHEMA_KEY.encode()].decode() == S.to_json(writer_schema())
    assert meta[WRITER_MODEL_KEY.encode()] == b"avro"
    assert (meta[MIN_RECORD_KEY.encode()], meta[MAX_RECORD_KEY.encode()]) == (b"a-1", b"z-9")
    assert (stats.min_record_key, stats.max_record_key) == ("a-1", "z-9")
    assert meta[BLOOM_TYPE_CODE_KEY.encode()] == b"DYNAMIC_V0"
    expected = bloom.create_bloom_filter()
    expected.add_all(keys)
    assert meta[BLOOM_FILTER_KEY.encode()].decode() == expected.to_string()
    assert footer_key_order(data) == [AVRO_SCHEMA_KEY, WRITER_MODEL_KEY, BLOOM_TYPE_CODE_KEY, BLOOM_FILTER_KEY,
                                      MIN_RECORD_KEY, MAX_RECORD_KEY]

    storage.write("f.parquet", data)
    footer = read_footer(storage, "f.parquet")
    assert footer.num_rows == 4
    assert footer.avro_schema == writer_schema()
    assert (footer.min_record_key, footer.max_record_key) == ("a-1", "z-9")
    filt = footer.bloom_filter()
    assert filt.might_contain_all(keys).all()
    assert not filt.might_contain("absent")


def test_min_max_follow_java_string_order():
    # Java compares UTF-16 units: a supplementary character (surrogates D800-DFFF) sorts below U+FFFF.
    keys = ["a\uffff", "a\U0001f600", "b\ue000", "b\U00010000"]
    _, stats = encode_base_file(make_table(ROWS, keys=keys), writer_schema())
    assert (stats.min_record_key, stats.max_record_key) == ("a\U0001f600", "b\ue000")
    _, ascii_stats = encode_base_file(make_table(ROWS, keys=["k3", "k10", "K", "k2"]), writer_schema())
    assert (ascii_stats.min_record_key, ascii_stats.max_record_key) == ("K", "k3")


class CountingStorage(Storage):
    def __init__(self, base_url):
        super().__init__(base_url)
        self.ranges: list[tuple[int, int]] = []
        self.whole_reads = 0

    def read_range(self, rel, start, end):
        self.ranges.append((start, end))
        return super().read_range(rel, start, end)

    def read(self, rel):
        self.whole_reads += 1
        return super().read(rel)

    def open(self, rel):
        self.whole_reads += 1
        return super().open(rel)


def test_read_footer_reads_only_the_footer(tmp_path):
    storage = CountingStorage(str(tmp_path))
    rows = [{**ROWS[0], "s": f"row {i} " + "x" * 200} for i in range(20_000)]
    write_base_file(storage, "big.parquet", make_table(rows), writer_schema(), BaseFileOptions(compression="none"))
    size = storage.size("big.parquet")
    data = (tmp_path / "big.parquet").read_bytes()
    footer_start = size - 8 - len(raw_footer(data))
    footer = read_footer(storage, "big.parquet")
    assert footer.num_rows == 20_000
    assert storage.whole_reads == 0
    assert all(start >= min(footer_start, size - 64 * 1024) for start, _ in storage.ranges)
    assert sum(end - start for start, end in storage.ranges) < size / 3


def test_row_groups_compression_and_options(storage):
    rows = [{**ROWS[i % 4], "l": i} for i in range(400)]
    table = make_table(rows, keys=[f"k{i:04d}" for i in range(400)])
    options = BaseFileOptions(compression="gzip", row_group_bytes=8 * 1024, bloom_type_code="SIMPLE",
                              bloom_num_entries=1000, bloom_fpp=0.001)
    write_base_file(storage, "f.parquet", table, writer_schema(), options)
    meta = pq.read_metadata(storage.full_path("f.parquet"))
    assert meta.num_row_groups > 1
    assert meta.row_group(0).column(0).compression == "GZIP"
    assert BLOOM_TYPE_CODE_KEY.encode() not in meta.metadata  # Hudi writes the code for dynamic filters only
    footer = read_footer(storage, "f.parquet")
    filt = footer.bloom_filter()
    assert isinstance(filt, bloom.SimpleBloomFilter)
    assert filt.vector_size == bloom.bit_size(1000, 0.001)
    assert filt.might_contain_all(table.column("_hoodie_record_key")).all()
    assert read_base_file(storage, "f.parquet").equals(table)

    write_base_file(storage, "three.parquet", table, writer_schema(), BaseFileOptions(old_list_structure=False))
    three = pq.read_metadata(storage.full_path("three.parquet"))
    assert "tags.list.element" in [three.schema.column(i).path for i in range(three.num_columns)]
    assert read_base_file(storage, "three.parquet").equals(table)


def test_reading_with_a_newer_schema_fills_nulls(storage):
    old_data = pa.schema([pa.field("id", pa.int64()),
                          pa.field("rec", pa.struct([pa.field("x", pa.int64())]))])
    old_schema = S.with_meta_fields(S.arrow_to_avro(old_data, "ev"))
    table = make_table([{"id": 1, "rec": {"x": 2}}, {"id": 2, "rec": None}], schema=old_schema)
    write_base_file(storage, "old.parquet", table, old_schema)
    new_data = pa.schema([pa.field("id", pa.int64()), pa.field("added", pa.string()),
                          pa.field("rec", pa.struct([pa.field("x", pa.int64()), pa.field("y", pa.string())]))])
    target = S.avro_to_arrow(S.with_meta_fields(S.arrow_to_avro(new_data, "ev")))
    back = read_base_file(storage, "old.parquet", schema=target)
    assert back.schema == target
    assert back.column("added").to_pylist() == [None, None]
    assert back.column("rec").to_pylist() == [{"x": 2, "y": None}, None]
    assert back.column("id").to_pylist() == [1, 2]
    only = read_base_file(storage, "old.parquet", columns=["added", "id"], schema=target)
    assert only.column_names == ["id", "added"]
    with pytest.raises(SchemaEvolutionError, match="nope"):
        read_base_file(storage, "old.parquet", columns=["nope"], schema=target)


def test_missing_nullable_columns_are_written_as_null(storage):
    table = make_table().drop_columns(["s", "rec"])
    write_base_file(storage, "f.parquet", table, writer_schema())
    back = read_base_file(storage, "f.parquet")
    assert back.column("s").to_pylist() == [None] * 4
    assert back.column("rec").null_count == 4
    assert back.column("tags").to_pylist() == [r["tags"] for r in ROWS]


def test_refuses_bad_input(storage):
    schema = writer_schema()
    with pytest.raises(BadRecordError, match="row 1 has a null _hoodie_record_key"):
        encode_base_file(make_table().set_column(2, "_hoodie_record_key", pa.array(["a", None, "c", "d"])), schema)
    with pytest.raises(BadRecordError, match="empty _hoodie_record_key"):
        encode_base_file(make_table(keys=["a", "b", "", "d"]), schema)
    with pytest.raises(BadRecordError, match="'l' holds a null"):
        encode_base_file(make_table().set_column(7, "l", pa.array([1, None, 3, 4], pa.int64())), schema)
    strict = json.loads(json.dumps(schema))
    rec = next(f for f in strict["fields"] if f["name"] == "rec")
    rec["type"][1]["fields"][0]["type"] = "long"  # rec.x without null
    with pytest.raises(BadRecordError, match="'rec.x' holds a null"):
        encode_base_file(make_table(schema=schema), strict)
    with pytest.raises(SchemaEvolutionError, match="extra"):
        encode_base_file(make_table().append_column("extra", pa.array([1, 2, 3, 4])), schema)
    wider = make_table().set_column(
        make_table().schema.get_field_index("rec"), "rec",
        pa.array([{"x": 1, "items": None, "grid": None, "more": 1}] * 4))
    with pytest.raises(SchemaEvolutionError, match="rec.more"):
        encode_base_file(wider, schema)
    with pytest.raises(SchemaEvolutionError, match="'l' is missing"):
        encode_base_file(make_table().drop_columns(["l"]), schema)
    with pytest.raises(ValueError, match="meta fields"):
        encode_base_file(make_table().select(["s", *S.META_FIELDS]), schema)
    write_base_file(storage, "f.parquet", make_table(), schema)
    with pytest.raises(FileExistsError):
        write_base_file(storage, "f.parquet", make_table(), schema)
    write_base_file(storage, "f.parquet", make_table(keys=list("wxyz")), schema, overwrite=True)
    assert read_footer(storage, "f.parquet").min_record_key == "w"


# -- Hudi-written files ---------------------------------------------------------------------------


def sql_rows(table_name: str) -> list[dict]:
    """The rows of the fixture's INSERT statement."""
    text = (fixtures_dir() / "tables" / f"{table_name}.sql").read_text()
    pattern = r"\((\d+), '([^']*)', '([^']*)', '([^']*)', ([\d.]+), '([^']*)'\)"
    return [dict(ts=int(ts), uuid=u, rider=r, driver=d, fare=float(f), city=c)
            for ts, u, r, d, f, c in re.findall(pattern, text)]


def base_files(table: Path) -> list[Path]:
    return sorted(table.glob("city=*/*.parquet"))


@pytest.mark.parametrize("name", ["v6_trips_8i1u", "v6_trips_8i3d"])
def test_hudi_written_base_files_read_exactly(fixture_tables, name):
    table = fixture_tables[name]
    storage = Storage(str(table))
    expected = sql_rows(name)
    assert len(expected) == 8
    seen = []
    for path in base_files(table):
        rel = path.relative_to(table).as_posix()
        instant = path.stem.rsplit("_", 1)[1]
        rows = read_base_file(storage, rel).to_pylist()
        city = path.parent.name.split("=", 1)[1]
        assert sorted(rows, key=lambda r: r["uuid"]) == sorted(
            [{"_hoodie_commit_time": instant, "_hoodie_record_key": r["uuid"], "_hoodie_partition_path": f"city={city}",
              "_hoodie_file_name": path.name, **r, "_hoodie_commit_seqno": next(
                  x["_hoodie_commit_seqno"] for x in rows if x["uuid"] == r["uuid"])}
             for r in expected if r["city"] == city], key=lambda r: r["uuid"])
        assert all(re.fullmatch(rf"{instant}_\d+_\d+", r["_hoodie_commit_seqno"]) for r in rows)
        seen += [r["uuid"] for r in rows]
    assert sorted(seen) == sorted(r["uuid"] for r in expected)


def test_hudi_written_footers_parse(fixture_tables):
    checked = 0
    for table in fixture_tables.values():
        storage = Storage(str(table))
        for path in base_files(table):
            rel = path.relative_to(table).as_posix()
            footer = read_footer(storage, rel)
            keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0).to_pylist()
            assert footer.num_rows == len(keys)
            assert (footer.min_record_key, footer.max_record_key) == (min(keys), max(keys))
            assert footer.bloom_filter_type_code == "DYNAMIC_V0"
            assert footer.bloom_filter().might_contain_all(keys).all()
            schema = footer.avro_schema  # Hudi's Spark row writer (v8 log compaction) leaves none
            if schema is not None:
                assert [f["name"] for f in schema["fields"][:5]] == list(S.META_FIELDS)
                assert read_base_file(storage, rel).schema == S.avro_to_arrow(schema)
            checked += 1
    assert checked >= 6


@pytest.mark.parametrize("name", ["v6_trips_8i1u", "v6_trips_8i3d"])
def test_rewriting_a_hudi_base_file_reproduces_its_footer(fixture_tables, name):
    for path in base_files(fixture_tables[name]):
        original = path.read_bytes()
        original_meta = pq.read_metadata(path)
        schema = S.parse(original_meta.metadata[AVRO_SCHEMA_KEY.encode()].decode())
        rows = pq.read_table(path)
        data, stats = encode_base_file(rows, schema)
        ours = pq.read_metadata(pa.BufferReader(data))
        assert ours.metadata == original_meta.metadata  # every key/value, byte for byte
        assert footer_key_order(data) == footer_key_order(original)
        assert ours.schema.equals(original_meta.schema)
        assert schema_text(ours) == schema_text(original_meta)  # root name included
        assert stats.record_count == original_meta.num_rows


# -- other readers ---------------------------------------------------------------------------------


def _snapshot(base: Path) -> list[dict]:
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(str(base)).build()
    rows = pa.Table.from_batches(table.read()).to_pylist()
    return sorted(rows, key=lambda r: r["uuid"])


def test_hudi_rs_reads_our_base_files_in_a_hudi_table(hudi_table_copy):
    base = hudi_table_copy("v6_trips_8i1u")
    before = _snapshot(base)
    storage = Storage(str(base))
    changed = {}
    # san_francisco also has a log file (rider-D's update): hudi-rs must merge it onto our file.
    for path in base_files(base):
        rel = path.relative_to(base).as_posix()
        schema = read_footer(storage, rel).avro_schema
        rows = read_base_file(storage, rel)
        fares = rows.column("fare").to_pylist()
        fares[-1] = 1234.5
        changed[rows.column("uuid")[len(fares) - 1].as_py()] = 1234.5
        rows = rows.set_column(rows.schema.get_field_index("fare"), "fare", pa.array(fares, pa.float64()))
        write_base_file(storage, rel, rows, schema, overwrite=True)
        assert pq.read_metadata(path).created_by.startswith("parquet-cpp")  # really ours now
    after = _snapshot(base)
    assert len(after) == len(before) == 8
    for old, new in zip(before, after, strict=True):
        expected = {**old, "fare": changed.get(old["uuid"], old["fare"])}
        assert new == expected
    assert next(r for r in after if r["rider"] == "rider-D")["fare"] == 25.0  # the log update still applies


def test_hudi_rs_reads_every_type_from_our_file(hudi_table_copy):
    import hudi

    base = hudi_table_copy("v6_trips_8i1u")
    schema = writer_schema("v6_trips_8i1u")
    table = make_table(schema=schema)
    # hudi-rs reads with the table schema of the latest commit: give the copy our schema.
    for commit in (base / ".hoodie").glob("*.deltacommit"):
        meta = json.loads(commit.read_text())
        meta["extraMetadata"]["schema"] = S.to_json(S.without_meta_fields(schema))
        commit.write_text(json.dumps(meta))
    name = "city=chennai/00000000-0000-4000-8000-000000000000-0_0-1-1_20250331030642808.parquet"
    write_base_file(Storage(str(base)), name, table, schema)
    reader = hudi.HudiTableBuilder.from_base_uri(str(base)).build().create_file_group_reader_with_options()
    batch = reader.read_file_slice_from_paths(name, [])
    assert pa.Table.from_batches([batch]).to_pylist() == table.to_pylist()


def test_spark_reads_our_file(spark, storage):
    table = make_table()
    write_base_file(storage, "f.parquet", table, writer_schema())
    frame = spark.read.parquet(storage.full_path("f.parquet")).orderBy("_hoodie_record_key")
    got = [r.asDict(recursive=True) for r in frame.drop("ts").collect()]
    expected = table.to_pylist()
    for column in ("s", "i", "l", "f", "d", "b", "dec", "dec38", "day", "tags", "nums", "rec", "singles"):
        assert [g[column] for g in got] == [e[column] for e in expected], column
    assert [g["by"] for g in got] == [None if e["by"] is None else bytearray(e["by"]) for e in expected]
    assert [g["attrs"] for g in got] == [None if e["attrs"] is None else dict(e["attrs"]) for e in expected]
    micros = [r[0] for r in frame.selectExpr("unix_micros(ts)").collect()]
    epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
    assert micros == [None if e["ts"] is None else (e["ts"] - epoch) // dt.timedelta(microseconds=1) for e in expected]
