"""The jobs' parts that need no Spark: grouping backfill inputs and finding the ones done (archived
commits included), stopping between batches, the quarantine of undecodable messages, the progress
bar, the demo's configuration and the commands' answers to configurations they cannot run."""

from __future__ import annotations

import io
import threading
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from service_tables import options_for

from ingest import cli
from ingest.config.loader import load_config
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.services import archiver, compaction
from ingest.hudi.table.table import HudiTable
from ingest.pipeline import inputs, undecodable
from ingest.pipeline.demo import BUILTIN_CONFIG, CONFIG_FILE, demo_overrides
from ingest.pipeline.progress import BarAwareHandler, ProgressBar
from ingest.pipeline.stopping import BatchGate, StopRequested
from ingest.storage import Storage
from ingest.write import quarantine
from ingest.write.batch import LocalWriter

# -- backfill inputs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), [
    ("part-0.parquet", "parquet"), ("x.jsonl", "json"), ("x.ndjson.gz", "json"), ("x.JSON", "json"),
    ("x.csv.bz2", "csv"), ("x.orc", "orc"), ("x.avro", "avro"), ("part-00000", "csv"), ("x.txt", "csv"),
])
def test_format_comes_from_the_extension_else_the_configuration(name, expected):
    assert inputs.format_of(f"s3a://b/exports/{name}", "csv") == expected


def test_hidden_files_are_skipped_as_spark_skips_them():
    assert inputs.is_hidden("/_SUCCESS") and inputs.is_hidden("/.part-0.crc") and inputs.is_hidden("/_tmp/a.json")
    assert not inputs.is_hidden("/region=emea/part-0.parquet") and not inputs.is_hidden("/_region=x/a.csv")


def test_groups_hold_one_format_and_respect_both_limits():
    files = [inputs.InputFile(f"f{i}", size, 0) for i, size in enumerate([10, 10, 10, 50, 10, 10, 10])]
    formats = ["parquet"] * 5 + ["csv"] * 2
    assert inputs.group(files, formats, max_files=None, max_bytes=None) == [[0, 1, 2, 3, 4], [5, 6]]
    assert inputs.group(files, formats, max_files=2, max_bytes=None) == [[0, 1], [2, 3], [4], [5, 6]]
    # A file bigger than the limit gets a commit of its own rather than none.
    assert inputs.group(files, formats, max_files=None, max_bytes=25) == [[0, 1], [2], [3], [4], [5, 6]]


def _commit_files(path: Path, writer: LocalWriter, identifier: str, batch: int, i: int) -> inputs.InputFile:
    rows = pa.table({"uuid": [f"k{i}"], "city": ["chennai"], "ts": pa.array([i], pa.int64()), "fare": [1.0]})
    file = inputs.InputFile(f"file:/in/{identifier}-{batch}.parquet", 100 + i, 1_700_000_000_000 + i)
    writer.write(rows, extra_metadata={inputs.METADATA_KEY: inputs.commit_record(identifier, batch, [file])})
    return file


