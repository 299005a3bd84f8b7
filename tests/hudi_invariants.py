"""The rules Hudi's Java code relies on when it meets a table, checked on any table folder.

Every scenario that writes a table (the property-based ones, the crash tests) calls `check(path)`,
also right after an injected crash, when a Hudi writer, `hudi-cli` or a reader may be the next
process to open the table. Each check names the Java code whose rule it keeps:

* markers: `MarkerBasedRollbackStrategy.getRollbackRequests` turns every marker into a rollback
  request for a base or log file (`FSUtils.getFileIdFromFilePath`, `FSUtils.getRelativePartitionPath`);
  a marker naming anything else fails every Hudi writer's rollback of our failed instants;
* Avro names: `org.apache.avro.Schema.Parser` (strict name validation) parses the SCHEMA header of every
  log block (`HoodieDataBlock`), the `schema` of every commit (`TableSchemaResolver`) and the footer
  schema of every base file (`AvroReadSupport`); the `avro` package's parser applies the same rules;
* simple index: `HoodieSimpleIndex.fetchRecordLocationsForAffectedPartitions` reads keys from the latest
  base files only (`HoodieIndexUtils.getLatestBaseFilesForPartition`) because
  `HoodieSimpleIndex.canIndexLogFiles()` is false: for every index but BUCKET a live key must be in
  the latest base file of its file group, or a Hudi writer tags its update as an insert;
* rollback metadata: `HoodieTableMetadataUtil.processRollbackMetadata` calls
  `getRollbackLogFiles().forEach` and `getLogFilesFromFailedCommit().forEach` without null checks, so
  every `.rollback` must decode with Hudi 0.15's `HoodieRollbackMetadata` schema with every field set;
* layout-2 timeline (table versions 8 and 9): every file of `.hoodie/timeline/` is named as
  `InstantFileNameGeneratorV2` names it and parses with hudi-rs's instant rules; a completed compaction
  is a `commit` (log compaction a `deltacommit`, clustering a `replacecommit`), and the plan a pending
  compaction or clean is executed from is in its requested file (`CompactionUtils.getCompactionPlan`,
  `CleanerUtils.getCleanerPlan` read it there).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import avro.schema
import fastavro
import pyarrow.parquet as pq

# FSUtils.LOG_FILE_PATTERN and the base file name of FSUtils.makeBaseFileName (Hudi 0.14/0.15).
LOG_FILE = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(\.cdc)?)?$")
BASE_FILE = re.compile(r"^([^_/]+)_(\d+-\d+-\d+)_(\d+)\.(parquet|orc|hfile)$")
MARKER = re.compile(r"^(.*)\.marker\.(CREATE|MERGE|APPEND)$")

# HoodieRollbackMetadata as Hudi 0.15.0 declares it (hudi-common/src/main/avro), used as reader schema.
ROLLBACK_METADATA_0_15 = {
    "type": "record", "name": "HoodieRollbackMetadata", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "startRollbackTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": {"type": "array", "items": "string"}},
        {"name": "partitionMetadata", "type": {"type": "map", "values": {
            "type": "record", "name": "HoodieRollbackPartitionMetadata",
            "fields": [
                {"name": "partitionPath", "type": "string"},
                {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
                {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
                {"name": "rollbackLogFiles", "type": ["null", {"type": "map", "values": "long"}],
                 "default": None},
                {"name": "logFilesFromFailedCommit", "type": ["null", {"type": "map", "values": "long"}],
                 "default": None},
            ]}}},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "instantsRollback", "default": [], "type": {"type": "array", "items": {
            "type": "record", "name": "HoodieInstantInfo",
            "fields": [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}]}}},
    ],
}


def _meta_folder(table: Path) -> Path:
    return table / ".hoodie"


def _timeline_files(table: Path, *suffixes: str) -> list[Path]:
    """Completed instant files of those actions: `.hoodie/` (layout 1) or `.hoodie/timeline/` (layout 2)."""
    meta = _meta_folder(table)
    return sorted(f for folder in (meta, meta / "timeline") if folder.is_dir()
                  for f in folder.iterdir() if f.is_file() and f.suffix in suffixes)


def marker_lines(table: Path) -> list[tuple[str, str]]:
    """(instant, marker path relative to the instant's marker folder), of both marker kinds.

    Direct markers are files; timeline-server-based ones are lines of `MARKERS<n>` files
    (`MarkerUtils.readTimelineServerBasedMarkersFromFileSystem`), `MARKERS.type` naming the kind.
    """
    temp = _meta_folder(table) / ".temp"
    out = []
    if not temp.is_dir():
        return out
    for instant_dir in sorted(p for p in temp.iterdir() if p.is_dir()):
        for f in sorted(p for p in instant_dir.rglob("*") if p.is_file()):
            rel = f.relative_to(instant_dir).as_posix()
            if rel == "MARKERS.type":
                continue
            if re.fullmatch(r"MARKERS\d+", rel):
                out.extend((instant_dir.name, line) for line in f.read_text().splitlines() if line)
            else:
                out.append((instant_dir.name, rel))
    return out


def check_markers(table: Path) -> int:
    lines = marker_lines(table)
    for instant, rel in lines:
        m = MARKER.match(rel)
        assert m, f"marker {rel} of {instant} has no IOType suffix Hudi's IOType.valueOf accepts"
        partition, _, name = m.group(1).rpartition("/")
        assert not partition.startswith(".hoodie") and not name.startswith(".hoodie"), \
            f"marker {rel} of {instant} names a file outside the data partitions"
        assert BASE_FILE.match(name) or LOG_FILE.match(name), \
            f"marker {rel} of {instant} names {name}, neither a base nor a log file"
        if m.group(2) == "APPEND":
            assert LOG_FILE.match(name), f"APPEND marker {rel} of {instant} does not name a log file"
    return len(lines)


# HoodieTimeline's actions; hudi-rs itself knows only commit, deltacommit and replacecommit and skips the rest.
HUDI_ACTIONS = {"commit", "deltacommit", "replacecommit", "clean", "rollback", "savepoint", "compaction",
                "logcompaction", "restore", "indexing", "clustering", "schemacommit"}
# InstantFileNameGeneratorV2: these complete as another action's file.
_COMPLETED_AS = {"compaction": "commit", "logcompaction": "deltacommit", "clustering": "replacecommit"}


def timeline_instant(file_name: str) -> tuple[str, str | None, str, str]:
    """(requested, completed or None, action, state) of a timeline file, by hudi-rs's
    `Instant::try_from_file_name_and_timezone` (crates/core/src/timeline/instant.rs): split at the first
    '.', the action and state suffix (`<action>[.requested|.inflight]`, or the bare `inflight` of a
    commit), a `<requested>_<completed>` head only on completed instants, each time 14 or 17 digits and a
    real date."""
    head, dot, suffix = file_name.partition(".")
    assert dot, file_name
    action, _, state = suffix.partition(".")
    if suffix == "inflight":
        action, state = "commit", "inflight"
    assert action in HUDI_ACTIONS and state in ("", "requested", "inflight"), file_name
    requested, underscore, completed = head.partition("_")
    for ts in (requested, completed) if underscore else (requested,):
        assert len(ts) in (14, 17) and ts.isdigit(), file_name
        datetime.strptime(ts[:14], "%Y%m%d%H%M%S")
    assert not underscore or state == "", f"{file_name}: only completed instants carry a completion time"
    return requested, completed or None, action, state or "completed"


def check_timeline(table: Path) -> int:
    folder = _meta_folder(table) / "timeline"
    if not folder.is_dir():
        return 0  # layout 1: instants among `.hoodie`'s other files
    names = sorted(f.name for f in folder.iterdir() if f.is_file())
    for name in names:
        requested, completed, action, state = timeline_instant(name)
        if completed is not None:
            assert completed > requested, f"{name}: completed before it was requested"
            assert action not in _COMPLETED_AS, f"{name}: a completed {action} is a {_COMPLETED_AS[action]}"
        if action in ("compaction", "clean") and state == "requested":
            assert (folder / name).stat().st_size, f"{name}: the plan it is executed from is missing"
    return len(names)


def _data_files(table: Path):
    for f in table.rglob("*"):
        rel = f.relative_to(table).as_posix()
        if f.is_file() and not rel.startswith(".hoodie/") and rel != ".hoodie":
            yield f


def _strict_parse(text: str, where: str) -> None:
    try:
        avro.schema.parse(text)
    except Exception as e:  # SchemaParseException and its kin: the Java parser rejects the same
        raise AssertionError(f"{where}: Avro's strict parser rejects the schema: {e}") from e


def check_schemas(table: Path) -> int:
    from ingest.hudi.log.log_reader import read_log_bytes

    checked = 0
    for f in _data_files(table):
        if LOG_FILE.match(f.name):
            for block in read_log_bytes(f.read_bytes()):
                if block.is_corrupt:
                    continue
                schema = block.schema
                if schema:
                    _strict_parse(schema, f"{f} block at {block.offset}")
                    checked += 1
        elif BASE_FILE.match(f.name):
            meta = pq.read_metadata(f).metadata or {}
            for key, value in meta.items():
                if key.endswith(b"avro.schema"):
                    _strict_parse(value.decode(), f"{f} footer {key.decode()}")
                    checked += 1
    from ingest.hudi.timeline.commit_metadata import decode_metadata

    for f in _timeline_files(table, ".deltacommit", ".commit"):
        if f.stat().st_size:
            schema = (decode_metadata(f.read_bytes()).get("extraMetadata") or {}).get("schema")
            if schema:
                _strict_parse(schema, f"{f} extraMetadata.schema")
                checked += 1
    return checked


def check_rollbacks(table: Path) -> int:
    checked = 0
    for f in _timeline_files(table, ".rollback"):
        with f.open("rb") as fo:
            records = list(fastavro.reader(fo, reader_schema=ROLLBACK_METADATA_0_15))
        assert len(records) == 1, f"{f}: one HoodieRollbackMetadata record expected"
        meta = records[0]
        unset = [k for k, v in meta.items() if v is None]
        assert not unset, f"{f}: fields not set: {unset}"
        for partition, pm in meta["partitionMetadata"].items():
            assert not partition.startswith(".hoodie"), f"{f}: rollback lists {partition} as a partition"
            unset = [k for k, v in pm.items() if v is None]
            assert not unset, f"{f} partition {partition!r}: fields Hudi dereferences are null: {unset}"
        checked += 1
    return checked


def check_keys_in_base_files(table: str | Path, global_index: bool = False) -> int:
    """Every live key is in the latest committed base file of the file group that holds it, and (for a
    per-partition index) in no other group's of its partition: `HoodieSimpleIndex.tagLocationInternal`
    joins incoming keys with every base-file location it reads, so a second one would tag the record
    twice. A global index on a Merge-On-Read table expects stale copies (a moved key stays in its old
    base file until compaction, deleted in a log) and resolves them by merged reads
    (`HoodieIndexUtils.tagGlobalLocationBackToRecords` with `mayContainDuplicateLookup`)."""
    from ingest.hudi.table.snapshot import context, read_slice
    from ingest.hudi.table.table import HudiTable

    table = Path(table)
    hudi_table = HudiTable.open(str(table))
    timeline = hudi_table.timeline()
    completed = timeline.completed_write_timestamps()
    ctx, slices = context(hudi_table)
    located: dict[tuple[str, str], set[str]] = {}   # (partition, key) -> file groups whose base holds it
    for group in hudi_table.view(timeline).file_groups():
        bases = [s.base_file for s in group.slices
                 if s.base_file is not None and s.base_file.name.instant in completed]
        if bases:
            keys = pq.read_table(table / bases[-1].path, columns=["_hoodie_record_key"]).column(0).to_pylist()
            for key in keys:
                located.setdefault((group.partition_path, key), set()).add(group.file_id)
    found = 0
    for s in slices:
        for key in read_slice(ctx, s).column("_hoodie_record_key").to_pylist():
            where = located.get((s.partition_path, key), set())
            assert (s.file_id in where) if global_index else (where == {s.file_id}), (
                f"live key {key} of {s.partition_path}/{s.file_id} is in the latest base files of {sorted(where)}: "
                f"Hudi's simple index {'cannot find it' if not where else 'finds it elsewhere'}")
            found += 1
    return found


def check(table: str | Path, bucket_index: bool, global_index: bool = False) -> dict[str, int]:
    """Run every invariant; returns what each one checked (so a caller can see it was not vacuous)."""
    table = Path(table)
    counts = {
        "markers": check_markers(table),
        "schemas": check_schemas(table),
        "rollbacks": check_rollbacks(table),
        "timeline": check_timeline(table),
    }
    if not bucket_index:
        counts["keys_in_base_files"] = check_keys_in_base_files(table, global_index)
    return counts
