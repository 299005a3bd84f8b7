"""A torn log block of a committed instant is reported (read, inspect, writers), never skipped in
silence; a failed write's torn block stays silent, and so does one a later rollback command block or a
retried task's whole block explains; writers never append after a torn block."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest
from service_tables import HUDI_SETTINGS

from ingest import cli
from ingest.hudi.log.log_block import FRAME_PREFIX, BlockType, LogBlock, encode_log_block
from ingest.hudi.log.log_reader import corrupt_block_instant, read_log_file
from ingest.hudi.log.log_writer import rollback_block
from ingest.storage import Storage
from ingest.write.batch import LocalWriter
from ingest.write.index_bootstrap import MANIFEST
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


def retried_table(tmp_path: Path) -> tuple[Path, Path, bytes, bytes, bytes, str]:
    """`a` and `b` in a base file, then three commits into its log file: `a` (I1), the delete of `a` (I2),
    `b` again (I3). Returns the table, its log file, each commit's block bytes, and I2."""
    table = tmp_path / "trips"
    writer = LocalWriter(WriteOptions(str(table), "trips", hudi=HUDI_SETTINGS,
                                      index=IndexOptions(type=IndexType.KEY)))
    writer.write(batch(["a", "b"], 1))
    writer.write(batch(["a"], 2))
    second = writer.write(batch(["a"], 3, deleted=True)).instant
    writer.write(batch(["b"], 4))
    (log_file,) = (table / "city=chennai").glob(".*.log.*")
    data = log_file.read_bytes()
    i1, i2, i3 = (data[b.offset:b.offset + b.size] for b in read_log_file(Storage(str(log_file.parent)),
                                                                           log_file.name))
    return table, log_file, i1, i2, i3, second


def in_header(block: bytes) -> bytes:
    """The block cut inside its header, after the header's entry count: the instant it names is gone."""
    cut = FRAME_PREFIX + 4 + 4 + 4 + 2
    torn = LogBlock(BlockType.CORRUPT, content=block[:cut])
    assert corrupt_block_instant(torn) is None
    return block[:cut]


def rolled_back(instant: str) -> bytes:
    """The rollback command block Hudi 0.x's rollback appends for a failed write (`HoodieCommandBlock`)."""
    return encode_log_block(rollback_block("20990101000000000", instant))


def forget(table: Path, instant: str) -> None:
    """The instant rolled back and gone from the timeline, as Hudi's rollback leaves a failed write."""
    for f in (table / ".hoodie").glob(f"{instant}.*"):
        f.unlink()


def warned(err: str) -> list[str]:
    """Warning and error lines (a skipped torn block is logged at INFO, which the CLI may show)."""
    return [line for line in err.splitlines() if "WARNING" in line or "ERROR" in line or "error:" in line]


@pytest.mark.parametrize(("layout", "committed", "expected"), [
    # `AbstractHoodieLogRecordReader.processQueuedBlocksForInstant`'s own case: a task attempt "Failed (Wrote
    # either a corrupt block or a correct DataBlock (B1) with commitTime C1)", its retry wrote a correct block
    # with the same C1, appended after it (`HoodieAppendHandle` writes to the slice's latest log file).
    pytest.param(lambda i1, i2, i2_ts: i1 + i2[:-5] + i2, True, {"b"}, id="torn block then its retry"),
    pytest.param(lambda i1, i2, i2_ts: i1 + in_header(i2) + i2, True, {"b"}, id="cut header then its retry"),
    # `scanInternalV1`: a ROLLBACK command block removes every CORRUPT block queued before it (`removeIf(block
    # -> { if (block.getBlockType() == CORRUPT_BLOCK) return true; ...`), whatever it targets.
    pytest.param(lambda i1, i2, i2_ts: i1 + in_header(i2) + rolled_back(i2_ts), False, {"a", "b"},
                 id="cut header then a rollback block"),
    pytest.param(lambda i1, i2, i2_ts: i1 + i2[:-5] + rolled_back(i2_ts), False, {"a", "b"},
                 id="torn block then a rollback block"),
    # The rollback block alone explains it: its instant committed, no block of it follows, and the rollback
    # names another instant. Hudi's reader drops the torn block all the same, and with it the delete of `a`.
    pytest.param(lambda i1, i2, i2_ts: i1 + i2[:-5] + rolled_back("20000101000000000"), True, {"a", "b"},
                 id="torn committed block then another instant's rollback block"),
])
def test_a_torn_block_a_later_block_explains_reads_without_error(tmp_path, capsys, layout, committed, expected):
    """Hudi's reader never fails on a corrupt block; these layouts are the normal traces of a retried task
    or a rolled back write, and read (and compact) as Hudi reads them: no error, no lost committed rows."""
    table, log_file, i1, i2, i3, second = retried_table(tmp_path)
    log_file.write_bytes(layout(i1, i2, second) + i3)
    if not committed:
        forget(table, second)
    assert cli.main(["read", str(table)]) == 0
    captured = capsys.readouterr()
    assert keys_read(captured.out) == expected and not warned(captured.err)

    assert cli.main(["inspect", "table", str(table)]) == 0
    captured = capsys.readouterr()
    assert not warned(captured.err) and "corrupt blocks of committed instants (0)" in captured.out

    # A writer whose key index is gone rebuilds it from the slices (`index_bootstrap.rebuild`), then writes.
    (table / MANIFEST).unlink()
    writer = LocalWriter(WriteOptions(str(table), "trips", hudi=HUDI_SETTINGS, index=IndexOptions(type=IndexType.KEY)))
    writer.write(batch(["b"], 5))
    assert (table / MANIFEST).exists() and cli.main(["read", str(table)]) == 0
    assert keys_read(capsys.readouterr().out) == expected

    assert cli.main(["compact", str(table)]) == 0
    assert "executed: -" not in capsys.readouterr().out
    assert cli.main(["read", str(table)]) == 0
    assert keys_read(capsys.readouterr().out) == expected


@pytest.mark.parametrize("layout", [
    pytest.param(lambda i1, i2, i3: i1 + i2[:-5] + i3, id="torn committed block, then another instant's"),
    pytest.param(lambda i1, i2, i3: i1 + i3 + in_header(i2), id="cut header at the end, no write pending"),
])
def test_a_torn_committed_block_nothing_after_explains_is_still_reported(tmp_path, capsys, layout):
    """A torn block of a committed instant that no later rollback block or retried block explains lost that
    instant's rows (here the delete of `a`): the read fails naming it, as before."""
    table, log_file, i1, i2, i3, second = retried_table(tmp_path)
    log_file.write_bytes(layout(i1, i2, i3))
    assert cli.main(["read", str(table)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ingest: error: {log_file}: corrupt block at offset ")
    assert f"of committed instant {second}: " in err or "of an instant its header no longer names" in err
    assert cli.main(["read", str(table), "--skip-corrupt-blocks"]) == 0
    assert keys_read(capsys.readouterr().out) == {"a", "b"}
