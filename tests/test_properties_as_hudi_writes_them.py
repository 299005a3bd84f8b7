"""A new table's `hoodie.properties` against the one Hudi itself wrote for the same table, key by key.

Every Hudi process opens a table through `HoodieTableConfig`, so a key Hudi records that we record
differently (or not at all) changes what Hudi's readers, writers and services do with our table. The
tables here take each Hudi-written fixture's own rows and its SQL's settings (record key, partition
field, ordering field, hive-style paths, the payload Hudi recorded where it recorded one, the SIMPLE
index: the fixtures are SIMPLE key generator tables without a bucket index), at
its table version, and must record what Hudi recorded. The only differences allowed are named below,
each with the Java that reads it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import unzip_fixture_table

from ingest.hudi.config import properties
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

OVERWRITE_WITH_LATEST = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"

# (fixture, table version, record key, partition field, ordering field, payload Hudi recorded for its SQL)
FIXTURES = [
    ("v6_trips_8i1u", 6, "uuid", "city", "ts", OVERWRITE_WITH_LATEST),
    ("v8_trips_8i3u1d", 8, "uuid", "city", "ts", None),
    ("v9_txns_simple_nometa", 9, "txn_id", "region", "txn_ts", None),
]

# Keys of Hudi's metadata table, which ingest does not write (it records none: see ONLY_OURS). The v8
# fixture was written with the metadata table and its record index on.
METADATA_TABLE_KEYS = {"hoodie.table.metadata.partitions", "hoodie.table.metadata.partitions.inflight",
                       "hoodie.table.index.defs.path"}


def _properties(table: Path) -> dict[str, str]:
    return properties.loads((table / ".hoodie" / "hoodie.properties").read_text(encoding="latin-1"))


def _fields(schema_json: str) -> tuple:
    """A record schema's name, namespace and fields with each nullable union's non-null branch:
    Avro resolves unions by branch, not by their order (`ResolvingGrammarGenerator`), and a default
    of null only matters to a reader missing the field."""
    schema = json.loads(schema_json)

    def branch(t):
        if isinstance(t, list):
            t = [b for b in t if b != "null"]
            return branch(t[0]) if len(t) == 1 else [branch(b) for b in t]
        if isinstance(t, dict):
            return {k: v for k, v in t.items() if k != "name" or t.get("type") != "fixed"}
        return t

    return schema["name"], schema["namespace"], [(f["name"], branch(f["type"])) for f in schema["fields"]]


@pytest.fixture(params=FIXTURES, ids=[f[0] for f in FIXTURES])
def both(request, tmp_path) -> tuple[dict[str, str], dict[str, str], int]:
    name, version, key, partition, ordering, payload = request.param
    hudi_table = unzip_fixture_table(name, tmp_path / "hudi")
    theirs = _properties(hudi_table)
    rows = read_snapshot(HudiTable.open(str(hudi_table)))
    rows = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    hudi = {
        "hoodie.datasource.write.recordkey.field": key,
        "hoodie.datasource.write.partitionpath.field": partition,
        "hoodie.datasource.write.precombine.field": ordering,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.write.table.version": str(version),
    }
    if payload:
        hudi["hoodie.datasource.write.payload.class"] = payload
    ours_path = tmp_path / "ours"
    LocalWriter(WriteOptions(table_path=str(ours_path), table_name=theirs["hoodie.table.name"], hudi=hudi,
                             index=IndexOptions(type=IndexType.KEY))).write(rows)
    return theirs, _properties(ours_path), version


def test_every_key_hudi_records_we_record_with_its_value(both):
    """`HoodieTableConfig`: every key Hudi recorded for the table (type, version, key generator, key and
    partition fields, ordering fields, merge mode and strategy, payload, timeline layout and paths,
    partitioning flags, database, the checksum of the name) holds Hudi's value in ours. The creation
    schema may differ only in its unions' order and null defaults (`_fields`)."""
    theirs, ours, _ = both
    differing = {k: (v, ours.get(k)) for k, v in theirs.items()
                 if k not in METADATA_TABLE_KEYS | {"hoodie.table.create.schema"} and ours.get(k) != v}
    assert differing == {}
    assert _fields(ours["hoodie.table.create.schema"]) == _fields(theirs["hoodie.table.create.schema"])


def test_the_keys_only_we_record_are_ones_hudi_reads_as_we_mean_them(both):
    """What ours holds beyond Hudi's, and how Hudi's Java reads each:
    - `hoodie.table.timeline.timezone=UTC`: `HoodieTableConfig.TIMELINE_TIMEZONE` (LOCAL when absent);
      our instant times are UTC, and Hudi's writers then make theirs UTC too.
    - `hoodie.table.metadata.partitions=` (empty): `HoodieTableConfig.getMetadataPartitions` splits it
      into no partitions, as Hudi records it once its metadata table is removed.
    - `hoodie.table.keygenerator.class` beside `.type` (versions 8 and 9): `KeyGeneratorType
      .getKeyGeneratorClassName(TypedProperties)` takes the class when present, so it must be the
      class the type names."""
    theirs, ours, version = both
    only_ours = {k: v for k, v in ours.items() if k not in theirs}
    expected = {"hoodie.table.timeline.timezone": "UTC"}
    if "hoodie.table.metadata.partitions" not in theirs:
        expected["hoodie.table.metadata.partitions"] = ""
    if version >= 8:
        assert theirs["hoodie.table.keygenerator.type"] == "SIMPLE"
        expected["hoodie.table.keygenerator.class"] = "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert only_ours == expected
    assert ours["hoodie.table.metadata.partitions"] == ""
