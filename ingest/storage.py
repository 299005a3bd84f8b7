"""The one seam between a table and its bytes: an fsspec file system rooted at the table's base URL.

Everything that reads or writes table files goes through `Storage`, so the commit protocol can rely
on two guarantees whatever the backend:

* `write` replaces a whole file atomically: readers see the old content or the new, never a part.
  Local disks get a temporary file and a rename; object stores get one PUT (and no rename exists).
* `create` is put-if-absent: exactly one of several racing writers succeeds. Only where the file system
  itself refuses an existing name (`creates_exclusively`): a local disk, and S3, GCS and Azure through
  s3fs, gcsfs and adlfs. Other fsspec back ends (`hdfs://` through pyarrow, `webhdfs://`...) check that
  the file is absent and then write it, so the lease and Hudi's lock, which need the guarantee, refuse
  them.

Appending is offered only where the file system really appends (`can_append`); object stores
never append, so writers roll over to a new file there instead.

On local disks, files reach the operating system when a write returns, which survives the writer's
process dying at any point. Surviving the machine losing power needs `fsync` as well: storage option
`fsync: true` turns it on (it costs a disk flush per file).
"""

from __future__ import annotations

import os
import posixpath
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import timezone
from typing import IO, Any, TypeVar

import fsspec
from fsspec.implementations.local import LocalFileSystem

from ingest import faults

# A file's bytes: one buffer, or pieces written in order (so large parts need not be joined first).
Data = bytes | bytearray | memoryview | Sequence[bytes | bytearray | memoryview]


T = TypeVar("T")
R = TypeVar("R")

# Requests an object store serves side by side for one caller: botocore's connection pool holds 10
# unless the storage options' `config_kwargs` set `max_pool_connections` (s3fs hands them to botocore).
REQUESTS_AT_ONCE = 10


