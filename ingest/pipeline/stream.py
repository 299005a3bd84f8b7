"""The Kafka stream: Kafka → decode → Hudi, one commit per micro-batch, exactly once.

Per batch (a `foreachBatch` function): the schemas are fetched again from the schema registry when
there is one, then the Kafka rows are decoded once (cached); messages that do
not decode go to the quarantine (or fail the batch, naming the first: `stream.on_error: fail`);
the records go to `HudiSink`, which keys them (quarantining what cannot be keyed), turns tombstones
into deletes of their keys, and commits, recording Spark's batch id under the checkpoint
identifier. The order makes a crash anywhere safe: the quarantine is written first, under names a
replay rewrites; Spark records the batch as done only after the commit; and a batch replayed after
a crash that hit between the two is recognised by the sink and skipped. Table services run after
each commit, under the writer lease the sink takes for that commit (other writers of the table, a
backfill say, take turns with it); then, when catalog sync is on, the table is synced
(`ingest.pipeline.catalog_sync`: a failed sync leaves the commit committed and is retried after the
next one).

The query runs with the configured trigger, or `available_now` (read what Kafka has now, in batches
of at most `max_offsets_per_trigger`, then stop). SIGTERM or Ctrl-C stop it between batches
(`ingest.pipeline.stopping`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections import deque
from dataclasses import dataclass, field

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from ingest.config.pipeline import OnError, PipelineConfig
from ingest.errors import ConfigError, IngestError
from ingest.kafka.spec import refreshed
from ingest.phases import phase
from ingest.pipeline import hoodie_metrics, undecodable
from ingest.pipeline.catalog_sync import CatalogSync
from ingest.pipeline.checkpoint import (
    StreamerCheckpoint,
    TableCheckpoint,
    check_fresh_start,
    read_offset_log,
    resume_position,
    table_checkpoint,
)
from ingest.pipeline.inline_services import InlineServices
from ingest.pipeline.metrics import BatchReport, ProgressListener, measure_lag
from ingest.pipeline.progress import PhaseReporter
from ingest.pipeline.session import spark_session
from ingest.pipeline.stopping import BatchGate, StopRequested, stop_on_signals
from ingest.spark.decode import decode
from ingest.spark.failures import spark_failure
from ingest.spark.kafka_source import kafka_stream
from ingest.spark.sink import HudiSink
from ingest.spark.status import task_progress
from ingest.storage import Storage
from ingest.write.commit import BatchId

log = logging.getLogger(__name__)

CONFIG_METADATA_KEY = "ingest.config"
RECENT_REPORTS = 1000
POLL_SECONDS = 0.5


@dataclass
class StreamRun:
    """What a run of the stream did. `recent` keeps the last reports (a stream may run for months)."""

    batches: int = 0
    commits: int = 0
    messages: int = 0
    written: int = 0
    deleted: int = 0
    quarantined: int = 0
    stopped_by: str | None = None           # the signal that stopped it, if one did
    recent: deque[BatchReport] = field(default_factory=lambda: deque(maxlen=RECENT_REPORTS))

    def add(self, report: BatchReport) -> None:
        self.batches += 1
        self.commits += report.commit.instant is not None
        self.messages += report.messages
        self.written += report.commit.counts.get("upserts", 0)
        self.deleted += report.commit.counts.get("deletes", 0)
        self.quarantined += report.quarantined
        self.recent.append(report)

    def summary(self) -> str:
        how = f"stopped on {self.stopped_by}" if self.stopped_by else "finished"
        return (f"stream {how}: {self.batches} batch(es), {self.commits} commit(s), {self.messages} message(s), "
                f"{self.written} written, {self.deleted} deleted, {self.quarantined} quarantined")


class StreamBatch:
    """The `foreachBatch` function: one micro-batch from Kafka rows to a commit."""

    def __init__(self, config: PipelineConfig, spark: SparkSession, sink: HudiSink, services: InlineServices,
                 gate: BatchGate, run: StreamRun, metrics: hoodie_metrics.Reporter | None = None,
                 catalog_sync: CatalogSync | None = None, found: TableCheckpoint | None = None):
        assert config.source.kafka is not None and config.source.decoder is not None
        self.config = config
        self.spark = spark
        self.sink = sink
        self.services = services
        self.gate = gate
        self.run = run
        self.metrics = metrics or hoodie_metrics.NullReporter()
        self.catalog_sync = catalog_sync or CatalogSync(config.table.path, config.table.storage_options, None)
        self.kafka_options = config.source.kafka.spark_options()
        self.quarantine = (Storage(config.quarantine.path, config.table.storage_options)
                           if config.stream.on_error is OnError.QUARANTINE else None)
        self.metadata = {CONFIG_METADATA_KEY: json.dumps(config.redacted(), sort_keys=True, separators=(",", ":"),
                                                         default=str)}
        self.failure: BaseException | None = None
        self.spark_tasks = task_progress(spark)
        # Hudi's streamer's position is written with each batch of a one-topic stream; the `--checkpoint` it
        # last recorded for the topic is carried on, or a streamer restarted with it would go back there.
        kafka = config.source.kafka
        self.one_topic = len(kafka.topics) == 1 and not kafka.topic_pattern
        self.streamer_reset = found.reset if found is not None else None

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        try:
            with self.gate.batch(batch_id):
                self.run.add(self.write(df, int(batch_id)))
        except BaseException as e:
            self.failure = e
            raise

    def write(self, df: DataFrame, batch_id: int) -> BatchReport:
        config = self.config
        spark_context = self.spark.sparkContext
        spark_context.setJobDescription(f"ingest: batch {batch_id} into {config.table.name}")
        t0 = time.monotonic()
        # With a schema registry, its current subject versions (HoodieStreamer refreshes its schema
        # provider every round); a registry that does not answer fails the batch before anything is read.
        decoder = refreshed(config.source.decoder)
        with PhaseReporter(f"batch {batch_id}", log, probe=self.spark_tasks), \
                decode(df, decoder) as decoded:
            with phase("reading and decoding Kafka messages"):
                if self.quarantine is not None:
                    undecodable_count = undecodable.set_aside(decoded.errors, self.quarantine, str(batch_id))
                else:
                    undecodable.fail_if_any(decoded.errors)
                    undecodable_count = 0
            t1 = time.monotonic()
            # A one-topic stream's batch end goes into the commit (HoodieStreamer's checkpoint) and the lag.
            ends = read_offset_log(self.spark, config.stream.checkpoint, batch_id) if self.one_topic else None
            result = self.sink.write(decoded.records, batch=self._batch_id(batch_id, ends),
                                     extra_metadata=self.metadata)
            self.sink.results.clear()  # reports are kept here, bounded
        t2 = time.monotonic()
        synced = self.catalog_sync.after_commit() if result.instant is not None else None
        lag = measure_lag(self.spark, config.stream.checkpoint, batch_id, self.kafka_options, ends)
        durations = {"read_decode": t1 - t0}
        services = self.services.last if result.instant is not None else None
        if services is not None:
            durations["services"] = sum(services.durations.values())
        durations["batch"] = t2 - t0
        report = BatchReport(batch_id=batch_id, commit=result, messages=result.rows_in + undecodable_count,
                             undecodable=undecodable_count, lag=lag, services=services, durations=durations,
                             sync=synced)
        log.info(report.log_line())
        if result.instant is not None:
            self.metrics.report(hoodie_metrics.commit_figures(
                result.instant, result.stats, seconds=t2 - t0, counts=result.counts,
                quarantined=report.quarantined, lag=lag.by_partition() if lag is not None else None, sync=synced))
        return report


    def _batch_id(self, batch_id: int, ends: str | None) -> BatchId:
        position = StreamerCheckpoint.from_offset_log(ends) if self.one_topic else None
        return BatchId(self.config.write.checkpoint_id, batch_id, position.text() if position else None,
                       self.streamer_reset)


def _trigger(config: PipelineConfig, available_now: bool) -> dict:
    if available_now or config.stream.trigger.available_now:
        return {"availableNow": True}
    return config.stream.trigger.spark_kwargs()


def _wait(query: StreamingQuery, gate: BatchGate) -> None:
    """Until the query ends by itself (available-now drained, or failed) or a stop is asked for."""
    while True:
        try:
            if query.awaitTermination(POLL_SECONDS):
                break
        except StreamingQueryException:
            break  # the caller looks at why (a stop asked for between two polls ends the query too)
        if gate.stopping:
            _say_stopping(gate)
            gate.wait_idle()
            query.stop()
            return
    if gate.stopping:
        _say_stopping(gate)


def _say_stopping(gate: BatchGate) -> None:
    log.info("%s received: letting the current batch finish, then stopping (send it again to stop at once)",
             gate.reason)


def _query_failure(exc: BaseException) -> IngestError:
    """A failure outside the batch function (the Kafka source, Spark itself) as one line."""
    return spark_failure(exc, "the streaming query")


def stream(config: PipelineConfig, *, available_now: bool = False, spark: SparkSession | None = None) -> StreamRun:
    """Run the configured Kafka stream until it drains (available-now), fails, or is stopped by a signal."""
    kafka = config.source.kafka
    if kafka is None or config.source.decoder is None:
        raise ConfigError("ingest stream reads Kafka (source.kafka); this configuration reads files "
                          "(source.files): run it with ingest backfill", source=config.origin, key="source")
    created = False
    if spark is None:
        spark, created = spark_session(config)
    try:
        check_fresh_start(spark, config)
        found = table_checkpoint(config)
        start = resume_position(spark, config, found)
    except BaseException:
        if created:
            spark.stop()
        raise
    if start is not None:
        kafka = dataclasses.replace(kafka, starting_offsets=start)
        config = dataclasses.replace(config, source=dataclasses.replace(config.source, kafka=kafka))
    run = StreamRun()
    gate = BatchGate()
    sink: HudiSink | None = None
    services = InlineServices(config.table.path, config.table.storage_options, config.services, spark,
                              lock=lambda: sink.lock if sink is not None else None)
    sink = HudiSink(config.write, spark=spark, on_error=config.stream.on_error.value,
                    quarantine_path=config.quarantine.path, after_commit=services)
    metrics = hoodie_metrics.reporter(config.metrics, config.table.name)
    catalog_sync = CatalogSync(config.table.path, config.table.storage_options, config.catalog)
    batch = StreamBatch(config, spark, sink, services, gate, run, metrics, catalog_sync, found)
    listener = ProgressListener()
    spark.streams.addListener(listener)
    try:
        with stop_on_signals(gate.request_stop):
            frame = kafka_stream(spark, kafka.spark_options(), implementation=kafka.implementation)
            trigger = _trigger(config, available_now)
            query = (frame.writeStream.queryName(f"ingest-{config.table.name}").foreachBatch(batch)
                     .option("checkpointLocation", config.stream.checkpoint).trigger(**trigger).start())
            log.info("streaming %s into %s (checkpoint %s, trigger %s)", ",".join(kafka.topics) or kafka.topic_pattern,
                     config.table.path, config.stream.checkpoint,
                     "available-now" if "availableNow" in trigger else trigger["processingTime"])
            _wait(query, gate)
        failure = batch.failure
        if isinstance(failure, StopRequested) or (failure is None and gate.stopping):
            run.stopped_by = gate.reason
        elif failure is not None:
            raise failure
        elif query.exception() is not None:
            raise _query_failure(query.exception())
        log.info(run.summary())
        return run
    finally:
        spark.streams.removeListener(listener)
        sink.close()
        metrics.close()
        if created:
            spark.stop()
