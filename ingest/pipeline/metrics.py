"""What a running stream tells its operators: one line per batch, Spark's rates, Kafka lag.

Per batch, once it is committed: the batch id, Kafka messages read, rows written, deleted and
quarantined, files, the instant, where the time went, how far the stream is behind Kafka (from
the end offsets Spark logged for the batch, compared with the partitions' ends now) and, when
catalog sync is on, whether the sync after the commit worked (`sync=ok`, `sync=failed(N)`). Spark's own
progress events (input and processing rates, trigger duration) are logged by `ProgressListener`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQueryListener

from ingest.pipeline.catalog_sync import SyncOutcome
from ingest.pipeline.checkpoint import read_offset_log
from ingest.services import ServicesRun
from ingest.spark.kafka_source import PartitionLag, kafka_lag
from ingest.write.batch import CommitResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lag:
    """Messages the stream has still to read, summed over partitions, and the worst partition."""

    total: int
    worst: PartitionLag | None
    partitions: tuple[PartitionLag, ...] = ()

    @classmethod
    def of(cls, partitions: list[PartitionLag]) -> Lag:
        worst = max(partitions, key=lambda p: p.lag, default=None)
        return cls(sum(p.lag for p in partitions), worst if worst is not None and worst.lag > 0 else None,
                   tuple(partitions))

    def by_partition(self) -> dict[tuple[str, int], int]:
        return {(p.topic, p.partition): p.lag for p in self.partitions}

    def text(self) -> str:
        if self.worst is None:
            return str(self.total)
        return f"{self.total} (max {self.worst.lag} on {self.worst.topic}-{self.worst.partition})"


def measure_lag(spark: SparkSession, checkpoint: str, batch_id: int, options: Mapping[str, str],
                offsets: str | None = None) -> Lag | None:
    """The stream's lag after `batch_id` (`offsets`: its end offsets, where the caller read them); None
    when it cannot be told (logged, never raised)."""
    try:
        offsets = offsets if offsets is not None else read_offset_log(spark, checkpoint, batch_id)
        if offsets is None:
            return None
        return Lag.of(kafka_lag(options, json.loads(offsets)))
    except Exception as e:  # lag is for operators: failing to measure it must not fail a batch
        log.warning("could not measure Kafka lag after batch %s: %s", batch_id, str(e).splitlines()[0] if str(e) else e)
        return None


def _seconds(durations: Mapping[str, float]) -> str:
    return " ".join(f"{name}={value:.2f}s" for name, value in durations.items())


@dataclass(frozen=True)
class BatchReport:
    """One micro-batch, as logged."""

    batch_id: int
    commit: CommitResult
    messages: int = 0                   # Kafka messages read (records and undecodable ones)
    undecodable: int = 0                # messages quarantined because they could not be decoded
    lag: Lag | None = None
    services: ServicesRun | None = None
    durations: Mapping[str, float] = field(default_factory=dict)
    sync: SyncOutcome | None = None

    @property
    def quarantined(self) -> int:
        return self.undecodable + self.commit.quarantined

    def log_line(self) -> str:
        c = self.commit
        lag = f" lag={self.lag.text()}" if self.lag is not None else " lag=?"
        if c.skipped_replay:
            return (f"batch {self.batch_id}: already committed (a replay after a restart), nothing written; "
                    f"messages={self.messages} quarantined={self.undecodable}{lag}")
        counts = c.counts
        return (f"batch {self.batch_id}: instant {c.instant} messages={self.messages} "
                f"written={counts.get('upserts', 0)} (inserts={counts.get('inserts', 0)} "
                f"updates={counts.get('updates', 0)}) deletes={counts.get('deletes', 0)} "
                f"stale={counts.get('stale', 0)} quarantined={self.quarantined} files={c.files} "
                f"{_seconds({**self.durations, **c.durations})}{lag}{self.sync.text() if self.sync else ''}")


class ProgressListener(StreamingQueryListener):
    """Logs Spark's progress of each batch: input and processing rates, and where the trigger's time went."""

    def onQueryStarted(self, event) -> None:  # noqa: N802 - Spark's names
        log.info("query %s started (run %s)", event.name or event.id, event.runId)

    def onQueryProgress(self, event) -> None:  # noqa: N802
        p = event.progress
        durations = p.durationMs or {}
        log.info(
            "progress: batch %s input_rows=%s input_rows/s=%.1f processed_rows/s=%.1f batch_duration=%.2fs "
            "(add_batch=%.2fs, latest_offset=%.2fs)",
            p.batchId, p.numInputRows, p.inputRowsPerSecond or 0.0, p.processedRowsPerSecond or 0.0,
            durations.get("triggerExecution", 0) / 1000, durations.get("addBatch", 0) / 1000,
            durations.get("latestOffset", 0) / 1000,
        )

    def onQueryIdle(self, event) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event) -> None:  # noqa: N802
        if event.exception:
            log.info("query %s terminated with an error", event.id)
        else:
            log.info("query %s terminated", event.id)
