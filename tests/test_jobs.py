"""The jobs as users run them: `ingest stream` against a Kafka broker (in a subprocess, killed and
stopped along the way), `ingest backfill` over files, `ingest demo`, and the spark-submit entry points.

Each Spark subprocess costs a JVM start, so the scenarios share runs: one clean stream run and its
rerun; one run killed with SIGKILL, its restart stopped with SIGTERM, and a final run that drains.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from kafka_fixtures import broker, consume_all, topic_name  # noqa: F401  (broker is a fixture)
from model import Op, TableModel

from ingest import cli
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import CommitMetadata
from ingest.hudi.timeline.instant import Action
from ingest.hudi.timeline.timeline import read_instant
from ingest.kafka.broker import Message
from ingest.storage import Storage
from ingest.write import quarantine
from ingest.write.commit import SINK_CHECKPOINT_KEY

REPO = Path(__file__).resolve().parent.parent
SCHEMA = "id STRING NOT NULL, part STRING NOT NULL, ts BIGINT NOT NULL, v STRING"
KAFKA_PARTITIONS = 3
CHECKPOINT_ID = "events-stream"
RUN_TIMEOUT = 600  # a safety net for a hung process, not a performance bound

MALFORMED = [
    b"{not json",
    b'{"id": "%s", "part": "p0", "v": "no ts"}',               # a NOT NULL field is missing
    b'{"id": "%s", "part": "p1", "ts": "soon", "v": "x"}',     # wrong type
    b"\xff\xfe not utf-8",
]


# -- a scenario: messages and the table they must make ------------------------------------------------


def scenario(seed: int, keys: int, steps: int) -> tuple[list[Message], list[Op], list[bytes]]:
    """Messages with updates, in-batch duplicates and ties, late events, tombstones, re-inserts and
    malformed values; the model's operations; and the malformed values.

    Kept to sequences whose outcome does not depend on where batch boundaries fall (checked by the
    test): a late event only for a live key, a re-insert after a tombstone newer than anything before.
    """
    rng = random.Random(seed)
    last_ts = dict.fromkeys(range(keys), 0)
    live = dict.fromkeys(range(keys), False)
    messages, ops, bad = [], [], []

    def send(k: int, ts: int | None, v: str | None = None) -> None:
        key = f"k{k:02d}"
        part = f"p{k % 3}"
        if ts is None:
            messages.append(Message(key=key.encode(), value=None, partition=k % KAFKA_PARTITIONS))
            ops.append(Op(key, None, None, delete=True))
            return
        value = json.dumps({"id": key, "part": part, "ts": ts, "v": v})
        messages.append(Message(key=key.encode(), value=value.encode(), partition=k % KAFKA_PARTITIONS))
        ops.append(Op(key, part, ts, values={"v": v}))

    for step in range(steps):
        k = rng.randrange(keys)
        kind = rng.choice(["upsert"] * 5 + ["duplicate", "late", "tombstone", "malformed"])
        if kind == "late" and live[k] and last_ts[k] > 1:
            send(k, rng.randint(1, last_ts[k] - 1), f"late-{step}")
        elif kind == "tombstone":
            send(k, None)
            live[k] = False
        elif kind == "malformed":
            template = MALFORMED[rng.randrange(len(MALFORMED))]
            value = template % f"k{k:02d}".encode() if b"%s" in template else template
            messages.append(Message(key=f"k{k:02d}".encode(), value=value, partition=k % KAFKA_PARTITIONS))
            bad.append(value)
        else:
            last_ts[k] += rng.randint(1, 3)
            send(k, last_ts[k], f"v{step}")
            if kind == "duplicate":  # the same ordering value again: the later message wins
                send(k, last_ts[k], f"v{step}-again")
            live[k] = True
    return messages, ops, bad


def expected_rows(ops: list[Op]) -> set[tuple]:
    one_batch, one_by_one = TableModel(), TableModel()
    one_batch.apply(ops)
    for op in ops:
        one_by_one.apply([op])
    rows = {(r["key"], r["partition"], r["ts"], r["v"]) for r in one_batch.rows()}
    assert rows == {(r["key"], r["partition"], r["ts"], r["v"]) for r in one_by_one.rows()}, \
        "the scenario's outcome must not depend on batch boundaries"
    return rows


def bad_positions(bootstrap: str, topic: str, bad: list[bytes]) -> set[tuple[str, int, int]]:
    """Where Kafka put each malformed value (topic, partition, offset)."""
    found = set()
    for partition, records in consume_all(bootstrap, topic, KAFKA_PARTITIONS).items():
        found.update((topic, partition, r.offset) for r in records if r.value is not None and r.value in bad)
    assert len(found) == len(bad)
    return found


# -- running the command --------------------------------------------------------------------------------


def write_config(folder: Path, bootstrap: str, topic: str, max_offsets: int, index: str = "BUCKET") -> Path:
    bucket = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 2} if index == "BUCKET" else \
        {"hoodie.index.type": index}
    config = {
        "table": {"path": str(folder / "table"), "name": "events"},
        "hudi": {
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.streaming.checkpoint.identifier": CHECKPOINT_ID,
            **bucket,
            "hoodie.compact.inline": True,
            "hoodie.compact.inline.max.delta.commits": 3,
        },
        "source": {
            "kafka": {"bootstrap_servers": bootstrap, "topics": [topic], "starting_offsets": "earliest",
                      "max_offsets_per_trigger": max_offsets, "options": {"api.version": "2.3"}},
            "format": "json",
            "schema": SCHEMA,
        },
        "stream": {"checkpoint": str(folder / "checkpoint"), "trigger": "1 second"},
        "quarantine": {"path": str(folder / "quarantine")},
        "spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": 2}},
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def ingest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ingest", *args]


def start(*args: str) -> subprocess.Popen:
    """The command in its own process group (its JVM included), output to files."""
    env = {k: v for k, v in os.environ.items() if k != "INGEST_CRASH_AT"}
    return subprocess.Popen(ingest_command(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def finish(process: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=RUN_TIMEOUT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, out, err


def run(*args: str) -> tuple[int, str, str]:
    return finish(start(*args))


def wait_for_commits(table: Path, count: int, process: subprocess.Popen) -> None:
    """Until the table has `count` completed delta commits (the process must still be running)."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the stream ended before it had {count} commits: {process.stderr.read()[-3000:]}"
        if (table / ".hoodie" / "hoodie.properties").exists() and len(delta_commits(table)) >= count:
            return
        time.sleep(0.2)
    raise AssertionError(f"no {count} commits in {RUN_TIMEOUT}s")