def pieces(data: Data) -> Sequence[bytes | bytearray | memoryview]:
    return (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data


def data_size(data: Data) -> int:
    return sum(memoryview(p).nbytes for p in pieces(data))


def _joined(data: Data) -> bytes:
    return bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else b"".join(data)


TEMP_SUFFIX = ".tmp"
# A temporary's name carries nothing of the file it becomes: Hudi's listings take any name holding a log
# file's pattern for a log file (`FSUtils.isLogFile`: `LOG_FILE_PATTERN.matcher(name).find()`) and any
# holding ".parquet" for a base file. Releases before this one named temporaries `.<name>.<hex>.tmp`;
# the sweep still removes those.
TEMP_PREFIX = ".ingest-"
_TEMP_NAME = re.compile(r"^\.(?:ingest-|.+\.)[0-9a-f]{32}\.tmp$")


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")  # two letters at least: not a drive letter


# URL schemes that name one file system (fsspec's aliases, and Hadoop's for S3).
_SAME_FILE_SYSTEM = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs", "az": "abfs", "local": "file"}


# fsspec back ends whose `pipe_file(mode="create")` the store itself makes conditional, from the release
# that added it (earlier ones fail on the argument): S3's `If-None-Match: *` PUT, GCS's
# `ifGenerationMatch=0`, Azure's upload without overwrite. Others inherit fsspec's generic create, "non-atomic
# but simple": `exists`, then a write that replaces whatever another writer created in between.
_EXCLUSIVE_CREATE = {
    "s3fs.core.S3FileSystem": (2024, 12),
    "gcsfs.core.GCSFileSystem": (2024, 12),
    "adlfs.spec.AzureBlobFileSystem": (2024, 12),
}


def _release(module: str) -> tuple[int, ...]:
    import importlib

    version = getattr(importlib.import_module(module.split(".")[0]), "__version__", "0")
    return tuple(int(p) for p in re.findall(r"\d+", version)[:2])


def exclusive_create_class(fs_class: type) -> bool:
    """Whether `Storage.create` on a file system of this class is exclusive: local disks (a hard link
    fails on an existing name), or a back end whose own create is conditional, unless a subclass
    overrides how it writes."""
    if issubclass(fs_class, LocalFileSystem):
        return True
    owner = next((c for c in fs_class.__mro__ if "_pipe_file" in c.__dict__ or "pipe_file" in c.__dict__), None)
    since = _EXCLUSIVE_CREATE.get(f"{owner.__module__}.{owner.__qualname__}") if owner is not None else None
    return since is not None and _release(owner.__module__) >= since


def exclusive_create(url: str) -> bool | None:
    """`exclusive_create_class` of the file system at `url`, without opening it (a configuration is checked
    where the lake may be out of reach, and an HDFS client needs a JVM); None when its back end is not
    installed here. A URL fsspec has no back end for cannot be written at all: False."""
    try:
        return exclusive_create_class(fsspec.get_filesystem_class(fsspec.utils.get_protocol(str(url))))
    except ValueError:
        return False
    except ImportError:
        return None


def within(root: str, location: str) -> bool:
    """Whether `location` is `root` or lies under it, compared as `Storage.relative` compares them:
    the scheme dropped within one file system, `..` resolved, a path without scheme local. Needs no
    file system: a configuration is checked where the lake may be out of reach."""

    def parts(url: str) -> tuple[str, str]:
        scheme = _SCHEME.match(url)
        name = scheme.group(1).lower() if scheme else "file"
        path = url[scheme.end():] if scheme else url
        if name in ("file", "local"):
            path = os.path.abspath(path[2:] if path.startswith("//") else path)
        else:
            path = path.lstrip("/")
        return _SAME_FILE_SYSTEM.get(name, name), posixpath.normpath("/" + path.strip("/"))

    (fs_root, at_root), (fs_location, at_location) = parts(root), parts(location)
    return fs_root == fs_location and (at_location == at_root or at_location.startswith(at_root.rstrip("/") + "/"))


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _opened(path: str, mode: str):
    """`open(path, mode)`, making its folder first if it is missing. Most writes go to folders that
    exist (a partition's next log block, a commit's next marker): trying first spares each of them
    the checks `os.makedirs` makes of a folder that is there."""
    try:
        return open(path, mode)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return open(path, mode)


def _naming(error: OSError, path: str) -> OSError:
    """The same error, naming `path` (a failed flush or close names no file)."""
    return OSError(error.errno, error.strerror or str(error), path)


@dataclass(frozen=True)
class FileInfo:
    """One entry of a listing, with its path relative to the storage root."""

    path: str
    size: int
    is_dir: bool

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


class Storage:
    """A table's file system: paths are relative to `base_url` and use forward slashes."""

    def __init__(self, base_url: str, options: Mapping[str, Any] | None = None):
        self.base_url = str(base_url).rstrip("/") or "/"
        self.options: dict[str, Any] = dict(options or {})
        fs_options = {k: v for k, v in self.options.items() if k != "fsync"}
        self.fsync = bool(self.options.get("fsync", False))
        self.fs, root = fsspec.core.url_to_fs(self.base_url, **fs_options)
        self.root = root.rstrip("/") if root not in ("/", "") else root
        self.is_local = isinstance(self.fs, LocalFileSystem)
        if self.is_local and "://" not in self.base_url and not self.base_url.startswith("file:"):
            # Plans name files by URL (`CleanActionExecutor`, `BaseRollbackHelper` open them as given):
            # a relative one would resolve against the working directory of whichever process runs them.
            # Normalized as Hadoop's `Path` is, so `..` does not make Hudi see another base path.
            self.base_url = posixpath.normpath(self.root)

    def __reduce__(self):
        # Executors rebuild the file system from the URL and options rather than unpickling clients.
        return (Storage, (self.base_url, self.options))

    def __repr__(self) -> str:
        return f"Storage({self.base_url!r})"

    # -- capabilities -------------------------------------------------------------------------

    @property
    def can_append(self) -> bool:
        """True where appending bytes to an existing file is a real, in-place append."""
        return self.is_local

    @property
    def creates_exclusively(self) -> bool:
        """True where `create` is put-if-absent the file system enforces (`exclusive_create_class`)."""
        return exclusive_create_class(type(self.fs))

    @property
    def requests_at_once(self) -> int:
        """How many calls `map` makes side by side: one on a local disk; on an object store as many as
        its client keeps connections (`config_kwargs: {max_pool_connections: N}` raises them)."""
        if self.is_local:
            return 1
        pool = (self.options.get("config_kwargs") or {}).get("max_pool_connections")
        return max(1, int(pool)) if pool else REQUESTS_AT_ONCE

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """`[fn(item) for item in items]`, with the calls side by side where each waits on a network
        round trip (object stores; a commit's independent requests then cost one round trip, not one
        each), one after another on a local disk, where threads bought nothing. Every call has
        returned or failed before this does; the first failure, in the items' order, is raised."""
        items = list(items)
        if self.requests_at_once < 2 or len(items) < 2:
            return [fn(item) for item in items]
        pool = ThreadPoolExecutor(min(self.requests_at_once, len(items)), thread_name_prefix="ingest-storage")
        try:
            futures = [pool.submit(fn, item) for item in items]
            wait(futures)
        except BaseException:
            # Interrupted: no queued call starts, and none still runs once this raises (a write
            # finishing after its caller gave up could land after another writer's rollback).
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return [f.result() for f in futures]

    # -- paths ----------------------------------------------------------------------------------

    def full_path(self, rel: str = "") -> str:
        """The file system path of `rel` (relative to the table root)."""
        rel = rel.strip("/")
        if not rel:
            return self.root
        return f"{self.root}/{rel}" if self.root != "/" else f"/{rel}"

    def url(self, rel: str = "") -> str:
        """A URL of `rel` that other tools (hudi-rs, Spark) can open."""
        rel = rel.strip("/")
        return f"{self.base_url}/{rel}" if rel else self.base_url

    def child(self, rel: str) -> Storage:
        """A storage rooted at a sub-folder, sharing the options."""
        return Storage(self.url(rel), self.options)

    def relative(self, location: str) -> str | None:
        """The table-relative path of a file a plan names by full location, or None if it lies outside.

        Hudi's `FSUtils.getRelativePartitionPath` compares paths without their scheme: a Hudi writer's
        plans name local files `file:/...` and S3 ones `s3a://...`, whatever URL this table was opened
        by. So does this (a bucket must still match). `..` is resolved first, as Hadoop's `Path` does.
        """
        scheme = _SCHEME.match(location)
        protocols = (self.fs.protocol,) if isinstance(self.fs.protocol, str) else tuple(self.fs.protocol)
        if scheme and scheme.group(1).lower() not in protocols:
            return None  # another file system (`hdfs://` beside a local table)
        full = posixpath.normpath(self.fs._strip_protocol(location))
        root = posixpath.normpath(self.root) if self.root not in ("", "/") else self.root
        prefix = root.rstrip("/") + "/"
        return full[len(prefix):] or None if full.startswith(prefix) else None

    def resolve_locations(self, locations: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the table-relative paths of the locations inside the table, the locations outside it)."""
        resolved = [(location, self.relative(location)) for location in locations]
        return (tuple(r for _, r in resolved if r is not None),
                tuple(location for location, r in resolved if r is None))

    def _rel(self, full: str) -> str:
        full = full.rstrip("/")
        prefix = self.root.rstrip("/") + "/"
        if full.startswith(prefix):
            return full[len(prefix):]
        if full == self.root.rstrip("/"):
            return ""
        raise ValueError(f"{full} is outside {self.root}")

    # -- reads ----------------------------------------------------------------------------------

    # Local files are read and stat-ed directly: a small batch checks the tail of every log file it
    # appends to, and fsspec's layers took several times the system calls' own time for each.

    def read(self, rel: str) -> bytes:
        full = self.full_path(rel)
        if self.is_local:
            with open(full, "rb") as f:
                return f.read()
        return self.fs.cat_file(full)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes `start` to `end` (exclusive; negative: from the end, as in a slice)."""
        full = self.full_path(rel)
        if self.is_local and start >= 0 and end >= 0:
            with open(full, "rb") as f:
                f.seek(start)
                return f.read(max(0, end - start))
        return self.fs.cat_file(full, start=start, end=end)

    def open(self, rel: str) -> IO[bytes]:
        """A seekable binary reader."""
        return self.fs.open(self.full_path(rel), "rb")

    def exists(self, rel: str) -> bool:
        full = self.full_path(rel)
        return os.path.exists(full) if self.is_local else self.fs.exists(full)

    def size(self, rel: str) -> int:
        full = self.full_path(rel)
        return os.stat(full).st_size if self.is_local else int(self.fs.size(full))

    def modified(self, rel: str) -> float:
        """A file's modification time in epoch seconds (FileNotFoundError if absent); Hudi 0.x reads
        completion times from it."""
        full = self.full_path(rel)
        if self.is_local:
            return os.stat(full).st_mtime
        moment = self.fs.modified(full)
        return moment.timestamp() if moment.tzinfo else moment.replace(tzinfo=timezone.utc).timestamp()

    def list(self, rel: str = "") -> list[FileInfo]:
        """Direct children of a folder; an absent folder lists as empty."""
        full = self.full_path(rel)
        if self.is_local:
            return self._list_local(full)
        try:
            entries = self.fs.ls(full, detail=True, refresh=True)
        except FileNotFoundError:
            return []
        out = []
        for e in entries:
            path = self._rel(e["name"])
            if path == rel.strip("/"):
                continue  # some object stores list the folder marker itself
            out.append(FileInfo(path, int(e.get("size") or 0), e.get("type") == "directory"))
        return out

    def _list_local(self, full: str) -> list[FileInfo]:
        try:
            with os.scandir(full) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for e in entries:
            try:
                is_dir = e.is_dir()
                size = 0 if is_dir else e.stat().st_size
            except FileNotFoundError:
                continue  # gone since the folder was read: a writer's temporary file, renamed or linked into place
            out.append(FileInfo(self._rel(e.path), size, is_dir))
        return out

    def walk_files(self, rel: str = "") -> Iterator[FileInfo]:
        """Every file below a folder (an absent folder has none). An object store lists the whole
        prefix in one request or a page of them (fsspec's `find`), where a walk lists each folder."""
        if self.is_local:
            yield from self._walk_local(rel)
            return
        try:
            found = self.fs.find(self.full_path(rel), detail=True, refresh=True)
        except FileNotFoundError:
            return
        folder = rel.strip("/")
        for name, e in sorted(found.items()):
            path = self._rel(name)
            if e.get("type") == "directory" or name.endswith("/") or path == folder:
                continue  # folder markers some object stores keep
            yield FileInfo(path, int(e.get("size") or 0), False)

    def _walk_local(self, rel: str) -> Iterator[FileInfo]:
        for entry in self.list(rel):
            if entry.is_dir:
                yield from self._walk_local(entry.path)
            else:
                yield entry

    # -- writes ---------------------------------------------------------------------------------

    def _sync(self, f) -> None:
        f.flush()
        if self.fsync:
            os.fsync(f.fileno())

    def _write_aside(self, full: str, data: Data) -> str:
        """Write `data` to a hidden temporary file next to `full`; returns its path.

        On failure (a full disk, a read-only folder) the temporary is removed and the error names
        `full`, the file that could not be written."""
        directory = os.path.dirname(full)
        tmp = os.path.join(directory, f"{TEMP_PREFIX}{uuid.uuid4().hex}{TEMP_SUFFIX}")
        try:
            with _opened(tmp, "wb") as f:
                for piece in pieces(data):
                    f.write(piece)
                self._sync(f)
        except BaseException as e:
            _remove_quietly(tmp)
            if isinstance(e, OSError):
                raise _naming(e, full) from e
            raise
        return tmp

    def write(self, rel: str, data: Data, *, crash_point: str | None = None) -> None:
        """Replace `rel` with `data` atomically (readers never see a partial file).

        `crash_point` names a fault-injection point (see `ingest.faults`) reached after the bytes are
        written aside and before they are published.
        """
        full = self.full_path(rel)
        if self.is_local:
            tmp = self._write_aside(full, data)
            try:
                if crash_point:
                    faults.crash_point(crash_point)
                os.replace(tmp, full)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        else:
            if crash_point:
                faults.crash_point(crash_point)
            self.fs.pipe_file(full, _joined(data))

    def touch(self, rel: str) -> None:
        """Write `rel` as an empty file (a marker, a heartbeat): nothing partial can be seen, so no
        temporary beside it either, where a Hudi process listing the folder would take it for one of
        its own (`DirectWriteMarkers.allMarkerFilePaths` returns every file of a marker folder)."""
        full = self.full_path(rel)
        if self.is_local:
            try:
                with _opened(full, "wb") as f:
                    self._sync(f)
            except OSError as e:
                raise _naming(e, full) from e
        else:
            self.fs.pipe_file(full, b"")

    def create(self, rel: str, data: Data) -> bool:
        """Write `rel` only if it does not exist; True if this call created it.

        Atomic and exclusive where `creates_exclusively`: on local disks the content is written aside
        and hard-linked into place (link fails if the name exists); on object stores it is a conditional
        PUT. Elsewhere fsspec checks, then writes: callers that need exclusion refuse such storage.
        """
        full = self.full_path(rel)
        if self.is_local:
            tmp = self._write_aside(full, data)
            try:
                os.link(tmp, full)
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
            return True
        try:
            self.fs.pipe_file(full, _joined(data), mode="create")
        except FileExistsError:
            return False
        except OSError as e:  # some backends report the failed precondition as a generic error
            if "PreconditionFailed" in str(e) or "412" in str(e):
                return False
            raise
        return True

    def append(self, rel: str, data: Data) -> int:
        """Append to `rel` (creating it if absent) and return its new size; local file systems only."""
        if not self.can_append:
            raise OSError(f"{self.base_url} does not support appending; write a new file instead")
        full = self.full_path(rel)
        with _opened(full, "ab") as f:
            start = f.tell()
            try:
                for piece in pieces(data):
                    f.write(piece)
                self._sync(f)
            except OSError as e:
                # A partial append (the disk filled up) would leave a torn block: cut it off again.
                try:
                    f.truncate(start)
                except OSError:
                    pass
                raise _naming(e, full) from e
            return f.tell()

    def truncate(self, rel: str, size: int) -> None:
        """Cut `rel` back to `size` bytes (local file systems only).

        Used when a retried task finds bytes that an earlier attempt of the same task appended past the
        point the commit plan recorded: those bytes belong to no one else, so removing them restores the
        file the plan describes.
        """
        if not self.can_append:
            raise OSError(f"{self.base_url} does not support truncating files")
        full = self.full_path(rel)
        with open(full, "r+b") as f:
            f.truncate(size)
            self._sync(f)

    def delete(self, rel: str) -> bool:
        """Remove a file; False if it was already gone."""
        try:
            self.fs.rm_file(self.full_path(rel))
            return True
        except FileNotFoundError:
            return False

    def delete_tree(self, rel: str) -> None:
        """Remove a folder and everything below it, if present."""
        full = self.full_path(rel)
        try:
            self.fs.rm(full, recursive=True)
        except FileNotFoundError:
            pass
        if self.is_local and os.path.isdir(full):
            # fsspec leaves empty local folders behind on some versions.
            import shutil

            shutil.rmtree(full, ignore_errors=True)

    def sweep_temporaries(self, min_age_seconds: float) -> list[str]:
        """Remove the temporaries of writes that died (`_write_aside`'s `.ingest-<hex>.tmp` files),
        table-wide, and return them. A temporary lives for one file write, which keeps touching it;
        one untouched for `min_age_seconds` belongs to no live writer. Object stores have none."""
        if not self.is_local:
            return []
        cutoff = time.time() - min_age_seconds
        removed = []
        for folder, _dirs, names in os.walk(self.root):
            for name in names:
                if not _TEMP_NAME.match(name):
                    continue
                path = os.path.join(folder, name)
                try:
                    if os.stat(path).st_mtime < cutoff:
                        os.unlink(path)
                        removed.append(self._rel(path))
                except FileNotFoundError:
                    pass
        return removed

    def makedirs(self, rel: str) -> None:
        """Create a folder where folders exist (local disks); a no-op on object stores."""
        if self.is_local:
            os.makedirs(self.full_path(rel), exist_ok=True)
