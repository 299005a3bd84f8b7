"""Per-commit metrics under Hudi's `HoodieMetrics` names, scraped from a running stream's endpoint.

`HoodieMetrics.updateCommitMetrics` registers, per commit, gauges named
`<prefix>.deltacommit.<metric>` (`getMetricsName`, prefix inferred from `hoodie.table.name` by
`HoodieMetricsConfig.METRICS_REPORTER_PREFIX`), with the totals `HoodieCommitMetadata` computes
(`fetchTotalRecordsWritten`, `fetchTotalFilesInsert`, ...); `PrometheusReporter` serves them through
`DropwizardExports`, whose `Collector.sanitizeMetricName` turns dots into underscores.
"""

from __future__ import annotations

import logging
import re
import signal
import socket
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from kafka_fixtures import broker, topic_name  # noqa: F401  (broker is a fixture)
from test_jobs import KAFKA_PARTITIONS, delta_commits, finish, scenario, start, wait_for_commits, write_config

from ingest.config.loader import load_config
from ingest.errors import ConfigError
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import CommitMetadata, WriteStat
from ingest.hudi.timeline.instant import parse_instant
from ingest.hudi.timeline.timeline import read_instant
from ingest.pipeline.hoodie_metrics import commit_figures, commit_totals, prometheus_name, reporter

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and not line.startswith("#"):
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def test_names_are_hudis_after_dropwizard_sanitising():
    """`Collector.sanitizeMetricName`: anything outside [a-zA-Z0-9:_] becomes `_`."""
    assert prometheus_name("orders.deltacommit.totalRecordsWritten") == "orders_deltacommit_totalRecordsWritten"
    assert prometheus_name("my-table.deltacommit.duration") == "my_table_deltacommit_duration"


@pytest.mark.slow
def test_a_running_stream_serves_hudis_commit_metrics(broker, tmp_path):  # noqa: F811
    topic = topic_name("metrics")
    broker.create_topic(topic, KAFKA_PARTITIONS)
    messages, _ops, _bad = scenario(seed=5, keys=8, steps=24)
    broker.produce(topic, messages)
    config_path = write_config(tmp_path, broker.bootstrap_servers, topic, max_offsets=15)
    port = free_port()
    config = yaml.safe_load(config_path.read_text())
    config["hudi"].update({"hoodie.metrics.on": True, "hoodie.metrics.reporter.type": "PROMETHEUS",
                           "hoodie.metrics.prometheus.port": port})
    config_path.write_text(yaml.safe_dump(config))
    table = tmp_path / "table"

    process = start("stream", "--config", str(config_path))
    try:
        wait_for_commits(table, 2, process)
        # Let the stream drain what was produced: then the last commit is the one the gauges show.
        count, stable_since = len(delta_commits(table)), time.monotonic()
        while time.monotonic() - stable_since < 6:
            time.sleep(0.5)
            now = len(delta_commits(table))
            if now != count:
                count, stable_since = now, time.monotonic()
        scraped = scrape(port)
    finally:
        process.send_signal(signal.SIGTERM)
        code, _, err = finish(process)
    assert code == 0, err[-3000:]

    # The gauges show one commit: the one whose instant time `commitTime` carries.
    hudi_table = HudiTable.open(str(table))
    commits = {int(parse_instant(i.timestamp).timestamp() * 1000): i for i in delta_commits(table)}
    shown = commits[int(scraped["events_deltacommit_commitTime"])]
    metadata = CommitMetadata.from_bytes(read_instant(hudi_table.storage, shown))
    expected = commit_totals(metadata.all_write_stats())
    assert expected["totalPartitionsWritten"] > 0 and expected["totalBytesWritten"] > 0, expected
    for metric, value in expected.items():
        assert scraped[f"events_deltacommit_{metric}"] == value, metric
    assert scraped["events_deltacommit_duration"] > 0

    # Ours, checked against the batch log lines the stream printed.
    lines = [line for line in err.splitlines() if "ingest.pipeline.stream: batch " in line and "instant " in line]
    assert len(lines) == len(delta_commits(table))
    assert scraped["events_ingest_commits_total"] == sum(i.timestamp <= shown.timestamp for i in delta_commits(table))
    line = next(line for line in lines if f"instant {shown.timestamp} " in line)
    fields = dict(re.findall(r"(\w+)=(\d+)", line))
    assert scraped["events_ingest_quarantinedRecords"] == int(fields["quarantined"])
    assert scraped["events_ingest_staleRecords"] == int(fields["stale"])
    assert scraped["events_deltacommit_totalRecordsDeleted"] == int(fields["deletes"])
    lags = {k: v for k, v in scraped.items() if k.startswith("events_ingest_kafkaLag{")}
    assert len(lags) == KAFKA_PARTITIONS, lags
    assert sum(lags.values()) == int(re.search(r" lag=(\d+)", line).group(1)), (lags, line)


