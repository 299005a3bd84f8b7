"""Per-commit metrics as Hudi's `HoodieMetrics` reports them, on a Prometheus endpoint or the console.

Hudi registers one gauge per figure after each commit (`HoodieMetrics.updateCommitMetrics`), named
`<prefix>.<action>.<metric>` (`getMetricsName`; the prefix is
`hoodie.metrics.reporter.metricsname.prefix`, inferred from the table name), with the totals
`HoodieCommitMetadata` computes from the write stats (`fetchTotalRecordsWritten` and its kin). Its
`PrometheusReporter` exposes them through `DropwizardExports`, whose name sanitising turns every
character Prometheus does not allow into `_`: `orders.deltacommit.totalRecordsWritten` is scraped
as `orders_deltacommit_totalRecordsWritten`. The same names are used here, so dashboards built on
Hudi's writers read ingest's. Figures Hudi has no name for live under `<prefix>.ingest.*`.

After a catalog sync, the sync's duration in milliseconds per sync tool is reported as Hudi's
streamer reports it (`HoodieStreamerMetrics.updateStreamerMetaSyncMetrics`:
`<prefix>.deltastreamer.HiveSyncTool`), and `<prefix>.ingest.syncConsecutiveFailures` counts the
failed syncs since the last one that worked.

`commitLatencyInMs` and `commitFreshnessInMs` are left out, as Hudi leaves them out, when the write
stats carry no event times (Hudi fills them only with `hoodie.payload.event.time.field`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ingest.config.pipeline import MetricsSettings
from ingest.hudi.timeline.commit_metadata import NULL_COMMIT, WriteStat
from ingest.hudi.timeline.instant import parse_instant
from ingest.pipeline.catalog_sync import SyncOutcome

log = logging.getLogger(__name__)

DELTA_COMMIT = "deltacommit"
_INVALID = re.compile(r"[^a-zA-Z0-9:_]")


def prometheus_name(name: str) -> str:
    """`Collector.sanitizeMetricName`, which DropwizardExports applies to every Dropwizard name."""
    return _INVALID.sub("_", name)


def commit_totals(stats: Iterable[WriteStat]) -> dict[str, int]:
    """The totals `HoodieCommitMetadata` derives from a commit's write stats, by Hudi's metric names."""
    stats = list(stats)
    return {
        "totalPartitionsWritten": len({s.partition_path for s in stats}),
        "totalFilesInsert": sum(1 for s in stats if s.prev_commit == NULL_COMMIT),
        "totalFilesUpdate": sum(1 for s in stats if s.prev_commit != NULL_COMMIT),
        "totalRecordsWritten": sum(s.num_writes for s in stats),
        "totalUpdateRecordsWritten": sum(s.num_update_writes for s in stats),
        "totalInsertRecordsWritten": sum(s.num_inserts for s in stats),
        "totalRecordsDeleted": sum(s.num_deletes for s in stats),
        "totalBytesWritten": sum(s.total_write_bytes for s in stats),
        "totalLogFilesCompacted": sum(s.total_log_files_compacted for s in stats),
        "totalLogFilesSize": sum(s.total_log_size_compacted for s in stats),
        "totalCompactedRecordsUpdated": sum(s.total_updated_records_compacted for s in stats),
    }


def _event_time_gauges(stats: list[WriteStat], end_ms: int) -> dict[str, int]:
    """`updateCommitTimingMetrics`: latency from the oldest event, freshness from the newest."""
    mins = [s.min_event_time for s in stats if s.min_event_time is not None]
    maxs = [s.max_event_time for s in stats if s.max_event_time is not None]
    out = {}
    if mins:
        out["commitLatencyInMs"] = end_ms - min(mins)
    if maxs:
        out["commitFreshnessInMs"] = end_ms - max(maxs)
    return out


@dataclass(frozen=True)
class CommitFigures:
    """What one commit reports: Hudi's gauges and ours, by metric name under the action."""

    action: str
    hudi: Mapping[str, int]
    ingest: Mapping[str, int]
    lag: Mapping[tuple[str, int], int]   # (topic, partition) -> messages behind
    streamer: Mapping[str, int] = field(default_factory=dict)   # under `<prefix>.deltastreamer.`


