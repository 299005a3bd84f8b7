"""The SparkSession a pipeline runs in: the configured one, or the one spark-submit set up."""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

from ingest.config.pipeline import PipelineConfig
from ingest.spark.session import get_or_create

log = logging.getLogger(__name__)


def spark_session(config: PipelineConfig) -> tuple[SparkSession, bool]:
    """The session for `config`, and whether this call created it (then the caller stops it)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    conf = dict(config.spark.conf)
    # Spark's console progress bar would interleave with the per-batch log lines.
    conf.setdefault("spark.ui.showConsoleProgress", "false")
    spark = get_or_create(master=config.spark.master, app_name=config.spark.app_name, conf=conf)
    context = spark.sparkContext
    log.info("Spark %s, master %s, application %s (%s)", spark.version, context.master, context.appName,
             context.applicationId)
    return spark, True