def delta_commits(table: Path) -> list:
    return HudiTable.open(str(table)).timeline().completed(Action.DELTA_COMMIT)


def committed_batch_ids(table: Path) -> list[int]:
    t = HudiTable.open(str(table))
    ids = []
    for instant in t.timeline().completed(Action.DELTA_COMMIT):
        raw = CommitMetadata.from_bytes(read_instant(t.storage, instant)).extra_metadata.get(SINK_CHECKPOINT_KEY)
        ids.append(int(json.loads(raw)[CHECKPOINT_ID]))
    return ids


def table_rows(table: Path) -> set[tuple]:
    return {(r["id"], r["part"], r["ts"], r["v"]) for r in read_snapshot(HudiTable.open(str(table))).to_pylist()}


def quarantined(folder: Path) -> list[tuple[str, int, int]]:
    rows = quarantine.read_all(Storage(str(folder)))
    return [] if rows is None else [(r["_kafka_topic"], r["_kafka_partition"], r["_kafka_offset"]) for r in rows.to_pylist()]


# -- the stream -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_stream_writes_what_the_model_says_and_a_rerun_reads_nothing_twice(broker, tmp_path):  # noqa: F811
    topic = topic_name("events")
    broker.create_topic(topic, KAFKA_PARTITIONS)
    messages, ops, bad = scenario(seed=7, keys=10, steps=40)
    broker.produce(topic, messages)
    config = write_config(tmp_path, broker.bootstrap_servers, topic, max_offsets=12)

    code, _, err = run("stream", "--config", str(config), "--available-now")
    assert code == 0, err[-4000:]
    table = tmp_path / "table"
    assert table_rows(table) == expected_rows(ops)
    assert sorted(quarantined(tmp_path / "quarantine")) == sorted(bad_positions(broker.bootstrap_servers, topic, bad))
    batches = committed_batch_ids(table)
    assert batches == list(range(len(batches))) and len(batches) >= 4, batches
    # One line per batch: what it wrote, where the time went, and the Kafka lag after it.
    # One line per committed batch (progress lines of long phases say "Spark tasks", not "instant").
    lines = [line for line in err.splitlines() if "ingest.pipeline.stream: batch " in line and " instant " in line]
    assert len(lines) == len(batches)
    assert all("written=" in line and "quarantined=" in line and " lag=" in line and "instant " in line for line in lines)
    assert lines[-1].endswith("lag=0")
    assert "progress: batch 0 input_rows=" in err
    assert HudiTable.open(str(table)).timeline().completed(Action.COMPACTION), "inline compaction ran"

    before = [i.timestamp for i in HudiTable.open(str(table)).timeline().instants]
    code, _, err = run("stream", "--config", str(config), "--available-now")
    assert code == 0, err[-4000:]
    assert [i.timestamp for i in HudiTable.open(str(table)).timeline().instants] == before, "no new commit"
    assert table_rows(table) == expected_rows(ops)