def commit_figures(instant: str, stats: Iterable[WriteStat], *, seconds: float, counts: Mapping[str, int],
                   quarantined: int, lag: Mapping[tuple[str, int], int] | None = None,
                   sync: SyncOutcome | None = None) -> CommitFigures:
    """Figures of one deltacommit that took `seconds`.

    `commitTime` is the instant time as epoch milliseconds and the event-time figures are measured
    from it plus the duration, as `BaseHoodieWriteClient.emitCommitMetrics` passes them.
    """
    stats = list(stats)
    commit_ms = int(parse_instant(instant).timestamp() * 1000)
    duration_ms = int(seconds * 1000)
    hudi = {**commit_totals(stats), "commitTime": commit_ms, "duration": duration_ms,
            **_event_time_gauges(stats, commit_ms + duration_ms)}
    ours = {"quarantinedRecords": quarantined, "staleRecords": counts.get("stale", 0),
            "missingDeletes": counts.get("missing_deletes", 0), "commits": 1}
    streamer = {}
    if sync is not None:
        ours["syncConsecutiveFailures"] = sync.consecutive_failures
        streamer = sync.durations_ms()
    return CommitFigures(DELTA_COMMIT, hudi, ours, dict(lag or {}), streamer)


class Reporter:
    """Where figures go; `NullReporter` when `hoodie.metrics.on` is false."""

    def report(self, figures: CommitFigures) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class NullReporter(Reporter):
    def report(self, figures: CommitFigures) -> None:
        pass


class ConsoleReporter(Reporter):
    """Hudi's CONSOLE reporter prints the registry; here one log line per commit, names as Hudi's."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def report(self, figures: CommitFigures) -> None:
        parts = [f"{self.prefix}.{figures.action}.{k}={v}" for k, v in figures.hudi.items()]
        parts += [f"{self.prefix}.ingest.{k}={v}" for k, v in figures.ingest.items()]
        parts += [f"{self.prefix}.deltastreamer.{k}={v}" for k, v in figures.streamer.items()]
        parts += [f"{self.prefix}.ingest.kafkaLag[{t}-{p}]={v}" for (t, p), v in sorted(figures.lag.items())]
        log.info("metrics: %s", " ".join(parts))


class PrometheusReporter(Reporter):
    """An HTTP endpoint on the driver (`hoodie.metrics.prometheus.port`), as Hudi's PrometheusReporter."""

    def __init__(self, prefix: str, port: int):
        try:
            import prometheus_client
        except ImportError as e:  # a core dependency; only a broken install lacks it
            raise RuntimeError("hoodie.metrics.reporter.type PROMETHEUS needs the prometheus_client package") from e
        self._client = prometheus_client
        self.prefix = prefix
        self.registry = prometheus_client.CollectorRegistry()
        self._gauges: dict[str, object] = {}
        self._lock = threading.Lock()
        self._commits = prometheus_client.Counter(
            prometheus_name(f"{prefix}.ingest.commits"), "Commits reported since the job started",
            registry=self.registry)
        self._lag = prometheus_client.Gauge(
            prometheus_name(f"{prefix}.ingest.kafkaLag"), "Kafka messages behind, per partition",
            ["topic", "partition"], registry=self.registry)
        self.server, self._thread = prometheus_client.start_http_server(port, registry=self.registry)
        self.port = self.server.server_port
        log.info("metrics: Prometheus endpoint on port %d", self.port)

    def _gauge(self, name: str):
        gauge = self._gauges.get(name)
        if gauge is None:
            gauge = self._client.Gauge(prometheus_name(name), f"Generated from Hudi metric {name}",
                                       registry=self.registry)
            self._gauges[name] = gauge
        return gauge

    def report(self, figures: CommitFigures) -> None:
        with self._lock:
            for metric, value in figures.hudi.items():
                self._gauge(f"{self.prefix}.{figures.action}.{metric}").set(value)
            for metric, value in figures.ingest.items():
                if metric != "commits":
                    self._gauge(f"{self.prefix}.ingest.{metric}").set(value)
            for metric, value in figures.streamer.items():
                self._gauge(f"{self.prefix}.deltastreamer.{metric}").set(value)
            self._commits.inc(figures.ingest.get("commits", 0))
            for (topic, partition), lag in figures.lag.items():
                self._lag.labels(topic=topic, partition=str(partition)).set(lag)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def reporter(settings: MetricsSettings, table_name: str) -> Reporter:
    if not settings.on:
        return NullReporter()
    prefix = (settings.prefix if settings.prefix is not None else table_name).replace(".", "_")
    if settings.reporter_type == "CONSOLE":
        return ConsoleReporter(prefix)
    return PrometheusReporter(prefix, settings.prometheus_port)
