"""Hudi's streamer checkpoint in commit metadata, as `StreamSync` reads and writes it (no Spark here; the
hand-over itself, through a Kafka broker, is in test_jobs.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from ingest.hudi.table.table import HudiTable
from ingest.pipeline.checkpoint import StreamerCheckpoint, latest_streamer_checkpoint
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

HUDI = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts"}
V1 = ("deltastreamer.checkpoint.key", "deltastreamer.checkpoint.reset_key")
V2 = ("streamer.checkpoint.key.v2", "streamer.checkpoint.reset.key.v2")


def test_kafka_checkpoints_read_and_print_as_kafka_offset_gen_does():
    """`KafkaOffsetGen.CheckpointUtils`: `strToOffsets` splits the topic, then `partition:offset` pairs;
    `offsetsToStr` prints them by partition. Spark's offset log of one topic turns into the same (both
    hold each partition's next offset); another source's checkpoint, or several topics, into none."""
    parsed = StreamerCheckpoint.parse("orders,1:7,0:5")
    assert (parsed.topic, parsed.offsets, parsed.text()) == ("orders", {0: 5, 1: 7}, "orders,0:5,1:7")
    assert StreamerCheckpoint.parse("s3://bucket/events/2024-01-01") is None
    assert StreamerCheckpoint.parse("20240101000000000") is None
    assert StreamerCheckpoint.from_offset_log('{"orders":{"1":7,"0":5}}').text() == "orders,0:5,1:7"
    assert StreamerCheckpoint.from_offset_log('{"a":{"0":1},"b":{"0":2}}') is None
    assert StreamerCheckpoint.from_offset_log(None) is None


@pytest.mark.parametrize("version", [6, 8])
def test_the_checkpoint_hudis_streamer_resumes_from(tmp_path, version):
    """`getLatestInstantAndCommitMetadataWithValidCheckpointInfo`: the newest completed delta commit
    carrying any checkpoint or reset key; `CheckpointUtils.getCheckpoint`: from 1.x the V2 pair when either
    of its keys is set, else the V1 pair (0.14/0.15 know V1 only), never a key of each."""
    options = WriteOptions(str(tmp_path / "t"), "t", hudi={**HUDI, "hoodie.write.table.version": str(version)},
                           index=IndexOptions(type=IndexType.BUCKET, bucket_count=1))
    writer = LocalWriter(options)

    def write(extra: dict) -> str:
        data = pa.table({"id": ["a"], "part": ["p"], "ts": pa.array([1], pa.int64())})
        return writer.write(data, extra_metadata=extra).instant

    first = write({V1[0]: "orders,0:5", V1[1]: "from-the-start"})
    write({})  # a commit by a writer that keeps no streamer checkpoint
    found = latest_streamer_checkpoint(HudiTable.open(options.table_path))
    assert (found.instant, found.checkpoint.text(), found.reset) == (first, "orders,0:5", "from-the-start")
    if version == 8:
        second = write({V2[0]: "orders,0:9", V1[1]: "a V1 reset beside a V2 checkpoint"})
        found = latest_streamer_checkpoint(HudiTable.open(options.table_path))
        assert (found.instant, found.checkpoint.text(), found.reset) == (second, "orders,0:9", None)
    only_reset = write({V2[1] if version == 8 else V1[1]: "orders,0:0"})
    found = latest_streamer_checkpoint(HudiTable.open(options.table_path))
    assert (found.instant, found.checkpoint, found.reset) == (only_reset, None, "orders,0:0")
