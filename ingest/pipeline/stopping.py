"""Stopping a stream between batches, so a stop never leaves a commit half done.

`StreamingQuery.stop()` interrupts whatever the query is doing, a batch's write included: the
instant would stay inflight until the next run rolls it back. Instead, a SIGTERM (or Ctrl-C) only
asks to stop; the batch in progress finishes (commit, table services and all), a batch that was
about to start is abandoned before it touches anything (`StopRequested`; Spark reads it again on the
next run), and only then is the query stopped. A second signal kills the process at once: the
commit protocol makes that safe too, it only costs a rollback on the next run.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ingest.errors import IngestError

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequested(IngestError):
    """Raised at the start of a batch once a stop was asked for: the batch is left for the next run."""

    def __init__(self, batch_id: int):
        super().__init__(f"batch {batch_id} not started: the stream is stopping")
        self.batch_id = batch_id


class BatchGate:
    """Lets batches run one at a time until a stop is asked for, then lets none start."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._stopping = False
        self.reason: str | None = None

    @property
    def stopping(self) -> bool:
        return self._stopping

    @contextmanager
    def batch(self, batch_id: int) -> Iterator[None]:
        with self._cond:
            if self._stopping:
                raise StopRequested(batch_id)
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def request_stop(self, reason: str) -> None:
        """Ask to stop (safe from a signal handler: it never waits)."""
        self.reason = self.reason or reason
        self._stopping = True

    def wait_idle(self) -> None:
        """Block until no batch runs; none starts afterwards."""
        with self._cond:
            self._stopping = True
            self._cond.wait_for(lambda: not self._busy)


@contextmanager
def stop_on_signals(on_signal: Callable[[str], None]) -> Iterator[None]:
    """Call `on_signal(name)` on the first SIGTERM/SIGINT; a second one gets the default action.

    Only the main thread may install handlers; elsewhere (a notebook's worker thread) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def handler(signum: int, frame) -> None:
        name = signal.Signals(signum).name
        signal.signal(signum, signal.SIG_DFL)  # a second one stops the process for real
        on_signal(name)

    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
