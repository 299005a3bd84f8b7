"""`ingest read` and `ingest inspect table` on every Hudi table hudi-rs reads: versions 6, 8 and 9,
Merge-On-Read and Copy-On-Write, read-only; writers and table services keep refusing what they do
not write (anything but a version-6 Merge-On-Read table)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import fixture_table_names, unzip_fixture_table

from ingest.cli import main
from ingest.commands.render import json_line, plain_rows
from ingest.errors import UnsupportedTable
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

hudi = pytest.importorskip("hudi")

V9 = ["v9_txns_simple_meta", "v9_txns_simple_nometa"]


def unzip(folder: str, name: str, dest: Path) -> Path:
    """A fixture table, unpacked (`folder` names where the fixtures keep it; conftest looks in both)."""
    return unzip_fixture_table(name, dest)


def copy_on_write(tmp_path: Path) -> Path:
    """The v6 fixture as Hudi would have written it as a Copy-On-Write table: its first write alone
    (inserts, base files only), completed as a `commit` (`<t>.commit.requested`, `<t>.inflight`,
    `<t>.commit`) instead of a `deltacommit`, and `hoodie.table.type=COPY_ON_WRITE`."""
    path = unzip("tables", "v6_trips_8i1u", tmp_path)
    meta = path / ".hoodie"
    first, *later = sorted({p.name.split(".")[0] for p in meta.glob("*.deltacommit*")})
    for instant in later:
        for f in meta.glob(f"{instant}.*"):
            f.unlink()
    for f in path.rglob("*.log.*"):
        f.unlink()
    for old, new in ((".deltacommit.requested", ".commit.requested"), (".deltacommit.inflight", ".inflight"),
                     (".deltacommit", ".commit")):
        (meta / f"{first}{old}").rename(meta / f"{first}{new}")
    props = meta / "hoodie.properties"
    text = props.read_text(encoding="latin-1")
    assert "hoodie.table.type=MERGE_ON_READ" in text
    props.write_text(text.replace("hoodie.table.type=MERGE_ON_READ", "hoodie.table.type=COPY_ON_WRITE"),
                     encoding="latin-1")
    return path


def hudi_rs_table(path: Path):
    return hudi.HudiTableBuilder.from_base_uri(str(path)).build()


def assert_read_equals_hudi_rs(capsys, path: Path, as_of: str | None = None) -> list[dict]:
    """`ingest read PATH [--as-of T]` row for row as hudi-rs reads the table (in the same rendering)."""
    assert main(["read", str(path), *(["--as-of", as_of] if as_of else [])]) == 0
    ours = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    options = hudi.HudiReadOptions()
    if as_of:
        options = options.with_as_of_timestamp(as_of)
    theirs = [json.loads(json_line(r)) for r in plain_rows(pa.Table.from_batches(hudi_rs_table(path).read(options)))]
    assert ours, "the fixture tables are not empty at any instant"

    def key(row: dict) -> str:
        return json.dumps(row, sort_keys=True)

    assert sorted(map(key, ours)) == sorted(map(key, theirs))
    return ours


def inspect_slices(capsys, path: Path) -> dict[str, str | None]:
    """`ingest inspect table --json`: each file group's latest slice's base file."""
    assert main(["inspect", "table", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    out = {}
    for group in report["file_groups"]:
        base = group["slices"][-1]["base_file"]
        out[group["file_id"]] = base and base["name"]
    return out


@pytest.mark.parametrize("name", fixture_table_names() or ["(fixtures absent)"])
def test_read_of_every_fixture_table_equals_hudi_rs(fixture_tables, capsys, name):
    """Versions 6, 8 and 9 (`tables/` and `tables-v9/`, with and without a metadata table): the latest file
    slices (`AbstractTableFileSystemView.getLatestFileSlices`) merged as hudi-rs merges them, each value in
    one rendering on both sides."""
    assert_read_equals_hudi_rs(capsys, fixture_tables[name])


@pytest.mark.parametrize("name", V9)
def test_read_and_inspect_a_version_9_table(tmp_path, capsys, name):
    """Table version 9 (`HoodieTableVersion.NINE`, Hudi 1.1) keeps version 8's timeline layout 2;
    `hoodie.table.ordering.fields` and `hoodie.record.merge.mode` (`HoodieTableConfig.ORDERING_FIELDS`,
    `RECORD_MERGE_MODE`) say how records merge, and `HoodieTableConfig.TABLE_FORMAT` is `native`."""
    path = unzip("tables-v9", name, tmp_path)
    rows = assert_read_equals_hudi_rs(capsys, path)
    assert len(rows) == 12
    slices = inspect_slices(capsys, path)
    assert slices == {s.file_id: s.base_file_name for s in hudi_rs_table(path).get_file_slices()}


@pytest.mark.parametrize("name", V9)
def test_read_a_version_9_table_as_of_every_instant(tmp_path, capsys, name):
    """As of an instant, a file group is hidden only by a replacecommit at or before it: the fixtures'
    insert overwrite and clustering retire groups that earlier instants still read
    (`AbstractTableFileSystemView.getLatestBaseFilesBeforeOrOn` filters
    `!isFileGroupReplacedBeforeOrOn(fileGroupId, maxCommitTime)`)."""
    path = unzip("tables-v9", name, tmp_path)
    timeline = HudiTable.open(str(path)).timeline()
    replaces = [i.timestamp for i in timeline.completed(Action.REPLACE_COMMIT, Action.CLUSTERING)]
    times = sorted({i.timestamp for i in timeline.completed()} | {i.completion_time for i in timeline.completed()})
    assert replaces and times[0] < replaces[0]
    for as_of in times:
        assert_read_equals_hudi_rs(capsys, path, as_of)


def test_read_and_inspect_a_copy_on_write_table(tmp_path, capsys):
    """A Copy-On-Write table's readable commits are its `commit` and `replacecommit` instants, a subset
    of what a Merge-On-Read reader takes (`HoodieTableMetaClient.getCommitsTimeline`: COPY_ON_WRITE ->
    getCommitAndReplaceTimeline; MERGE_ON_READ -> commit, deltacommit, replacecommit, "to be able to
    start doing a MOR over a COW table")."""
    path = copy_on_write(tmp_path)
    assert hudi_rs_table(path).table_type == "COPY_ON_WRITE"
    rows = assert_read_equals_hudi_rs(capsys, path)
    (commit,) = [p.name.removesuffix(".commit") for p in (path / ".hoodie").glob("*.commit")]
    assert len(rows) == 8 and {r["_hoodie_commit_time"] for r in rows} == {commit}
    assert inspect_slices(capsys, path) == {s.file_id: s.base_file_name for s in hudi_rs_table(path).get_file_slices()}


def test_writers_and_services_refuse_a_copy_on_write_table(tmp_path, capsys):
    """Only Merge-On-Read is written (`HoodieTableType.MERGE_ON_READ`): a Copy-On-Write table's
    `commit`s rewrite base files, so log files appended to it would be invisible to its readers
    (`HoodieTableMetaClient.getCommitsTimeline` reads no deltacommit on COPY_ON_WRITE)."""
    path = copy_on_write(tmp_path)
    before = sorted(str(p.relative_to(path)) for p in path.rglob("*"))
    for command in (["compact", str(path)], ["clean", str(path)], ["archive", str(path)]):
        assert main(command) == 1
        assert "hoodie.table.type=COPY_ON_WRITE: ingest writes MERGE_ON_READ tables only" in capsys.readouterr().err
    options = WriteOptions(table_path=str(path), table_name="v6_trips_8i1u", hudi={
        "hoodie.datasource.write.recordkey.field": "uuid", "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.hive_style_partitioning": "true",
    }, index=IndexOptions(type=IndexType.BUCKET, bucket_count=1))
    data = pa.table({"ts": pa.array([1], pa.int64()), "uuid": ["u"], "rider": ["r"], "driver": ["d"],
                     "fare": [1.0], "city": ["chennai"]})
    with pytest.raises(UnsupportedTable, match="COPY_ON_WRITE: ingest writes MERGE_ON_READ tables only"):
        LocalWriter(options).write(data)
    after = sorted(str(p.relative_to(path)) for p in path.rglob("*") if ".aux" not in p.relative_to(path).parts)
    assert after == [p for p in before if ".aux" not in Path(p).parts]
    assert read_snapshot(HudiTable.open(str(path))).num_rows == 8  # reading is still fine


def test_a_table_in_another_format_is_refused_clearly(tmp_path, capsys):
    """`HoodieTableConfig.TABLE_FORMAT` other than `native` (another format's metadata on Hudi's
    files) and `BASE_FILE_FORMAT` other than PARQUET are not read: one line says which."""
    path = unzip("tables-v9", V9[1], tmp_path / "a")
    props = path / ".hoodie" / "hoodie.properties"
    text = props.read_text(encoding="latin-1")
    props.write_text(text.replace("hoodie.table.format=native", "hoodie.table.format=iceberg"), encoding="latin-1")
    assert main(["read", str(path)]) == 1
    assert "hoodie.table.format=iceberg (only native is read)" in capsys.readouterr().err
    props.write_text(text + "hoodie.table.base.file.format=ORC\n", encoding="latin-1")
    assert main(["inspect", "table", str(path)]) == 1
    assert "hoodie.table.base.file.format=ORC (only PARQUET is read)" in capsys.readouterr().err
