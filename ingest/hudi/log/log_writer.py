"""Writing blocks into log files through `Storage`.

A new log file is created put-if-absent, so two writers can never interleave blocks in one file.
Appending to an existing file happens only where `Storage.can_append` (local disks); object stores
never append, and the caller rolls over to the next log file version instead (as Hudi's writer
does when it finds its file already present). A reader that meets the torn tail of an
interrupted append skips it as a CORRUPT block and resumes at the next magic, so blocks appended
after it stay readable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ingest.hudi.log.log_block import BlockType, CommandType, HeaderKey, LogBlock, encode_blocks
from ingest.storage import Storage


@dataclass(frozen=True)
class AppendResult:
    """Where the written blocks landed: they start at `offset`; the file is now `size` bytes."""

    path: str
    offset: int
    size: int


def rollback_block(instant_time: str, target_instant_time: str) -> LogBlock:
    """The COMMAND block that tells readers to drop this file's blocks of `target_instant_time`.

    `instant_time` is the rollback's own instant. `HoodieCommandBlock` has no content.
    """
    header = (
        (HeaderKey.INSTANT_TIME, instant_time),
        (HeaderKey.TARGET_INSTANT_TIME, target_instant_time),
        (HeaderKey.COMMAND_BLOCK_TYPE, str(int(CommandType.ROLLBACK_BLOCK))),
    )
    return LogBlock(BlockType.COMMAND, header, b"")


def _encode(blocks: Sequence[LogBlock]) -> bytes:
    if not blocks:
        raise ValueError("no log blocks to write")
    return encode_blocks(blocks)


def create_log_file(storage: Storage, path: str, blocks: Sequence[LogBlock]) -> AppendResult:
    """Write a new log file holding `blocks`; FileExistsError if `path` already exists."""
    data = _encode(blocks)
    if not storage.create(path, data):
        raise FileExistsError(f"log file {storage.url(path)} already exists; write the next log version")
    return AppendResult(path, 0, len(data))


def append_log_blocks(storage: Storage, path: str, blocks: Sequence[LogBlock]) -> AppendResult:
    """Append `blocks` to the existing log file `path` (only where the storage can append).

    Raises OSError on storages that cannot append and FileNotFoundError if `path` is absent:
    appending never creates a file, so file creation stays put-if-absent.
    """
    if not storage.can_append:
        raise OSError(f"{storage.base_url} cannot append; write {path}'s blocks to a new log version")
    if not storage.exists(path):
        raise FileNotFoundError(f"log file {storage.url(path)} does not exist; create it instead")
    data = _encode(blocks)
    size = storage.append(path, data)
    return AppendResult(path, size - len(data), size)
