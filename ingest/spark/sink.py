"""The Spark sink: `df.writeStream.foreachBatch(HudiSink(options)).start()`, or `sink.write(df)`.

Per micro-batch the driver begins the commit and plans it (`ingest.write.batch.write_batch`), and
executors do all the work on records. Each row's route (its bucket, or its key shard) is computed
from the record-key columns alone, in the JVM where the key types allow (`ingest.spark.routing`);
the JVM shuffles whole rows by route; then the task
owning a route prepares its rows (keys, partitions, deletes; bad records quarantined by that task, or
the job fails naming one) and writes: for a bucket, in every partition (a tombstone does not know its
partition), the file groups and the key state; for a key shard, tagged rows that a second shuffle
brings to the task writing each file group. Tasks return write stats only; no record reaches the driver.
Counters come back through accumulators.

The same task functions run in the in-process writer, so a table written through Spark equals one
written locally from the same data.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark import AccumulatorParam
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ingest.errors import ConcurrentWriterError
from ingest.hudi.avro.avro_names import sanitized_schema
from ingest.hudi.table.listing_sync import ListingSync
from ingest.hudi.timeline.commit_metadata import WriteStat
from ingest.spark import routing
from ingest.spark import task_functions as tf
from ingest.spark.failures import is_spark_error, spark_failure, task_conflict
from ingest.spark.peak_memory import TASK_PEAK_IN_USE, TASK_PEAK_RSS
from ingest.spark.task_functions import INPUT_BYTES, KAFKA_OFFSET
from ingest.storage import Storage
from ingest.write import batch as batch_mod
from ingest.write import records as rec
from ingest.write import tasks
from ingest.write.commit import BatchId
from ingest.write.lock import WriterLock, for_writer
from ingest.write.options import IndexType, WriteOptions
from ingest.write.plan import WritePlan

log = logging.getLogger(__name__)

RESULTS_KEPT = 100  # recent batch results a long-running sink keeps for its caller
# Failures that another writer or the storage causes, which a later attempt can get past: the lease
# lost while this writer stalled, a Hudi writer's live write in the way, a storage hiccup. Bad
# records, settings and tables ingest cannot write fail at once: every attempt would fail alike.
TRANSIENT = (ConcurrentWriterError, OSError)
RESULT_SCHEMA = StructType.fromJson({"type": "struct", "fields": [
    {"name": "result", "type": "string", "nullable": False, "metadata": {}},
]})
# A batch's write tasks' largest peaks (`ingest.spark.peak_memory`): measurements, kept apart from
# the batch's counts, which say what was written.
PEAK_NAMES = {TASK_PEAK_RSS: "task_peak_rss_bytes", TASK_PEAK_IN_USE: "task_peak_in_use_bytes"}


class _Counters(AccumulatorParam):
    """Sums of named counters, merged across tasks."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:  # noqa: N802 - Spark's name
        for k, v in b.items():
            if isinstance(v, dict):  # per Kafka partition: keep the largest offset
                inner = a.setdefault(k, {})
                for pk, pv in v.items():
                    inner[pk] = max(inner.get(pk, pv), pv)
            else:
                a[k] = a.get(k, 0) + v
        return a


def _parse_results(rows) -> tasks.TaskResult:
    parts = []
    for row in rows:
        d = json.loads(row["result"])
        parts.append(tasks.TaskResult(
            tuple(WriteStat.from_json(s) for s in d["stats"]), tuple(d["segments"]), d["counts"],
        ))
    return tasks.TaskResult.merge(parts)


def sanitized_frame(df: DataFrame, mask: str) -> DataFrame:
    """Columns and nested fields renamed as HoodieStreamer's `SanitizationUtils.sanitizeColumnNamesForAvro`
    does: a nested rename is a cast to the same struct shape under the new names."""
    target = from_arrow_schema(sanitized_schema(to_arrow_schema(df.schema, timezone="UTC"), mask))
    if target.simpleString() == df.schema.simpleString():
        return df
    columns = []
    for old, new in zip(df.schema, target, strict=True):
        column = F.col(f"`{old.name.replace('`', '``')}`")
        if new.dataType.simpleString() != old.dataType.simpleString():
            column = column.cast(new.dataType)
        columns.append(column.alias(new.name))
    return df.select(*columns)


