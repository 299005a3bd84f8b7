"""Tables Hudi 1.x wrote (versions 8 and 9, with and without a metadata table; and a version-6 one, where
ingest runs every service today) continued by ingest over
more than thirty commits of upserts, deletes and inserts across partitions, with the table services the
version allows run inline after each commit (small thresholds): hudi-rs then reads exactly the rows a
reference model expects, before and after each compaction.
"""

from __future__ import annotations

import random

import hudi_invariants
import pyarrow as pa
import pytest
from conftest import unzip_fixture_table
from model import Op, TableModel
from service_tables import allowed_services, run_allowed_services

from ingest.hudi.table.metadata_table import present as metadata_table_present
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

hudi = pytest.importorskip("hudi")

COMMITS = 32
CONTINUED = [
    ("v6_trips_8i1u", "uuid", "city", "ts"),              # version 6: the services run today
    ("v8_trips_8i3u1d", "uuid", "city", "ts"),            # version 8, with a metadata table
    ("v9_txns_simple_nometa", "txn_id", "region", "txn_ts"),
    ("v9_txns_simple_meta", "txn_id", "region", "txn_ts"),
]


def hudi_rs_table(path) -> pa.Table:
    table = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    batches = table.read()
    return pa.Table.from_batches(batches) if batches else table.get_schema_with_meta_fields().empty_table()


def data_columns(table: pa.Table) -> pa.Table:
    return table.drop_columns([c for c in table.column_names if c.startswith("_hoodie")])


@pytest.mark.slow
@pytest.mark.parametrize(("name", "key", "part", "order"), CONTINUED, ids=[c[0] for c in CONTINUED])
def test_a_hudi_written_table_continued_over_many_commits_reads_as_the_model(tmp_path, name, key, part, order):
    """`HoodieWriteConfig.WRITE_TABLE_VERSION` of the table itself (no upgrade), its metadata table removed
    first (`HoodieTable.maybeDeleteMetadataTable`); then 32 deltacommits as `HoodieAppendHandle` writes them
    at 8/9, each followed by the inline services `BaseHoodieWriteClient.postCommit` runs where ingest runs
    them at that version (compaction `ScheduleCompactionActionExecutor`/`RunCompactionActionExecutor`,
    `CleanActionExecutor`, `HoodieTimelineArchiver`). hudi-rs's snapshot equals the model every eight
    commits, right after every compaction and at the end; ours equals it too, and the invariants hold."""
    path = unzip_fixture_table(name, tmp_path)
    start = HudiTable.open(str(path))
    version = start.version
    fixture = data_columns(hudi_rs_table(path))
    assert sorted(map(str, fixture.to_pylist())) == sorted(map(str, data_columns(read_snapshot(start))
                                                               .select(fixture.column_names).to_pylist()))
    rows = {r[key]: r for r in fixture.to_pylist()}
    model = TableModel(event_time=True)
    model.apply([Op(k, r[part], r[order], False, r) for k, r in rows.items()])
    options = WriteOptions(
        table_path=str(path), table_name=start.name,
        hudi={"hoodie.datasource.write.recordkey.field": key, "hoodie.datasource.write.partitionpath.field": part,
              "hoodie.datasource.write.precombine.field": order,
              "hoodie.datasource.write.hive_style_partitioning": "true"},
        index=IndexOptions(type=IndexType.KEY),
    )
    writer = LocalWriter(options)
    rng = random.Random(name)
    partitions = sorted({r[part] for r in rows.values()}) + ["ingest_new"]
    top = max(r[order] for r in rows.values())
    template = next(iter(rows.values()))

    def expected() -> list[tuple]:
        return sorted((r["key"], r["partition"], r[order]) for r in model.rows())

    def hudi_rs_rows() -> list[tuple]:
        return sorted(tuple(r.values()) for r in hudi_rs_table(path).select([key, part, order]).to_pylist())

    compactions = 0
    for n in range(COMMITS):
        live = sorted(ident[0] for ident in model.live)
        ts = top + 1 + n
        batch = [dict(rows[rng.choice(live)], **{order: ts})]                            # an update
        if n % 2:
            batch.append(dict(rows[rng.choice([k for k in live if k != batch[0][key]])], **{order: ts}))  # a delete
        batch.append(dict(template, **{key: f"ingest-{n}", part: rng.choice(partitions), order: ts}))  # an insert
        deleted = [False] + ([True] if n % 2 else []) + [False]
        data = pa.Table.from_pylist(batch, schema=fixture.schema).append_column("_hoodie_is_deleted", pa.array(deleted))
        writer.write(data)
        model.apply([Op(r[key], r[part], r[order], d, r) for r, d in zip(batch, deleted, strict=True)])
        rows.update((r[key], r) for r in batch)
        if n % 8 == 7:
            assert hudi_rs_rows() == expected(), f"before the services after commit {n}"
        run = run_allowed_services(HudiTable.open(str(path)))
        if run.compacted:
            compactions += 1
            assert hudi_rs_rows() == expected(), f"after compaction {run.compacted} (commit {n})"

    table = HudiTable.open(str(path))
    assert table.version.number == version.number, "written at its own version, never upgraded"
    assert not metadata_table_present(table) and not (path / ".hoodie" / "metadata").exists()
    assert ("compaction" not in allowed_services(version)) or compactions > 0, "small thresholds: compactions ran"
    got = hudi_rs_rows()
    assert got == expected() and len({g[0] for g in got}) == len(got)
    assert sorted((r[key], r[part], r[order]) for r in read_snapshot(table).to_pylist()) == expected()
    # The key rule is left out at 8/9, where the key index puts new keys into logs (test_table_semantics' xfail).
    counts = hudi_invariants.check(path, bucket_index=version.log_files_by_writer)
    kept = counts["timeline_names"] if "archival" in allowed_services(version) else counts["timeline_names"] - COMMITS
    assert kept > 0 and counts["schemas"] > 0, counts
