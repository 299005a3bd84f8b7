"""Log-compacted blocks: where a slice's merge takes the block a log compaction wrote in place of the
blocks it merged (`BaseHoodieLogRecordReader.scanInternalV2`).

A log compaction (`<t>.logcompaction.requested`, completing as a deltacommit) merges a slice's log
blocks into new blocks whose header `COMPACTED_BLOCK_TIMES` lists the instants of the blocks merged;
those stay in their log files. Hudi's scanner then merges each instant's blocks in the order the
instants first appear, except that the instants a compacted block replaces are left out and the
compacted block takes the place of the newest of them. Compactions chain: a later compacted block may
list an earlier one's instant, and then stands for everything that one did. Without that placement the
merged rows would be read again after later writes (`scanInternalV1` reads every block in file order,
which is why Hudi's log compaction scans with V2 only).

Slices without compacted blocks keep their blocks in file order, as both scans read them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ingest.hudi.log.log_block import HeaderKey, LogBlock


def merge_order(blocks: Sequence[LogBlock]) -> list[LogBlock]:
    """`blocks` (a slice's committed data and delete blocks, in file order) in the order they merge."""
    if not any(b.get(HeaderKey.COMPACTED_BLOCK_TIMES) is not None for b in blocks):
        return list(blocks)
    by_instant: dict[str | None, list[LogBlock]] = {}
    for block in blocks:
        by_instant.setdefault(block.instant_time, []).append(block)
    replaced_by: dict[str, str] = {}  # original instant -> the final compacted block's instant
    placed: set[str | None] = set()
    newest_first: list[list[LogBlock]] = []
    for instant, group in reversed(list(by_instant.items())):
        compacted = group[0].get(HeaderKey.COMPACTED_BLOCK_TIMES)
        if compacted is not None:
            final = replaced_by.get(instant, instant)
            for original in compacted.split(","):
                replaced_by[original] = final
            continue
        final = replaced_by.get(instant) if instant is not None else None
        if final is None:
            newest_first.append(group)
            placed.add(instant)
        elif final not in placed:
            newest_first.append(by_instant[final])
            placed.add(final)
    return [block for group in reversed(newest_first) for block in group]
