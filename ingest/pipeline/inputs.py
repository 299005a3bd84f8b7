"""A backfill's input files: what they are, how they are grouped into commits, which are done.

A file is identified by its path, size and modification time, read from the file system Spark reads
it through (Hadoop's, so `s3a://` and every configured credential work as they do for the read).
Each commit of a backfill records the identities of the files it loaded, in its extra metadata
under `ingest.backfill`, with the backfill's identifier and batch number:

    {"id": "orders-backfill-2023", "batch": 3, "files": [["s3a://.../part-0001.parquet", 1048576, 1700000000000]]}

The table is the checkpoint: a backfill started again reads these records back from every commit,
archived ones included, and skips the files they list. That is exact, because the commit that
records a file is the one that loads it: a crash before the commit leaves the file to be loaded
again (the unfinished instant is rolled back), a crash after it leaves the file done. A file
rewritten since (another size or time) counts as new; a backfill run under another identifier loads
everything again.

Reading the archived timeline of a table a stream has written for a year is slow, so it is read only
when it may hold records of this backfill: batches are numbered from 0 and archival removes a
prefix of the timeline, so when batch 0 is still active nothing is archived; and a backfill that
never committed is known by the absence of its marker, `.hoodie/.aux/ingest/backfill/<identifier>`,
written before its first commit.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from ingest.errors import ConfigError
from ingest.hudi.services.archiver import archived_commit_metadata
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.hudi.timeline.timeline import AUX_FOLDER
from ingest.storage import Storage

METADATA_KEY = "ingest.backfill"
MARKER_FOLDER = f"{AUX_FOLDER}/ingest/backfill"
FORMATS = ("parquet", "json", "csv", "orc", "avro")
EXTENSIONS = {
    ".parquet": "parquet", ".parq": "parquet",
    ".json": "json", ".jsonl": "json", ".ndjson": "json",
    ".csv": "csv", ".tsv": "csv",
    ".orc": "orc",
    ".avro": "avro",
}
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".zst", ".lz4", ".snappy", ".deflate", ".xz", ".zip")


@dataclass(frozen=True, order=True)
class InputFile:
    path: str            # as the file system qualifies it (file:/..., s3a://bucket/...)
    size: int
    mtime: int           # milliseconds since the epoch

    @property
    def identity(self) -> tuple[str, int, int]:
        return (self.path, self.size, self.mtime)


def format_of(path: str, default: str) -> str:
    """The format a file's extension names (compression suffixes aside), else `default`."""
    name = posixpath.basename(path).lower()
    for suffix in COMPRESSION_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return EXTENSIONS.get(posixpath.splitext(name)[1], default)


def is_hidden(relative: str) -> bool:
    """Spark's rule for files a read skips: a name (file or folder) starting with `_` or `.`, except
    partition folders (`_col=1`)."""
    return any(part.startswith(("_", ".")) and "=" not in part for part in relative.split("/") if part)


def group(files: Sequence[InputFile], formats: Sequence[str], *, max_files: int | None,
          max_bytes: int | None) -> list[list[int]]:
    """Consecutive files (by path) in commits of one format, at most `max_files` files and, unless a
    single file is bigger, `max_bytes` bytes each; returns indexes into `files`."""
    groups: list[list[int]] = []
    size = 0
    for i, f in enumerate(files):
        current = groups[-1] if groups else None
        full = current is not None and (
            formats[current[0]] != formats[i]
            or (max_files is not None and len(current) >= max_files)
            or (max_bytes is not None and size + f.size > max_bytes)
        )
        if current is None or full:
            groups.append([i])
            size = f.size
        else:
            current.append(i)
            size += f.size
    return groups


def commit_record(identifier: str, batch: int, files: Iterable[InputFile]) -> str:
    return json.dumps({"id": identifier, "batch": batch, "files": [list(f.identity) for f in files]},
                      separators=(",", ":"))


@dataclass(frozen=True)
class Progress:
    """What earlier runs of a backfill committed."""

    done: frozenset[tuple[str, int, int]] = frozenset()
    last_batch: int = -1
    commits: int = 0


def _records(extra_metadata: dict | None, identifier: str) -> Iterable[dict]:
    raw = (extra_metadata or {}).get(METADATA_KEY)
    if not raw:
        return ()
    try:
        record = json.loads(raw)
    except ValueError:
        return ()
    return (record,) if isinstance(record, dict) and record.get("id") == identifier else ()


def marker_path(identifier: str) -> str:
    return f"{MARKER_FOLDER}/{quote(identifier, safe='')}"


def mark_started(table_path: str, storage_options: dict, identifier: str) -> None:
    """Record, before its first commit, that the backfill `identifier` may have commits (idempotent)."""
    storage = Storage(table_path, storage_options)
    if not storage.exists(marker_path(identifier)):
        storage.create(marker_path(identifier), json.dumps({"id": identifier}).encode())


def committed(table_path: str, storage_options: dict, identifier: str) -> Progress:
    """The files earlier runs of the backfill `identifier` committed, from the active and archived timeline."""
    if not HudiTable.exists(table_path, storage_options):
        return Progress()
    table = HudiTable.open(table_path, storage_options)
    records = []
    for instant in table.timeline().completed(Action.DELTA_COMMIT, Action.COMMIT):
        records.extend(_records(table.commit_metadata(instant).extra_metadata, identifier))
    batches = {int(r.get("batch", -1)) for r in records}
    archived_too = 0 not in batches and table.storage.exists(marker_path(identifier))
    if archived_too:
        for metadata in archived_commit_metadata(table):
            records.extend(_records(metadata.get("extraMetadata"), identifier))
    done = {tuple(f) for r in records for f in r.get("files") or ()}
    batches = {int(r.get("batch", -1)) for r in records}
    return Progress(frozenset((str(p), int(s), int(m)) for p, s, m in done), max(batches, default=-1), len(batches))


def list_files(spark, root: str) -> tuple[list[InputFile], str | None]:
    """Every data file under `root` (a file, a folder, or a glob), sorted by path, through Hadoop's
    file system; and the folder to use as `basePath` (so `col=value` folders become columns)."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(root)
    fs = path.getFileSystem(conf)
    statuses = fs.globStatus(path)
    if not statuses:
        raise ConfigError(f"no input at {root}", key="--input")
    out = []
    base = None
    for status in statuses:
        if status.isDirectory():
            top = status.getPath().toString().rstrip("/")
            if len(statuses) == 1:
                base = top
            listing = fs.listFiles(status.getPath(), True)
            while listing.hasNext():
                f = listing.next()
                name = f.getPath().toString()
                if not is_hidden(name[len(top):]):
                    out.append(InputFile(name, int(f.getLen()), int(f.getModificationTime())))
        elif not is_hidden(status.getPath().getName()):
            out.append(InputFile(status.getPath().toString(), int(status.getLen()), int(status.getModificationTime())))
    return sorted(out), base
