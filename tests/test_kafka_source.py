"""The Kafka source: option mapping, batch planning, and real streams against the embedded broker."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer, TopicPartition
from kafka_fixtures import broker, topic_name  # noqa: F401  (broker is a fixture)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from ingest.errors import ConfigError
from ingest.kafka.broker import MOCK_API_VERSION, Message
from ingest.spark import kafka_source
from ingest.spark.kafka_source import (
    KafkaStreamReader,
    PartitionRange,
    builtin_kafka_available,
    builtin_options,
    consumer_config,
    kafka_lag,
    kafka_schema,
    kafka_stream,
    parse_options,
    spread_limit,
)

# -- options ------------------------------------------------------------------------------------


def test_client_options_map_to_kafka_python():
    config = consumer_config(
        {
            "kafka.bootstrap.servers": "b1:9092,b2:9092",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="alice" password="s\\"cret";',
            "kafka.ssl.truststore.location": "/etc/ca.pem",
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.endpoint.identification.algorithm": "",
            "kafka.request.timeout.ms": "40000",
            "kafka.check.crcs": "false",
            "kafka.isolation.level": "read_committed",
            "kafka.api.version": "2.3",
            "subscribe": "ignored-here",
        }
    )
    assert config == {
        "bootstrap_servers": "b1:9092,b2:9092",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": 's"cret',
        "ssl_cafile": "/etc/ca.pem",
        "ssl_check_hostname": False,
        "request_timeout_ms": 40000,
        "check_crcs": False,
        "isolation_level": "read_committed",
        "api_version": (2, 3),
    }
    simple = consumer_config(
        {"kafka.bootstrap.servers": "b:1", "kafka.sasl.plain.username": "u", "kafka.sasl.plain.password": "p"}
    )
    assert (simple["sasl_plain_username"], simple["sasl_plain_password"]) == ("u", "p")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "kafka.bootstrap.servers: is required"),
        ({"kafka.ssl.truststore.location": "/x.jks"}, "kafka-python reads PEM files"),
        ({"kafka.auto.offset.reset": "earliest"}, "startingOffsets"),
        ({"kafka.no.such.setting": "1"}, "kafka.no.such.setting: has no kafka-python equivalent"),
        ({"kafka.request.timeout.ms": "soon"}, "must be an integer"),
        ({"kafka.api.version": "two"}, "kafka.api.version"),
        ({"kafka.sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"}, "GSSAPI"),
    ],
)
def test_bad_client_options_are_named(options, message):
    base = {"kafka.bootstrap.servers": "b:1"} if options else {}
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        consumer_config({**base, **options})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "exactly one of subscribe"),
        ({"subscribe": "a", "subscribePattern": "b.*"}, "exactly one of subscribe"),
        ({"subscribePattern": "("}, "not a valid regular expression"),
        ({"subscribe": "a", "startingOffsets": "yesterday"}, "startingOffsets"),
        ({"subscribe": "a", "startingOffsets": '{"a": {"0": -3}}'}, "offsets are >= 0"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "0"}, "positive integer"),
        ({"subscribe": "a", "failOnDataLoss": "maybe"}, "true or false"),
        ({"subscribe": "a", "endingOffsets": "latest"}, "AvailableNow"),
        ({"subscribe": "a", "startingoffset": "earliest"}, "not an option of the Kafka source"),
    ],
)
def test_bad_source_options_are_named(options, message):
    with pytest.raises(ConfigError, match=message):
        parse_options({"kafka.bootstrap.servers": "b:1", **options})


def test_builtin_connector_gets_a_jaas_line_and_no_api_version():
    out = builtin_options(
        {
            "kafka.bootstrap.servers": "b:1",
            "kafka.api.version": "2.3",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.plain.username": "u",
            "kafka.sasl.plain.password": 'p"w',
            "subscribe": "t",
        }
    )
    assert out == {
        "kafka.bootstrap.servers": "b:1",
        "kafka.sasl.mechanism": "PLAIN",
        "subscribe": "t",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="u" password="p\\"w";',
    }


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(1, 500),
    available=st.dictionaries(st.tuples(st.sampled_from("ab"), st.integers(0, 5)), st.integers(0, 200), max_size=8),
)
def test_spread_limit_is_exact_and_fair(limit, available):
    granted = spread_limit(limit, available)
    assert sum(granted.values()) == min(limit, sum(available.values()))
    assert all(0 <= granted[tp] <= available[tp] for tp in available)
    # Max-min fairness: a partition only gets more than another if that other one is exhausted.
    for n in granted.values():
        for other, m in granted.items():
            if n > m + 1:
                assert m == available[other]


# -- choosing the implementation ------------------------------------------------------------------


def test_builtin_connector_is_used_only_when_its_class_is_present(spark, broker, monkeypatch):  # noqa: F811
    assert builtin_kafka_available(spark) is False  # no spark-sql-kafka jar in this environment
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": "t", "kafka.api.version": "2.3"}
    plan = kafka_stream(spark, options)._jdf.queryExecution().analyzed().toString()
    assert kafka_source.SOURCE_NAME in plan
    # A class that is on the classpath makes the detection say yes, and then Spark's format is used.
    monkeypatch.setattr(kafka_source, "KAFKA_PROVIDER_CLASS", "org.apache.spark.sql.SparkSession")
    assert builtin_kafka_available(spark) is True
    with pytest.raises(Exception, match="KAFKA_DATA_SOURCE_NOT_ENABLED"):
        kafka_stream(spark, options)  # Spark's own `kafka` format, whose jar is missing here


# -- the driver's planning, without Spark ----------------------------------------------------------


def test_available_now_never_passes_the_end_fixed_at_start(broker):  # noqa: F811
    topic = topic_name("target")
    broker.create_topic(topic, 2)
    _produce_round_robin(broker, topic, 2, 0, 4)
    reader = KafkaStreamReader(parse_options(_options(broker, subscribe=topic)), kafka_schema())
    try:
        reader.prepareForTriggerAvailableNow()
        _produce_round_robin(broker, topic, 2, 4, 4)  # arrives after the run began
        start = reader.initialOffset()  # startingOffsets=latest, resolved after the new records
        assert start == {topic: {"0": 4, "1": 4}}
        # Nothing to read up to the fixed end, and no false alarm about offsets going back.
        assert reader.latestOffset(start, ReadAllAvailable()) == start
        assert reader.partitions(start, start) == []
    finally:
        reader.stop()

    reader = KafkaStreamReader(parse_options(_options(broker, subscribe=topic, startingOffsets="earliest")), kafka_schema())
    try:
        reader.prepareForTriggerAvailableNow()
        start = reader.initialOffset()
        end = reader.latestOffset(start, ReadMaxRows(3))
        assert end == {topic: {"0": 2, "1": 1}}
        assert reader.partitions(start, end) == [PartitionRange(topic, 0, 0, 2), PartitionRange(topic, 1, 0, 1)]
        assert reader.latestOffset(end, ReadAllAvailable()) == {topic: {"0": 4, "1": 4}}
    finally:
        reader.stop()


# -- streaming against the broker ---------------------------------------------------------------


class Collector:
    """A foreachBatch sink that keeps (batch id, rows) in memory."""

    def __init__(self):
        self.batches: list[tuple[int, list]] = []
        self.lock = threading.Lock()

    def __call__(self, df, batch_id):
        rows = [r.asDict() for r in df.collect()]
        with self.lock:
            self.batches.append((batch_id, rows))

    @property
    def rows(self) -> list[dict]:
        return [r for _, rows in self.batches for r in rows]

    def offsets(self) -> list[tuple]:
        return sorted((r["topic"], r["partition"], r["offset"]) for r in self.rows)


def _options(broker, **extra) -> dict[str, str]:  # noqa: F811
    return {"kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.api.version": "2.3", **extra}


def _run_available_now(spark, options, checkpoint, sink):
    query = (
        kafka_stream(spark, options)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return query


def _produce_round_robin(broker, topic, partitions, start, count):  # noqa: F811
    broker.produce(
        topic,
        [
            Message(f"v{i}".encode(), key=f"k{i}".encode(), partition=i % partitions, headers=[("n", str(i).encode())])
            for i in range(start, start + count)
        ],
    )


def test_batches_respect_max_offsets_and_a_restart_continues_where_it_stopped(spark, broker, tmp_path):  # noqa: F811
    topic = topic_name("orders")
    broker.create_topic(topic, 3)
    _produce_round_robin(broker, topic, 3, 0, 30)
    group = topic_name("group")
    options = _options(
        broker,
        subscribe=topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger="12",
        includeHeaders="true",
        **{"kafka.group.id": group},
    )
    first = Collector()
    query = _run_available_now(spark, options, tmp_path / "cp", first)
    assert [len(rows) for _, rows in first.batches] == [12, 12, 6]
    assert first.offsets() == [(topic, p, o) for p in range(3) for o in range(10)]
    by_offset = {(r["partition"], r["offset"]): r for r in first.rows}
    sample = by_offset[(1, 0)]
    assert (sample["key"], sample["value"]) == (b"k1", b"v1")
    assert [h.asDict() for h in sample["headers"]] == [{"key": "n", "value": b"1"}]
    assert sample["timestampType"] == 0 and sample["timestamp"] is not None
    end = query.lastProgress["sources"][0]["endOffset"]
    assert kafka_lag(options, end) and all(lag.lag == 0 for lag in kafka_lag(options, end))

    _produce_round_robin(broker, topic, 3, 30, 9)
    assert sorted((lag.partition, lag.lag) for lag in kafka_lag(options, end)) == [(0, 3), (1, 3), (2, 3)]
    second = Collector()
    _run_available_now(spark, options, tmp_path / "cp", second)
    assert second.offsets() == [(topic, p, o) for p in range(3) for o in range(10, 13)]
    assert {r["value"] for r in second.rows} == {f"v{i}".encode() for i in range(30, 39)}

    # The group sees the committed progress (lag monitoring), though the checkpoint drives the stream.
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, api_version=MOCK_API_VERSION, group_id=group, enable_auto_commit=False
    )
    try:
        committed = [consumer.committed(TopicPartition(topic, p)) for p in range(3)]
    finally:
        consumer.close(autocommit=False)
    assert all(c is not None and c >= 10 for c in committed)


def test_starting_offsets_json_earliest_latest_and_assign(spark, broker, tmp_path):  # noqa: F811
    topic = topic_name("start")
    broker.create_topic(topic, 3)
    _produce_round_robin(broker, topic, 3, 0, 9)  # offsets 0..2 in each partition
    json_offsets = f'{{"{topic}": {{"0": 1, "1": -2, "2": -1}}}}'
    sink = Collector()
    _run_available_now(spark, _options(broker, subscribe=topic, startingOffsets=json_offsets), tmp_path / "a", sink)
    assert sink.offsets() == [(topic, 0, 1), (topic, 0, 2), (topic, 1, 0), (topic, 1, 1), (topic, 1, 2)]

    sink = Collector()
    assign = f'{{"{topic}": [0, 2]}}'
    _run_available_now(spark, _options(broker, assign=assign, startingOffsets="earliest"), tmp_path / "b", sink)
    assert sink.offsets() == [(topic, p, o) for p in (0, 2) for o in range(3)]

    latest = Collector()
    query = (
        kafka_stream(spark, _options(broker, subscribe=topic, startingOffsets="latest"))
        .writeStream.foreachBatch(latest)
        .option("checkpointLocation", str(tmp_path / "c"))
        .start()
    )
    try:
        query.processAllAvailable()
        assert latest.rows == []
        _produce_round_robin(broker, topic, 3, 9, 3)
        query.processAllAvailable()
    finally:
        query.stop()
    assert latest.offsets() == [(topic, p, 3) for p in range(3)]


def test_subscribe_pattern_picks_up_topics_created_later(spark, broker, tmp_path):  # noqa: F811
    prefix = topic_name("pat")
    first, second = f"{prefix}-a", f"{prefix}-b"
    broker.create_topic(first, 2)
    _produce_round_robin(broker, first, 2, 0, 4)
    sink = Collector()
    options = _options(broker, subscribePattern=f"{prefix}-.*", startingOffsets="earliest")
    query = (
        kafka_stream(spark, options)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .start()
    )
    try:
        query.processAllAvailable()
        assert {r["topic"] for r in sink.rows} == {first}
        broker.create_topic(second, 3)
        _produce_round_robin(broker, second, 3, 0, 6)
        query.processAllAvailable()
    finally:
        query.stop()
    assert sink.offsets() == sorted(
        [(first, p, o) for p in range(2) for o in range(2)] + [(second, p, o) for p in range(3) for o in range(2)]
    )


def test_fail_on_data_loss(spark, broker, tmp_path):  # noqa: F811
    topic = topic_name("loss")
    broker.create_topic(topic, 1)
    broker.produce(topic, [Message(f"v{i}".encode(), partition=0) for i in range(5)])
    broker.delete_records(topic, 0, 3)  # retention removed offsets 0..2 before anyone read them
    options = _options(broker, subscribe=topic, startingOffsets=f'{{"{topic}": {{"0": 0}}}}')

    with pytest.raises(Exception, match="were deleted before they were read"):
        _run_available_now(spark, options, tmp_path / "strict", Collector())

    sink = Collector()
    _run_available_now(spark, {**options, "failOnDataLoss": "false"}, tmp_path / "lenient", sink)
    assert sink.offsets() == [(topic, 0, 3), (topic, 0, 4)]


# -- failures as one line naming our settings ---------------------------------------------------


def test_data_loss_names_the_pipeline_setting(broker):  # noqa: F811
    """Kafka's rule, not Hudi's (Spark's KafkaMicroBatchStream.reportDataLoss): the message names the
    key a pipeline sets, source.kafka.fail_on_data_loss, not only Spark's option."""
    topic = topic_name("lost")
    broker.create_topic(topic, 1)
    broker.produce(topic, [Message(f"v{i}".encode(), partition=0) for i in range(4)])
    broker.delete_records(topic, 0, 2)
    reader = KafkaStreamReader(parse_options(_options(broker, subscribe=topic)), kafka_schema())
    try:
        with pytest.raises(kafka_source.KafkaDataLossError) as raised:
            reader.partitions({topic: {"0": 0}}, {topic: {"0": 4}})
    finally:
        reader.stop()
    assert "offsets 0..1 were deleted before they were read" in str(raised.value)
    assert "Set source.kafka.fail_on_data_loss: false" in str(raised.value)


def test_a_broker_that_needs_api_version_fails_in_one_line_naming_the_setting(spark, broker, caplog):  # noqa: F811
    """kafka-python's version probe does not recognise librdkafka's mock cluster; the bootstrap
    failure is one line naming the servers, the time waited, the client's last complaint and
    source.kafka.options.api.version, raised before Spark starts a query, without the client's
    retry warnings (a few lines a second) in the log."""
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.bootstrap.timeout.ms": "1500",
               "subscribe": "any"}
    with pytest.raises(kafka_source.KafkaUnreachableError) as raised:
        kafka_stream(spark, options, implementation="python")
    message = str(raised.value)
    assert "\n" not in message and raised.value.__cause__ is None
    assert f"Kafka bootstrap from {broker.bootstrap_servers} failed after 1." in message
    assert "; last: Bootstrap connection to bootstrap-" in message
    assert "source.kafka.options.api.version, e.g. 2.3" in message
    assert not [r for r in caplog.records if r.name.startswith("kafka")]
    assert spark.streams.active == []


