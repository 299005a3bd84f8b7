"""The rules Hudi's Java code relies on when it meets a table, checked on any table folder.

Every scenario that writes a table (the property-based ones, the crash tests) calls `check(path)`,
also right after an injected crash, when a Hudi writer, `hudi-cli` or a reader may be the next
process to open the table. Each check names the Java code whose rule it keeps:

* markers: `MarkerBasedRollbackStrategy.getRollbackRequests` turns every marker into a rollback
  request for a base or log file (`FSUtils.getFileIdFromFilePath`, `FSUtils.getRelativePartitionPath`);
  a marker naming anything else fails every Hudi writer's rollback of our failed instants;
* Avro names: `org.apache.avro.Schema.Parser` (strict name validation) parses the SCHEMA header of every
  log block (`HoodieDataBlock`), the `schema` of every commit (`TableSchemaResolver`) and the footer
  schema of every base file (`AvroReadSupport`); the `avro` package's parser applies its rules to names of
  types and enum symbols, and field names (`Schema.Field`'s constructor calls `validateName`) are checked here;
* simple index: `HoodieSimpleIndex.fetchRecordLocationsForAffectedPartitions` reads keys from the latest
  base files only (`HoodieIndexUtils.getLatestBaseFilesForPartition`) because
  `HoodieSimpleIndex.canIndexLogFiles()` is false: for every index but BUCKET a live key must be in
  the latest base file of its file group, or a Hudi writer tags its update as an insert;
* rollback metadata: `HoodieTableMetadataUtil.processRollbackMetadata` calls
  `getRollbackLogFiles().forEach` and `getLogFilesFromFailedCommit().forEach` without null checks, so
  every `.rollback` must decode with Hudi's `HoodieRollbackMetadata` schema (0.15's at version 6, 1.x's
  at 8 and 9: the same fields) with every field set;
* timeline file names, at layout 1 (`.hoodie/`) and layout 2 (`.hoodie/timeline/`): every instant file
  (a name starting with a digit; hidden temporaries and `hoodie.properties` are not instants) parses with
  hudi-rs's rules (`Instant::try_from_file_name_and_timezone`, crates/core/src/timeline/instant.rs at
  apache/hudi-rs 0910ca7): the name splits at its first `.` into a time part and `<action>[.<state>]`,
  the state `requested` or `inflight` (a bare `<t>.inflight` is a commit's), none when completed; a time
  part `<requested>_<completed>` only on a completed instant; every time 14 or 17 digits, a real
  `yyyyMMddHHmmss[SSS]` date (or 17 digits of epoch millis). hudi-rs knows three actions and skips the
  others' files, so the action is checked against Java's `HoodieTimeline.VALID_ACTIONS_IN_TIMELINE`.
  At layout 2 no instant file is left in `.hoodie/` itself (`ActiveTimelineV2` lists `timeline/` only),
  files are named as `InstantFileNameGeneratorV2` names them: a completion time after the requested time,
  a completed compaction is a `commit` (log compaction a `deltacommit`, clustering a `replacecommit`), and
  the plan a pending compaction or clean is executed from is in its requested file
  (`CompactionUtils.getCompactionPlan`, `CleanerUtils.getCleanerPlan` read it there);
* timeline Avro files: `TimelineMetadataUtils.deserializeAvroMetadata` reads each plan and metadata with
  Hudi's generated class, resolving the embedded writer schema against it by record full name and field
  name. Every Avro timeline file's schema passes Apache Avro's strict parser; at versions 8 and 9 (where
  commit metadata is Avro too, `CommitMetadataSerDeV2`) every non-empty instant file is an Avro container,
  and each record Hudi 1.x declares (tests/hudi_avsc.py: commit metadata, compaction and clean plans,
  clean and rollback metadata and plans) resolves against Hudi's schema: same record full names, no field
  Hudi does not know (its value would be dropped), every shared field of the same type and default, every
  field of Hudi's that is missing with a default;
* partition values: Spark's Hudi reader prunes partitions by the values it parses from each partition
  path (`SparkHoodieTableFileIndex.doParsePartitionColumnValues`, 0.15 and 1.x: a path of as many folders
  as partition fields is read as `<field>=<value>` folders, a folder holding `=` taken as it is, then
  `PartitioningUtils.parsePartitionColumn` splits at the first `=` and `castPartValueToDesiredType` decodes
  `%XX` in strings, `__HIVE_DEFAULT_PARTITION__` reading null), and Hudi's sync tools register the values
  the extractor they infer cuts out (`MultiPartKeysValueExtractor` and `HiveStylePartitionValueExtractor`
  fail on a folder holding a second `=`): for every live record of a SIMPLE or COMPLEX key generator's
  table, both give the record's own partition values, or a query filtering on them misses the record.
"""