def _config(tmp_path, **hudi) -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump({
        "table": {"path": str(tmp_path / "table"), "name": "orders"},
        "hudi": {"hoodie.datasource.write.recordkey.field": "id", **hudi},
        "source": {"files": {"path": str(tmp_path / "in"), "format": "json"}, "schema": "id STRING"},
    }))
    return path


def test_metrics_settings_are_validated_before_spark_starts(tmp_path):
    """`HoodieMetricsConfig.METRICS_REPORTER_TYPE_VALUE`: reporters other than PROMETHEUS and CONSOLE are
    Java-only (GRAPHITE is Hudi's default), refused naming the file and the key."""
    with pytest.raises(ConfigError) as e:
        load_config(_config(tmp_path, **{"hoodie.metrics.on": True, "hoodie.metrics.reporter.type": "GRAPHITE"}))
    assert "hoodie.metrics.reporter.type" in str(e.value) and "pipeline.yaml" in str(e.value)
    config = load_config(_config(tmp_path, **{"hoodie.metrics.on": True, "hoodie.metrics.reporter.type": "CONSOLE"}))
    assert config.metrics.on and config.metrics.reporter_type == "CONSOLE" and config.metrics.prefix is None


@pytest.mark.parametrize(("prefix", "shown"), [(None, "orders"), ("eu.orders", "eu_orders")])
def test_console_reporter_logs_hudis_names_under_the_prefix(tmp_path, caplog, prefix, shown):
    """`HoodieMetricsConfig.METRICS_REPORTER_PREFIX` is inferred from the table name;
    `HoodieWriteConfig.getMetricReporterMetricsNamePrefix` replaces its dots by `_`."""
    hudi = {"hoodie.metrics.on": True, "hoodie.metrics.reporter.type": "CONSOLE"}
    if prefix:
        hudi["hoodie.metrics.reporter.metricsname.prefix"] = prefix
    config = load_config(_config(tmp_path, **hudi))
    stat = WriteStat(file_id="f1", path="p/f1.log", partition_path="p", prev_commit="20250101000000000",
                     num_writes=3, num_deletes=1, num_update_writes=2, total_write_bytes=100)
    figures = commit_figures("20250102030405678", [stat], seconds=1.5, counts={"stale": 2}, quarantined=4,
                             lag={("t", 0): 7})
    with caplog.at_level(logging.INFO, logger="ingest.pipeline.hoodie_metrics"):
        reporter(config.metrics, config.table.name).report(figures)
    line = caplog.messages[-1]
    for part in ("deltacommit.totalRecordsWritten=3", "deltacommit.totalRecordsDeleted=1",
                 "deltacommit.totalFilesUpdate=1", "deltacommit.totalFilesInsert=0",
                 "deltacommit.duration=1500", "deltacommit.commitTime=1735787045678",
                 "ingest.quarantinedRecords=4", "ingest.staleRecords=2", "ingest.kafkaLag[t-0]=7"):
        assert f" {shown}.{part}" in f" {line}", part
