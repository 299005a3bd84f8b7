"""`jobs/benchmark_object_store.py` at a tiny size: it runs, both tables read back the same rows, and
its JSON line carries the S3 requests it counted.

A benchmark prints figures and is never a timed test; this checks only that the measurement works
and reports what it promises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT = 600  # a safety net for a hung process, not a performance bound


@pytest.mark.parametrize(("index", "latency_ms", "touched"), [("bucket", 0, None), ("key", 0, 1), ("bucket", 5, None)])
def test_object_store_benchmark_counts_a_commits_requests(index, latency_ms, touched):
    """With `--latency-ms`, moto runs in a process of its own behind the job's delaying proxy; with
    `--touched`, batches after the first write into that many of the partitions."""
    pytest.importorskip("moto")
    pytest.importorskip("s3fs")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, str(REPO / "jobs" / "benchmark_object_store.py"), "--index", index, "--commits", "3",
         "--partitions", "3", "--rows", "30", "--buckets", "2", "--latency-ms", str(latency_ms),
         *(["--touched", str(touched)] if touched else [])],
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["latency_ms"] == latency_ms and figures["touched"] == (touched or 3)
    assert figures["table_rows"] > 30  # keys of later batches are partly new, partly updates
    requests = figures["s3_requests_last_commit"]
    # Every commit lists (the timeline, partitions, markers), reads (the config) and writes (files,
    # markers, the instant files): calls s3fs made, counted.
    for call in ("list_objects_v2", "get_object", "put_object"):
        assert requests.get(call, 0) > 0, (call, requests)
    assert figures["s3_requests_last_commit_total"] == sum(requests.values())
    assert figures["s3_commit_median_s"] > 0 and figures["local_commit_median_s"] > 0