from __future__ import annotations

import io
import json
import re
from datetime import datetime
from pathlib import Path

import avro.schema
import fastavro
import pyarrow.parquet as pq
from hudi_avsc import (
    HUDI_1X_RECORDS,
    ROLLBACK_METADATA_0_15,
    decode_strict,
    hudi_1x_schema,
    hudi_1x_text,
    parse_hudi_text,
    shape,
)

# FSUtils.LOG_FILE_PATTERN and the base file name of FSUtils.makeBaseFileName (Hudi 0.14/0.15).
LOG_FILE = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(\.cdc)?)?$")
BASE_FILE = re.compile(r"^([^_/]+)_(\d+-\d+-\d+)_(\d+)\.(parquet|orc|hfile)$")
MARKER = re.compile(r"^(.*)\.marker\.(CREATE|MERGE|APPEND)$")

# Java's `HoodieTimeline.VALID_ACTIONS_IN_TIMELINE` (release-1.x; 0.x has the same but `clustering`).
TIMELINE_ACTIONS = frozenset({"commit", "deltacommit", "clean", "savepoint", "restore", "rollback", "compaction",
                              "logcompaction", "replacecommit", "clustering", "indexing"})


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


def _data_files(table: Path):
    for f in table.rglob("*"):
        rel = f.relative_to(table).as_posix()
        if f.is_file() and not rel.startswith(".hoodie/") and rel != ".hoodie":
            yield f


def _java_valid_name(name: str) -> bool:
    """Java Avro's `Schema.validateName`: a letter or `_`, then letters, digits or `_`, char by char (a
    character beyond U+FFFF is two surrogate chars there, neither a letter)."""
    def letter(c: str) -> bool:
        return c.isalpha() and ord(c) <= 0xFFFF

    return bool(name) and (letter(name[0]) or name[0] == "_") and all(
        letter(c) or (c.isdecimal() and ord(c) <= 0xFFFF) or c == "_" for c in name[1:])


def _names_java_refuses(node) -> list[str]:
    """Names in a schema (parsed JSON) that Java's `Schema.Parser` refuses: field names (`Field`'s
    constructor), the simple name of every record, enum and fixed (`Name`), enum symbols (`EnumSchema`).
    The `avro` package checks the last two only, so field names are checked here."""
    if isinstance(node, list):
        return [bad for branch in node for bad in _names_java_refuses(branch)]
    if not isinstance(node, dict):
        return []
    bad = []
    if node.get("type") in ("record", "error", "enum", "fixed") and "name" in node:
        simple = node["name"].rsplit(".", 1)[-1]
        bad += [] if _java_valid_name(simple) else [f"{node['type']} name {simple!r}"]
    for f in node.get("fields", []) if node.get("type") in ("record", "error") else []:
        bad += [] if _java_valid_name(f["name"]) else [f"field name {f['name']!r}"]
        bad += _names_java_refuses(f["type"])
    for symbol in node.get("symbols", []) if node.get("type") == "enum" else []:
        bad += [] if _java_valid_name(symbol) else [f"enum symbol {symbol!r}"]
    for key in ("items", "values"):
        if key in node:
            bad += _names_java_refuses(node[key])
    if isinstance(node.get("type"), (dict, list)):
        bad += _names_java_refuses(node["type"])
    return bad


def _strict_parse(text: str, where: str) -> None:
    try:
        avro.schema.parse(text)
    except Exception as e:  # SchemaParseException and its kin: the Java parser rejects the same
        raise AssertionError(f"{where}: Avro's strict parser rejects the schema: {e}") from e
    refused = _names_java_refuses(json.loads(text))
    assert not refused, f"{where}: Java's Schema.Parser refuses {', '.join(refused)} (Schema.validateName)"


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


def _version(table: Path):
    from ingest.hudi.table.table import HudiTable

    return HudiTable.open(str(table)).version


def _rollback_schema(table: Path):
    """Hudi's `HoodieRollbackMetadata`: 1.x's where the timeline is Avro throughout (8, 9), else 0.15's."""
    if _version(table).avro_commit_metadata:
        return hudi_1x_schema("HoodieRollbackMetadata")
    return parse_hudi_text(ROLLBACK_METADATA_0_15)


def check_rollbacks(table: Path) -> int:
    checked = 0
    reader_schema = _rollback_schema(table)
    for f in _timeline_files(table, ".rollback"):
        with f.open("rb") as fo:
            records = list(fastavro.reader(fo, reader_schema=reader_schema))
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


