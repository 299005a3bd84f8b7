"""What Spark is doing now, in a few words for a progress line: the running stages' tasks.

Read from `SparkContext.statusTracker()`, as Spark's `ConsoleProgressBar` reads it: the active
stages of the application, their tasks done and in all, combined into one figure.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession


def task_progress(spark: SparkSession) -> Callable[[], str | None]:
    """A probe: `Spark tasks 5/16 (2 stages)` while stages run, None between them."""
    tracker = spark.sparkContext.statusTracker()

    def probe() -> str | None:
        stages = [s for s in map(tracker.getStageInfo, tracker.getActiveStageIds()) if s is not None]
        if not stages:
            return None
        done = sum(s.numCompletedTasks for s in stages)
        total = sum(s.numTasks for s in stages)
        return f"Spark tasks {done}/{total}" + (f" ({len(stages)} stages)" if len(stages) > 1 else "")

    return probe
