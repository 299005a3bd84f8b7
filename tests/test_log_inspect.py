"""`ingest inspect log`: human and JSON views of Hudi-written and of damaged log files."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
from conftest import fixture_log_files

from ingest.cli import main
from ingest.hudi.avro.schema import arrow_to_avro, with_meta_fields
from ingest.hudi.log.data_block import avro_data_block, encode_avro_payloads, encode_avro_records
from ingest.hudi.log.delete_block import DeleteRecord, OrderingValue, OrderingWrapper, delete_block
from ingest.hudi.log.log_block import encode_blocks
from ingest.hudi.log.log_writer import rollback_block

JSON_KEYS = {
    "type",
    "instant_time",
    "target_instant_time",
    "record_count",
    "records",
    "deleted_keys",
    "corrupt",
    "offset",
    "block_size",
    "format_version",
    "header",
}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["inspect", "log", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def logs_of(table: Path) -> list[Path]:
    return sorted(p for p in table.rglob("*") if p.is_file() and ".log." in p.name and ".hoodie" not in p.parts)


def test_update_fixture_in_both_views(fixture_tables, capsys):
    (log,) = logs_of(fixture_tables["v6_trips_8i1u"])
    code, out, _ = run(capsys, str(log))
    assert code == 0
    for text in ("block 0 at offset 0", "magic           #HUDI#", "type            AVRO_DATA", "records         1"):
        assert text in out
    assert '"rider": "rider-D"' in out and '"fare": 25.0' in out
    assert "corrupt         no" in out and "1 block, 0 corrupt" in out
    code, out, _ = run(capsys, str(log), "--json")
    (block,) = json_lines(out)
    assert code == 0 and JSON_KEYS <= block.keys()
    assert block["type"] == "AVRO_DATA" and block["corrupt"] is False and block["record_count"] == 1
    assert block["records"][0]["fare"] == 25.0 and block["records"][0]["rider"] == "rider-D"
    assert block["header"]["INSTANT_TIME"] == block["instant_time"] and "SCHEMA" in block["header"]
    assert block["block_size"] == log.stat().st_size - 14 and block["format_version"] == 1


def test_delete_fixture_lists_the_deleted_keys(fixture_tables, capsys):
    (log,) = logs_of(fixture_tables["v6_trips_8i3d"])
    code, out, _ = run(capsys, str(log), "--json")
    (block,) = json_lines(out)
    assert block["type"] == "DELETE" and block["record_count"] == 3 and block["records"] is None
    assert {d["record_key"] for d in block["deleted_keys"]} == {
        "334e26e9-8355-45cc-97c6-c31daf0df330",
        "e96c4396-3fad-413a-a942-4cb36106d721",
        "9909a8b1-2d15-4d3d-8ec9-efc48c536a00",
    }
    for d in block["deleted_keys"]:
        assert (d["partition_path"], d["ordering_value"], d["ordering_wrapper"]) == ("city=san_francisco", 0, "IntWrapper")
    code, out, _ = run(capsys, f"file://{log}")
    assert code == 0 and "deleted keys    3" in out and "IntWrapper(0)" in out


def test_every_fixture_log_file_prints(fixture_tables, capsys):
    logs = [p for t in fixture_tables.values() for p in t.rglob("*") if p.is_file() and ".log." in p.name]
    for log in logs + fixture_log_files():
        code, out, _ = run(capsys, str(log), "--json")
        assert code == 0
        blocks = json_lines(out)
        assert blocks and all(JSON_KEYS <= b.keys() and not b["corrupt"] for b in blocks), log
        code, out, _ = run(capsys, str(log))
        assert code == 0 and "corrupt         no" in out


def test_damaged_files_show_their_corrupt_blocks(tmp_path, capsys):
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": ["null", "string"], "default": None}]}
    good = avro_data_block("001", schema, encode_avro_records([{"a": "x"}], schema))
    undecodable = avro_data_block("002", schema, encode_avro_payloads([b"\x02\x09"]))  # length 4 string, 1 byte
    data = encode_blocks([good, undecodable, rollback_block("003", "002")])
    path = tmp_path / "damaged.log.1_0-0-0"
    path.write_bytes(data + data[:20])
    code, out, _ = run(capsys, str(path), "--json")
    blocks = json_lines(out)
    assert code == 0
    assert [b["type"] for b in blocks] == ["AVRO_DATA", "CORRUPT", "COMMAND", "CORRUPT"]
    assert blocks[1]["written_type"] == "AVRO_DATA" and blocks[1]["instant_time"] == "002"
    assert blocks[1]["corrupt"] and "does not decode" in blocks[1]["corrupt_reason"]
    assert blocks[2]["target_instant_time"] == "002"
    tail = blocks[3]
    assert tail["corrupt"] and tail["size"] == 20 and tail["block_size"] is None and tail["format_version"] is None
    code, out, _ = run(capsys, str(path))
    assert "corrupt         yes" in out and "(written as AVRO_DATA)" in out and "4 blocks, 2 corrupt" in out


def test_records_are_json_safe_and_truncated_for_people(tmp_path, capsys):
    arrow = pa.schema([("b", pa.binary()), ("dec", pa.decimal128(6, 2)), ("day", pa.date32()), ("ts", pa.timestamp("us", "UTC"))])
    schema = with_meta_fields(arrow_to_avro(arrow, "t"))
    base = dict.fromkeys(["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"])
    row = {
        **base,
        "b": b"\x00\xff",
        "dec": Decimal("-1.25"),
        "day": dt.date(2024, 2, 29),
        "ts": dt.datetime(2024, 1, 1, 12, 0, 0, 5, tzinfo=dt.timezone.utc),
    }
    deletes = [DeleteRecord("k", "p", OrderingValue(OrderingWrapper.DECIMAL, Decimal("2.5")))]
    path = tmp_path / "types.log.1_0-0-0"
    path.write_bytes(encode_blocks([avro_data_block("001", schema, encode_avro_records([row] * 12, schema)), delete_block("002", schema, deletes)]))
    code, out, _ = run(capsys, str(path), "--json")
    data, dels = json_lines(out)
    rec = data["records"][0]
    assert base64.b64decode(rec["b"]) == b"\x00\xff" and rec["dec"] == "-1.25"
    assert rec["day"] == "2024-02-29" and rec["ts"] == "2024-01-01T12:00:00.000005Z"
    assert len(data["records"]) == 12
    assert dels["deleted_keys"][0]["ordering_value"] == "2.500000000000000"
    code, out, _ = run(capsys, str(path), "--max-records", "3")
    assert "... 9 more" in out and out.count('"dec": "-1.25"') == 3


def test_missing_files_and_missing_subcommands_fail_cleanly(tmp_path, capsys):
    code, _, err = run(capsys, str(tmp_path / "absent.log"))
    assert code == 1 and "cannot read" in err
    assert main(["inspect"]) == 2
