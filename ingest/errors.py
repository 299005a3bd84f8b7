"""The error types ingest raises on purpose.

Every failure a user can act on is one of these, with a message that names the file, key, column
or record involved. Anything else escaping the library is a bug.
"""

from __future__ import annotations


class IngestError(Exception):
    """Base of every error ingest raises deliberately."""


class ConfigError(IngestError):
    """A pipeline configuration is invalid: one line naming the file, the key and what is allowed."""

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None):
        prefix = ": ".join(p for p in (source, key) if p)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.source = source
        self.key = key


class TableConfigConflict(IngestError):
    """Settings given for a table contradict its `hoodie.properties`."""

    def __init__(self, table_path: str, conflicts: list[tuple[str, str | None, str | None]]):
        self.table_path = table_path
        self.conflicts = conflicts
        detail = "; ".join(
            f"{key}: table has {existing!r}, given {given!r}" for key, existing, given in conflicts
        )
        super().__init__(f"{table_path}/.hoodie/hoodie.properties contradicts the given settings: {detail}")


class TableNotFound(IngestError):
    """No Hudi table (no `.hoodie/hoodie.properties`) at the given path."""


class UnsupportedTable(IngestError):
    """The table exists but uses a feature or version this library does not write or read."""


class TimelineError(IngestError):
    """An instant transition that the timeline does not allow, or an instant that is missing."""


class LogFormatError(IngestError):
    """Bytes that are not a Hudi log block where one was required (strict decoding only).

    The log reader never raises this for torn or corrupt blocks in a file: it yields them as
    CORRUPT blocks and resumes at the next magic, as Hudi's reader does.
    """


class SchemaEvolutionError(IngestError):
    """An incoming schema cannot be written into the table: names the column and the change."""


class BadRecordError(IngestError):
    """A record cannot be written (null key, unparseable value...): names the record and its source."""


class ConcurrentWriterError(IngestError):
    """Another writer holds the table's writer lock."""


class InvalidInstant(IngestError):
    """An instant time given by a user is not in a format Hudi accepts, or names no usable point of the timeline."""


class WriteConflict(ConcurrentWriterError):
    """Another writer changed, or planned to change, a file group this write changed while it ran
    (Hudi's `HoodieWriteConflictException`): the write is not committed, and a retry plans it afresh."""


class ClusteringConflict(IngestError):
    """A write would change a file group a pending clustering is going to replace."""


def os_error_line(error: OSError) -> str:
    """A storage failure (a full disk, a read-only folder, a lost mount) as one line: the path, then
    the cause, without the traceback of where deep in the writer it struck."""
    cause = error.strerror or str(error) or type(error).__name__
    paths = [p for p in (error.filename, getattr(error, "filename2", None)) if p]
    return f"{' -> '.join(map(str, paths))}: {cause}" if paths else cause
