"""Hudi's table lock as `FileSystemBasedLockProvider` (Hudi 0.14/0.15) takes it, so Hudi writers and
ingest take turns on one table.

Hudi takes its lock only in `OPTIMISTIC_CONCURRENCY_CONTROL` mode (`LockManager.lock`: nothing unless
the concurrency mode supports it), and in that mode always cleans failed writes lazily
(`HoodieWriteConfig.Builder.autoAdjustConfigsForConcurrencyMode` sets
`hoodie.cleaner.policy.failed.writes=LAZY`): a pending instant is rolled back only once its heartbeat
has expired. The provider's rules:

* the lock is the file `<hoodie.write.lock.filesystem.path>/lock`, by default `<base path>/.hoodie/lock`
  (the constructor: `lockDirectory` falls back to `<base path>/.hoodie`, `LOCK_FILE_NAME`), on a file
  system whose create is atomic (`StorageSchemes.isAtomicCreationSupported`: file, hdfs, viewfs,
  hopsfs) or listed in `hoodie.fs.atomic_creation.support`;
* `tryLock`: if the file exists and has not expired, the lock is held by someone else; an expired one
  is deleted; then the file is created, failing if it exists (`fs.create(lockFile, false)` in
  `acquireLock`), holding `LockInfo` as Jackson's pretty printer writes it: `lockCreateTime`
  (`yyyy-MM-dd HH:mm:ss.SSS` in the JVM's zone), `lockThreadName`, `lockStacksInfo`
  (`class.method (file:line)` per frame);
* expiry (`checkIfExpired`): the file's modification time is more than
  `hoodie.write.lock.filesystem.expire` minutes old; 0, the default, never expires;
* `unlock`: delete the file.

ingest writes that file the same way, and only where its own create is exclusive too
(`Storage.creates_exclusively`): Hudi creates the lock atomically on HDFS, but ingest reaches HDFS through
fsspec (pyarrow), whose create checks that the file is absent and then writes it, so ingest could replace
a lock a Hudi writer had just taken. Such a lock directory is refused before anything is written. It also keeps the file's modification time fresh while it holds
the lock (a rewrite of the same content): ingest holds the lock from planning to commit, which may
outlast the expiry that Hudi sets for its short commit-time critical section.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from ingest.errors import ConfigError
from ingest.hudi.timeline.commit_metadata import jackson_dumps
from ingest.storage import Storage, exclusive_create

CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
OCC = "OPTIMISTIC_CONCURRENCY_CONTROL"
PROVIDER = "hoodie.write.lock.provider"
FILE_SYSTEM_PROVIDER = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
LOCK_PATH = "hoodie.write.lock.filesystem.path"
LOCK_EXPIRE = "hoodie.write.lock.filesystem.expire"
FAILED_WRITES = "hoodie.cleaner.policy.failed.writes"
ATOMIC_CREATION = "hoodie.fs.atomic_creation.support"
# StorageSchemes whose supportAtomicCreation is true (the provider's constructor refuses the others).
ATOMIC_CREATION_SCHEMES = ("file", "hdfs", "viewfs", "hopsfs")
LOCK_FILE_NAME = "lock"
THREAD_PREFIX = "ingest-writer-"  # lockThreadName of a lock ingest took: the prefix, the lease owner, the table


@dataclass(frozen=True)
class LockSettings:
    """Where Hudi's lock file is and when it expires."""

    directory: str              # a URL; the file is `<directory>/lock`
    expire_minutes: int = 0     # 0: never (HoodieLockConfig.FILESYSTEM_LOCK_EXPIRE)
    zone: str = "UTC"           # the JVM zone `lockCreateTime` is written in

    @classmethod
    def from_hudi(cls, hudi: Mapping[str, str], table_path: str, zone: str = "UTC") -> LockSettings | None:
        """The lock a writer with these Hudi settings takes; None in single-writer mode (no lock)."""
        if str(hudi.get(CONCURRENCY_MODE) or "SINGLE_WRITER").upper() != OCC:
            return None
        provider = hudi.get(PROVIDER)
        if provider != FILE_SYSTEM_PROVIDER:
            raise ConfigError(f"is {provider or 'unset (Hudi: ZookeeperBasedLockProvider)'}; with {CONCURRENCY_MODE} "
                              f"{OCC} ingest can take only {FILE_SYSTEM_PROVIDER}", key=f"hudi.{PROVIDER}")
        expire = int(hudi.get(LOCK_EXPIRE) or 0)
        if expire < 0:
            raise ConfigError(f"must be a non-negative number of minutes, got {expire}", key=f"hudi.{LOCK_EXPIRE}")
        directory = hudi.get(LOCK_PATH) or f"{table_path.rstrip('/')}/.hoodie"
        scheme = directory.split("://", 1)[0].lower() if "://" in directory else "file"
        custom = [s.strip() for s in str(hudi.get(ATOMIC_CREATION) or "").split(",") if s.strip()]
        if scheme not in ATOMIC_CREATION_SCHEMES and scheme not in custom:
            raise ConfigError(f"{directory}: Hudi's file-system lock needs a file system whose create is atomic "
                              f"({', '.join(ATOMIC_CREATION_SCHEMES)}, or a scheme listed in {ATOMIC_CREATION}); "
                              f"Hudi's writers refuse scheme {scheme}", key=f"hudi.{LOCK_PATH}")
        refuse_non_exclusive_create(directory, LOCK_PATH if hudi.get(LOCK_PATH) else PROVIDER,
                                    exclusive_create(directory))
        return cls(directory, expire, zone)


