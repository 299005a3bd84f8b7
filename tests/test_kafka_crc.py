"""The Python Kafka source checks every record batch's CRC-32C, and computes it natively."""

from __future__ import annotations

import json

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka_fixtures import broker, topic_name  # noqa: F401  (broker is a fixture)

from ingest.kafka.broker import Message
from ingest.spark.kafka_source import (
    PartitionRange,
    _arrow_schema,
    kafka_schema,
    native_crc32c,
    parse_options,
    read_range,
)


def _batch(value: bytes) -> bytearray:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_000, key=b"k", value=value, headers=[])
    return builder.build()


def test_reads_check_record_batch_crcs_in_c(broker):  # noqa: F811
    """Hudi's JsonKafkaSource.toRDD reads through KafkaUtils.createRDD with
    KafkaOffsetGen.getKafkaParams(), the user's properties (`excludeHoodieConfigs(props)` in the
    KafkaOffsetGen constructor), so Kafka's consumer default `check.crcs=true` holds: every record
    batch's CRC-32C is verified. The Python source keeps that check (kafka-python's `check_crcs`,
    never turned off) and computes it with the `crc32c` extension, which is most of a read's time in
    pure Python. The records read are those produced, and a batch with one bit changed fails the check."""
    topic = topic_name("crc")
    broker.create_topic(topic, 1)
    values = [json.dumps({"i": i, "pad": "x" * (i % 40)}).encode() for i in range(300)]
    broker.produce(topic, [Message(key=str(i).encode(), value=v, partition=0) for i, v in enumerate(values)])
    options = parse_options({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic,
                             "kafka.api.version": "2.3"})
    assert options.client.get("check_crcs", True) is True
    assert native_crc32c(), "kafka-python has no C CRC-32C: install kafka-python[crc32c]"

    batches = list(read_range(options, PartitionRange(topic, 0, 0, len(values)), _arrow_schema(kafka_schema())))
    assert [v for b in batches for v in b.column("value").to_pylist()] == values
    assert [o for b in batches for o in b.column("offset").to_pylist()] == list(range(len(values)))

    batch = _batch(values[0])
    assert DefaultRecordBatch(bytes(batch)).validate_crc()
    batch[-3] ^= 0x01  # a bit of the value
    assert not DefaultRecordBatch(bytes(batch)).validate_crc()