def test_given_api_version_an_unreachable_broker_fails_in_one_line_after_the_bootstrap_timeout(spark, caplog):
    """Given api.version, kafka-python 3's constructor connects to nothing and its metadata calls wait
    without a bound: the source waits for the brokers' first metadata itself, so a broker that never
    answers is one line after kafka.bootstrap.timeout.ms, not a stream retrying without end."""
    options = {"kafka.bootstrap.servers": "127.0.0.1:1", "kafka.api.version": "2.3",  # port 1: nothing listens
               "kafka.bootstrap.timeout.ms": "1500", "subscribe": "any"}
    began = time.monotonic()
    with pytest.raises(kafka_source.KafkaUnreachableError) as raised:
        kafka_stream(spark, options, implementation="python")
    assert time.monotonic() - began < 15
    message = str(raised.value)
    assert "\n" not in message and raised.value.__cause__ is None
    assert "Kafka bootstrap from 127.0.0.1:1 failed after 1." in message
    assert "no metadata from the brokers in 1." in message
    assert spark.streams.active == []


def test_given_api_version_a_reachable_broker_leaves_no_client_errors_in_the_log(spark, broker, caplog):  # noqa: F811
    """The source reaches the brokers before Spark starts a query; closing that check's consumer while
    it still connected (kafka-python 3 connects after its constructor returns, given api.version)
    logged the aborted connection as an error with its trace at every stream's start."""
    topic = topic_name("boot")
    broker.create_topic(topic, 1)
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.api.version": "2.3", "subscribe": topic}
    with caplog.at_level(logging.WARNING, logger="kafka"):
        kafka_stream(spark, options, implementation="python")
        time.sleep(1.0)  # the client's IO thread logs an aborted connection after close returns
    assert [r.getMessage() for r in caplog.records if r.name.startswith("kafka")] == []