def refuse_non_exclusive_create(directory: str, key: str, exclusive: bool | None) -> None:
    """`FileSystemBasedLockProvider.acquireLock` creates the lock with `fs.create(lockFile, false)`, which
    fails if the file exists: ingest can share the lock only where its own create is exclusive too.
    `exclusive` None: not known here (the back end is not installed); the writer checks again."""
    if exclusive is False:
        raise ConfigError(f"{directory}: ingest cannot create Hudi's lock file there exclusively (its fsspec file "
                          "system checks that the file is absent, then writes it), so it could replace a lock a "
                          "Hudi writer has just taken (FileSystemBasedLockProvider.acquireLock creates it with "
                          "fs.create(lockFile, false)); put the lock on a local disk, or on S3, GCS or Azure "
                          f"(s3fs, gcsfs, adlfs 2024.12 or later) with the scheme listed in {ATOMIC_CREATION}",
                          key=f"hudi.{key}")


def lazy_failed_writes(hudi: Mapping[str, str]) -> bool:
    """Whether failed writes are cleaned lazily: always under optimistic concurrency control (Hudi sets
    it so), else as `hoodie.cleaner.policy.failed.writes` says (default EAGER)."""
    if str(hudi.get(CONCURRENCY_MODE) or "").upper() == OCC:
        return True
    return str(hudi.get(FAILED_WRITES) or "EAGER").upper() == "LAZY"


def lock_info(thread_name: str, zone: str = "UTC", now: float | None = None) -> bytes:
    """`LockInfo.toString()`: the lock file's content."""
    moment = datetime.fromtimestamp(time.time() if now is None else now, ZoneInfo(zone))
    created = moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
    stack = []
    frame = sys._getframe(1)
    while frame is not None:  # innermost first, as Thread.getStackTrace lists frames
        code = frame.f_code
        stack.append(f"{frame.f_globals.get('__name__', '?')}.{getattr(code, 'co_qualname', code.co_name)} "
                     f"({code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})")
        frame = frame.f_back
    return jackson_dumps({"lockCreateTime": created, "lockThreadName": thread_name,
                          "lockStacksInfo": stack}).encode("utf-8")


def thread_name_of(content: bytes) -> str | None:
    """The `lockThreadName` of a lock file, None if it is not LockInfo JSON (older Hudi wrote text)."""
    try:
        name = json.loads(content.decode("utf-8")).get("lockThreadName")
    except (ValueError, AttributeError, UnicodeDecodeError):
        return None
    return name if isinstance(name, str) else None


class FileSystemLock:
    """Hudi's lock file, taken and released as `FileSystemBasedLockProvider` does."""

    def __init__(self, settings: LockSettings, storage_options: Mapping | None = None, owner: str = "",
                 table: str = ""):
        self.settings = settings
        self.storage = Storage(settings.directory, storage_options)
        refuse_non_exclusive_create(settings.directory, LOCK_PATH, self.storage.creates_exclusively)
        # The table is named too: `hoodie.write.lock.filesystem.path` may hold the lock of several tables.
        self.table = table
        self.thread_name = f"{THREAD_PREFIX}{owner}" + (f" {table}" if table else "")
        self.content: bytes | None = None  # what we wrote, while we hold it

    @property
    def url(self) -> str:
        return self.storage.url(LOCK_FILE_NAME)

    def _read(self) -> bytes | None:
        try:
            return self.storage.read(LOCK_FILE_NAME)
        except FileNotFoundError:
            return None

    def expired(self, now: float | None = None) -> bool:
        """`checkIfExpired`: modification time older than the expiry (never, with expiry 0)."""
        if self.settings.expire_minutes == 0:
            return False
        try:
            modified = self.storage.modified(LOCK_FILE_NAME)
        except FileNotFoundError:
            return True
        return (time.time() if now is None else now) - modified > self.settings.expire_minutes * 60

    def holder(self) -> str | None:
        """The `lockThreadName` of the current lock file ('' if unreadable), None if there is none."""
        content = self._read()
        if content is None:
            return None
        return thread_name_of(content) or ""

    def try_lock(self, stale_ingest_lock: bool = False) -> bool:
        """`tryLock`: False while someone else holds an unexpired lock. `stale_ingest_lock`: the caller
        has just taken the ingest lease, so a lock file an ingest writer left is a lost writer's (a
        live ingest writer holds Hudi's lock only under the lease) and is removed like an expired one."""
        holder = self.holder()
        if holder is not None:
            if not (self.expired() or (stale_ingest_lock and self._ours_to_take_over(holder))):
                return False
            self.storage.delete(LOCK_FILE_NAME)
        content = lock_info(self.thread_name, self.settings.zone)
        if not self.storage.create(LOCK_FILE_NAME, content):
            return False
        self.content = content
        return True

    def _ours_to_take_over(self, holder: str) -> bool:
        """An ingest writer's lock of this table (or, named by an earlier release, of no table said): under
        this table's lease, its holder is gone. Another table's ingest writer may be live."""
        if not holder.startswith(THREAD_PREFIX):
            return False
        _, _, table = holder.partition(" ")
        return not table or table == self.table

    def held(self) -> bool:
        """True while the lock file is still the one this writer created."""
        return self.content is not None and self._read() == self.content

    def refresh(self) -> None:
        """Keep the modification time fresh (only while the file is still ours)."""
        if self.held():
            self.storage.write(LOCK_FILE_NAME, self.content)

    def unlock(self) -> None:
        """`unlock`: delete the file, if it is still ours."""
        if self.held():
            self.storage.delete(LOCK_FILE_NAME)
        self.content = None
