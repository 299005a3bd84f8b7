"""Spark's exceptions as ingest's one-line errors.

An error raised in a Python worker reaches the driver inside Spark's exception, as text followed by
the JVM's stack trace. The user needs the innermost Python error (`OSError: [Errno 28] No space left
on device: '<path>'`, `BadRecordError: ...`); Spark has logged the whole trace already.
"""

from __future__ import annotations

import re

from ingest.errors import IngestError

# A Python error's last line: any `...Error` or `...Exception`, and every error of ingest's own (`ingest.errors`:
# `UnsupportedTable`, `ClusteringConflict`, ...), named as the worker printed them.
_PYTHON_ERROR = re.compile(r"^(?:ingest\.errors\.(\w+)|(?:[\w.]+\.)?(\w+(?:Error|Exception))): (.+)$")


def is_spark_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith(("pyspark", "py4j"))


def _lines(exc: BaseException) -> list[str]:
    text = str(exc).split("JVM stacktrace:")[0]
    return [line.strip() for line in text.splitlines() if line.strip()]


def _innermost(lines: list[str]) -> tuple[str, str] | None:
    """(name, message) of the innermost Python error in Spark's message."""
    inner = [m for m in (_PYTHON_ERROR.match(line) for line in lines) if m]
    return (inner[-1].group(1) or inner[-1].group(2), inner[-1].group(3)) if inner else None


def task_conflict(exc: BaseException) -> str | None:
    """The message of the `ConcurrentWriterError` (or `InstantRolledBackError`) a write task failed the job
    with: another writer's rollback or blocks in its way, which another attempt of the batch gets past."""
    if not is_spark_error(exc):
        return None
    inner = _innermost(_lines(exc))
    return inner[1] if inner and inner[0] in ("ConcurrentWriterError", "InstantRolledBackError") else None


def spark_failure(exc: BaseException, what: str) -> IngestError:
    """`what` failed: the innermost Python error Spark's message carries, else its first line."""
    lines = _lines(exc)
    inner = _innermost(lines)
    detail = f"{inner[0]}: {inner[1]}" if inner else lines[0] if lines else type(exc).__name__
    error = IngestError(f"{what} failed: {detail}")
    error.__cause__ = exc
    return error
