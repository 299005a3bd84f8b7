"""What the stream reads from Spark's checkpoint, and the one check that keeps it in step with the table.

Spark's checkpoint holds the Kafka offsets of each batch (`offsets/<batch id>`, written before the
batch runs); the table's commits hold the batch ids written under the checkpoint identifier. Both
are read through Hadoop's file system, as Spark writes them (s3a:// and all).

A new checkpoint numbers batches from 0 again. If the table already holds batches under the same
checkpoint identifier, the sink would take the new query's batches for replays of those and skip
them: data silently lost. `check_fresh_start` refuses to start such a stream.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from ingest.config.pipeline import PipelineConfig
from ingest.errors import ConfigError
from ingest.hudi.table.table import HudiTable
from ingest.write.commit import committed_batch

OFFSET_LOG_VERSION = "v1"


def _fs(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop_path


def has_offsets(spark: SparkSession, checkpoint: str) -> bool:
    """Whether a query has run on this checkpoint (it logged the offsets of at least one batch)."""
    fs, path = _fs(spark, f"{checkpoint.rstrip('/')}/offsets")
    return bool(fs.exists(path) and len(fs.listStatus(path)) > 0)


def read_offset_log(spark: SparkSession, checkpoint: str, batch_id: int) -> str | None:
    """A batch's end offsets (the first source's JSON) from the offset log: a version line, the batch
    metadata, then one line per source."""
    jvm = spark.sparkContext._jvm
    fs, path = _fs(spark, f"{checkpoint.rstrip('/')}/offsets/{batch_id}")
    reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(fs.open(path), "UTF-8"))
    try:
        lines = []
        while (line := reader.readLine()) is not None:
            lines.append(line)
    finally:
        reader.close()
    if not lines or lines[0].strip() != OFFSET_LOG_VERSION or len(lines) < 3:
        return None
    source = lines[2].strip()
    return source if source.startswith("{") else None


def check_fresh_start(spark: SparkSession, config: PipelineConfig) -> None:
    """Refuse a new checkpoint for a table that already holds batches of this checkpoint identifier."""
    checkpoint = config.stream.checkpoint
    if checkpoint is None or has_offsets(spark, checkpoint):
        return
    if not HudiTable.exists(config.table.path, config.table.storage_options):
        return
    table = HudiTable.open(config.table.path, config.table.storage_options)
    done = committed_batch(table, table.timeline(), config.write.checkpoint_id)
    if done is None:
        return
    batch, instant = done
    raise ConfigError(
        f"{checkpoint} is a new checkpoint, but {config.table.path} already holds batches up to {batch} "
        f"written under checkpoint identifier {config.write.checkpoint_id!r} (instant {instant.timestamp}); the "
        "new query's batches would be taken for replays of those and skipped. Restore the stream's checkpoint, "
        "or give this stream its own hoodie.datasource.write.streaming.checkpoint.identifier",
        source=config.origin, key="stream.checkpoint")
