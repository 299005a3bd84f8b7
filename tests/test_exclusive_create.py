"""Hudi's lock and ingest's lease are only as safe as an exclusive create.

`FileSystemBasedLockProvider.acquireLock` creates the lock with `storage.create(lockFile, false)`, which
fails if the file exists, and its constructor refuses file systems whose create is not atomic
(`StorageSchemes.isAtomicCreationSupported`, `hoodie.fs.atomic_creation.support`). Hudi creates atomically
on HDFS; ingest reaches HDFS through fsspec (pyarrow), whose create is fsspec's generic one: `exists`, then
a write that replaces whatever another writer created in between. Such storage is refused, naming the
key, before anything is written."""

from __future__ import annotations

import os
import sys

import fsspec
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem
from fsspec.spec import AbstractFileSystem

from ingest.errors import ConfigError
from ingest.hudi.table.lock_provider import FileSystemLock, LockSettings
from ingest.storage import Storage, exclusive_create
from ingest.write.batch import LocalWriter
from ingest.write.lock import WriterLock
from ingest.write.options import IndexOptions, IndexType, WriteOptions

OCC = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
       "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"}
HUDI = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts"}
PROTOCOL = "checkthenwrite"


class CheckThenWriteFileSystem(AbstractFileSystem):
    """A local folder behind fsspec's generic create (`AbstractFileSystem.pipe_file(mode="create")`: exists,
    then open for writing), as `hdfs://` (pyarrow), `webhdfs://` and most other back ends have it."""

    protocol = PROTOCOL
    root_marker = "/"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.local = LocalFileSystem(auto_mkdir=True)

    def ls(self, path, detail=True, **kwargs):
        return self.local.ls(path, detail=detail)

    def info(self, path, **kwargs):
        return self.local.info(path)

    def _open(self, path, mode="rb", **kwargs):
        return self.local._open(path, mode)

    def rm_file(self, path):
        self.local.rm_file(path)


@pytest.fixture
def check_then_write():
    fsspec.register_implementation(PROTOCOL, CheckThenWriteFileSystem, clobber=True)
    yield
    sys.modules["fsspec.registry"]._registry.pop(PROTOCOL, None)


def test_only_file_systems_that_create_exclusively_say_so(check_then_write, s3, tmp_path):
    """Local disks (a hard link fails on an existing name) and S3 (a PUT with `If-None-Match: *`) create
    exclusively; fsspec's generic create, here or through pyarrow's HDFS, does not."""
    assert Storage(str(tmp_path)).creates_exclusively and exclusive_create(str(tmp_path))
    assert Storage("s3://lake/t", s3).creates_exclusively and exclusive_create("s3://lake/t")
    assert not Storage(f"{PROTOCOL}://{tmp_path}").creates_exclusively
    assert exclusive_create(f"{PROTOCOL}://{tmp_path}") is False
    assert exclusive_create("hdfs://namenode:8020/lake/t") is False
    assert exclusive_create("viewfs://cluster/lake/t") is False  # no fsspec back end at all
    storage = Storage("s3://lake/t", s3)  # the exclusive create the lease and Hudi's lock rely on
    assert storage.create("x", b"1") and not storage.create("x", b"2") and storage.read("x") == b"1"


def test_hudis_lock_on_hdfs_is_refused_naming_the_key():
    """Hudi accepts HDFS (StorageSchemes.HDFS supports atomic creation), but ingest's HDFS create is not
    atomic: the lock is refused at configuration time, naming the key that put it there, without
    connecting to the name node."""
    with pytest.raises(ConfigError, match=r"hudi\.hoodie\.write\.lock\.provider: hdfs://nn/t/\.hoodie: ingest "
                                          r"cannot create Hudi's lock file there exclusively.*fs\.create\(lockFile, false\)"):
        LockSettings.from_hudi(OCC, "hdfs://nn/t")
    with pytest.raises(ConfigError, match=r"hudi\.hoodie\.write\.lock\.filesystem\.path: hdfs://nn/locks"):
        LockSettings.from_hudi({**OCC, "hoodie.write.lock.filesystem.path": "hdfs://nn/locks"}, "/t")
    with pytest.raises(ConfigError, match=r"hudi\.hoodie\.write\.lock\.filesystem\.path: webhdfs://nn/locks"):
        LockSettings.from_hudi({**OCC, "hoodie.write.lock.filesystem.path": "webhdfs://nn/locks",
                                "hoodie.fs.atomic_creation.support": "webhdfs"}, "/t")


def test_hudis_lock_and_the_lease_are_refused_on_storage_without_an_exclusive_create(check_then_write,
                                                                                     tmp_path):
    """Listed in `hoodie.fs.atomic_creation.support`, a scheme passes Hudi's check; ingest's create there
    is still fsspec's check-then-write, so the lock is refused, and so is ingest's own lease, whose next
    epoch file two writers could both "create"."""
    lock_dir = f"{PROTOCOL}://{tmp_path}/locks"
    hudi = {**OCC, "hoodie.write.lock.filesystem.path": lock_dir, "hoodie.fs.atomic_creation.support": PROTOCOL}
    with pytest.raises(ConfigError, match=r"hudi\.hoodie\.write\.lock\.filesystem\.path: .*exclusively"):
        LockSettings.from_hudi(hudi, str(tmp_path / "t"))
    with pytest.raises(ConfigError, match=r"hudi\.hoodie\.write\.lock\.filesystem\.path: .*exclusively"):
        FileSystemLock(LockSettings(lock_dir))
    with pytest.raises(ConfigError, match=r"table\.path: .*writer lease needs a file system whose create is exclusive"):
        WriterLock(Storage(f"{PROTOCOL}://{tmp_path}/t"))
    assert not os.path.exists(tmp_path / "locks")


def test_a_write_to_storage_without_an_exclusive_create_is_refused_before_anything_is_written(
        check_then_write, tmp_path):
    table = tmp_path / "t"
    table.mkdir()
    options = WriteOptions(table_path=f"{PROTOCOL}://{table}", table_name="t", hudi=HUDI,
                           index=IndexOptions(type=IndexType.BUCKET, bucket_count=2))
    data = pa.table({"id": ["a"], "part": ["p"], "ts": pa.array([1], pa.int64()), "v": ["x"]})
    with pytest.raises(ConfigError, match=r"table\.path: .*writer lease"):
        LocalWriter(options).write(data)
    assert list(table.iterdir()) == []
