"""What the stream reads from Spark's checkpoint, and the one check that keeps it in step with the table.

Spark's checkpoint holds the Kafka offsets of each batch (`offsets/<batch id>`, written before the
batch runs); the table's commits hold the batch ids written under the checkpoint identifier. Both
are read through Hadoop's file system, as Spark writes them (s3a:// and all).

A new checkpoint numbers batches from 0 again. If the table already holds batches under the same
checkpoint identifier, the sink would take the new query's batches for replays of those and skip
them: data silently lost. `check_fresh_start` refuses to start such a stream.

Hudi's streamer (HoodieStreamer, `StreamSync`) keeps its Kafka position in the table instead: every
commit it writes carries `topic,0:n,1:m` (`KafkaOffsetGen.CheckpointUtils.offsetsToStr`, each partition's
next offset) under `deltastreamer.checkpoint.key` (table version 6) or `streamer.checkpoint.key.v2` (8 and
9), and it resumes from the latest commit that has one (`getCheckpointToResume`). A stream of one topic
writes the same into its commits (`StreamerCheckpoint`), so HoodieStreamer can take the table over where
ingest stopped; and a fresh stream with no `starting_offsets` starts where the table's last such
checkpoint of its topic says (`resume_position`), so ingest takes over where HoodieStreamer stopped.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from pyspark.sql import SparkSession

from ingest.config.pipeline import PipelineConfig
from ingest.errors import ConfigError
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.write.commit import committed_batch

log = logging.getLogger(__name__)

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


@dataclass(frozen=True)
class StreamerCheckpoint:
    """A Kafka position as Hudi's streamer records it: one topic, each partition's next offset."""

    topic: str
    offsets: dict[int, int]

    @classmethod
    def parse(cls, text: str) -> StreamerCheckpoint | None:
        """`KafkaOffsetGen.CheckpointUtils.strToOffsets`: the topic, then `partition:offset` pairs; None for
        what is not such a checkpoint (another source's, say)."""
        topic, *pairs = text.split(",")
        try:
            offsets = {int(p): int(o) for p, o in (pair.split(":") for pair in pairs)}
        except ValueError:
            return None
        return cls(topic, offsets) if topic and offsets else None

    @classmethod
    def from_offset_log(cls, source: str | None) -> StreamerCheckpoint | None:
        """From a batch's end offsets in Spark's offset log (`{"topic": {"0": n}}`, each partition's next
        offset too); None unless it is one topic's, as Hudi's form holds one."""
        try:
            parsed = json.loads(source) if source else None
        except ValueError:
            return None
        if not isinstance(parsed, dict) or len(parsed) != 1:
            return None
        ((topic, partitions),) = parsed.items()
        return cls(topic, {int(p): int(o) for p, o in partitions.items()}) if partitions else None

    def text(self) -> str:
        """`offsetsToStr`: `topic,0:n,1:m`, partitions in order."""
        return ",".join([self.topic, *(f"{p}:{o}" for p, o in sorted(self.offsets.items()))])


@dataclass(frozen=True)
class TableCheckpoint:
    """The latest commit Hudi's streamer would resume from (`getLatestInstantAndCommitMetadataWithValidCheckpointInfo`)."""

    instant: str
    checkpoint: StreamerCheckpoint | None
    reset: str | None  # the `--checkpoint` recorded with it


def latest_streamer_checkpoint(table: HudiTable) -> TableCheckpoint | None:
    """The newest completed delta commit (Merge-On-Read: `getDeltaCommitTimeline`) carrying any streamer
    checkpoint or reset key (`getLatestInstantAndCommitMetadataWithValidCheckpointInfo`), its checkpoint
    and reset key of one generation (`CheckpointUtils.getCheckpoint`)."""
    generations = table.version.streamer_checkpoint_generations
    for instant in reversed(table.timeline().completed(Action.DELTA_COMMIT)):
        extra = table.commit_metadata(instant).extra_metadata
        pair = next(((extra.get(k), extra.get(r)) for k, r in generations if extra.get(k) or extra.get(r)), None)
        if pair is not None:
            value, reset = pair
            return TableCheckpoint(instant.timestamp, StreamerCheckpoint.parse(value) if value else None,
                                   reset or None)
    return None


def table_checkpoint(config: PipelineConfig) -> TableCheckpoint | None:
    """The table's latest streamer checkpoint, for a stream of one topic; None when the stream reads
    several topics, the table does not exist yet, or the checkpoint is another topic's (its reset key
    is not this stream's to carry on)."""
    kafka = config.source.kafka
    if kafka is None or len(kafka.topics) != 1 or kafka.topic_pattern:
        return None
    if not HudiTable.exists(config.table.path, config.table.storage_options):
        return None
    found = latest_streamer_checkpoint(HudiTable.open(config.table.path, config.table.storage_options))
    if found is None or (found.checkpoint is not None and found.checkpoint.topic != kafka.topics[0]):
        return None
    return found


def resume_position(spark: SparkSession, config: PipelineConfig, found: TableCheckpoint | None) -> str | None:
    """For a new query with no `starting_offsets` over a table whose last streamer checkpoint (`found`,
    `table_checkpoint`) is of its one topic: `startingOffsets` there, partitions the checkpoint does not
    name from their earliest offset, as `KafkaOffsetGen` reads them (`getOrDefault(tp, 0L)`). None
    otherwise (the query starts at latest)."""
    from ingest.spark.kafka_source import subscribed_partitions

    kafka = config.source.kafka
    checkpoint = config.stream.checkpoint
    if found is None or found.checkpoint is None or kafka is None or kafka.starting_offsets is not None:
        return None
    if checkpoint is None or has_offsets(spark, checkpoint):
        return None
    position = found.checkpoint
    try:
        subscribed = subscribed_partitions(kafka.spark_options())
    except Exception as e:  # noqa: BLE001 - any client failure: say what to set instead
        detail = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConfigError(
            f"a new query over {config.table.path} would start where the table's streamer checkpoint of instant "
            f"{found.instant} says ({position.text()}), but the topic's partitions could not be listed ({detail}); "
            "set source.kafka.starting_offsets to where it should start", source=config.origin,
            key="source.kafka.starting_offsets") from None
    partitions = [p for t, p in subscribed if t == position.topic]
    offsets = {str(p): position.offsets.get(p, -2) for p in sorted(partitions)}
    log.info("a new query over %s: starting where the checkpoint of instant %s says (%s), as Hudi's streamer would "
             "resume", config.table.path, found.instant, position.text())
    return json.dumps({position.topic: offsets}, separators=(",", ":"))
