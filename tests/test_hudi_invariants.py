"""The invariant suite (tests/hudi_invariants.py) at every table version: it holds on the tables we write
and on the tables Hudi wrote, and it catches the timeline names and Avro files Hudi's readers reject."""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import crashes
import fastavro
import hudi_invariants
import pytest
from conftest import fixture_table_names
from service_tables import ModelWriter, hudi_rs_rows, random_batch, run_allowed_services, to_table

from ingest.hudi.table.table import HudiTable


def written(path: Path, version: int) -> ModelWriter:
    """Five commits, a write that dies after its data files (rolled back by the next), the services the
    version allows after each commit."""
    w = ModelWriter(path, buckets=2, version=version)
    rng = random.Random(version)
    for n in range(1, 6):
        if n == 3:
            assert crashes.in_child("after_data_write",
                                    lambda: w.writer.write(to_table(random_batch(rng, 50, keys=8, size=4))))
        w.write(random_batch(rng, n, keys=8, size=5))
        run_allowed_services(w.table)
    return w


@pytest.mark.parametrize("version", [6, 8, 9])
def test_the_invariants_hold_on_tables_we_write_at_every_version(tmp_path, version):
    """Markers (`MarkerBasedRollbackStrategy`), strict Avro names (`Schema.Parser`), rollback metadata
    (`HoodieTableMetadataUtil.processRollbackMetadata`), timeline names (hudi-rs's
    `Instant::try_from_file_name_and_timezone`, `HoodieTimeline.VALID_ACTIONS_IN_TIMELINE`) and the
    timeline's Avro files resolved against Hudi's schemas (`TimelineMetadataUtils.deserializeAvroMetadata`)
    hold at layout 1 (version 6) and layout 2 (8, 9), each check having had something to check."""
    w = written(tmp_path / "t", version)
    counts = hudi_invariants.check(w.path, bucket_index=True)
    assert counts["timeline"] >= 5 and counts["timeline_avro"] >= 2 and counts["rollbacks"] == 1, counts
    if HudiTable.open(w.path).version.avro_commit_metadata:
        assert counts["timeline_avro"] >= 10, "every deltacommit (inflight and completed) is Avro at 8/9"
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())


@pytest.mark.parametrize("name", fixture_table_names() or ["(fixtures absent)"])
def test_tables_hudi_wrote_pass_the_timeline_checks(fixture_tables, name):
    """The checker accepts what Hudi itself writes (0.14/0.15 at 6, 1.0 at 8, 1.1.1 at 9): every timeline
    name parses by hudi-rs's rules, and at 8/9 every Avro timeline file resolves against Hudi 1.x's
    schemas (Hudi 1.x's own commit metadata and compaction plans among them). Every live record's partition
    values are what Spark's Hudi reader and Hudi's sync tools read from its path."""
    path = fixture_tables[name]
    assert hudi_invariants.check_timeline(path) > 0
    assert hudi_invariants.check_partition_values(path) > 0
    avro_files = hudi_invariants.check_timeline_avro(path)
    assert avro_files > 0 or not HudiTable.open(str(path)).version.avro_commit_metadata


@pytest.mark.parametrize("bad", [
    "20251220210108078.deltacommit.done",             # a state hudi-rs does not know
    "20251220210108078_20251220210109593.deltacommit.inflight",  # a completion time on a pending instant
    "2025122021010.deltacommit",                      # 13 digits
    "20251320210108.deltacommit",                     # month 13 (17 digits that are no date are epoch millis)
    "20251220210108.merge",                           # an action Hudi's timeline does not have
    "20251220210108078deltacommit",                   # no '.'
])
def test_timeline_names_hudi_rs_rejects_are_caught(bad):
    """`Instant::try_from_file_name_and_timezone` (hudi-rs) rejects each of these names; Java's
    `HoodieTimeline.VALID_ACTIONS_IN_TIMELINE` has no `merge`."""
    with pytest.raises(AssertionError):
        hudi_invariants.timeline_instant(bad)
    assert hudi_invariants.timeline_instant("20251220210108078_20251220210109593.deltacommit") == \
        ("20251220210108078", "20251220210109593", "deltacommit", "completed")
    assert hudi_invariants.timeline_instant("20251220210108078.inflight")[2:] == ("commit", "inflight")


