"""One commit at a time per table: a lease with heartbeat and expiry, safe on object stores.

Object stores have neither rename nor locks, but they do have put-if-absent (and a file system without
an exclusive create, `Storage.creates_exclusively`, is refused before anything is written). The lease is a series
of epoch files `.hoodie/.aux/ingest/lock/writer.<epoch>.json`: acquiring means creating the next
epoch file, which exactly one contender can do. The holder rewrites its own file as a heartbeat. A
contender may take over only when the current epoch is released, its heartbeat is older than the
holder's expiry, or the holder's process is certainly gone (`ingest.liveness`: the same process start
on this host, boot and PID namespace, not merely a pid that looks dead from another container); it
does so by creating the next epoch — so the previous holder, which checks before each commit that
no newer epoch exists, learns it has lost the lease and stops instead of committing.

Several ingest writers of one table (a stream and a backfill) take turns: each takes the lease per
commit and waits for it up to `wait_seconds`. With Hudi's optimistic concurrency control configured,
the lease also takes Hudi's own lock file (`ingest.hudi.table.lock_provider`), after the lease (so ingest
writers never deadlock on it) and for as long, so Hudi writers take turns with ingest too.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingest.errors import ConcurrentWriterError, ConfigError, TableNotFound, TimelineError
from ingest.hudi.config.table_config import TableConfig
from ingest.hudi.table.lock_provider import FileSystemLock, LockSettings
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.timeline import AUX_FOLDER, refuse_pending_restore
from ingest.liveness import ProcessIdentity
from ingest.storage import Storage
from ingest.write.index_bootstrap import Manifest, refuse_unmergeable_writes
from ingest.write.options import WriteOptions

log = logging.getLogger(__name__)
LOCK_FOLDER = f"{AUX_FOLDER}/ingest/lock"
_EPOCH_RE = re.compile(r"^writer\.(\d{10})\.json$")
# Lease files of earlier epochs are deleted this many at a time, side by side: on an object store one
# round trip every few commits, where deleting one per commit cost one every commit.
OLD_EPOCHS_AT_ONCE = 8


def _refuse_unwritable(storage: Storage, writes_records: bool) -> None:
    """Before the lease is taken (so a refused table is left as it was): what the table is made of,
    a restore pending on it, a schema Hudi evolved on read, bucket index metadata Hudi keeps, and for a
    holder that writes records (reading the latest slices through the key index) another writer's log
    blocks ingest does not merge. A timeline an upgrade is moving is the upgrade's (which takes this lease to finish it);
    writers meet it under the lease, as they meet instants archival removes while this looks."""
    try:
        config = TableConfig.load(storage)
    except TableNotFound:
        return  # the writer creates it
    config.check_writable(storage.base_url)
    if writes_records:
        config.check_keyed_records(storage.base_url)
    table = HudiTable(storage, config)
    # Four reads that do not wait on each other, side by side on an object store; each one's failure
    # is raised where the checks, one after another, would have met it.
    timeline, schema_folder, bucket_folder, manifest = storage.map(_outcome, [
        table.timeline, table.schema_folder_listing, table.bucket_index_folder_listing,
        lambda: Manifest.read(table) if writes_records else None])
    try:
        timeline = timeline.value()
    except TimelineError:
        return
    refuse_pending_restore(timeline, storage.base_url)
    table.check_no_schema_history(timeline, schema_folder.value())
    table.check_no_bucket_index_metadata(bucket_folder.value())
    if writes_records:
        try:
            refuse_unmergeable_writes(table, timeline, manifest.value())
        except FileNotFoundError:
            return
        except TimelineError as e:
            if not isinstance(e.__cause__, FileNotFoundError):
                raise  # a commit that does not parse: refused here, before anything is written
            return


@dataclass(frozen=True)
class _Outcome:
    """A read's value, or the exception it raised, kept to be raised where it is used."""

    result: Any = None
    error: Exception | None = None

    def value(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


def _outcome(read: Callable[[], Any]) -> _Outcome:
    try:
        return _Outcome(read())
    except Exception as e:  # noqa: BLE001 - raised again by `value`, where the read's result is used
        return _Outcome(error=e)


@dataclass(frozen=True)
class LeaseRecord:
    owner: str
    host: str
    pid: int
    acquired_at: float
    heartbeat_at: float
    expiry: float          # the holder's own expiry: contenders judge its lease by it
    released: bool = False
    boot_id: str | None = None          # with the two below: the holder's process start (ingest.liveness)
    pid_namespace: str | None = None
    start_ticks: int | None = None

    def to_bytes(self) -> bytes:
        return json.dumps(self.__dict__, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> LeaseRecord:
        d = json.loads(data.decode())
        who = ProcessIdentity.from_dict(d)
        return cls(d["owner"], who.host, who.pid, float(d["acquired_at"]), float(d["heartbeat_at"]),
                   float(d.get("expiry", 60.0)), bool(d.get("released", False)), who.boot_id, who.pid_namespace,
                   who.start_ticks)

    @property
    def identity(self) -> ProcessIdentity:
        return ProcessIdentity(self.host, self.pid, self.boot_id, self.pid_namespace, self.start_ticks)

    def expired(self, now: float) -> bool:
        """Released, heartbeat too old, or the holder's process certainly gone (never a bare pid test)."""
        return self.released or now - self.heartbeat_at >= self.expiry or self.identity.certainly_dead()


def _epoch_path(epoch: int) -> str:
    return f"{LOCK_FOLDER}/writer.{epoch:010d}.json"


class WriterLock:
    """The lease of one writer process on one table."""

    def __init__(self, storage: Storage, expiry_seconds: float = 60.0, description: str = "", *,
                 wait_seconds: float = 0.0, hudi_lock: LockSettings | None = None, writes_records: bool = False):
        if not storage.creates_exclusively:
            # The lease is only as safe as `create`: two writers that both "create" the next epoch both
            # believe they hold it (what `FileSystemBasedLockProvider` refuses non-atomic file systems for).
            raise ConfigError(f"{storage.base_url}: ingest's writer lease needs a file system whose create is "
                              f"exclusive (a local disk; S3, GCS or Azure through s3fs, gcsfs or adlfs 2024.12 or "
                              f"later); {type(storage.fs).__name__} checks that a file is absent, then writes it, "
                              f"so two writers could both take the lease", key="table.path")
        self.storage = storage
        self.writes_records = writes_records  # a writer's lease, not a table service's
        self.expiry = expiry_seconds
        self.owner = f"{uuid.uuid4()}"
        self.description = description
        self.wait_seconds = wait_seconds
        self.hudi_lock = FileSystemLock(hudi_lock, storage.options, self.owner, storage.base_url) if hudi_lock else None
        self.epoch: int | None = None
        self._acquired_at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- state on storage ---------------------------------------------------------------------

    def _epochs(self) -> list[int]:
        out = []
        for entry in self.storage.list(LOCK_FOLDER):
            m = _EPOCH_RE.match(entry.name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def _read(self, epoch: int) -> LeaseRecord | None:
        try:
            return LeaseRecord.from_bytes(self.storage.read(_epoch_path(epoch)))
        except FileNotFoundError:
            return None

    def _record(self, released: bool = False) -> LeaseRecord:
        me = ProcessIdentity.current()
        return LeaseRecord(self.owner, me.host, me.pid, self._acquired_at, time.time(), self.expiry, released,
                           me.boot_id, me.pid_namespace, me.start_ticks)

    # -- lease --------------------------------------------------------------------------------

    def acquire(self) -> None:
        """Take the lease (and Hudi's lock, if configured), waiting up to `wait_seconds` for them;
        then raise ConcurrentWriterError naming the holder. A table ingest cannot write is refused
        first (UnsupportedTable), so it gets no lease file."""
        _refuse_unwritable(self.storage, self.writes_records)
        deadline = time.monotonic() + self.wait_seconds
        pause = 0.05
        while True:
            refusal = self._try_lease()
            if refusal is None:
                refusal = self._try_hudi_lock()
                if refusal is None:
                    return
            left = deadline - time.monotonic()
            if left <= 0:
                waited = f" (waited {self.wait_seconds:.0f}s)" if self.wait_seconds else ""
                raise ConcurrentWriterError(refusal + waited)
            time.sleep(min(pause * random.uniform(0.5, 1.0), left))  # jitter: waiters do not retry in step
            pause = min(pause * 2, 1.0, max(self.expiry / 4, 0.05))

    def _try_lease(self) -> str | None:
        """Take the lease; None on success, else why not."""
        for _ in range(5):
            epochs = self._epochs()
            current = epochs[-1] if epochs else 0
            holder = self._read(current) if current else None
            if holder is not None and holder.owner == self.owner and not holder.released:
                # Our own create landed though its answer was lost (a retried conditional PUT is refused).
                self.epoch = current
                self._start_heartbeat()
                return None
            if holder is not None and not holder.expired(time.time()):
                age = time.time() - holder.heartbeat_at
                return (f"{self.storage.base_url} is being written by another writer (host {holder.host}, "
                        f"pid {holder.pid}, lease epoch {current}, last heartbeat {age:.0f}s ago); "
                        f"writers of a table take turns, one commit at a time. The lease expires in "
                        f"{max(holder.expiry - age, 0):.0f}s if that writer has stopped.")
            self._acquired_at = time.time()
            if self.storage.create(_epoch_path(current + 1), self._record().to_bytes()):
                self.epoch = current + 1
                if len(epochs) - 2 >= OLD_EPOCHS_AT_ONCE:  # the two before this one stay
                    self.storage.map(self.storage.delete, [_epoch_path(old) for old in epochs[:-2]])
                self._start_heartbeat()
                self._sweep()
                return None
        return f"{self.storage.base_url}: could not take the writer lease (contended)"

    def _try_hudi_lock(self) -> str | None:
        """Take Hudi's lock file while holding the lease; on refusal give the lease back."""
        if self.hudi_lock is None or self.hudi_lock.try_lock(stale_ingest_lock=True):
            return None
        holder = self.hudi_lock.holder()
        self.release()
        expiry = self.hudi_lock.settings.expire_minutes
        return (f"{self.storage.base_url}: Hudi's table lock {self.hudi_lock.url} is held by another writer "
                f"(lockThreadName {holder or '?'}); " + (f"it expires {expiry} minute(s) after it was taken"
                                                         if expiry else "it never expires: if its writer is gone, "
                                                         "delete the file (hoodie.write.lock.filesystem.expire is 0)"))

    def _sweep(self) -> None:
        """Holding the lease, remove what writers that died left half-written (`.tmp` files that
        nothing has touched for longer than a lease lasts without a heartbeat)."""
        removed = self.storage.sweep_temporaries(self.expiry)
        if removed:
            log.info("removed %d temporary file(s) that dead writers left in %s", len(removed), self.storage.base_url)

    def check(self) -> None:
        """Fencing before a commit: raise if another writer has taken the lease since."""
        if self.epoch is None:
            raise ConcurrentWriterError("the writer lease is not held")
        epochs = self._epochs()
        mine = self._read(self.epoch)
        if (epochs and epochs[-1] > self.epoch) or mine is None or mine.owner != self.owner:
            raise ConcurrentWriterError(
                f"{self.storage.base_url}: this writer lost its lease (epoch {self.epoch}) to another writer; "
                "stopping before committing"
            )
        if self.hudi_lock is not None and not self.hudi_lock.held():
            raise ConcurrentWriterError(
                f"{self.storage.base_url}: this writer's Hudi lock {self.hudi_lock.url} was taken by another "
                "writer (it expired); stopping before committing")

    def heartbeat(self) -> None:
        if self.epoch is not None:
            self.storage.write(_epoch_path(self.epoch), self._record().to_bytes())
            if self.hudi_lock is not None:
                self.hudi_lock.refresh()

    def _start_heartbeat(self) -> None:
        self._stop.clear()

        def beat() -> None:
            while not self._stop.wait(max(self.expiry / 4, 0.05)):
                try:
                    self.heartbeat()
                except OSError:
                    pass  # the next beat retries; expiry covers a storage hiccup

        self._thread = threading.Thread(target=beat, name="ingest-lease-heartbeat", daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.hudi_lock is not None:
            self.hudi_lock.unlock()
        if self.epoch is not None:
            mine = self._read(self.epoch)
            if mine is not None and mine.owner == self.owner:
                self.storage.write(_epoch_path(self.epoch), self._record(released=True).to_bytes())
        self.epoch = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def for_writer(options: WriteOptions, description: str = "") -> WriterLock:
    """The lease a writer with `options` takes per commit: its expiry and wait, and Hudi's lock when
    the Hudi settings ask for optimistic concurrency control."""
    hudi_lock = LockSettings.from_hudi(options.hudi, options.table_path, options.jvm_timezone)
    return WriterLock(Storage(options.table_path, options.storage_options), options.lock_expiry_seconds,
                      description or options.checkpoint_id, wait_seconds=options.lock_wait_seconds,
                      hudi_lock=hudi_lock, writes_records=True)