@pytest.mark.slow
def test_a_killed_stream_resumes_exactly_once_and_sigterm_stops_between_batches(broker, tmp_path):  # noqa: F811
    topic = topic_name("events")
    broker.create_topic(topic, KAFKA_PARTITIONS)
    messages, ops, bad = scenario(seed=11, keys=12, steps=40)
    broker.produce(topic, messages)
    # The key index this time (Hudi's default index type, SIMPLE).
    config = write_config(tmp_path, broker.bootstrap_servers, topic, max_offsets=6, index="SIMPLE")
    table = tmp_path / "table"

    # Killed without warning after two commits: whatever it was doing is left as it was.
    killed = start("stream", "--config", str(config), "--available-now")
    try:
        wait_for_commits(table, 2, killed)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.communicate()
    reached = len(delta_commits(table))

    # Restarted as a long-running stream, then asked to stop: it stops between batches, exit code 0.
    stopped = start("stream", "--config", str(config))
    try:
        wait_for_commits(table, reached + 1, stopped)
        stopped.send_signal(signal.SIGTERM)
    finally:
        code, _, err = finish(stopped)
    assert code == 0, err[-4000:]
    assert "SIGTERM received" in err and "stream stopped on SIGTERM" in err
    assert not HudiTable.open(str(table)).timeline().pending(), "nothing left half done"

    code, _, err = run("stream", "--config", str(config), "--available-now")
    assert code == 0, err[-4000:]
    assert table_rows(table) == expected_rows(ops)
    batches = committed_batch_ids(table)
    assert batches == list(range(len(batches))), f"every batch committed exactly once: {batches}"
    assert sorted(quarantined(tmp_path / "quarantine")) == sorted(bad_positions(broker.bootstrap_servers, topic, bad))


@pytest.mark.slow
def test_on_error_fail_stops_the_stream_at_the_first_undecodable_message(spark, broker, tmp_path):  # noqa: F811
    from ingest.config.loader import load_config
    from ingest.errors import BadRecordError
    from ingest.pipeline.stream import stream

    topic = topic_name("events")
    broker.create_topic(topic, 1)
    good = [json.dumps({"id": f"k{i}", "part": "p0", "ts": i, "v": "x"}).encode() for i in range(3)]
    broker.produce(topic, [(b"k0", good[0]), (b"k1", good[1]), (b"k9", b"{oops"), (b"k2", good[2]), (b"k8", b"[]")])
    path = write_config(tmp_path, broker.bootstrap_servers, topic, max_offsets=100)
    config = load_config(path, ["stream.on_error=fail"])
    with pytest.raises(BadRecordError, match=rf"2 Kafka message\(s\) cannot be decoded; first: {topic}-0 offset 2: invalid JSON"):
        stream(config, available_now=True, spark=spark)
    assert not HudiTable.exists(str(tmp_path / "table")) or not delta_commits(tmp_path / "table")
    assert quarantined(tmp_path / "quarantine") == []


@pytest.mark.slow
def test_the_first_batchs_long_phases_print_progress_lines(spark, broker, tmp_path, caplog, monkeypatch):  # noqa: F811
    """Reading and decoding, and the write, each say how far they are while they run, with Spark's
    tasks done (`SparkContext.statusTracker`, as Spark's ConsoleProgressBar polls it). No Hudi rule
    applies; the delay is set to 0 here so that a small batch's phases count as long."""
    import logging

    from ingest.config.loader import load_config
    from ingest.pipeline import progress
    from ingest.pipeline.stream import stream

    monkeypatch.setattr(progress, "PHASE_INTERVAL", 0.0)
    caplog.set_level(logging.INFO, logger="ingest.pipeline.stream")
    topic = topic_name("events")
    broker.create_topic(topic, 1)
    broker.produce(topic, [(f"k{i}".encode(), json.dumps({"id": f"k{i}", "part": "p0", "ts": i, "v": "x"}).encode())
                           for i in range(20)])
    config = load_config(write_config(tmp_path, broker.bootstrap_servers, topic, max_offsets=100))
    stream(config, available_now=True, spark=spark)
    lines = [r.getMessage() for r in caplog.records if r.name == "ingest.pipeline.stream"]
    assert any(x.startswith("batch 0: reading and decoding Kafka messages") for x in lines), lines
    assert any(x.startswith("batch 0: writing the file groups") for x in lines), lines
    assert any(re.search(r"Spark tasks \d+/\d+", x) for x in lines), lines


