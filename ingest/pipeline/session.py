"""The SparkSession a pipeline runs in: the configured one, or the one spark-submit set up.

`ingest.spark.session.get_or_create` picks `local[2]` when no master is given, which would override
the master spark-submit was launched with (`--master yarn`, `k8s://...`): spark-submit passes it to
the driver only as the JVM's `spark.master` property. It is read back here and handed on, so the
same job file runs under spark-submit and from the command line.
"""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

from ingest.config.pipeline import PipelineConfig
from ingest.spark.session import ensure_java, get_or_create

log = logging.getLogger(__name__)


def launcher_master() -> str | None:
    """The `spark.master` the JVM was started with (spark-submit), if any."""
    from pyspark import SparkConf, SparkContext

    ensure_java()
    SparkContext._ensure_initialized()  # connects to spark-submit's JVM, or starts one
    return SparkConf().get("spark.master", None)


def spark_session(config: PipelineConfig) -> tuple[SparkSession, bool]:
    """The session for `config`, and whether this call created it (then the caller stops it)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    conf = dict(config.spark.conf)
    # Spark's console progress bar would interleave with the per-batch log lines.
    conf.setdefault("spark.ui.showConsoleProgress", "false")
    master = config.spark.master
    if master is None and "spark.master" not in conf:
        launched = launcher_master()
        if launched:
            conf["spark.master"] = launched
    spark = get_or_create(master=master, app_name=config.spark.app_name, conf=conf)
    context = spark.sparkContext
    log.info("Spark %s, master %s, application %s (%s)", spark.version, context.master, context.appName,
             context.applicationId)
    return spark, True
