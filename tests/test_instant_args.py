"""Instant times given on the command line: Hudi's formats or one clear error line and a non-zero exit."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from ingest.cli import main
from ingest.errors import InvalidInstant
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import query_instant
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions


def two_commits(path) -> list[str]:
    options = WriteOptions(table_path=str(path), table_name="t", hudi={
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts"}, index=IndexOptions(type=IndexType.BUCKET, bucket_count=1))
    writer = LocalWriter(options)
    writer.write(pa.table({"id": ["a", "b"], "part": ["p", "p"], "ts": [1, 1]}))
    writer.write(pa.table({"id": ["c"], "part": ["p"], "ts": [2]}))
    return [i.timestamp for i in HudiTable.open(str(path)).timeline().completed()]


def fails(capsys, *argv: str) -> str:
    assert main(list(argv)) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ingest: error: "), captured.err
    return lines[0]


def test_query_instant_takes_hudis_formats():
    """`HoodieSqlCommonUtils.formatQueryInstant`: `yyyy-MM-dd HH:mm:ss[.SSS]` through
    `HoodieInstantTimeGenerator.getInstantForDateString` (`.999` when no millis), `yyyyMMddHHmmss[SSS]`
    as given once `parseDateFromInstantTime` accepts it, `yyyy-MM-dd` as midnight; else
    "Unsupported query instant time format"."""
    assert query_instant("2024-03-01 10:20:30") == "20240301102030999"
    assert query_instant("2024-03-01 10:20:30.123") == "20240301102030123"
    assert query_instant("2024-03-01") == "20240301000000000"
    assert query_instant("20240301102030") == "20240301102030"
    assert query_instant("20240301102030123") == "20240301102030123"
    for bad in ("garbage", "1", "20241301102030", "2024-02-30", "2024030110203012x", "2024/03/01"):
        with pytest.raises(InvalidInstant, match="is not an instant time"):
            query_instant(bad)


def test_read_refuses_bad_instants_with_one_line(table_dir, capsys):
    """Time travel and incremental reads parse their instants with `HoodieSqlCommonUtils.formatQueryInstant`,
    which throws on unsupported formats instead of reading the whole table or nothing."""
    first, second = two_commits(table_dir)
    assert "'garbage' is not an instant time" in fails(capsys, "read", str(table_dir), "--as-of", "garbage")
    assert "'1' is not an instant time" in fails(capsys, "read", str(table_dir), "--as-of", "1")
    assert "'garbage' is not an instant time" in fails(capsys, "read", str(table_dir), "--since", "garbage")
    line = fails(capsys, "read", str(table_dir), "--as-of", "2001-01-01")
    assert f"instant 20010101000000000 is before the table's first commit, {first}" in line
    # Hudi's other formats read the table as of that time.
    assert main(["read", str(table_dir), "--as-of", first]) == 0
    assert sorted(json.loads(r)["id"] for r in capsys.readouterr().out.splitlines()) == ["a", "b"]
    assert main(["read", str(table_dir), "--since", first]) == 0
    assert [json.loads(r)["id"] for r in capsys.readouterr().out.splitlines()] == ["c"]
    assert main(["read", str(table_dir), "--as-of", "2999-12-31 23:59:59"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_commands_naming_an_instant_refuse_bad_ones(table_dir, capsys):
    """`ingest rollback` and `ingest compact --execute` name an instant of the timeline: an instant time as
    `HoodieInstantTimeGenerator.parseDateFromInstantTime` accepts it (`yyyyMMddHHmmss[SSS]`)."""
    two_commits(table_dir)
    assert "'garbage' is not an instant time" in fails(capsys, "rollback", str(table_dir), "garbage")
    assert "'2024-01-01' is not an instant time" in fails(capsys, "rollback", str(table_dir), "2024-01-01")
    assert "'1' is not an instant time" in fails(capsys, "compact", "--path", str(table_dir), "--execute", "1")