def test_a_new_checkpoint_for_a_table_with_this_streams_batches_is_refused(spark, tmp_path):
    import pyarrow as pa

    from ingest.config.loader import load_config
    from ingest.errors import ConfigError
    from ingest.pipeline.stream import stream
    from ingest.write.batch import LocalWriter
    from ingest.write.commit import BatchId

    path = write_config(tmp_path, "127.0.0.1:9", "events", max_offsets=10)
    config = load_config(path)
    rows = pa.table({"id": ["a"], "part": ["p0"], "ts": pa.array([1], pa.int64()), "v": ["x"]})
    LocalWriter(config.write).write(rows, batch=BatchId(CHECKPOINT_ID, 3))
    with pytest.raises(ConfigError, match="is a new checkpoint, but .* already holds batches up to 3"):
        stream(config, spark=spark)
    assert not (tmp_path / "checkpoint").exists()


@pytest.mark.slow
@pytest.mark.parametrize("version", [6, 8])
def test_hudis_streamer_and_a_stream_take_a_table_over_from_each_other(spark, broker, tmp_path, version):  # noqa: F811
    """HoodieStreamer keeps its Kafka position in the commits it writes: `topic,0:n,1:m`, each partition's next
    offset (`KafkaOffsetGen.CheckpointUtils.offsetsToStr`), under `deltastreamer.checkpoint.key` at version 6
    and `streamer.checkpoint.key.v2` at 8, and resumes from the latest delta commit carrying one
    (`StreamSync.getCheckpointToResume`), unless the `--checkpoint` it is started with differs from the
    `reset_key` recorded there. A fresh stream with no starting offsets starts where that checkpoint says
    (a partition it does not name from the earliest, as `KafkaOffsetGen` reads it from 0); every batch
    writes its own end in the same form and carries the reset key on, so HoodieStreamer restarted with
    the same `--checkpoint` resumes where the stream stopped. Nothing is read twice, nothing skipped."""
    import pyarrow as pa

    from ingest.config.loader import load_config
    from ingest.hudi.config.table_version import TableVersion
    from ingest.pipeline.stream import stream
    from ingest.write.batch import LocalWriter

    keys = TableVersion.of(version)
    topic = topic_name("handover")
    broker.create_topic(topic, KAFKA_PARTITIONS)
    sent = {p: [json.dumps({"id": f"k{p}-{i}", "part": "p0", "ts": i, "v": f"{p}.{i}"}).encode() for i in range(4)]
            for p in range(KAFKA_PARTITIONS)}
    broker.produce(topic, [Message(v, partition=p) for p, values in sent.items() for v in values])
    path = write_config(tmp_path, broker.bootstrap_servers, topic, max_offsets=5)
    raw = yaml.safe_load(path.read_text())
    del raw["source"]["kafka"]["starting_offsets"]
    raw["hudi"]["hoodie.write.table.version"] = version
    path.write_text(yaml.safe_dump(raw))
    config = load_config(path)
    # What HoodieStreamer wrote: the first two messages of partition 0 and three of partition 1, and a
    # checkpoint that does not name partition 2 yet.
    streamer = {keys.streamer_checkpoint_key: f"{topic},0:2,1:3", keys.streamer_reset_key: "started-with"}
    taken = [(0, i) for i in range(2)] + [(1, i) for i in range(3)]
    rows = pa.table({"id": [f"k{p}-{i}" for p, i in taken], "part": ["p0"] * len(taken),
                     "ts": pa.array([i for _, i in taken], pa.int64()), "v": ["streamer"] * len(taken)})
    LocalWriter(config.write).write(rows, extra_metadata=streamer)

    stream(config, available_now=True, spark=spark)
    got = {r["id"]: r["v"] for r in read_snapshot(HudiTable.open(str(tmp_path / "table"))).to_pylist()}
    assert got == {f"k{p}-{i}": "streamer" if (p, i) in taken else f"{p}.{i}" for p in sent for i in range(4)}
    table = HudiTable.open(str(tmp_path / "table"))
    last = table.commit_metadata(table.timeline().completed(Action.DELTA_COMMIT)[-1]).extra_metadata
    assert last[keys.streamer_checkpoint_key] == f"{topic},0:4,1:4,2:4"
    assert last[keys.streamer_reset_key] == "started-with"
    assert list(json.loads(last[SINK_CHECKPOINT_KEY])) == [CHECKPOINT_ID]


