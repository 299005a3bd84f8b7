"""Kafka test helpers: an embedded broker per test module, unique topics, a kafka-python reader."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, TopicPartition

from ingest.kafka.broker import MOCK_API_VERSION, EmbeddedKafka


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedKafka]:
    """A 3-broker embedded cluster shared by a test module (topics keep tests apart)."""
    with EmbeddedKafka(brokers=3) as cluster:
        yield cluster


def topic_name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def consume_all(bootstrap_servers: str, topic: str, partitions: int) -> dict[int, list]:
    """Every record of `topic`, by partition, read with kafka-python up to the current end offsets."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, api_version=MOCK_API_VERSION, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = consumer.end_offsets(tps)
        consumer.assign(tps)
        consumer.seek_to_beginning()
        out: dict[int, list] = {p: [] for p in range(partitions)}
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for tp, records in consumer.poll(timeout_ms=1000).items():
                out[tp.partition].extend(records)
        return out
    finally:
        consumer.close(autocommit=False)
