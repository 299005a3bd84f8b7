"""`jobs/benchmark.py --kafka` at a tiny size: it runs, and its JSON line carries the Kafka figures.

A benchmark prints figures and is never a timed test; this only checks that the Kafka measurement
works end to end and reports what it promises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT = 900  # a safety net for a hung process, not a performance bound


@pytest.mark.slow
def test_kafka_benchmark_reports_stream_against_raw_consumers(tmp_path):
    """The run reads a whole topic as Hudi's streamer does (KafkaOffsetGen.getNextOffsetRanges: from
    the earliest offsets to `consumer.endOffsets`; JsonKafkaSource.toRDD: every record of those
    ranges), so the benchmark fails unless the stream's table, both raw consumers, the source read,
    the decoder and the sink-alone table each saw every produced row; its JSON line then carries the
    three ratios as positive numbers."""
    rows = 3000
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, str(REPO / "jobs" / "benchmark.py"), "--kafka", "--rows", str(rows),
         "--workdir", str(tmp_path / "work")],
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["kafka_rows"] == rows
    assert figures["kafka_partitions"] >= 4
    for key in ("kafka_stream_rows_per_s", "kafka_stream_vs_raw_kafka_python", "kafka_stream_vs_raw_confluent"):
        assert isinstance(figures[key], float) and figures[key] > 0, (key, figures[key])
    assert figures["kafka_stream_rows_per_s"] == pytest.approx(rows / figures["kafka_stream_s"])