@pytest.mark.parametrize("version", [6, 9])
def test_files_committed_earlier_are_found_in_active_and_archived_commits(tmp_path, monkeypatch, version):
    """At 9 the archived commits are read from the LSM history (the completed file's bytes as each
    `HoodieLSMTimelineInstant.metadata`, `MetadataConversionUtils.createLSMTimelineInstant`)."""
    path = tmp_path / "t"
    writer = LocalWriter(options_for(path, version=version))
    ours = []
    for i in range(9):
        if i % 4 == 0:
            _commit_files(path, writer, "another", i // 4, i)
        else:
            if not ours:
                inputs.mark_started(str(path), {}, "nightly")
            ours.append(_commit_files(path, writer, "nightly", len(ours), i))
        if i % 3 == 2 and HudiTable.open(str(path)).version.compaction:
            table = HudiTable.open(str(path))
            compaction.execute(table, compaction.schedule(table, ServiceSettings().compaction, force=True))
    progress = inputs.committed(str(path), {}, "nightly")
    assert progress.done == {f.identity for f in ours} and progress.last_batch == len(ours) - 1

    # Batch 0 is on the active timeline: the archive cannot hold any of this backfill's commits.
    monkeypatch.setattr(inputs, "archived_commit_metadata", lambda table: pytest.fail("read the archive"))
    assert inputs.committed(str(path), {}, "nightly") == progress
    monkeypatch.undo()

    settings = ServiceSettings.from_mapping({"hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2",
                                             "hoodie.keep.max.commits": "3"})
    assert archiver.archive(HudiTable.open(str(path)), settings).archived, "batch 0 is archived now"
    assert inputs.committed(str(path), {}, "nightly") == progress
    assert inputs.committed(str(tmp_path / "absent"), {}, "nightly") == inputs.Progress()


# -- stopping -------------------------------------------------------------------------------------------------


def test_a_stop_waits_for_the_running_batch_and_no_batch_starts_after_it():
    gate = BatchGate()
    started, release, finished = threading.Event(), threading.Event(), []

    def batch() -> None:
        with gate.batch(0):
            started.set()
            release.wait()
            finished.append(0)

    worker = threading.Thread(target=batch)
    worker.start()
    started.wait()
    gate.request_stop("SIGTERM")
    waiter = threading.Thread(target=gate.wait_idle)
    waiter.start()
    assert waiter.is_alive() and not finished, "the stop waits while the batch runs"
    release.set()
    waiter.join()
    worker.join()
    assert finished == [0]
    with pytest.raises(StopRequested), gate.batch(1):
        pytest.fail("a batch started after the stop")
    assert gate.reason == "SIGTERM"


# -- undecodable messages ----------------------------------------------------------------------------------


def _errors(rows: list[tuple[str, int, int, bytes]]) -> pa.Table:
    now = datetime(2024, 5, 1, tzinfo=timezone.utc)
    return pa.table({
        "key": pa.array([b"k"] * len(rows), pa.binary()),
        "value": pa.array([r[3] for r in rows], pa.binary()),
        "topic": [r[0] for r in rows],
        "partition": pa.array([r[1] for r in rows], pa.int32()),
        "offset": pa.array([r[2] for r in rows], pa.int64()),
        "timestamp": pa.array([now] * len(rows), pa.timestamp("us", tz="UTC")),
        "error": ["invalid JSON"] * len(rows),
        "error_seen_at": pa.array([now] * len(rows), pa.timestamp("us", tz="UTC")),
    })


def test_undecodable_messages_land_in_files_a_replay_rewrites(tmp_path):
    storage = Storage(str(tmp_path / "q"))
    errors = _errors([("orders", 2, 40, b"{x"), ("orders", 0, 7, b"{y"), ("orders", 2, 12, b"\xff")])
    assert undecodable.write_task(storage, "5", errors) == 3
    first = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "q").rglob("*.parquet"))
    assert first == ["q/batch=5/part-decode-orders-0-7.parquet", "q/batch=5/part-decode-orders-2-12.parquet"]
    assert undecodable.write_task(storage, "5", errors) == 3  # the batch replayed after a crash
    assert sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "q").rglob("*.parquet")) == first
    rows = quarantine.read_all(storage).to_pylist()
    assert sorted((r["_kafka_partition"], r["_kafka_offset"], r["value"]) for r in rows) == [
        (0, 7, b"{y"), (2, 12, b"\xff"), (2, 40, b"{x")]
    assert set(rows[0]) == {"key", "value", "_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp",
                            "_ingest_error", "_ingest_quarantined_at"}


# -- progress bar ---------------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_only_and_log_lines_never_share_its_line():
    import logging

    term = _Terminal()
    handler = BarAwareHandler(term)
    logger = logging.getLogger("test.progress")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with ProgressBar("backfill x", total_files=4, total_bytes=4096, stream=term) as bar:
            bar.advance(1, 1024)
            logger.warning("a line")
            bar.advance(3, 3072)
    finally:
        logger.removeHandler(handler)
    out = term.getvalue()
    assert "1/4 files 1.0 KiB/4.0 KiB" in out and "100% 4/4 files" in out
    assert "\r\x1b[Ka line\n\r" in out, "the bar is cleared before a log line and drawn again after it"
    plain = io.StringIO()
    with ProgressBar("backfill x", 1, 1, stream=plain) as bar:
        bar.advance(1, 1)
    assert plain.getvalue() == ""


# -- configurations --------------------------------------------------------------------------------------------


def test_the_builtin_demo_configuration_is_conf_demo_yaml(tmp_path):
    if not CONFIG_FILE.is_file():
        pytest.skip("conf/demo.yaml is not beside the package")
    builtin = tmp_path / "builtin.yaml"
    builtin.write_text(BUILTIN_CONFIG)
    env = {"DEMO_BOOTSTRAP_SERVERS": "127.0.0.1:9"}
    overrides = demo_overrides(tmp_path)
    ours = load_config(builtin, overrides, env=env).redacted()
    theirs = load_config(CONFIG_FILE, overrides, env=env).redacted()
    assert ours == theirs


def _config(tmp_path: Path, source: dict) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({
        "table": {"path": str(tmp_path / "t"), "name": "t"},
        "hudi": {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts"},
        "source": source,
        "stream": {"checkpoint": str(tmp_path / "c")},
    }))
    return path


def test_commands_refuse_configurations_they_cannot_run_with_exit_code_2(tmp_path, capsys):
    files = _config(tmp_path, {"files": {"path": str(tmp_path)}, "schema": "id STRING, ts BIGINT"})
    assert cli.main(["stream", "--config", str(files)]) == 2
    assert "this configuration reads files" in capsys.readouterr().err
    kafka = _config(tmp_path, {"kafka": {"bootstrap_servers": "b:9092", "topics": ["t"]}, "schema": "id STRING, ts BIGINT"})
    assert cli.main(["backfill", "--config", str(kafka)]) == 2
    assert "this configuration streams Kafka" in capsys.readouterr().err
    assert cli.main(["stream", "--config", str(kafka), "--set", "stream.trigger=soon"]) == 2
    assert "stream.trigger" in capsys.readouterr().err
    assert cli.main(["backfill", "--config", str(files), "--max-bytes-per-commit", "lots"]) == 2
    assert "--max-bytes-per-commit" in capsys.readouterr().err
