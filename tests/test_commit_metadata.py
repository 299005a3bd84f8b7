"""Commit metadata JSON: laid out byte for byte as Hudi's Jackson writer lays it out."""

from __future__ import annotations

import json

import pytest

from ingest.hudi.timeline.commit_metadata import CommitMetadata, WriteStat, decode_metadata, jackson_dumps
from tests.conftest import fixture_table_names


def _instant_files(fixture_tables, suffixes):
    return [p for name in fixture_table_names() if name.startswith("v6")
            for p in sorted((fixture_tables[name] / ".hoodie").iterdir()) if p.name.endswith(suffixes)]


def test_hudi_written_deltacommits_are_reproduced_byte_for_byte(fixture_tables):
    files = _instant_files(fixture_tables, (".deltacommit", ".deltacommit.inflight"))
    assert files, "the v6 fixture tables hold deltacommits"
    for path in files:
        data = path.read_bytes()
        assert jackson_dumps(decode_metadata(data)).encode() == data, path.name
        assert CommitMetadata.from_bytes(data).to_bytes() == data, path.name


@pytest.mark.parametrize("text", ["plain", 'quote " and \\ backslash', "tab\tnewline\n\x01", "é😀\u2028", ""])
def test_strings_are_escaped_as_json(text):
    metadata = CommitMetadata(
        partition_to_write_stats={text: (WriteStat(file_id=text, path=f"{text}/f.log", partition_path=text, num_writes=1),)},
        extra_metadata={text or "k": text, "schema": json.dumps({"name": text})},
    )
    parsed = json.loads(metadata.to_bytes())
    assert parsed["extraMetadata"][text or "k"] == text
    assert parsed["partitionToWriteStats"][text][0]["fileId"] == text
    assert CommitMetadata.from_bytes(metadata.to_bytes()) == metadata