# -- the backfill ---------------------------------------------------------------------------------------


def _backfill_config(folder: Path) -> Path:
    config = {
        "table": {"path": str(folder / "table"), "name": "events"},
        "hudi": {
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "bulk_insert",
            "hoodie.datasource.write.streaming.checkpoint.identifier": "events-backfill",
            "hoodie.index.type": "BUCKET",
            "hoodie.bucket.index.num.buckets": 2,
        },
        "source": {"files": {"path": str(folder / "export"), "format": "parquet", "max_files_per_trigger": 2},
                   "schema": SCHEMA},
        "quarantine": {"path": str(folder / "quarantine")},
    }
    path = folder / "backfill.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.slow
def test_a_backfill_commits_long_phases_print_progress_lines(spark, tmp_path, caplog, monkeypatch):
    """As the stream's: each commit's long phases say how far they are (Spark's tasks from
    `SparkContext.statusTracker`, paced like Spark's ConsoleProgressBar; no Hudi rule applies)."""
    import logging

    import pyarrow as pa
    import pyarrow.parquet as pq

    from ingest.pipeline import progress

    monkeypatch.setattr(progress, "PHASE_INTERVAL", 0.0)
    export = tmp_path / "export"
    export.mkdir()
    rows = [{"id": f"k{n:02d}", "part": f"p{n % 3}", "ts": 1, "v": f"v{n}"} for n in range(12)]
    pq.write_table(pa.Table.from_pylist(rows), export / "part-0.parquet")
    assert cli.main(["backfill", str(_backfill_config(tmp_path))]) == 0
    lines = [r.getMessage() for r in caplog.records
             if r.name == "ingest.pipeline.backfill" and r.levelno == logging.INFO]
    assert any(x.startswith("backfill batch 0: writing the file groups") for x in lines), lines
    assert any(re.search(r"Spark tasks \d+/\d+", x) for x in lines), lines