@contextmanager
def session_conf(session: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """`settings` in force while the batch's jobs run, then the session's own values again.

    A streaming batch's session is the query's own clone, so the user's session is not touched.
    """
    before = {key: session.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        session.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                session.conf.unset(key)
            else:
                session.conf.set(key, value)


# Adaptive execution off: write tasks must own exactly the partitions they were shuffled to (AQE
# could coalesce them), and its re-planning costs a small batch ~50 ms.
EXACT_PARTITIONS = {"spark.sql.adaptive.enabled": "false"}
ARROW_MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
ARROW_MAX_RECORDS = "spark.sql.execution.arrow.maxRecordsPerBatch"
UNMEASURED = 2**31 - 1  # the one byte limit at which Spark stops measuring each Arrow batch as it grows
_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30,
               "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}


def _bytes(text: str) -> int:
    """A Spark byte-size setting ("64m", "67108864b", "1048576") in bytes."""
    text = text.strip().lower()
    digits = len(text) - len(text.lstrip("0123456789"))
    return int(text[:digits]) * _BYTE_UNITS[text[digits:]]


def arrow_batch_settings(session: SparkSession, row_bytes: float | None) -> dict[str, str]:
    """The session's bound on an Arrow batch's bytes turned into a bound on its rows.

    Spark keeps an Arrow batch under `maxBytesPerBatch` (64 MB) by measuring every vector after every
    row it appends; for the benchmark's 12 columns, one a struct, that measuring took about 40% of the
    JVM's time handing rows to Python, and the shuffle plus hand-off of 200,000 rows went from
    0.63 s to 0.44 s without it. Knowing the rows' width (the previous batch's), the same bound is
    kept as a row count, and Spark measures nothing. Unknown width: the session's settings stand.
    """
    if not row_bytes:
        return {}
    max_bytes = _bytes(session.conf.get(ARROW_MAX_BYTES))  # Spark's own default when unset
    if max_bytes == UNMEASURED:
        return {}
    rows = max(1, int(max_bytes // row_bytes))
    max_records = int(session.conf.get(ARROW_MAX_RECORDS))
    if max_records > 0:
        rows = min(rows, max_records)
    return {ARROW_MAX_BYTES: str(UNMEASURED), ARROW_MAX_RECORDS: str(rows)}


# A thousand rows tell the width as well as ten thousand (144.8 and 146.8 bytes for the benchmark's
# rows); the job reading them took 97 ms instead of 145 ms.
SAMPLE_ROWS = 1_000


def sampled_row_bytes(df: DataFrame, rows: int = SAMPLE_ROWS) -> float | None:
    """Arrow bytes per row of `df`'s first `rows` rows, for a sink's first batch, whose width no
    earlier batch has told (`arrow_batch_settings`): reading them is one small job, and saves the
    per-row measuring of every Arrow batch (0.6 s of a 1,000,000-row bulk load). None where the rows
    come after a shuffle, which reading them would run again (the batch then lets Spark measure), or
    where there are none."""
    try:
        if "Exchange" in df._jdf.queryExecution().executedPlan().toString():
            return None
        sample = df.limit(rows).toArrow()
    except Exception as error:  # only a speed-up: the write itself reports what is wrong with the rows
        log.debug("could not read the batch's first rows for their width: %s", error)
        return None
    return sample.nbytes / sample.num_rows if sample.num_rows else None


@dataclass(frozen=True)
class PreparedFrame:
    """A batch to prepare inside the write job (nothing has run yet).

    `columns` are added to the rows in the projection that computes their route: one pass over the
    rows before the shuffle instead of two (a 1,000,000-row shuffle's map side took 0.58 s against
    0.63 s).
    """

    df: DataFrame
    options: WriteOptions
    ordering_field: str | None
    columns: Mapping[str, Column] = field(default_factory=dict)


class SparkEngine:
    """Runs a batch's tasks on Spark executors."""

    def __init__(self, spark: SparkSession, *, on_error: str = "fail", quarantine_path: str | None = None,
                 quarantine_options: Mapping[str, Any] | None = None, batch_label: str = "0",
                 parallelism: int | None = None, exact_routes: bool = False, row_bytes: float | None = None):
        if on_error not in ("fail", "quarantine"):
            raise ValueError(f"on_error must be 'fail' or 'quarantine', not {on_error!r}")
        if on_error == "quarantine" and not quarantine_path:
            raise ValueError("on_error 'quarantine' needs a quarantine path")
        self.spark = spark
        self.on_error = on_error
        self.quarantine = Storage(quarantine_path, quarantine_options) if quarantine_path else None
        self.batch_label = batch_label
        self.parallelism = parallelism or spark.sparkContext.defaultParallelism
        self.exact_routes = exact_routes
        self.row_bytes = row_bytes  # Arrow bytes per input row: known from a previous batch, then this one's
        self.offsets: dict[str, int] = {}
        self.task_peaks: dict[str, int] = {}  # the last run's, by `PEAK_NAMES`

    # -- Engine protocol --------------------------------------------------------------------------

    def schema(self, df: DataFrame) -> pa.Schema:
        return to_arrow_schema(df.schema, timezone="UTC")

    def prepare(self, df: DataFrame, options: WriteOptions, ordering_field: str | None) -> PreparedFrame:
        if rec.SOURCE_ORDER not in df.columns:
            # Ties between versions of a key go to the later one in source order: the Kafka offset when
            # there is one (a key's messages share a Kafka partition), else the row's position.
            order = F.col(KAFKA_OFFSET) if KAFKA_OFFSET in df.columns else F.monotonically_increasing_id()
            return PreparedFrame(df, options, ordering_field, {rec.SOURCE_ORDER: order.cast("long")})
        return PreparedFrame(df, options, ordering_field)

    def slice_reader(self):
        return None

    def commit_metadata(self) -> dict[str, str]:
        """Where the batch read Kafka up to (largest offset per topic-partition), for operators."""
        if not self.offsets:
            return {}
        return {"ingest.kafka.max_offsets": json.dumps(self.offsets, sort_keys=True, separators=(",", ":"))}

    def run(self, plan: WritePlan, prepared: PreparedFrame) -> tasks.TaskResult:
        counters = self.spark.sparkContext.accumulator({}, _Counters())
        session = prepared.df.sparkSession
        row_bytes = self.row_bytes or sampled_row_bytes(prepared.df)
        with session_conf(session, {**EXACT_PARTITIONS, **arrow_batch_settings(session, row_bytes)}):
            routed = self._routed(plan, prepared)
            if plan.index_type is IndexType.BUCKET:
                result = self._bucket(plan, prepared, routed, counters)
            else:
                result = self._key_index(plan, prepared, routed, counters)
        totals = dict(counters.value)
        self.offsets = totals.pop("_kafka_offsets", {}) or {}
        input_bytes = totals.pop(INPUT_BYTES, 0)
        self.task_peaks = {name: max(peaks.values()) for key, name in PEAK_NAMES.items()
                           if (peaks := totals.pop(key, {}))}
        if totals.get("rows_in"):
            self.row_bytes = input_bytes / totals["rows_in"]
        return tasks.TaskResult.merge([result, tasks.TaskResult(counts=totals)])

    # -- stages -----------------------------------------------------------------------------------

    def _routed(self, plan: WritePlan, prepared: PreparedFrame) -> DataFrame:
        """The batch shuffled by route (bucket or key shard), computed from the record-key columns
        alone; the tasks after the shuffle do everything else."""
        return routing.shuffled(prepared.df, prepared.options.keygen, plan, self.parallelism,
                                exact=self.exact_routes, columns=prepared.columns)

    def _prepare_fn(self, plan: WritePlan, prepared: PreparedFrame, counters) -> tf.Prepare:
        return tf.Prepare(plan, prepared.options, prepared.ordering_field, self.on_error, self.quarantine,
                          self.batch_label, self.parallelism, counters)

    def _bucket(self, plan: WritePlan, prepared: PreparedFrame, routed: DataFrame, counters) -> tasks.TaskResult:
        write = tf.BucketWrite(plan, self._prepare_fn(plan, prepared, counters))
        return _parse_results(routed.mapInArrow(tf.on_executor(write, counters), RESULT_SCHEMA).collect())

    def _key_index(self, plan: WritePlan, prepared: PreparedFrame, routed: DataFrame, counters) -> tasks.TaskResult:
        """One job: shard tasks tag, place and index the batch's keys, then hand each file group's
        rows to the task writing it, as Arrow IPC values shuffled by slot (one task: no shuffle)."""
        arrow_in = to_arrow_schema(routing.unpacked_schema(routed.schema), timezone="UTC")
        probe = rec.prepare(arrow_in.empty_table(), prepared.options.keygen, ordering_field=prepared.ordering_field,
                            delete_flag_column=prepared.options.delete_flag_column)
        staged_schema = tasks.route(plan, tasks.conform(plan, probe.records)).schema
        n_tasks = self.parallelism
        place = tf.Place(plan, self._prepare_fn(plan, prepared, counters), tasks.tagged_schema(staged_schema, plan),
                         n_tasks)
        if n_tasks == 1:
            write_all = tf.on_executor(tf.PlaceAndWrite(place), counters)
            return _parse_results(routed.mapInArrow(write_all, RESULT_SCHEMA).collect())

        n_writers = WRITERS_PER_CORE * n_tasks
        write_task = functools.partial(tasks.write_task, tasks.write_tasks(plan, n_writers), n_writers)
        keys = routing.slot_keys(prepared.df.sparkSession, n_writers)
        hand_on = tf.on_executor(tf.PlaceAndHandOn(place, write_task, keys), counters)
        handed = routed.mapInArrow(hand_on, tf.PACKED_SCHEMA).repartition(n_writers, routing.SLOT)
        write = tf.on_executor(tf.WriteGroups(plan), counters)
        return _parse_results(handed.mapInArrow(write, RESULT_SCHEMA).collect())


SMALL_BATCH_ROWS = 20_000
# Write tasks per core in a key-index batch: new file groups go to a task by a hash of their name,
# so with one task per core a load of a few new groups often left one core idle; Spark hands the
# smaller tasks to whichever core is free.
WRITERS_PER_CORE = 2


class HudiSink:
    """A foreachBatch sink (`sink(df, batch_id)`), and a batch writer (`sink.write(df)`).

    Takes the table's writer lease per commit (plan, write, commit, inline services), waiting up to
    `write.lock_wait_seconds` for it, so a stream and a backfill of one table take turns; each
    commit reads the timeline and the key index afresh after taking it, and lists again the
    partitions the timeline says changed since its last commit (`listing_sync`).
    """

    def __init__(self, options: WriteOptions, *, spark: SparkSession | None = None, on_error: str = "fail",
                 quarantine_path: str | None = None, parallelism: int | None = None,
                 after_commit=None, small_batch_rows: int = SMALL_BATCH_ROWS):
        self.options = options
        self.spark = spark
        self.on_error = on_error
        self.quarantine_path = quarantine_path
        self.parallelism = parallelism
        self.small_batch_rows = small_batch_rows
        self.after_commit = after_commit
        self.lock: WriterLock | None = None
        self.results: deque[batch_mod.CommitResult] = deque(maxlen=RESULTS_KEPT)
        self.exact_routes = False  # set for good once a batch's keys need Hudi's full cut (`routing`)
        self.row_bytes: float | None = None  # the last batch's Arrow bytes per row (`arrow_batch_settings`)
        self.task_peaks: dict[str, int] = {}  # the last batch's write tasks' peak memory (`PEAK_NAMES`)
        self.listings = ListingSync()  # partition listings, kept from one commit to the next

    def _lease(self) -> WriterLock:
        """Take the lease for one commit (waiting for another writer's commit to end), so writers of
        one table take turns; `self.lock` is it while held (inline services run under it)."""
        if self.lock is None:
            lock = for_writer(self.options)
            lock.acquire()
            self.lock = lock
        return self.lock

    def _engine(self, df: DataFrame, label: str) -> SparkEngine:
        spark = self.spark or df.sparkSession
        return SparkEngine(spark, on_error=self.on_error, quarantine_path=self.quarantine_path,
                           quarantine_options=self.options.storage_options, batch_label=label,
                           parallelism=self._tasks(), exact_routes=self.exact_routes, row_bytes=self.row_bytes)

    def _tasks(self) -> int | None:
        """One write task (no shuffle) while the stream's batches are small: the previous batch is the
        estimate, as a micro-batch's size is unknown until it has been read. A surprise large batch
        is then written by one task, correctly, and the next goes back to the full parallelism."""
        last = self.results[-1] if self.results else None
        if self.parallelism is None and last is not None and last.instant is not None \
                and last.rows_in <= self.small_batch_rows:
            return 1
        return self.parallelism

    def _write(self, df: DataFrame, batch: BatchId | None, label: str,
               extra: Mapping[str, str] | None = None) -> batch_mod.CommitResult:
        """One commit under the lease; a batch with a checkpoint id that fails for a reason another
        attempt can get past is written again (`BatchRetry`), the lease given up in between."""
        if self.options.invalid_name_mask is not None:
            df = sanitized_frame(df, self.options.invalid_name_mask)
        retry = self.options.batch_retry
        failures = 0
        while True:
            lock = self._lease()
            try:
                try:
                    result = self._attempt(df, batch, label, extra, lock)
                except TRANSIENT as error:
                    failures += 1
                    if batch is None or failures >= retry.attempts:
                        raise
                    pause = retry.pause(failures)
                    log.warning("batch %s failed (attempt %d of %d), writing it again in %.1fs: %s",
                                label, failures, retry.attempts, pause, error)
                else:
                    self._committed(result, batch)  # under the lease: inline services run in it
                    return result
            finally:
                self.close()  # the next commit, this writer's or another's, takes the lease anew
            time.sleep(pause)

    def _attempt(self, df: DataFrame, batch: BatchId | None, label: str, extra: Mapping[str, str] | None,
                 lock: WriterLock) -> batch_mod.CommitResult:
        while True:
            engine = self._engine(df, label)
            try:
                result = batch_mod.write_batch(engine, self.options, df, batch=batch, extra_metadata=extra, lock=lock,
                                               listings=self.listings)
                break
            except Exception as error:
                conflict = task_conflict(error)
                if conflict is not None:
                    # A task found its instant rolled back, or another writer's blocks where it planned to
                    # append: this attempt lost its lease, as `BatchRetry` knows it.
                    raise ConcurrentWriterError(f"writing batch {label} into {self.options.table_path}: "
                                                f"{conflict}") from error
                if self.exact_routes or not routing.is_misrouted(error):
                    if is_spark_error(error):
                        raise spark_failure(error, f"writing batch {label} into {self.options.table_path}") from error
                    raise
                # Nothing of the attempt is committed; the next attempt rolls its files back first.
                log.warning("record keys that hold both ':' and ',' need Hudi's full key cut; writing the "
                            "batch again with the exact route, which this sink keeps from now on")
                self.exact_routes = True
        self.row_bytes = engine.row_bytes
        self.task_peaks = engine.task_peaks
        return result

    def _committed(self, result: batch_mod.CommitResult, batch: BatchId | None) -> None:
        log.info(result.log_line(batch))
        self.results.append(result)
        if self.after_commit is not None and result.instant is not None:
            self.after_commit(result)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self._write(df, BatchId(self.options.checkpoint_id, int(batch_id)), str(batch_id))

    def write(self, df: DataFrame, batch: BatchId | None = None,
              extra_metadata: Mapping[str, str] | None = None) -> batch_mod.CommitResult:
        label = str(batch.batch_id) if batch else "batch"
        return self._write(df, batch, label, extra_metadata)

    def close(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def __enter__(self) -> HudiSink:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
