"""A reference model of what a table must contain, written independently of the library.

It encodes the documented semantics in plain dictionaries:

* within a batch, per record identity: a tombstone (a delete without ordering value) supersedes
  every earlier version in source order; otherwise the largest ordering value wins, ties to the
  later record;
* across batches (event-time ordering): a version older than the key's current one (live, or
  deleted with an ordering value) is stale and changes nothing; a delete removes a live key; a
  tombstone removes it whatever its ordering;
* commit-time ordering: the batch's version always wins;
* a global index moves a key that arrives with another partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Op:
    key: str
    partition: str | None          # None only for tombstones (partition unknown)
    ts: int | None                 # ordering value (None: tombstone)
    delete: bool = False
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def tombstone(self) -> bool:
        return self.delete and self.ts is None


@dataclass
class Version:
    partition: str
    ts: int | None
    values: dict[str, Any]


class TableModel:
    def __init__(self, event_time: bool = True, global_scope: bool = False):
        self.event_time = event_time
        self.global_scope = global_scope
        self.live: dict[tuple, Version] = {}          # identity -> live version
        self.deleted: dict[tuple, int | None] = {}    # identity -> ordering value at deletion

    def _identity(self, key: str, partition: str | None) -> tuple:
        return (key,) if self.global_scope else (key, partition)

    def _winners(self, ops: list[Op]) -> list[Op]:
        by_identity: dict[tuple, list[Op]] = {}
        for op in ops:
            if op.tombstone and not self.global_scope:
                # Partition unknown: applies to the key in every partition it lives in.
                targets = [i for i in list(self.live) + list(by_identity) if i[0] == op.key]
                for ident in dict.fromkeys(targets):
                    by_identity.setdefault(ident, []).append(Op(op.key, ident[1], None, True))
                continue
            by_identity.setdefault(self._identity(op.key, op.partition), []).append(op)
        winners = []
        for versions in by_identity.values():
            last_tomb = max((i for i, v in enumerate(versions) if v.tombstone), default=-1)
            rest = versions[last_tomb + 1:]
            if not rest:
                winners.append(versions[last_tomb])
                continue
            best_i = max(range(len(rest)), key=lambda i: ((rest[i].ts is not None, rest[i].ts or 0), i))
            winners.append(rest[best_i])
        return winners

    def apply(self, ops: list[Op]) -> None:
        for op in self._winners(ops):
            ident = self._identity(op.key, op.partition)
            current = self.live.get(ident)
            if op.tombstone:
                if current is not None:
                    self.deleted[ident] = current.ts
                    del self.live[ident]
                continue
            if self.event_time:
                floor = current.ts if current is not None else self.deleted.get(ident)
                if floor is not None and op.ts is not None and op.ts < floor:
                    continue  # stale
            if op.delete:
                if current is not None:
                    self.deleted[ident] = op.ts if op.ts is not None else current.ts
                    del self.live[ident]
                continue
            self.live[ident] = Version(op.partition, op.ts, dict(op.values))
            self.deleted.pop(ident, None)

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for ident, version in self.live.items():
            out.append({"key": ident[0], "partition": version.partition, "ts": version.ts, **version.values})
        return out