def timeline_instant(name: str) -> tuple[str, str | None, str, str]:
    """(requested time, completion time or None, action, state) of a timeline file name, by hudi-rs's
    rules (see the module docstring); an AssertionError says which rule a name breaks."""
    head, dot, suffix = name.partition(".")
    assert dot, f"{name}: no '.' between the instant time and the action"
    action, dot, state = suffix.partition(".")
    if not dot:
        action, state = ("commit", "inflight") if suffix == "inflight" else (suffix, "")
    assert state in ("", "requested", "inflight"), f"{name}: state {state!r} is none of requested, inflight"
    assert action in TIMELINE_ACTIONS, f"{name}: action {action!r} is not in HoodieTimeline.VALID_ACTIONS_IN_TIMELINE"
    requested, underscore, completed = head.partition("_")
    assert not underscore or not state, f"{name}: only completed instants carry a completion time"
    for ts in (requested, completed) if underscore else (requested,):
        assert len(ts) in (14, 17) and ts.isdigit(), f"{name}: time {ts!r} is not 14 or 17 digits"
        try:
            datetime.strptime(ts[:14], "%Y%m%d%H%M%S")
        except ValueError:
            assert len(ts) == 17, f"{name}: time {ts!r} is no yyyyMMddHHmmss date"  # else epoch millis
    return requested, completed or None, action, state or "completed"


def _instant_files(folder: Path) -> list[Path]:
    return sorted(f for f in folder.iterdir() if f.is_file() and f.name[:1].isdigit()) if folder.is_dir() else []


def _timeline_folder(table: Path) -> Path:
    meta = _meta_folder(table)
    return meta / "timeline" if _version(table).has_completion_times else meta


# InstantFileNameGeneratorV2: these complete as another action's file.
_COMPLETED_AS = {"compaction": "commit", "logcompaction": "deltacommit", "clustering": "replacecommit"}


def check_timeline(table: Path) -> int:
    folder = _timeline_folder(table)
    files = _instant_files(folder)
    for f in files:
        requested, completed, action, state = timeline_instant(f.name)
        if completed is not None:
            assert completed > requested, f"{f.name}: completed before it was requested"
            assert action not in _COMPLETED_AS, f"{f.name}: a completed {action} is a {_COMPLETED_AS[action]}"
        if action in ("compaction", "clean") and state == "requested":
            assert f.stat().st_size, f"{f.name}: the plan it is executed from is missing"
    if folder != _meta_folder(table):
        stray = [f.name for f in _instant_files(_meta_folder(table))]
        assert not stray, f"instant files outside the layout-2 timeline folder, unseen by Hudi 1.x: {stray}"
    return len(files)


def _records(schema) -> dict[str, list]:
    """Every record of a schema by short name: [full name, [(field, type shape, default), ...]]."""
    names: dict[str, list] = {}
    for named in schema.get("__named_schemas", {}).values():  # fastavro's parsed form names its records
        shape(named, names)
    shape(schema, names)
    return {k: v[1:] for k, v in names.items()}


def check_resolves(writer_schema, hudi_schema, where: str) -> None:
    """The writer schema resolves against Hudi's without losing or inventing a field (module docstring)."""
    ours, theirs = _records(writer_schema), _records(hudi_schema)
    for short, (full, fields) in ours.items():
        assert short in theirs, f"{where}: record {full} is none of Hudi's ({sorted(theirs)})"
        hudi_full, hudi_fields = theirs[short]
        assert full == hudi_full, f"{where}: record {full}, Hudi's is {hudi_full}"
        hudi_by_name = {f[0]: f for f in hudi_fields}
        for name, kind, default in fields:
            assert name in hudi_by_name, f"{where}: {short}.{name} is no field of Hudi's {short}"
            assert [kind, default] == hudi_by_name[name][1:], (
                f"{where}: {short}.{name} is {kind} default {default}, Hudi's {hudi_by_name[name][1:]}")
        ours_names = {f[0] for f in fields}
        missing = [f[0] for f in hudi_fields if f[0] not in ours_names and f[2] == '"-"']
        assert not missing, f"{where}: {short} lacks {missing}, which Hudi's schema gives no default"


