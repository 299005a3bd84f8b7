"""The kill matrix: `kill -9` of the stream (at a random time, just after a commit, and between
writing a commit's bytes aside and publishing them), of a compaction and of a clean, each followed
by a restart; at the end the table equals the model, nothing is left pending and no temporary file is
left behind.

One seeded run (the seed is in the test's id), so a failure replays: the kill times come from it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from kafka_fixtures import broker, topic_name  # noqa: F401  (broker is a fixture)
from test_jobs import (
    KAFKA_PARTITIONS,
    committed_batch_ids,
    delta_commits,
    expected_rows,
    finish,
    ingest_command,
    run,
    scenario,
    start,
    table_rows,
    wait_for_commits,
    write_config,
)

from ingest.faults import CRASH_EXIT_CODE
from ingest.hudi.table.table import HudiTable

SEED = 20261124
LEASE_SECONDS = 10  # write.lock_expiry_seconds: temporaries older than this are a dead writer's


def kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def kill_when(process: subprocess.Popen, appeared, delay: float, timeout: float = 60) -> bool:
    """SIGKILL `delay` seconds after `appeared()` turns true; False if the process ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if appeared():
            time.sleep(delay)
            break
        time.sleep(0.01)
    alive = process.poll() is None
    kill(process)
    return alive


def crash(point: str, *args: str) -> tuple[int, str, str]:
    """The command, made to exit at once at the named crash point (`INGEST_CRASH_AT`)."""
    env = {**os.environ, "INGEST_CRASH_AT": point}
    return finish(subprocess.Popen(ingest_command(*args), env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True))


def new_instant_file(table: Path, suffix: str, before: set[str]):
    folder = table / ".hoodie"
    return lambda: any(p.name.endswith(suffix) and p.name not in before for p in folder.iterdir())


def hoodie_files(table: Path) -> set[str]:
    return {p.name for p in (table / ".hoodie").iterdir()}


def has_old_slices(table) -> bool:
    """Whether a file group has a slice older than its latest: something for a clean to delete."""
    return any(len(group.slices) > 1 for group in HudiTable.open(str(table)).view().file_groups())


@pytest.mark.slow
@pytest.mark.parametrize("seed", [SEED])
def test_kill_9_anywhere_then_restart_leaves_the_model_and_nothing_behind(broker, tmp_path, seed):  # noqa: F811
    """`BaseRollbackActionExecutor` (a restarted writer rolls back the failed write),
    `HoodieTimeline.filterPendingCompactionTimeline` (a compaction killed midway is executed again)
    and `CleanActionExecutor.runPendingClean` (a clean killed midway is finished) keep a table whole
    whatever `kill -9` interrupts."""
    rng = random.Random(seed)
    topic = topic_name("kill")
    broker.create_topic(topic, KAFKA_PARTITIONS)
    messages, ops, _ = scenario(seed=seed, keys=12, steps=50)
    # Produced in three parts, so that every restart below finds messages to commit however fast the
    # earlier runs were (the scenario's outcome does not depend on where batches begin).
    thirds = [messages[: len(messages) // 3], messages[len(messages) // 3: 2 * len(messages) // 3],
              messages[2 * len(messages) // 3:]]
    broker.produce(topic, thirds[0])
    config_path = write_config(tmp_path, broker.bootstrap_servers, topic, max_offsets=6, index="SIMPLE")
    config = yaml.safe_load(config_path.read_text())
    config["write"] = {"lock_expiry_seconds": LEASE_SECONDS}
    config_path.write_text(yaml.safe_dump(config))
    table = tmp_path / "table"
    stream = ("stream", "--config", str(config_path))
    killed_at = []

    # 1. The stream, killed at a random moment 5-45 s after it started (JVM start, a batch, idle).
    at = rng.uniform(5, 45)
    first = start(*stream)
    time.sleep(at)
    kill(first)
    killed_at.append(("stream", round(at, 1)))
    if not (table / ".hoodie" / "hoodie.properties").exists():  # killed before the first batch
        second_try = start(*stream)
        wait_for_commits(table, 1, second_try)
        kill(second_try)

    # 2. A compaction, killed just after its plan or its inflight file appears.
    before = hoodie_files(table)
    compact = start("compact", "--path", str(table))
    delay = rng.uniform(0, 0.3)
    hit = kill_when(compact, new_instant_file(table, ".compaction.inflight", before), delay)
    killed_at.append(("compaction", round(delay, 2), hit))

    # 3. A clean, dying midway: some planned files deleted, the clean not completed. A clean does
    # its work in milliseconds, where no timed kill lands, so it dies at `ingest.faults`'s
    # `mid_clean` (exits at once, like kill -9). A finished compaction first gives it slices to delete.
    code, out, err = run("compact", "--path", str(table))
    assert code == 0, (killed_at, out, err[-3000:])
    broker.produce(topic, thirds[1])
    while not has_old_slices(table):  # the key index rewrites small base files: one more commit makes a slice
        more = start(*stream)
        try:
            wait_for_commits(table, len(delta_commits(table)) + 1, more)
        finally:
            kill(more)
    code, _, err = crash("mid_clean", "clean", "--path", str(table), "--set",
                         "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS", "--set", "hoodie.cleaner.fileversions.retained=1")
    assert code == CRASH_EXIT_CODE, (killed_at, err[-3000:])
    killed_at.append(("clean mid-clean", code))

    # 4. The stream restarted (rolling back what the kills left), killed shortly after a commit.
    broker.produce(topic, thirds[2])
    restarted = start(*stream)
    try:
        wait_for_commits(table, len(delta_commits(table)) + 1, restarted)
        delay = rng.uniform(0, 1.0)
        time.sleep(delay)
    finally:
        kill(restarted)
    killed_at.append(("stream after a commit", round(delay, 2)))

    # 5. The stream dying where a kill hurts most, its commit's bytes written aside but not yet
    # published (`ingest.faults`: exits at once, like kill -9): the temporary must not outlive it.
    code, _, err = crash("mid_commit", *stream, "--available-now")
    assert code == CRASH_EXIT_CODE, err[-3000:]
    assert list((table / ".hoodie").glob(".*.tmp")), "the crash left its commit's temporary"
    killed_at.append(("stream mid-commit", code))
    last_kill = time.monotonic()

    # 6. Restarts that finish: the stream drains Kafka, then a compaction and a clean complete. Taking
    # the lease after the last writer's lease would have expired sweeps its temporaries.
    time.sleep(max(0.0, LEASE_SECONDS + 1 - (time.monotonic() - last_kill)))
    code, _, err = run(*stream, "--available-now")
    assert code == 0, (killed_at, err[-4000:])
    for service in (("compact", "--path", str(table)), ("clean", "--path", str(table))):
        code, out, err = run(*service)
        assert code == 0, (killed_at, service, out, err[-3000:])

    assert table_rows(table) == expected_rows(ops), killed_at
    batches = committed_batch_ids(table)
    assert batches == list(range(len(batches))), (killed_at, batches)
    assert HudiTable.open(str(table)).timeline().pending() == [], killed_at
    assert sorted(table.rglob("*.tmp")) == [], killed_at
    print(f"kill matrix (seed {seed}): {killed_at}")  # what was hit, shown with -rP
