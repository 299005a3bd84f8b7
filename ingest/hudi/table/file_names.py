"""Names of the files in a Hudi table, built and parsed exactly as Hudi's `FSUtils` does.

Readers find file groups, slices and versions only through these names, so a name that parses
differently from Hudi's `LOG_FILE_PATTERN` is a file that some engine silently ignores.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from functools import total_ordering

LOG_EXTENSION = "log"
BASE_EXTENSIONS = ("parquet", "orc", "hfile")
PARTITION_METADATA = ".hoodie_partition_metadata"

# `.{fileId}_{baseInstant}.{log|archive}.{version}[_{token}][.cdc]`, as Hudi's LOG_FILE_PATTERN.
_LOG_FILE_RE = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(?:_((\d+)-(\d+)-(\d+))(\.cdc)?)?$")
# `{fileId}_{writeToken}_{instant}.{ext}`
_BASE_FILE_RE = re.compile(r"^(.+)_(\d+-\d+-\d+)_(\d+)\.(parquet|orc|hfile)$")


def make_write_token(task_partition_id: int, stage_id: int, task_attempt_id: int) -> str:
    """Spark task identity; distinct attempts never produce the same file name."""
    return f"{task_partition_id}-{stage_id}-{task_attempt_id}"


def new_file_id() -> str:
    """A fresh file group id: a random UUID plus Hudi's `-0` file index suffix."""
    return f"{uuid.uuid4()}-0"


@total_ordering
@dataclass(frozen=True)
class LogFileName:
    """`.{file_id}_{base_instant}.log.{version}_{write_token}`."""

    file_id: str
    base_instant: str
    version: int
    write_token: str | None = None
    extension: str = LOG_EXTENSION
    cdc: bool = False

    @property
    def name(self) -> str:
        token = f"_{self.write_token}" if self.write_token else ""
        suffix = ".cdc" if self.cdc else ""
        return f".{self.file_id}_{self.base_instant}.{self.extension}.{self.version}{token}{suffix}"

    @classmethod
    def parse(cls, name: str) -> LogFileName | None:
        m = _LOG_FILE_RE.match(name)
        if not m:
            return None
        return cls(
            file_id=m.group(1),
            base_instant=m.group(2),
            extension=m.group(3),
            version=int(m.group(4)),
            write_token=m.group(5),
            cdc=m.group(9) is not None,
        )

    def next_version(self, write_token: str) -> LogFileName:
        return LogFileName(self.file_id, self.base_instant, self.version + 1, write_token)

    def _key(self) -> tuple:
        # Hudi's LogFileComparator: base instant, then version, then write token (absent first).
        return (self.base_instant, self.version, self.write_token or "", self.cdc)

    def __lt__(self, other: LogFileName) -> bool:
        return self._key() < other._key()


@dataclass(frozen=True)
class BaseFileName:
    """`{file_id}_{write_token}_{instant}.parquet`."""

    file_id: str
    write_token: str
    instant: str
    extension: str = "parquet"

    @property
    def name(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant}.{self.extension}"

    @classmethod
    def parse(cls, name: str) -> BaseFileName | None:
        m = _BASE_FILE_RE.match(name)
        if not m:
            return None
        return cls(file_id=m.group(1), write_token=m.group(2), instant=m.group(3), extension=m.group(4))


def is_log_file(name: str) -> bool:
    return _LOG_FILE_RE.match(name) is not None


def is_base_file(name: str) -> bool:
    return _BASE_FILE_RE.match(name) is not None
