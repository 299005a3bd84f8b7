"""Write tasks report their peak memory (beside the batch's counts, which say what was written), and `jobs/benchmark.py --scale N` reports it at both sizes.

No Hudi rule applies (Hudi's write stats carry no memory figure); this is ingest's own measurement
(`ingest.spark.peak_memory`). A Python worker is reused and keeps the memory it freed, so the
figure that follows a task's work is the bytes in use, not the worker's resident size.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import hudi_invariants
import pytest

from ingest.spark.sink import HudiSink
from ingest.write.commit import BatchId

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "jobs"))
import benchmark  # noqa: E402


def _rows(spark, n: int, offset: int = 0):
    return benchmark.events(spark, n, key_offset=offset, partitions=2)


@pytest.mark.parametrize(("index", "insert_mode"), [("bucket", "base"), ("key", None)])
def test_write_tasks_report_peaks_that_follow_the_batch(spark, tmp_path, index, insert_mode):
    """Both peaks come back from every path's tasks (`HudiSink.task_peaks`), and the bytes in use grow
    with the batch (a 200,000-row batch needs more than a 2,000-row one, in the same workers). The
    peaks are sampled every 50 ms: a 50,000-row task held its peak too briefly to be sure of it."""
    path = tmp_path / "t"
    with HudiSink(benchmark.options(str(path), 2, insert_mode=insert_mode, index=index), spark=spark,
                  small_batch_rows=0) as sink:
        sink.write(_rows(spark, 2_000), batch=BatchId("m", 0))
        small = sink.task_peaks
        sink.write(_rows(spark, 200_000, offset=10_000), batch=BatchId("m", 1))
        large = sink.task_peaks
    for peaks in (small, large):
        assert peaks["task_peak_rss_bytes"] > 0
        assert peaks["task_peak_in_use_bytes"] > 0
    assert large["task_peak_in_use_bytes"] > small["task_peak_in_use_bytes"] + (5 << 20)
    assert hudi_invariants.check(path, bucket_index=index == "bucket")


@pytest.mark.slow
def test_benchmark_scale_reports_both_sizes(spark, tmp_path):
    """`measure_scale` loads and upserts N times the rows on a table of its own and reports per-row
    ratios against the 1x figures it is given, the key index's bytes and the tasks' peaks."""
    args = benchmark.parse_args(["--rows", "3000", "--rounds", "1", "--scale", "2", "--partitions", "2",
                                 "--buckets", "2"])
    assert isinstance(args, argparse.Namespace)
    one_x = {"bulk_load_s": 1.0, "upsert_s": 1.0}
    out = benchmark.measure_scale(spark, args, tmp_path, one_x)
    assert out["rows_scaled"] == 6000 and out["upsert_rows_scaled"] == 1200
    assert out["bulk_load_per_row_2x_ratio"] == pytest.approx(out["bulk_load_s_2x"] / 6000 / (1.0 / 3000))
    assert out["upsert_per_row_2x_ratio"] == pytest.approx(out["upsert_s_2x"] / 1200 / (1.0 / 600))
    assert out["key_index_bytes_2x"] > 0
    for what in ("bulk_load", "upsert"):
        assert out[f"{what}_task_peak_in_use_bytes_2x"] > 0
        assert out[f"{what}_task_peak_rss_bytes_2x"] > 0
