"""A progress bar on stderr, drawn only when stderr is a terminal (logs and CI output stay clean).

Log records emitted while the bar is shown go through `BarAwareHandler`, which clears the bar's line,
writes the record and draws the bar again, so the two never share a line.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

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
