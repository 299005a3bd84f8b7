"""The backfill: files (parquet, JSON lines, CSV, ORC, Avro) into the table, a commit per group of files.

Files are taken in path order and grouped into commits of one format, at most
`source.files.max_files_per_trigger` files and (unless one file is bigger) `max_bytes_per_commit`
bytes each, so a failure redoes at most one group. Each commit records which files it loaded
(`ingest.pipeline.inputs`): running the same backfill again skips them, so a backfill that died is
simply started again.

The write goes through `HudiSink`, as the stream's does, with the configured operation:

* `upsert` (and `insert`, `delete`) route records through the index like any batch: a key already in
  the table is updated, and the precombine field keeps the newer version;
* `bulk_insert` (a first load) writes new file groups as base files straight away
  (`write.insert_mode: base`), sized by `hoodie.parquet.max.file.size` as Hudi's bulk insert sizes
  them; keys are still looked up, so a bulk insert into a table that has them updates rather than
  duplicates them.

Rows that cannot be read (a malformed JSON line or CSV row, a NOT NULL column that is null) are set
aside in the quarantine with the file they came from, or fail the commit naming the first
(`stream.on_error`), like records without a key. A backfill's quarantine is the sub-folder
`backfill=<identifier>` of `quarantine.path`, so its batch folders never meet a stream's.

With catalog sync on, the table is synced after each commit, as the stream does
(`ingest.pipeline.catalog_sync`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from ingest.config.pipeline import FileInput, OnError, PipelineConfig
from ingest.errors import BadRecordError, ConfigError
from ingest.pipeline import hoodie_metrics, inputs
from ingest.pipeline.catalog_sync import CatalogSync, SyncOutcome
from ingest.pipeline.inline_services import InlineServices
from ingest.pipeline.progress import PhaseReporter, ProgressBar
from ingest.pipeline.session import spark_session
from ingest.pipeline.stopping import stop_on_signals
from ingest.pipeline.stream import CONFIG_METADATA_KEY
from ingest.spark.sink import HudiSink
from ingest.spark.status import task_progress
from ingest.storage import Storage
from ingest.write import quarantine
from ingest.write.batch import CommitResult
from ingest.write.commit import BatchId
from ingest.write.file_group_writer import InsertMode
from ingest.write.options import Operation, WriteOptions

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES_PER_COMMIT = 1024**3
CORRUPT = "_ingest_raw_record"
SOURCE_FILE = "_ingest_source_file"
BLOCK_START = "_ingest_block_start"
ERROR = quarantine.ERROR
NEED_SCHEMA = ("json", "csv")


@dataclass(frozen=True)
class GroupReport:
    batch: int
    files: tuple[inputs.InputFile, ...]
    commit: CommitResult
    unreadable: int = 0
    seconds: float = 0.0
    sync: SyncOutcome | None = None

    def log_line(self) -> str:
        c = self.commit
        counts = c.counts
        size = sum(f.size for f in self.files)
        return (f"backfill batch {self.batch}: {len(self.files)} file(s), {size} bytes: instant {c.instant} "
                f"rows_in={c.rows_in + self.unreadable} written={counts.get('upserts', 0)} "
                f"(inserts={counts.get('inserts', 0)} updates={counts.get('updates', 0)}) "
                f"deletes={counts.get('deletes', 0)} stale={counts.get('stale', 0)} "
                f"quarantined={c.quarantined + self.unreadable} files_written={c.files} "
                + " ".join(f"{k}={v:.2f}s" for k, v in {**c.durations, "total": self.seconds}.items())
                + (self.sync.text() if self.sync else ""))


@dataclass
class BackfillRun:
    """What a run did: files found, files earlier runs had committed, and this run's commits."""

    identifier: str
    found: int = 0
    skipped: int = 0
    groups: list[GroupReport] = field(default_factory=list)
    stopped_by: str | None = None

    @property
    def commits(self) -> int:
        return sum(1 for g in self.groups if g.commit.instant is not None)

    @property
    def loaded(self) -> int:
        return sum(len(g.files) for g in self.groups)

    def summary(self) -> str:
        rows = sum(g.commit.counts.get("upserts", 0) for g in self.groups)
        bad = sum(g.commit.quarantined + g.unreadable for g in self.groups)
        how = f"stopped on {self.stopped_by}" if self.stopped_by else "finished"
        return (f"backfill {self.identifier} {how}: {self.found} file(s) found, {self.skipped} already committed "
                f"by earlier runs, {self.loaded} loaded in {self.commits} commit(s), {rows} row(s) written, "
                f"{bad} quarantined")


def write_options(config: PipelineConfig) -> WriteOptions:
    """The sink's options: a bulk insert writes base files of Hudi's bulk-insert size."""
    options = config.write
    if options.operation is Operation.BULK_INSERT:
        return dataclasses.replace(options, insert_mode=InsertMode.BASE,
                                   file_group_max_bytes=int(config.services["hoodie.parquet.max.file.size"]))
    return options


