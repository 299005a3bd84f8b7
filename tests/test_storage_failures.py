"""A full disk or a read-only table folder: one `ingest: error` line naming the path and the cause,
no temporary file left behind, and temporaries of writers that died swept by the next lease holder."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from service_tables import HUDI_SETTINGS
from test_refused_tables import rows

from ingest import cli
from ingest.hudi.table import markers
from ingest.storage import Storage
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions


def temporaries(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.tmp"))


@pytest.fixture
def small_disk(tmp_path):
    """A real 3 MiB file system (tmpfs), so writes really fail: root ignores permission bits."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def table_with_commits(root: Path) -> Path:
    table = root / "trips"
    options = WriteOptions(str(table), "trips", hudi=HUDI_SETTINGS, index=IndexOptions(type=IndexType.KEY))
    for _ in range(3):
        LocalWriter(options).write(rows())
    return table


def fill(disk: Path) -> None:
    free = os.statvfs(disk)
    with open(disk / "filler", "wb") as f:
        try:
            f.write(b"\0" * (free.f_bavail * free.f_frsize))
        except OSError:
            pass


def test_a_full_disk_is_one_line_and_leaves_no_temporary(small_disk, capsys):
    """`HoodieLogFormatWriter.appendBlocks` and `HoodieWrapperFileSystem` let an IOException end the
    write; here it ends it as one line naming the file, and nothing half-written stays."""
    table = table_with_commits(small_disk)
    fill(small_disk)
    assert cli.main(["compact", "--path", str(table)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"ingest: error: {table}/") and err[-1].endswith(": No space left on device")
    assert temporaries(table) == []


def test_a_read_only_table_folder_is_one_line(small_disk, capsys):
    """`HoodieLogFormatWriter.getOutputStream` / `createNewFile`: a file that cannot be created fails
    the action with the file system's IOException; here as one line naming the path."""
    table = table_with_commits(small_disk)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    assert cli.main(["clean", "--path", str(table)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"ingest: error: {table}/") and err[-1].endswith(": Read-only file system")


def test_temporaries_of_dead_writers_are_swept_by_cleaning(tmp_path, capsys):
    """A write that died between writing its temporary and renaming it (`kill -9`) leaves the `.tmp`;
    the next lease holder (here `ingest clean`) removes it once no live writer can own it, as Hudi's
    `BaseRollbackActionExecutor.executeRollback` removes the files a failed write left."""
    table = table_with_commits(tmp_path)
    partition = next(p for p in table.iterdir() if p.name.startswith("city="))
    old = partition / f".ingest-{'a' * 32}.tmp"
    older_release = partition / f".some.parquet.{'c' * 32}.tmp"  # as releases before this one named them
    fresh = partition / f".ingest-{'b' * 32}.tmp"
    lookalike = partition / "data.tmp"
    for p in (old, older_release, fresh, lookalike):
        p.write_bytes(b"half")
    stale = time.time() - 3600
    for p in (old, older_release, lookalike):
        os.utime(p, (stale, stale))
    assert cli.main(["clean", "--path", str(table)]) == 0
    assert not old.exists() and not older_release.exists()
    assert fresh.exists() and lookalike.exists()  # a live writer's, and no temporary of ours


# Hudi's `FSUtils.LOG_FILE_PATTERN`, which `FSUtils.isLogFile` applies with `matcher(name).find()`.
HUDI_LOG_FILE_PATTERN = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(.cdc)?)?")


def test_a_dead_writers_temporary_is_no_file_hudi_lists_as_its_own(tmp_path):
    """A write killed between writing its temporary and publishing it leaves the temporary until the sweep.
    Hudi takes any name whose start matches a log file's pattern for a log file (`FSUtils.isLogFile`) and any
    holding ".parquet" for a base file (`convertFileStatusesToBaseFiles`); its marker-based rollback reads the
    IO type after the last dot of every file in a marker folder (`MarkerBasedRollbackStrategy`), so markers
    and heartbeats, empty files, are written in place."""
    storage = Storage(str(tmp_path))
    for rel in ("p=1/.f1-0_20260101000000000.log.1_0-1-2", "p=1/f1-0_0-1-2_20260101000000000.parquet"):
        assert HUDI_LOG_FILE_PATTERN.search(rel.split("/")[1]) or ".parquet" in rel  # what the pattern catches
        left = Path(storage._write_aside(storage.full_path(rel), b"bytes")).name  # what a kill -9 leaves
        assert not HUDI_LOG_FILE_PATTERN.search(left) and ".parquet" not in left, left
    markers.create(storage, "20260101000000000", "p=1", "f1-0_0-1-2_20260101000000000.parquet", markers.IOType.CREATE)
    heartbeat_folder = ".hoodie/.heartbeat"
    storage.touch(f"{heartbeat_folder}/20260101000000000")
    for folder in (tmp_path / ".hoodie" / ".temp" / "20260101000000000" / "p=1", tmp_path / heartbeat_folder):
        assert [p.name.rsplit(".", 1)[-1] for p in folder.iterdir()] in (["CREATE"], ["20260101000000000"])


@pytest.mark.parametrize(("base", "location", "relative"), [
    ("/t", "/t/p=1/f.parquet", "p=1/f.parquet"),
    ("/t", "file:/t/p=1/f.parquet", "p=1/f.parquet"),      # Hadoop's qualified local path
    ("file:///t", "/t/p=1/f.parquet", "p=1/f.parquet"),
    ("/t", "/t/p=1/../p=2/f.parquet", "p=2/f.parquet"),     # `..` resolved as Hadoop's `Path` does
    ("/t", "/t/../u/f.parquet", None),
    ("/t", "/tt/f.parquet", None),
    ("/t", "/t", None),
    ("s3://b/t", "s3a://b/t/p=1/f.parquet", "p=1/f.parquet"),  # a Hudi writer's S3 scheme
    ("s3://b/t", "s3://c/t/p=1/f.parquet", None),
    ("file:///t/../t", "/t/p=1/f.parquet", "p=1/f.parquet"),      # a base URL not in normal form
    ("s3://b//t", "s3a://b/t/p=1/f.parquet", "p=1/f.parquet"),
    ("/t", "hdfs://nn/t/p=1/f.parquet", None),                    # another file system
])
def test_plans_locations_resolve_without_scheme_as_hudi_compares_them(base, location, relative):
    """`FSUtils.getRelativePartitionPath` compares a plan's file with the base path without its scheme;
    a location outside the table (another bucket too) resolves to nothing, so nothing there is deleted."""
    from ingest.storage import Storage

    assert Storage(base, {"anon": True} if base.startswith("s3") else None).relative(location) == relative


@pytest.mark.parametrize(("base", "location", "inside"), [
    ("/lake/t", "/lake/t", True),
    ("/lake/t", "/lake/t/quarantine/", True),
    ("/lake/t", "file:///lake/t/quarantine", True),
    ("/lake/t", "/lake/x/../t/q", True),
    ("/lake/t", "/lake/t-quarantine", False),              # a sibling sharing the prefix
    ("/lake/t", "/lake", False),
    ("s3://lake/t", "s3a://lake/t/q", True),                # the scheme Hudi's readers use on S3
    ("s3://lake/t", "s3://lake/t2/q", False),
    ("s3://lake/t", "/lake/t/q", False),                    # a local folder beside a remote table
    ("/lake/t", "s3://lake/t/q", False),
    ("file:///lake/t", "/lake/t/q", True),
    ("file:/lake/t/../t", "local:///lake/t", True),
    ("abfs://c@acct.dfs.core.windows.net/t", "abfss://c@acct.dfs.core.windows.net/t/q", True),  # no adlfs needed
    ("gs://lake/t", "gcs://lake/t/q", True),
    ("hdfs://nn/t", "hdfs://nn/t/q", True),
    ("hdfs://nn/t", "hdfs://nn/tq", False),
])
def test_a_location_is_inside_the_table_as_hudi_would_list_it(base, location, inside):
    """A folder Hudi's listing of the table would walk into (whatever URL names it) is inside it."""
    from ingest.storage import within

    assert within(base, location) is inside


@pytest.mark.parametrize("start, end", [(0, 4), (3, 10), (8, 20), (5, 5), (12, 15), (-3, 10), (2, -2), (-4, -1)])
def test_local_reads_answer_as_fsspec_does(tmp_path, start, end):
    """Local files are read without fsspec's layers (a small batch checks the tail of every log file it
    appends to); the answers, and the error for a missing file, are fsspec's."""
    storage = Storage(str(tmp_path))
    storage.write("p/f.log", b"0123456789")
    full = storage.full_path("p/f.log")
    assert storage.read_range("p/f.log", start, end) == storage.fs.cat_file(full, start=start, end=end)
    assert storage.read("p/f.log") == storage.fs.cat_file(full)
    assert (storage.size("p/f.log"), storage.exists("p/f.log"), storage.exists("p")) == (10, True, True)
    assert not storage.exists("p/absent.log")
    for read in (lambda: storage.read("p/absent.log"), lambda: storage.size("p/absent.log"),
                 lambda: storage.read_range("p/absent.log", start, end)):
        with pytest.raises(FileNotFoundError):
            read()


def test_a_file_removed_while_its_folder_is_listed_is_not_listed(tmp_path, monkeypatch):
    """Not a Hudi rule: a reader lists `.hoodie` while a writer puts a file in place through a temporary
    one (written aside, then renamed or linked, and the temporary removed). The temporary may be gone
    between reading the folder and looking at the entry; the listing leaves it out instead of failing
    (a killed-stream test's observer met it, listing the timeline while the stream committed)."""
    (tmp_path / "kept").write_bytes(b"1")
    (tmp_path / ".ingest-gone.tmp").write_bytes(b"2")
    real = os.scandir

    class Listed:
        def __init__(self, path):
            self.inner = real(path)

        def __enter__(self):
            entries = list(self.inner.__enter__())
            os.unlink(tmp_path / ".ingest-gone.tmp")  # the writer's rename, after the folder was read
            return iter(entries)

        def __exit__(self, *exc):
            return self.inner.__exit__(*exc)

    monkeypatch.setattr(os, "scandir", Listed)
    assert [e.path for e in Storage(str(tmp_path)).list()] == ["kept"]
