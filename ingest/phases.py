"""The long phases of a write, named where they run, so a job can say what it is doing.

`with phase("bootstrap of the key index", total=n, unit="file slices") as p: ... p.advance()` marks a
phase (any layer may: this module imports nothing of ingest); listeners (`listening(fn)`) hear each
start, advance and end, and `active()` names the innermost phase running now. Reporting is the
jobs' business (`ingest.pipeline.progress.PhaseReporter`): with no listener a phase costs a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_lock = threading.Lock()
_running: list[Phase] = []
_listeners: list[Callable[[Phase], None]] = []


@dataclass
class Phase:
    name: str
    total: int | None = None
    unit: str = ""
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    finished: bool = False

    def advance(self, n: int = 1) -> None:
        self.done += n
        _notify(self)

    def text(self) -> str:
        """`name: 3/8 file slices`, or just the name when the phase does not count."""
        if self.total is None:
            return self.name
        return f"{self.name}: {self.done}/{self.total} {self.unit}".rstrip()


def _notify(p: Phase) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(p)


@contextmanager
def phase(name: str, total: int | None = None, unit: str = "") -> Iterator[Phase]:
    p = Phase(name, total, unit)
    with _lock:
        _running.append(p)
    _notify(p)
    try:
        yield p
    finally:
        p.finished = True
        with _lock:
            _running.remove(p)
        _notify(p)


def active() -> Phase | None:
    """The innermost phase running now (in any thread), if any."""
    with _lock:
        return _running[-1] if _running else None


@contextmanager
def listening(listener: Callable[[Phase], None]) -> Iterator[None]:
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)
