"""A commit file that does not parse is one line naming it, for readers, validation and writers;
writers refuse to build on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_tables import HUDI_SETTINGS
from test_refused_tables import files, pipeline, rows

from ingest import cli
from ingest.errors import TimelineError
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions


def truncated_table(tmp_path: Path) -> tuple[Path, Path, WriteOptions]:
    table = tmp_path / "trips"
    options = WriteOptions(str(table), "trips", hudi=HUDI_SETTINGS, index=IndexOptions(type=IndexType.KEY))
    writer = LocalWriter(options)
    writer.write(rows())
    writer.write(rows())
    latest = sorted((table / ".hoodie").glob("*.deltacommit"))[-1]
    data = latest.read_bytes()
    latest.write_bytes(data[: len(data) // 2])
    return table, latest, options


def test_a_truncated_commit_file_is_one_line_naming_it(tmp_path, capsys):
    """`HoodieCommitMetadata.fromBytes`: a commit file that does not parse is an error ("unable to read
    commit metadata"), never an empty or skipped commit; here it names the file and the cause."""
    table, latest, options = truncated_table(tmp_path)
    instant = latest.name.split(".")[0]
    size = latest.stat().st_size
    expected = (f"ingest: error: {latest}: deltacommit {instant} cannot be parsed ({size} bytes; "
                "truncated or corrupt?): ")
    before = files(table)

    assert cli.main(["read", str(table)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(expected) and err.count("\n") == 1 and "Traceback" not in err

    config = pipeline(tmp_path, table)
    assert cli.main(["validate-config", str(config)]) == 1
    assert capsys.readouterr().err.startswith(expected)
    assert cli.main(["stream", "--config", str(config)]) == 1  # refused before Spark starts
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(expected)
    assert files(table) == before

    with pytest.raises(TimelineError, match="cannot be parsed"):
        LocalWriter(options).write(rows())
    after = files(table)
    lease = ".hoodie/.aux/ingest/lock/"
    assert {k: v for k, v in after.items() if not k.startswith(lease)} == \
        {k: v for k, v in before.items() if not k.startswith(lease)}
