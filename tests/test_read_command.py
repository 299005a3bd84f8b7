"""`ingest read` and `ingest inspect table` on tables Hudi wrote and on tables we wrote."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from ingest.cli import main
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

hudi = pytest.importorskip("hudi")


def run_cli(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_read_table_format_and_as_of(fixture_tables, capsys):
    path = fixture_tables["v6_trips_8i1u"]
    table = HudiTable.open(str(path))
    first = table.timeline().completed()[0].timestamp
    before = run_cli(capsys, "read", str(path), "--as-of", first)
    fares = {json.loads(line)["rider"]: json.loads(line)["fare"] for line in before.splitlines()}
    assert fares["rider-D"] == 33.9  # the update to 25.0 came later
    text = run_cli(capsys, "read", str(path), "--format", "table")
    assert "rider-D" in text and "25.0" in text and text.strip().endswith("(8 rows)")


def _typed_table(table_dir) -> None:
    """A table we wrote with a decimal, a date, a UTC timestamp, bytes and maps (one empty)."""
    import datetime as dt

    schema = pa.schema([
        ("id", pa.string()), ("part", pa.string()), ("ts", pa.int64()),
        ("amount", pa.decimal128(10, 2)), ("day", pa.date32()), ("at", pa.timestamp("us", tz="UTC")),
        ("raw", pa.binary()), ("tags", pa.map_(pa.string(), pa.int64())),
    ])
    data = pa.table({
        "id": ["a", "b"], "part": ["p", "p"], "ts": [1, 1], "amount": [Decimal("12.30"), Decimal("-0.05")],
        "day": [dt.date(2024, 2, 29)] * 2,
        "at": [dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc)] * 2, "raw": [b"\x00\xff"] * 2,
        "tags": [[("x", 1)], []],
    }, schema=schema)
    options = WriteOptions(table_path=str(table_dir), table_name="t", hudi={
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts"}, index=IndexOptions(type=IndexType.BUCKET, bucket_count=1))
    LocalWriter(options).write(data)


def test_jsonl_values_are_plain_json(table_dir, capsys):
    """Each value in the form Hudi's JSON reader takes back for its Avro type
    (`org.apache.hudi.avro.MercifulJsonConverter`: DecimalLogicalTypeProcessor takes a number in a
    string, TimestampMicroLogicalTypeProcessor an ISO instant with an offset such as `Z`,
    generateMapTypeHandler a JSON object, so an empty map is `{}` and not `[]`)."""
    _typed_table(table_dir)
    rows = {r["id"]: r for r in map(json.loads, run_cli(capsys, "read", str(table_dir)).splitlines())}
    row = rows["a"]
    assert row["amount"] == "12.30"
    assert row["day"] == "2024-02-29"
    assert row["at"] == "2024-01-02T03:04:05.000006Z"
    assert base64.b64decode(row["raw"]) == b"\x00\xff"
    assert row["tags"] == {"x": 1}
    assert rows["b"]["tags"] == {}, "an empty map is an empty JSON object"
    assert rows["b"]["amount"] == "-0.05"
    assert row["_hoodie_record_key"] == "a"


def test_table_format_shows_each_value_as_jsonl_does(table_dir, capsys):
    """`read --format table` (and `ingest demo`, through the same renderer) show the JSON lines'
    text of each value, a top-level string without quotes (`MercifulJsonConverter` forms, as above)."""
    _typed_table(table_dir)
    lines = run_cli(capsys, "read", str(table_dir)).splitlines()
    text = run_cli(capsys, "read", str(table_dir), "--format", "table", "--limit", "5").splitlines()
    header, cells = text[0].split(), [line.split() for line in text[2:-1]]
    shown = {dict(zip(header, row, strict=True))["id"]: dict(zip(header, row, strict=True)) for row in cells}
    for row in map(json.loads, lines):
        for name in ("amount", "day", "at", "raw", "tags"):
            value = row[name]
            expected = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
            assert shown[row["id"]][name] == expected, name
    assert shown["a"]["at"] == "2024-01-02T03:04:05.000006Z" and shown["b"]["tags"] == "{}"
    assert shown["a"]["amount"] == "12.30"


def test_inspect_table_shows_timeline_and_file_groups(fixture_tables, capsys):
    path = fixture_tables["v6_trips_8i1u"]
    report = json.loads(run_cli(capsys, "inspect", "table", str(path), "--json"))
    assert report["properties"]["hoodie.table.name"] == "v6_trips_8i1u"
    assert [(i["action"], i["state"]) for i in report["timeline"]] == [("deltacommit", "COMPLETED")] * 2
    assert report["partitions"] == ["city=chennai", "city=san_francisco", "city=sao_paulo"]
    sf = [g for g in report["file_groups"] if g["partition"] == "city=san_francisco"][0]
    assert len(sf["slices"]) == 1 and len(sf["slices"][0]["log_files"]) == 1
    text = run_cli(capsys, "inspect", "table", str(path))
    assert "pending services (0)" in text and "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0" in text
    assert read_snapshot(HudiTable.open(str(path))).num_rows == 8