def check_timeline_avro(table: Path) -> int:
    one_x = _version(table).avro_commit_metadata
    checked = 0
    for f in _instant_files(_timeline_folder(table)):
        data = f.read_bytes()
        if not data.startswith(b"Obj\x01"):
            assert not (one_x and data), f"{f}: a non-empty instant file at this version must be an Avro container"
            continue
        reader = fastavro.reader(io.BytesIO(data))
        _strict_parse(reader.metadata["avro.schema"], str(f))
        name = reader.writer_schema["name"].rsplit(".", 1)[-1]
        if one_x and name in HUDI_1X_RECORDS:
            check_resolves(reader.writer_schema, hudi_1x_schema(name), str(f))
            decode_strict(data, hudi_1x_text(name))  # Apache Avro's own resolution, Hudi's schema as reader
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


DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def spark_partition_values(partition_path: str, fields: list[str]) -> list[str | None] | None:
    """The values Spark's Hudi reader parses from a partition path for string columns
    (`doParsePartitionColumnValues`, then `castPartValueToDesiredType`, which decodes with Spark's
    `unescapePathName`, checked against Spark's own in test_partition_path); None where it parses none
    (a path not aligned with several fields, which it then cannot prune)."""
    from ingest.hudi.keygen.partition_path import java_split, unescape_path_name

    fragments = java_split(partition_path, "/")
    if len(fragments) != len(fields):
        if len(fields) != 1:
            return None
        prefix = fields[0] + "="
        return [partition_path[len(prefix):] if partition_path.startswith(prefix) else partition_path]
    values = []
    for fragment, field in zip(fragments, fields, strict=True):
        named = fragment if "=" in fragment else f"{field}={fragment}"
        name, _, raw = named.partition("=")  # PartitioningUtils.parsePartitionColumn: the first '='
        assert name and raw, f"Spark fails on partition folder {fragment!r}: empty column name or value"
        values.append(None if raw == DEFAULT_PARTITION else unescape_path_name(raw))
    return values


def check_partition_values(table: str | Path) -> int:
    """Every live record's partition values as Spark's Hudi reader and Hudi's sync tools read its path
    (module docstring); string, integer and boolean partition fields of SIMPLE and COMPLEX key generators."""
    from ingest.catalog.settings import SyncSettings
    from ingest.hudi.table.snapshot import read_snapshot
    from ingest.hudi.table.table import HudiTable

    hudi_table = HudiTable.open(str(table))
    config = hudi_table.config
    fields = list(config.partition_fields)
    keygen = (config.props.get("hoodie.table.keygenerator.class", "")
              + config.props.get("hoodie.table.keygenerator.type", "").title())
    if not fields or "Timestamp" in keygen or "Custom" in keygen:
        return 0
    # The extractor Hudi's sync infers for the table (HoodieSyncConfig.META_SYNC_PARTITION_EXTRACTOR_CLASS).
    extractor = SyncSettings.from_hudi({"hoodie.datasource.write.partitionpath.field": ",".join(fields),
                                        "hoodie.datasource.write.hive_style_partitioning": str(config.hive_style)}
                                       ).extractor
    checked = 0
    for row in read_snapshot(hudi_table).to_pylist():
        path = row["_hoodie_partition_path"]
        expected = [_java_partition_string(_field(row, f)) for f in fields]
        if any(e is _UNCHECKED for e in expected):
            continue
        parsed = spark_partition_values(path, fields)
        if parsed is not None:
            assert parsed == expected, (
                f"record {row['_hoodie_record_key']} in {path!r}: Spark's Hudi reader parses {parsed}, the record holds "
                f"{expected}")
        if not config.url_encode:  # values stay escaped in the catalog (HMSDDLExecutor, Glue): not compared
            got = [None if v == DEFAULT_PARTITION else v for v in extractor.values(path)]
            assert got == expected, f"record {row['_hoodie_record_key']} in {path!r}: {extractor.name} registers {got}"
        checked += 1
    return checked


_UNCHECKED = object()


def _field(row: dict, name: str):
    """A (possibly nested, `a.b`) field's value; a null parent gives null, as Hudi's key generators read it."""
    value = row
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _java_partition_string(value):
    """The value a partition path is made of (Hudi's `KeyGenUtils`: null and empty are the default
    partition, read as null); values of other types than string, integer and boolean are not checked."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int)):
        return str(value)
    return _UNCHECKED


def check(table: str | Path, bucket_index: bool, global_index: bool = False) -> dict[str, int]:
    """Run every invariant; returns what each one checked (so a caller can see it was not vacuous)."""
    table = Path(table)
    counts = {
        "markers": check_markers(table),
        "schemas": check_schemas(table),
        "rollbacks": check_rollbacks(table),
        "timeline": check_timeline(table),
        "timeline_avro": check_timeline_avro(table),
        "partition_values": check_partition_values(table),
    }
    if not bucket_index:
        counts["keys_in_base_files"] = check_keys_in_base_files(table, global_index)
    return counts
