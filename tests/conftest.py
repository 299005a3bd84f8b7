"""Shared test fixtures: the Hudi-written reference tables, one Spark session, temp tables."""

from __future__ import annotations

import logging
import os
import shutil
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(os.environ.get("INGEST_HUDI_FIXTURES", REPO_ROOT.parent / "shared" / "fixtures" / "hudi-written"))
FIXTURES_MISSING = (
    f"Hudi-written fixtures not found at {FIXTURES} (set INGEST_HUDI_FIXTURES to the "
    "'hudi-written' folder); CI provides them"
)


# kafka-python 3's transport formats itself in its log records (`KafkaTCPTransport.__str__`) and can race
# with its socket being closed, raising inside logging; pytest's log capture turns that into a test
# failure (outside pytest, logging prints and goes on). Only that module's records are held back.
logging.getLogger("kafka.net.transport").setLevel(logging.CRITICAL)


def pytest_collection_finish(session):
    """Spark's classes from one archive for every driver JVM the session starts (`jvm_class_archive`);
    made (once per install, about 40 s) only for a run of many tests: a few tests use one if it is there."""
    import jvm_class_archive

    jvm_class_archive.enable(make=len(session.items) > 100 and not session.config.option.collectonly)


def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(FIXTURES_MISSING)
    return FIXTURES


# `tables/` holds versions 6 and 8, `tables-v9/` version 9 (kept apart by the shared fixtures, which this
# project does not modify): every test that goes over all fixture tables takes both.
TABLE_FOLDERS = ("tables", "tables-v9")


def _fixture_archives() -> dict[str, Path]:
    return {p.stem: p for folder in TABLE_FOLDERS if (FIXTURES / folder).is_dir()
            for p in (FIXTURES / folder).glob("*.zip")}


def fixture_table_names() -> list[str]:
    """Names of the zipped Hudi-written tables of every folder (empty when the fixtures are absent)."""
    return sorted(_fixture_archives())


def unzip_fixture_table(name: str, dest: Path) -> Path:
    """Unpack `<name>.zip` (of `tables/` or `tables-v9/`) into `dest` and return the table folder
    (skipping macOS noise)."""
    fixtures_dir()
    archive = _fixture_archives().get(name)
    if archive is None:
        pytest.skip(f"fixture table {name}.zip is absent from {FIXTURES} ({', '.join(TABLE_FOLDERS)})")
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            if member.filename.startswith("__MACOSX") or "/.DS_Store" in member.filename:
                continue
            zf.extract(member, dest)
    table = dest / name
    assert (table / ".hoodie" / "hoodie.properties").is_file(), f"{archive} holds no table {name}"
    return table


@pytest.fixture
def hudi_table_copy(tmp_path):
    """Factory: a fresh, writable copy of a Hudi-written fixture table."""

    def make(name: str) -> Path:
        return unzip_fixture_table(name, tmp_path / "fixtures")

    return make


@pytest.fixture(scope="session")
def fixture_tables(tmp_path_factory) -> dict[str, Path]:
    """Read-only unpacked copies of every fixture table, shared by the session."""
    fixtures_dir()
    dest = tmp_path_factory.mktemp("hudi-written")
    return {name: unzip_fixture_table(name, dest) for name in fixture_table_names()}


def fixture_log_files() -> list[Path]:
    """The loose Hudi log files of the fixtures (`log-files/`); table log files come with `fixture_tables`."""
    root = fixtures_dir()
    loose = [p for p in (root / "log-files").rglob("*") if p.is_file() and ".log." in p.name]
    return sorted(loose)


@pytest.fixture(scope="session")
def spark():
    """One SparkSession (local[2]) for the whole test session."""
    from ingest.spark.session import get_or_create

    session = get_or_create(
        master="local[2]",
        app_name="ingest-tests",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    yield session
    session.stop()


@pytest.fixture
def table_dir(tmp_path) -> Path:
    """An empty folder for a table."""
    path = tmp_path / "table"
    path.mkdir()
    return path


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


@pytest.fixture
def s3(monkeypatch):
    """A moto S3 server on loopback; s3fs refuses to rename, copy or append, as object stores can't."""
    boto3 = pytest.importorskip("boto3")
    s3fs = pytest.importorskip("s3fs")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="k", aws_secret_access_key="s",
                 region_name="us-east-1").create_bucket(Bucket="lake")

    def forbidden(*args, **kwargs):
        raise AssertionError("rename/copy/append used on an object store")

    for name in ("_mv", "mv", "_copy", "copy", "_cp_file", "cp_file"):
        monkeypatch.setattr(s3fs.S3FileSystem, name, forbidden, raising=False)
    original_open = s3fs.S3FileSystem._open

    def open_no_append(self, path, mode="rb", *args, **kwargs):
        if "a" in mode:
            forbidden()
        return original_open(self, path, mode, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_open", open_no_append)
    options = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
               "skip_instance_cache": True}
    yield options
    server.stop()
