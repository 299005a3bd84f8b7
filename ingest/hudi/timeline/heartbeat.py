"""Writer heartbeats in `.hoodie/.heartbeat/<instant>`, as Hudi's `HoodieHeartbeatClient` keeps them.

The file is empty: its modification time is the heartbeat (`HoodieHeartbeatUtils.getLastHeartbeatTime`,
0 when the file is missing). A writer creates it when it starts an instant, rewrites it every
`hoodie.client.heartbeat.interval_in_ms` (default 60 s), and deletes it when the instant completes
or is rolled back. The heartbeat has expired once it is older than interval x
`hoodie.client.heartbeat.tolerable.misses` (default 2; `isHeartbeatExpired`), and only then may a
writer with lazy failed-write cleaning roll that instant back. Hudi 0.14/0.15 keeps heartbeats for
write instants only (`BaseHoodieWriteClient.startCommit`): not for compaction, clean or rollback.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ingest.storage import Storage

FOLDER = ".hoodie/.heartbeat"  # HoodieTableMetaClient.getHeartbeatFolderPath


@dataclass(frozen=True)
class HeartbeatSettings:
    interval_ms: int = 60_000   # hoodie.client.heartbeat.interval_in_ms
    tolerable_misses: int = 2   # hoodie.client.heartbeat.tolerable.misses

    @property
    def max_allowable_s(self) -> float:
        return self.interval_ms * self.tolerable_misses / 1000.0


STOP_WAIT_S = 5.0  # how long `stop` waits for a beat under way before deleting the file anyway


def path(instant: str) -> str:
    return f"{FOLDER}/{instant}"


def last_heartbeat_time(storage: Storage, instant: str) -> float:
    """Seconds since the epoch of the last heartbeat; 0 when there is none."""
    try:
        return storage.modified(path(instant))
    except FileNotFoundError:
        return 0.0


def expires_in(storage: Storage, instant: str, settings: HeartbeatSettings, now: float | None = None) -> float:
    """Seconds until the heartbeat of `instant` expires; 0 or less once it has (or never existed)."""
    now = time.time() if now is None else now
    return last_heartbeat_time(storage, instant) + settings.max_allowable_s - now


def delete(storage: Storage, instant: str) -> None:
    storage.delete(path(instant))


class InstantHeartbeat:
    """The heartbeat of one instant this process holds in flight.

    `HoodieHeartbeatClient` keeps the time of its last beat: once that is older than the tolerable
    misses allow (the process stalled, or the storage refused the beats), another writer may already
    be rolling the instant back. Then the refresher stops for good, so the file stays expired (no
    resurrected heartbeat), and `expired` tells the commit to abort (`HeartbeatUtils.
    abortIfHeartbeatExpired`)."""

    def __init__(self, storage: Storage, instant: str, settings: HeartbeatSettings):
        self.storage = storage
        self.instant = instant
        self.settings = settings
        self.last_beat = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._deleted = False

    def beat(self) -> None:
        self.storage.touch(path(self.instant))  # a new modification time, as `HoodieHeartbeatClient` beats
        self.last_beat = time.time()

    def expired(self, now: float | None = None) -> bool:
        """The last beat is older than interval x tolerable misses (`HoodieHeartbeatClient.isHeartbeatExpired`)."""
        return (time.time() if now is None else now) - self.last_beat > self.settings.max_allowable_s

    def start(self) -> InstantHeartbeat:
        self.beat()  # the first one before the instant exists, as HoodieHeartbeatClient.start does
        self._thread = threading.Thread(target=self._run, name=f"ingest-heartbeat-{self.instant}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.settings.interval_ms / 1000.0):
            if self.expired():
                return  # too late: never make an instant another writer may be rolling back look live
            try:
                self.beat()
            except OSError:
                pass  # the next beat retries; the tolerable misses cover a storage hiccup

    def abandon(self) -> None:
        """Stop refreshing and leave the file: another writer took this instant time first
        (`HoodieActiveTimeline.createNewInstant` refused ours) and beats the same file."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=STOP_WAIT_S)

    def stop(self) -> None:
        """Stop refreshing and delete the file (the instant completed, or was given up). Called again,
        it deletes again only if a beat outlived the first call (one request fewer on object stores)."""
        if self._deleted and (self._thread is None or not self._thread.is_alive()):
            return
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=STOP_WAIT_S)
        delete(self.storage, self.instant)
        # Only once no beat is under way: one that outlived the join could write the file again.
        self._deleted = self._thread is None or not self._thread.is_alive()
