"""Which process executes a compaction: a heartbeat file it refreshes while it runs.

An inflight compaction is either being executed or was left by a crash, and only liveness tells them
apart; Hudi keeps heartbeats of its writes for the same reason (`HoodieHeartbeatClient`). The file is
ingest's own, under `.hoodie/.aux`.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

from ingest.errors import ConcurrentWriterError
from ingest.hudi.timeline.timeline import AUX_FOLDER
from ingest.liveness import ProcessIdentity
from ingest.storage import Storage

HEARTBEAT_FOLDER = f"{AUX_FOLDER}/ingest/compaction"


class ExecutionHeartbeat:
    """Which process executes a compaction: a file it refreshes while it runs.

    An inflight compaction is either being executed or was left by a crash, and only liveness tells
    them apart (Hudi 1.x keeps heartbeats for the same reason). The first executor creates the file
    (put-if-absent); another one keeps away while the heartbeat is fresh, and takes over once it is
    stale, or at once when the holder's process is certainly gone (`ingest.liveness`: a pid from
    another container or a reaped-late zombie is not taken for a live one, nor the reverse). An
    executor that finds its heartbeat taken over stops before committing.
    """

    def __init__(self, storage: Storage, instant: str, expiry_seconds: float = 60.0):
        self.storage = storage
        self.instant = instant
        self.expiry = expiry_seconds
        self.path = f"{HEARTBEAT_FOLDER}/{instant}.heartbeat"
        self.owner = str(uuid.uuid4())
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _record(self) -> bytes:
        return json.dumps({"owner": self.owner, **ProcessIdentity.current().to_dict(),
                           "heartbeat_at": time.time(), "expiry": self.expiry}).encode()

    def _current(self) -> dict | None:
        try:
            return json.loads(self.storage.read(self.path))
        except FileNotFoundError:
            return None

    @staticmethod
    def _alive(record: dict) -> bool:
        if time.time() - float(record["heartbeat_at"]) >= float(record["expiry"]):
            return False
        return not ProcessIdentity.from_dict(record).certainly_dead()

    def claim(self) -> None:
        if not self.storage.create(self.path, self._record()):
            holder = self._current()
            if holder is not None and holder["owner"] != self.owner and self._alive(holder):
                age = time.time() - float(holder["heartbeat_at"])
                left = float(holder["expiry"]) - age
                raise ConcurrentWriterError(
                    f"{self.storage.base_url}: compaction {self.instant} is being executed by "
                    f"{ProcessIdentity.from_dict(holder).describe()} (heartbeat {age:.0f}s ago); if that "
                    f"process has stopped, its heartbeat expires in {left:.0f}s and the compaction can be "
                    "executed again then"
                )
            self.storage.write(self.path, self._record())
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name=f"ingest-compaction-{self.instant}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(max(self.expiry / 4, 0.05)):
            current = self._current()
            if current is not None and current["owner"] != self.owner:
                self.lost = True
                return
            try:
                self.storage.write(self.path, self._record())
            except OSError:
                pass  # the next beat retries; the expiry covers a storage hiccup

    def check(self) -> None:
        current = self._current()
        if self.lost or (current is not None and current["owner"] != self.owner):
            raise ConcurrentWriterError(
                f"{self.storage.base_url}: another executor took compaction {self.instant} over; not committing"
            )

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def release(self) -> None:
        self.stop()
        current = self._current()
        if current is not None and current["owner"] == self.owner:
            self.storage.delete(self.path)
