"""Who holds a lease or a heartbeat: an identity unique to one process start, never a bare pid.

A pid names a process only inside one PID namespace and only until it is reused: two containers on
one hostname each have a pid 42, and a killed process that nobody reaped still answers
`kill(pid, 0)`. So a holder is judged dead at once only when that is certain: same host, same boot
(`/proc/sys/kernel/random/boot_id`), same PID namespace (`/proc/self/ns/pid`), and its pid is gone, a
zombie, or a process started at another time (`/proc/<pid>/stat` start time). In every other case
(another namespace or host, no `/proc`, a record written without these fields) only the holder's
heartbeat expiry tells, as in Hudi (`HoodieHeartbeatUtils.isHeartbeatExpired`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks since boot) of `pid` in our namespace; None if no such process."""
    text = _read(f"/proc/{pid}/stat")
    if text is None:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses
    return fields[0], int(fields[19])


@lru_cache(maxsize=1)
def _namespace() -> tuple[str | None, str | None]:
    try:
        pid_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pid_ns = None
    return _read("/proc/sys/kernel/random/boot_id"), pid_ns


@dataclass(frozen=True)
class ProcessIdentity:
    host: str
    pid: int
    boot_id: str | None = None
    pid_namespace: str | None = None
    start_ticks: int | None = None

    @classmethod
    def current(cls) -> ProcessIdentity:
        pid = os.getpid()
        stat = _stat(pid)
        boot_id, pid_ns = _namespace()
        return cls(socket.gethostname(), pid, boot_id, pid_ns, stat[1] if stat else None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProcessIdentity:
        start = d.get("start_ticks")
        return cls(str(d.get("host", "")), int(d.get("pid", -1)), d.get("boot_id"), d.get("pid_namespace"),
                   None if start is None else int(start))

    def certainly_dead(self) -> bool:
        """True only when this process provably no longer runs (see the module docstring)."""
        if self.boot_id is None or self.pid_namespace is None or self.start_ticks is None:
            return False
        if (self.host, self.boot_id, self.pid_namespace) != (socket.gethostname(), *_namespace()):
            return False
        stat = _stat(self.pid)
        return stat is None or stat[0] in ("Z", "X") or stat[1] != self.start_ticks

    def describe(self) -> str:
        return f"host {self.host}, pid {self.pid}"