def test_an_instant_file_outside_the_layout_2_timeline_is_caught(tmp_path):
    """`ActiveTimelineV2` lists `.hoodie/timeline/` only: a deltacommit left in `.hoodie/` at version 9
    would be invisible to every Hudi 1.x reader."""
    w = ModelWriter(tmp_path / "t", version=9)
    w.write(random_batch(random.Random(1), 1))
    (done,) = (Path(w.path) / ".hoodie" / "timeline").glob("*_*.deltacommit")
    (Path(w.path) / ".hoodie" / done.name).write_bytes(done.read_bytes())
    with pytest.raises(AssertionError, match="outside the layout-2 timeline folder"):
        hudi_invariants.check_timeline(Path(w.path))


def _rewrite(path: Path, edit) -> None:
    """Rewrite an Avro timeline file with its writer schema edited by `edit` (the record kept)."""
    reader = fastavro.reader(io.BytesIO(path.read_bytes()))
    schema, records = json.loads(reader.metadata["avro.schema"]), list(reader)
    edit(schema, records)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records)
    path.write_bytes(out.getvalue())


def test_avro_files_hudi_cannot_resolve_are_caught(tmp_path):
    """`TimelineMetadataUtils.deserializeAvroMetadata` resolves our writer schema against Hudi's class:
    a field under a name Hudi does not know is dropped (0.13's `writtenLogFiles` for 0.14+'s
    `logFilesFromFailedCommit`, which `HoodieTableMetadataUtil` then dereferences as null), a field of
    another type fails; at 8/9 a JSON commit file is no Avro container `CommitMetadataSerDeV2` reads."""
    w = written(tmp_path / "t", 9)
    timeline = Path(w.path) / ".hoodie" / "timeline"
    (rollback,) = timeline.glob("*_*.rollback")
    original = rollback.read_bytes()

    def rename(schema, records):
        pm = schema["fields"][4]["type"]["values"]
        field = next(f for f in pm["fields"] if f["name"] == "logFilesFromFailedCommit")
        field["name"] = "writtenLogFiles"
        for r in records:
            for m in r["partitionMetadata"].values():
                m["writtenLogFiles"] = m.pop("logFilesFromFailedCommit")

    _rewrite(rollback, rename)
    with pytest.raises(AssertionError, match="writtenLogFiles is no field of Hudi's HoodieRollbackPartitionMetadata"):
        hudi_invariants.check_timeline_avro(Path(w.path))
    rollback.write_bytes(original)
    assert hudi_invariants.check_timeline_avro(Path(w.path)) > 0

    commit = sorted(timeline.glob("*_*.deltacommit"))[-1]

    def retype(schema, records):
        stat = schema["fields"][0]["type"][1]["values"]["items"]
        next(f for f in stat["fields"] if f["name"] == "numWrites")["type"] = ["null", "int"]

    _rewrite(commit, retype)
    with pytest.raises(AssertionError, match="HoodieWriteStat.numWrites"):
        hudi_invariants.check_timeline_avro(Path(w.path))
    commit.write_text('{"partitionToWriteStats": {}}')
    with pytest.raises(AssertionError, match="must be an Avro container"):
        hudi_invariants.check_timeline_avro(Path(w.path))


@pytest.mark.parametrize(("fields", "refused"), [
    ([{"name": "order-id", "type": "string"}], "field name 'order-id'"),
    ([{"name": "1x", "type": "long"}], "field name '1x'"),
    ([{"name": "a", "type": {"type": "record", "name": "inner", "fields": [{"name": "c d", "type": "int"}]}}],
     "field name 'c d'"),
    ([{"name": "e", "type": ["null", {"type": "enum", "name": "E", "symbols": ["ok", "not-ok"]}]}],
     None),  # the `avro` package refuses the symbol itself
])
def test_names_javas_schema_parser_refuses_are_caught(fields, refused):
    """Java's `Schema.Parser` validates every field name (`Schema.Field`'s constructor calls
    `Schema.validateName`), as it does type names and enum symbols; the `avro` package checks only the
    latter two, so a field name Hudi's readers cannot parse must still fail the schema check."""
    schema = {"type": "record", "name": "orders_record", "namespace": "hoodie.orders", "fields": fields}
    with pytest.raises(AssertionError, match=re.escape(refused) if refused else "strict parser rejects"):
        hudi_invariants._strict_parse(json.dumps(schema), "a schema")
    ok = {**schema, "fields": [{"name": "_order_id", "type": "string"}, {"name": "é1", "type": "int"}]}
    hudi_invariants._strict_parse(json.dumps(ok), "a schema")
