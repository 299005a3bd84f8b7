"""The `hoodie.properties` header comment, written as `java.util.Properties.store` writes it."""

from __future__ import annotations

import re

from conftest import unzip_fixture_table

from ingest.hudi.config import properties
from ingest.hudi.config.table_config import TableConfig

_HUDI_HEADER = re.compile(r"#Properties saved on \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def test_header_comment_keeps_its_colons_like_a_hudi_written_table(tmp_path):
    """`java.util.Properties.writeComments` (called by `Properties.store`, which Hudi's
    `HoodieTableConfig.storeProperties` calls with "Properties saved on " + Instant.now()) escapes
    no `:`; the header reads `#Properties saved on 2025-03-31T03:06:42.363296Z` in Hudi's tables."""
    table = unzip_fixture_table("v6_trips_8i1u", tmp_path)
    hudi_header = (table / ".hoodie" / "hoodie.properties").read_text(encoding="latin-1").splitlines()[0]
    assert _HUDI_HEADER.fullmatch(hudi_header), hudi_header

    props = properties.loads(properties.decode_bytes((table / ".hoodie" / "hoodie.properties").read_bytes()))
    ours = properties.decode_bytes(TableConfig(props).to_bytes()).splitlines()[0]
    assert _HUDI_HEADER.fullmatch(ours), ours


def test_header_comment_escapes_only_what_write_comments_escapes():
    """`java.util.Properties.writeComments`: characters above U+00FF as upper-case `\\uXXXX`
    (UTF-16 units), a line break starts a new `#` line unless the next line already starts with `#`
    or `!`, `\\r\\n` is one break; `= : # ! \\` and Latin-1 characters are written as they are."""
    text = properties.dumps({}, "a=b:c#d!e\\f é 中 😀\nnext\r\n#own\r!bang")
    assert text.splitlines()[:4] == [
        "#a=b:c#d!e\\f é \\u4E2D \\uD83D\\uDE00",
        "#next",
        "#own",
        "!bang",
    ]