@pytest.mark.slow
def test_backfill_bulk_inserts_then_upserts_and_a_rerun_commits_nothing(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    export = tmp_path / "export"
    export.mkdir()
    model = TableModel()
    for i in range(3):
        rows = [{"id": f"k{n:02d}", "part": f"p{n % 3}", "ts": 1, "v": f"bulk-{n}"} for n in range(i * 6, i * 6 + 6)]
        pq.write_table(pa.Table.from_pylist(rows), export / f"part-{i}.parquet")
        model.apply([Op(r["id"], r["part"], r["ts"], values={"v": r["v"]}) for r in rows])
    config = _backfill_config(tmp_path)
    table = tmp_path / "table"

    assert cli.main(["backfill", "--config", str(config)]) == 0
    t = HudiTable.open(str(table))
    commits = t.timeline().completed(Action.DELTA_COMMIT)
    assert len(commits) == 2, "3 files, at most 2 per commit"
    assert {t.commit_metadata(c).operation_type for c in commits} == {"BULK_INSERT"}
    first = [s.path for s in t.commit_metadata(commits[0]).all_write_stats()]
    assert len(first) == 6 and all(p.endswith(".parquet") for p in first), \
        f"into new file groups (3 partitions x 2 buckets) a bulk insert writes base files: {first}"
    # The second commit's keys hash to the same buckets: appended as logs, never a second base file.
    assert all(".log." in s.path for s in t.commit_metadata(commits[1]).all_write_stats())

    assert cli.main(["backfill", "--config", str(config)]) == 0
    assert len(delta_commits(table)) == 2, "a rerun skips what is committed"

    updates = tmp_path / "updates"
    updates.mkdir()
    (updates / "a.csv").write_text("id,part,ts,v\nk01,p1,5,csv-1\nk02,p2,0,stale\nk20,p2,1,new-20\n")
    lines = [json.dumps({"id": "k03", "part": "p0", "ts": 9, "v": "json-3"}), "{broken",
             json.dumps({"id": "k04", "part": "p1", "v": "no ts"}), json.dumps({"id": "k05", "part": "p2", "ts": 2, "v": "j5"})]
    (updates / "b.jsonl").write_text("\n".join(lines) + "\n")
    upsert = ["backfill", "--config", str(config), "--input", str(updates),
              "--set", "hudi.hoodie.datasource.write.operation=upsert"]
    assert cli.main(upsert) == 0
    assert len(delta_commits(table)) == 4, "a commit per format"
    model.apply([Op("k01", "p1", 5, values={"v": "csv-1"}), Op("k02", "p2", 0, values={"v": "stale"}),
                 Op("k20", "p2", 1, values={"v": "new-20"})])
    model.apply([Op("k03", "p0", 9, values={"v": "json-3"}), Op("k05", "p2", 2, values={"v": "j5"})])
    assert table_rows(table) == {(r["key"], r["partition"], r["ts"], r["v"]) for r in model.rows()}

    bad = quarantine.read_all(Storage(str(tmp_path / "quarantine")))
    assert bad is not None
    shown = [(r["_ingest_raw_record"], r["_ingest_error"]) for r in bad.to_pylist()]
    assert sorted(shown, key=str) == sorted([(None, "field 'ts' is null but declared NOT NULL"),
                                             ("{broken", "malformed json record: it does not parse against "
                                                         "source.schema")], key=str)
    assert {r["_ingest_source_file"] for r in bad.to_pylist()} == {(updates / "b.jsonl").as_uri().replace("file:///", "file:/")}

    assert cli.main(upsert) == 0
    assert len(delta_commits(table)) == 4, "a rerun of the upsert commits nothing"


# -- the demo and the spark-submit entry points ----------------------------------------------------------


@pytest.mark.slow
def test_demo_prints_the_table_and_the_quarantine(tmp_path):
    code, out, err = run("demo", "--dir", str(tmp_path / "demo"))
    assert code == 0, err[-4000:]
    table = out.split("\nTable ")[1].split("\nQuarantine ")[0]
    rows = {line.split()[0]: line.split()[1:4] for line in table.splitlines() if line.startswith("o-")}
    assert rows["o-1001"] == ["emea", "135.00", "2024-05-01T09:20:00Z"], "the late update changed nothing"
    assert rows["o-1005"] == ["amer", "590.00", "2024-05-01T09:22:00Z"], "the later of two updates won"
    assert "o-1003" not in rows and "o-1008" not in rows, "tombstones deleted their keys"
    assert rows["o-1012"] == ["emea", "31.00", "2024-05-01T09:25:00Z"]
    assert len(rows) == 10
    quarantine_part = out.split("\nQuarantine ")[1]
    bad = [line.split(None, 3) for line in quarantine_part.splitlines() if line.startswith("orders ")]
    assert len(bad) == 1
    topic, partition, offset, rest = bad[0]
    assert int(partition) in range(3) and int(offset) >= 0
    assert "invalid JSON" in rest and '{"order_id": "o-1012", "region": "emea", "amount": 3' in rest


def test_spark_submit_entry_points_import_from_a_py_files_zip(tmp_path):
    """spark-submit --py-files ingest.zip: the jobs find the package in the zip, not in site-packages."""
    archive = tmp_path / "ingest.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in (REPO / "ingest").rglob("*.py"):
            zf.write(path, path.relative_to(REPO).as_posix())
    site = next(p for p in sys.path if p.endswith("site-packages"))
    # -S: no site processing, so the editable install's path hook is not there; dependencies come from
    # site-packages itself, the package only from the zip.
    probe = ("import runpy, sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; sys.argv = sys.argv[3:]; "
             "runpy.run_path(sys.argv[0], run_name='__main__')")
    for job in ("stream_kafka.py", "backfill.py"):
        result = subprocess.run([sys.executable, "-S", "-c", probe, str(archive), site, str(REPO / "jobs" / job), "--help"],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "--config" in result.stdout
        located = subprocess.run(
            [sys.executable, "-S", "-c", "import sys; sys.path[:0] = sys.argv[1:3]; import ingest.pipeline as p; "
             "print(p.__file__)", str(archive), site], capture_output=True, text=True, timeout=120)
        assert located.stdout.strip().startswith(str(archive)), located.stderr[-2000:]
