"""Progress for people: a bar on a terminal, and lines in the logs while a long phase runs.

The bar (stderr, drawn only when stderr is a terminal, so logs and CI output stay clean): log records
emitted while it is shown go through `BarAwareHandler`, which clears the bar's line, writes the record
and draws the bar again, so the two never share a line.

The lines (`PhaseReporter`): while a batch runs, a phase (`ingest.phases`: reading and decoding,
the key index's bootstrap, the write) that has run for `interval` seconds gets a log line, then one
per `interval` at most, naming the phase, its count and the Spark tasks done, as Spark's own
`ConsoleProgressBar` shows a stage only after it has run a while and then refreshes at a fixed
period. Short phases print nothing; a first batch that reads for a minute says so as it goes.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from ingest import phases

_active: ProgressBar | None = None


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class ProgressBar:
    """`done` of `total` bytes (and files), with rate and time left."""

    def __init__(self, label: str, total_files: int, total_bytes: int, stream: TextIO | None = None,
                 width: int = 30):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.label, self.total_files, self.total_bytes, self.width = label, total_files, max(total_bytes, 1), width
        self.files = 0
        self.bytes = 0
        self.started = time.monotonic()

    def text(self) -> str:
        share = min(self.bytes / self.total_bytes, 1.0)
        filled = int(share * self.width)
        elapsed = time.monotonic() - self.started
        left = f" ~{_clock(elapsed / share - elapsed)} left" if 0 < share < 1 else ""
        return (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {share:4.0%} {self.files}/{self.total_files} "
                f"files {_size(self.bytes)}/{_size(self.total_bytes)} {_clock(elapsed)}{left}")

    def draw(self) -> None:
        if self.enabled:
            self.stream.write("\r" + self.text() + "\x1b[K")
            self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def advance(self, files: int, size: int) -> None:
        self.files += files
        self.bytes += size
        self.draw()

    def __enter__(self) -> ProgressBar:
        global _active
        _active = self
        self.draw()
        return self

    def __exit__(self, *exc) -> None:
        global _active
        _active = None
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


class BarAwareHandler(logging.StreamHandler):
    """A stderr handler that moves the progress bar out of the way of each record.

    Without a stream it writes to whatever `sys.stderr` is when a record comes (not the one there when
    it was made), so replacing stderr (pytest, notebooks) never leaves it writing to a closed file.
    """

    def __init__(self, stream: TextIO | None = None):
        super().__init__(stream)
        self._fixed = stream

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return self._fixed if self._fixed is not None else sys.stderr

    @stream.setter
    def stream(self, value: TextIO | None) -> None:
        self._fixed = value

    def emit(self, record: logging.LogRecord) -> None:
        bar = _active
        if bar is not None and bar.stream is self.stream:
            bar.clear()
            super().emit(record)
            bar.draw()
        else:
            super().emit(record)


PHASE_INTERVAL = 5.0  # seconds: the first line of a phase after this long, then one per this long at most


class PhaseReporter:
    """Log lines for the long phases run while it is entered (a context manager).

    `probe` adds what the engine knows (Spark: tasks done of the running stages); the lines go to
    `logger` at INFO, prefixed with `label` (`batch 3`).
    """

    def __init__(self, label: str, logger: logging.Logger, interval: float | None = None,
                 probe: Callable[[], str | None] | None = None):
        self.label, self.log, self.probe = label, logger, probe
        self.interval = PHASE_INTERVAL if interval is None else interval
        self.last_line = float("-inf")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._listening = None

    def _heard(self, p: phases.Phase) -> None:
        if not p.finished:
            self._maybe_report(p)

    def _tick(self) -> None:
        # Phases that do not count (a Spark job) are looked at by the clock.
        while not self._stop.wait(min(self.interval, 1.0) or 0.05):
            p = phases.active()
            if p is not None:
                self._maybe_report(p)

    def _maybe_report(self, p: phases.Phase) -> None:
        with self._lock:
            now = time.monotonic()
            if now - p.started < self.interval or now - self.last_line < self.interval:
                return
            self.last_line = now
        try:
            engine = self.probe() if self.probe is not None else None
        except Exception as e:  # noqa: BLE001 - a progress line must never fail the write it reports
            engine = None
            self.log.debug("progress probe failed: %s", e)
        extra = f", {engine}" if engine else ""
        self.log.info("%s: %s%s (running for %.0fs)", self.label, p.text(), extra, now - p.started)

    def __enter__(self) -> PhaseReporter:
        self._listening = phases.listening(self._heard)
        self._listening.__enter__()
        self._ticker = threading.Thread(target=self._tick, name="ingest-progress", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._listening.__exit__(*exc)
        if self._ticker is not None:
            self._ticker.join()