def safe_name(identifier: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", identifier)


# -- reading a group ---------------------------------------------------------------------------------


def _reader_schema(files: FileInput, file_format: str) -> StructType | None:
    if files.schema is None:
        return None
    schema = from_arrow_schema(files.schema)
    if file_format in NEED_SCHEMA:
        schema = StructType([*schema.fields, StructField(CORRUPT, StringType(), True)])
    return schema


def read_group(spark: SparkSession, files: FileInput, file_format: str, paths: Sequence[str],
               base_path: str | None) -> tuple[DataFrame, Column | None]:
    """The group's rows, and an expression naming what is wrong with a row (None: nothing can be)."""
    options = {k: str(v) for k, v in files.options.items()}
    if file_format == "csv":
        options.setdefault("header", "true")
    if base_path:
        options.setdefault("basePath", base_path)
    schema = _reader_schema(files, file_format)
    reader = spark.read.format(file_format)
    if schema is not None:
        reader = reader.schema(schema)
        if file_format in NEED_SCHEMA:
            options.update(mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT)
    df = reader.options(**options).load(list(paths))
    checks: list[tuple[Column, Column]] = []
    if schema is not None and file_format in NEED_SCHEMA:
        checks.append((F.col(CORRUPT).isNotNull(),
                       F.lit(f"malformed {file_format} record: it does not parse against source.schema")))
    if files.schema is not None:
        for f in files.schema:
            if not f.nullable and f.name in df.columns:
                checks.append((F.col(f"`{f.name}`").isNull(), F.lit(f"field {f.name!r} is null but declared NOT NULL")))
    if not checks:
        return df, None
    error = F.when(checks[0][0], checks[0][1])
    for condition, message in checks[1:]:
        error = error.when(condition, message)
    df = df.withColumn(SOURCE_FILE, F.col("_metadata.file_path")).withColumn(
        BLOCK_START, F.col("_metadata.file_block_start"))
    return df, error


def _write_unreadable(storage: Storage, label: str, rows: pa.Table) -> int:
    """Write one task's unreadable rows: a file per input file and split, named by them (a re-run
    rewrites the same files)."""
    pairs = sorted(set(zip(rows.column(SOURCE_FILE).to_pylist(), rows.column(BLOCK_START).to_pylist(), strict=True)))
    for path, start in pairs:
        mask = pc.and_(pc.equal(rows.column(SOURCE_FILE), path), pc.equal(rows.column(BLOCK_START), start))
        part = f"read-{hashlib.sha1(path.encode()).hexdigest()[:16]}-{start}"
        quarantine.write(storage, rows.filter(mask).drop_columns([BLOCK_START]), label, part)
    return rows.num_rows


def set_aside(errors: DataFrame, storage: Storage, label: str) -> int:
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        parts = [b for b in batches if b.num_rows]
        count = _write_unreadable(storage, label, pa.Table.from_batches(parts)) if parts else 0
        yield pa.RecordBatch.from_pydict({"n": pa.array([count], pa.int64())})

    return int(sum(r["n"] for r in errors.mapInArrow(write, "n long").collect()))


def fail_if_any(errors: DataFrame) -> None:
    first = errors.orderBy(SOURCE_FILE, BLOCK_START).limit(1).collect()
    if not first:
        return
    row = first[0].asDict()
    raw = row.get(CORRUPT)
    shown = f": {raw[:200]!r}" if raw else ""
    raise BadRecordError(f"{errors.count()} row(s) cannot be read; first, in {row[SOURCE_FILE]}: {row[ERROR]}{shown} "
                         "(stream.on_error is fail; set quarantine.path to set such rows aside)")


# -- the run ------------------------------------------------------------------------------------------


def backfill(config: PipelineConfig, input: str | None = None, *, file_format: str | None = None,
             max_bytes_per_commit: int | None = DEFAULT_MAX_BYTES_PER_COMMIT,
             spark: SparkSession | None = None) -> BackfillRun:
    """Load the files at `input` (default `source.files.path`) into the table, skipping files earlier
    runs of this backfill committed. `file_format` overrides what extensions and the configuration say."""
    files = config.source.files
    if files is None:
        raise ConfigError("ingest backfill reads files (source.files); this configuration streams Kafka: run it "
                          "with ingest stream", source=config.origin, key="source")
    if file_format is not None and file_format not in inputs.FORMATS:
        raise ConfigError(f"must be one of {', '.join(inputs.FORMATS)}, got {file_format!r}", key="--format")
    root = input or files.path
    identifier = config.write.checkpoint_id
    created = False
    if spark is None:
        spark, created = spark_session(config)
    run = BackfillRun(identifier)
    sink: HudiSink | None = None
    metrics: hoodie_metrics.Reporter = hoodie_metrics.NullReporter()
    try:
        listing, base_path = inputs.list_files(spark, root)
        formats = [file_format or inputs.format_of(f.path, files.format) for f in listing]
        for f, fmt in zip(listing, formats, strict=True):
            if fmt in NEED_SCHEMA and files.schema is None:
                raise ConfigError(f"{f.path} is read as {fmt}, which needs source.schema (Spark DDL) or "
                                  "source.schema_file", source=config.origin, key="source.schema")
        earlier = inputs.committed(config.table.path, dict(config.table.storage_options), identifier)
        todo = [i for i, f in enumerate(listing) if f.identity not in earlier.done]
        run.found, run.skipped = len(listing), len(listing) - len(todo)
        plan = inputs.group([listing[i] for i in todo], [formats[i] for i in todo],
                            max_files=files.max_files_per_trigger, max_bytes=max_bytes_per_commit)
        groups = [[todo[i] for i in g] for g in plan]
        log.info("backfill %s from %s into %s: %d file(s), %d already committed by earlier runs, %d to load in "
                 "%d commit(s) (operation %s)", identifier, root, config.table.path, len(listing), run.skipped,
                 len(todo), len(groups), config.write.operation.value)
        if not groups:
            log.info(run.summary())
            return run

        on_error = config.stream.on_error
        quarantine_path = (f"{config.quarantine.path.rstrip('/')}/backfill={safe_name(identifier)}"
                           if config.quarantine.path else None)
        storage = Storage(quarantine_path, config.table.storage_options) if on_error is OnError.QUARANTINE else None
        services = InlineServices(config.table.path, config.table.storage_options, config.services, spark,
                                  lock=lambda: sink.lock if sink is not None else None)
        sink = HudiSink(write_options(config), spark=spark, on_error=on_error.value,
                        quarantine_path=quarantine_path, after_commit=services)
        config_json = json.dumps(config.redacted(), sort_keys=True, separators=(",", ":"), default=str)
        checkpoint_id = f"backfill:{identifier}"
        inputs.mark_started(config.table.path, dict(config.table.storage_options), identifier)
        metrics = hoodie_metrics.reporter(config.metrics, config.table.name)
        catalog_sync = CatalogSync(config.table.path, config.table.storage_options, config.catalog)
        stop: list[str] = []
        total = sum(listing[i].size for i in todo)
        with stop_on_signals(stop.append), ProgressBar(f"backfill {identifier}", len(todo), total) as bar, \
                PhaseReporter(f"backfill {identifier}", log, probe=task_progress(spark)) as progress:
            for k, members in enumerate(groups):
                if stop:
                    run.stopped_by = stop[0]
                    log.info("%s received: stopping between commits; %d file(s) left for the next run", stop[0],
                             sum(len(g) for g in groups[k:]))
                    break
                batch = earlier.last_batch + 1 + k
                progress.label = f"backfill batch {batch}"
                chosen = [listing[i] for i in members]
                t0 = time.monotonic()
                spark.sparkContext.setJobDescription(f"ingest: backfill batch {batch} ({len(chosen)} files)")
                df, error = read_group(spark, files, formats[members[0]], [f.path for f in chosen], base_path)
                extra = {inputs.METADATA_KEY: inputs.commit_record(identifier, batch, chosen),
                         CONFIG_METADATA_KEY: config_json}
                unreadable = 0
                if error is None:
                    result = sink.write(df, batch=BatchId(checkpoint_id, batch), extra_metadata=extra)
                else:
                    checked = df.withColumn(ERROR, error).persist(StorageLevel.MEMORY_AND_DISK)
                    try:
                        errors = checked.where(F.col(ERROR).isNotNull())
                        if storage is not None:
                            unreadable = set_aside(errors, storage, str(batch))
                        else:
                            fail_if_any(errors)
                        records = checked.where(F.col(ERROR).isNull()).drop(
                            *[c for c in (ERROR, CORRUPT, SOURCE_FILE, BLOCK_START) if c in checked.columns])
                        result = sink.write(records, batch=BatchId(checkpoint_id, batch), extra_metadata=extra)
                    finally:
                        checked.unpersist()
                sink.results.clear()
                seconds = time.monotonic() - t0
                synced = catalog_sync.after_commit() if result.instant is not None else None
                report = GroupReport(batch, tuple(chosen), result, unreadable, seconds, synced)
                run.groups.append(report)
                log.info(report.log_line())
                if result.instant is not None:
                    metrics.report(hoodie_metrics.commit_figures(
                        result.instant, result.stats, seconds=report.seconds, counts=result.counts,
                        quarantined=unreadable + result.quarantined, sync=synced))
                bar.advance(len(chosen), sum(f.size for f in chosen))
        log.info(run.summary())
        return run
    finally:
        metrics.close()
        if sink is not None:
            sink.close()
        if created:
            spark.stop()
