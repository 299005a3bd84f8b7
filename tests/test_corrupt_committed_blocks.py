"""A torn log block of a committed instant is reported (read, inspect, writers), never skipped in
silence; a failed write's torn block stays silent; writers never append after a torn block."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
from service_tables import HUDI_SETTINGS

from ingest import cli
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions


def batch(keys, fare, deleted=False) -> pa.Table:
    n = len(keys)
    return pa.table({"uuid": keys, "city": ["chennai"] * n, "ts": pa.array([int(fare)] * n, pa.int64()),
                     "fare": [float(fare)] * n, "_hoodie_is_deleted": [deleted] * n})


def torn_table(tmp_path: Path) -> tuple[Path, LocalWriter, Path, str]:
    """Two commits into one log file; the second commit's block loses its last bytes."""
    table = tmp_path / "trips"
    writer = LocalWriter(WriteOptions(str(table), "trips", hudi=HUDI_SETTINGS,
                                      index=IndexOptions(type=IndexType.KEY)))
    writer.write(batch(["a", "b"], 1))
    second = writer.write(batch(["a"], 2, deleted=True)).instant
    (log_file,) = (table / "city=chennai").glob(".*.log.*")
    size = log_file.stat().st_size
    with open(log_file, "r+b") as f:
        f.truncate(size - 5)
    return table, writer, log_file, second


def keys_read(out: str) -> set[str]:
    import json

    return {json.loads(line)["uuid"] for line in out.splitlines()}


def test_a_torn_committed_block_fails_the_read_naming_file_and_offset(tmp_path, capsys):
    """`HoodieLogFileReader.isBlockCorrupted` makes the torn block a `HoodieCorruptBlock`, which
    `AbstractHoodieLogRecordReader` skips: the delete it held would be lost without a word (`a` comes
    back). Here the read fails naming the file and offset, unless told to skip corrupt blocks; the
    torn block of a write that never completed stays silent."""
    table, _, log_file, second = torn_table(tmp_path)
    assert cli.main(["read", str(table)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"ingest: error: {log_file}: corrupt block at offset ")
    assert f"of committed instant {second}: " in err and "\n" not in err

    assert cli.main(["read", str(table), "--skip-corrupt-blocks"]) == 0
    captured = capsys.readouterr()
    assert keys_read(captured.out) == {"a", "b"}  # the lost delete: said, not hidden
    assert f"{log_file}: corrupt block at offset" in captured.err and "skipped" in captured.err

    assert cli.main(["inspect", "table", str(table)]) == 0
    captured = capsys.readouterr()
    assert f"ingest: warning: {log_file}: corrupt block at offset" in captured.err
    assert "corrupt blocks of committed instants (1)" in captured.out

    # The same torn block, had its write failed (never completed): read only blocks of completed
    # instants (`AbstractHoodieLogRecordReader`), silently, as Hudi does.
    (table / ".hoodie" / f"{second}.deltacommit").unlink()
    assert cli.main(["read", str(table)]) == 0
    captured = capsys.readouterr()
    assert keys_read(captured.out) == {"a", "b"} and captured.err == ""


def test_writers_start_a_new_log_version_after_a_torn_block(tmp_path, caplog):
    """`HoodieLogFormatWriter.getOutputStream`: a writer that finds its log file present rolls over
    to the next version instead of appending; here it does so whenever the file ends in a torn block,
    and says which block of which committed instant is corrupt."""
    table, writer, log_file, second = torn_table(tmp_path)
    size = log_file.stat().st_size
    with caplog.at_level(logging.WARNING):
        writer.write(batch(["b"], 3))
    assert log_file.stat().st_size == size  # nothing appended after the torn block
    logs = sorted((table / "city=chennai").glob(".*.log.*"))
    assert [p.name.split(".log.")[1].split("_")[0] for p in logs] == ["1", "2"]
    assert any("corrupt block at offset" in r.getMessage() and f"committed instant {second}" in r.getMessage()
               for r in caplog.records)
