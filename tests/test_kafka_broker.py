"""The embedded Kafka broker: topics with exact partition counts, and a real wire-protocol round trip."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer
from kafka_fixtures import broker, consume_all, topic_name  # noqa: F401  (broker is a fixture)

from ingest.kafka import broker as broker_module
from ingest.kafka.broker import MOCK_API_VERSION, BrokerError, EmbeddedKafka, Message


def test_topic_has_exactly_the_requested_partitions(broker):  # noqa: F811
    topic = topic_name()
    broker.create_topic(topic, 3)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, api_version=MOCK_API_VERSION)
    try:
        assert consumer.partitions_for_topic(topic) == {0, 1, 2}
    finally:
        consumer.close()
    assert broker.bootstrap_servers.count(",") == 2  # three brokers


def test_round_trip_keeps_keys_values_headers_and_partitions(broker):  # noqa: F811
    topic = topic_name()
    broker.create_topic(topic, 3)
    sent = [
        Message(b"v0", key=b"k0", partition=0, headers=[("source", b"test"), ("empty", None)]),
        Message(b"v1", key=b"k1", partition=1),
        Message(b"v2", key=None, partition=2, timestamp_ms=1_700_000_000_000),
        Message(b"v3", key=b"k3", partition=0),
    ]
    assert broker.produce(topic, sent) == 4
    got = consume_all(broker.bootstrap_servers, topic, 3)
    assert [(r.offset, r.key, r.value) for r in got[0]] == [(0, b"k0", b"v0"), (1, b"k3", b"v3")]
    assert [(r.key, r.value) for r in got[1]] == [(b"k1", b"v1")]
    assert [(r.key, r.value, r.timestamp) for r in got[2]] == [(None, b"v2", 1_700_000_000_000)]
    assert got[0][0].headers == [("source", b"test"), ("empty", None)]


def test_tombstones_and_keyed_partitioning(broker):  # noqa: F811
    topic = topic_name()
    broker.create_topic(topic, 3)
    broker.produce(topic, [(b"same-key", b"first"), (b"same-key", None), (b"same-key", b"third")])
    got = consume_all(broker.bootstrap_servers, topic, 3)
    used = [p for p, records in got.items() if records]
    assert len(used) == 1, "one key must always land in the same partition"
    assert [r.value for r in got[used[0]]] == [b"first", None, b"third"]


def test_topic_errors_are_clear(broker):  # noqa: F811
    topic = topic_name()
    broker.create_topic(topic, 2)
    with pytest.raises(BrokerError, match="already exists"):
        broker.create_topic(topic, 2)
    broker.create_topic(topic, 2, exist_ok=True)
    with pytest.raises(BrokerError, match="at least one partition"):
        broker.create_topic(topic_name(), 0)
    with pytest.raises(BrokerError, match="does not exist"):
        broker.produce(topic_name("missing"), [(b"k", b"v")])


def test_retention_and_topic_deletion(broker):  # noqa: F811
    topic = topic_name()
    broker.create_topic(topic, 1)
    broker.produce(topic, [Message(f"v{i}".encode(), partition=0) for i in range(5)])
    broker.delete_records(topic, 0, 3)
    assert [r.offset for r in consume_all(broker.bootstrap_servers, topic, 1)[0]] == [3, 4]
    broker.delete_topic(topic)
    with pytest.raises(BrokerError, match="cannot delete topic"):
        broker.delete_topic(topic)


def test_close_is_idempotent_and_final():
    cluster = EmbeddedKafka(brokers=1)
    cluster.create_topic("t", 1)
    cluster.produce("t", [(b"k", b"v")])
    cluster.close()
    cluster.close()
    assert "closed" in repr(cluster)
    with pytest.raises(BrokerError, match="closed"):
        cluster.create_topic("u", 1)


def test_missing_library_is_reported(monkeypatch):
    monkeypatch.setattr(broker_module.glob, "glob", lambda pattern: [])
    with pytest.raises(BrokerError, match="librdkafka not found"):
        EmbeddedKafka()
