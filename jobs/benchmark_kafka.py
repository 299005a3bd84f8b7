"""Benchmark of the Kafka path (`jobs/benchmark.py --kafka`): a topic on the embedded broker, read
every way ingest could read it, in one process.

The benchmark's events (`benchmark.events`: 12 columns) are produced as JSON objects keyed by
`order_id` to a topic of `--kafka-partitions` partitions (more if the mock cluster could not hold
them all) on `ingest.kafka.broker.EmbeddedKafka` (librdkafka's mock cluster). Then, after a warm-up
stream of a small topic:

* the stream end to end: `ingest stream --config FILE --available-now` (the command's own entry
  point, in this process, so it runs in the benchmark's Spark session) into a fresh table, with a
  configuration file written here; one batch unless `--kafka-batch-rows` caps it;
* the raw consume rate of the topic by one kafka-python consumer (`api_version=(2, 3)`, as the mock
  cluster needs) and by one confluent-kafka consumer (librdkafka: the client's limit);
* the parts of the stream, each alone in this process: the source's executor read
  (`kafka_source.read_range`, every partition in turn) and the decoder (`decode_batch`) on what it
  read;
* the sink alone: `HudiSink` with the stream's own write options on a cached DataFrame of the
  decoded records, into another fresh table.

The stream runs on `local[2]`: two partitions are read at once, where the raw consumers read with one
thread. Rates are rows per second of wall-clock time.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import yaml
from benchmark import events, timed

KEY = "order_id"
SCHEMA = (
    "order_id STRING NOT NULL, region STRING NOT NULL, updated_at BIGINT NOT NULL, customer STRING, sku STRING, "
    "quantity BIGINT, store_id BIGINT, price DOUBLE, discount DOUBLE, ordered_at TIMESTAMP, amount DECIMAL(12,2), "
    "meta STRUCT<channel: STRING, priority: BIGINT>"
)
WARM_UP_ROWS = 2_000
POLL_RECORDS = 10_000
# librdkafka's mock cluster keeps the newest 5 MiB of each partition and drops older message sets
# (rd_kafka_mock_partition_init: max_size), so a topic gets partitions enough to hold it all, with room.
PARTITION_BUDGET = 4 * 1024 * 1024
RECORD_OVERHEAD = 24  # bytes a record takes in a batch besides its key and value (varints, header)


def _json_value(value):
    """JSON as a producer would ship the benchmark's types: ISO-8601 times, exact decimals as strings."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"no JSON for {type(value).__name__}")


def produce_events(spark, broker, topic: str, rows: int, args) -> tuple[float, int]:
    """`rows` events to a new topic as JSON values keyed by order id; returns the seconds producing
    took and the topic's partitions: `--kafka-partitions`, or more when the messages would not fit."""
    from ingest.kafka.broker import Message

    table = events(spark, rows, partitions=args.partitions).toArrow()
    messages = [
        Message(key=row[KEY].encode(), value=json.dumps(row, default=_json_value).encode())
        for row in table.to_pylist()
    ]
    size = sum(len(m.key) + len(m.value) + RECORD_OVERHEAD for m in messages)
    partitions = max(args.kafka_partitions, -(-size // PARTITION_BUDGET))
    broker.create_topic(topic, partitions)
    seconds, _ = timed(lambda: broker.produce(topic, messages))
    return seconds, partitions


def write_config(folder: Path, bootstrap: str, topic: str, args) -> Path:
    """The pipeline configuration `ingest stream` runs with: the benchmark table's settings."""
    kafka = {"bootstrap_servers": bootstrap, "topics": [topic], "starting_offsets": "earliest",
             "implementation": "python", "options": {"api.version": "2.3"}}
    if args.kafka_batch_rows:
        kafka["max_offsets_per_trigger"] = args.kafka_batch_rows
    config = {
        "table": {"path": str(folder / "table"), "name": "orders"},
        "hudi": {
            "hoodie.datasource.write.recordkey.field": KEY,
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "updated_at",
            "hoodie.index.type": "BUCKET",
            "hoodie.bucket.index.num.buckets": args.buckets,
        },
        "source": {"kafka": kafka, "format": "json", "schema": SCHEMA},
        "stream": {"checkpoint": str(folder / "checkpoint"), "on_error": "fail"},
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_stream(config: Path) -> float:
    """`ingest stream --config FILE --available-now`, timed; fails unless it exits 0."""
    from ingest import cli

    seconds, code = timed(lambda: cli.main(["stream", "--config", str(config), "--available-now"]))
    if code != 0:
        raise RuntimeError(f"ingest stream exited with {code}")
    return seconds


def consume_kafka_python(bootstrap: str, topic: str, partitions: int) -> int:
    """Every record of `topic` read by one kafka-python consumer; returns the count."""
    from kafka import KafkaConsumer, TopicPartition

    from ingest.kafka.broker import MOCK_API_VERSION

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=MOCK_API_VERSION, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = consumer.end_offsets(tps)
        consumer.assign(tps)
        consumer.seek_to_beginning()
        count = size = 0
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for records in consumer.poll(timeout_ms=1000, max_records=POLL_RECORDS).values():
                count += len(records)
                size += sum(len(r.value) for r in records)
        return count
    finally:
        consumer.close(autocommit=False)


def consume_confluent(bootstrap: str, topic: str, partitions: int, total: int) -> int:
    """`total` records of `topic` read by one confluent-kafka consumer; returns the count."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "log_level": 3})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        count = size = 0
        deadline = time.monotonic() + 600
        while count < total and time.monotonic() < deadline:
            # consume() waits until it has num_messages or the timeout passed: never ask for more than is left.
            for message in consumer.consume(num_messages=min(POLL_RECORDS, total - count), timeout=1.0):
                if message.error() is None:
                    count += 1
                    size += len(message.value())
        return count
    finally:
        consumer.close()


def read_source(bootstrap: str, topic: str, partitions: int) -> list:
    """The stream's executor read of every partition, in turn: Arrow batches of Kafka rows."""
    from kafka import KafkaConsumer, TopicPartition

    from ingest.kafka.broker import MOCK_API_VERSION
    from ingest.spark.kafka_source import PartitionRange, kafka_schema, parse_options, read_range
    from ingest.spark.kafka_source import _arrow_schema as arrow_schema

    options = parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "kafka.api.version": "2.3"})
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=MOCK_API_VERSION)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    finally:
        consumer.close()
    schema = arrow_schema(kafka_schema(False))
    batches = []
    for tp, end in sorted(ends.items()):
        batches.extend(read_range(options, PartitionRange(topic, tp.partition, 0, end), schema))
    return batches


def decode_all(batches: list, spec):
    """The decoder on every batch; returns the records (all of them must decode)."""
    import pyarrow as pa

    from ingest.kafka.decode import decode_batch

    decoded = [decode_batch(batch, spec) for batch in batches]
    bad = sum(d.errors.num_rows for d in decoded)
    if bad:
        raise RuntimeError(f"{bad} benchmark messages did not decode")
    return pa.concat_tables([d.records for d in decoded])


def sink_alone(spark, config, records, table_path: str) -> float:
    """`HudiSink`, with the stream's write options, on a cached DataFrame of `records`."""
    from dataclasses import replace

    from ingest.spark.sink import HudiSink
    from ingest.write.commit import BatchId

    df = spark.createDataFrame(records).cache()
    df.count()
    try:
        with HudiSink(replace(config.write, table_path=table_path), spark=spark,
                      on_error=config.stream.on_error.value) as sink:
            seconds, _ = timed(lambda: sink.write(df, batch=BatchId(config.write.checkpoint_id, 0)))
        return seconds
    finally:
        df.unpersist()


def table_rows(path: str) -> int:
    from ingest.hudi.table.snapshot import read_snapshot
    from ingest.hudi.table.table import HudiTable

    return read_snapshot(HudiTable.open(path)).num_rows


def measure_kafka(spark, args, work: Path) -> dict:
    """Every Kafka figure (see the module doc); the tables written must hold every row produced."""
    from ingest.config.loader import load_config
    from ingest.kafka.broker import EmbeddedKafka

    rows = args.rows
    out: dict = {"kafka_rows": rows, "kafka_batch_rows": args.kafka_batch_rows, "buckets": args.buckets,
                 "partitions": args.partitions}
    with EmbeddedKafka() as broker:
        bootstrap = broker.bootstrap_servers
        warm, topic = f"warm-{uuid.uuid4().hex[:8]}", f"orders-{uuid.uuid4().hex[:8]}"
        produce_events(spark, broker, warm, WARM_UP_ROWS, args)
        run_stream(write_config(_fresh(work / "kafka-warm"), bootstrap, warm, args))
        out["kafka_produce_s"], partitions = produce_events(spark, broker, topic, rows, args)
        out["kafka_partitions"] = partitions

        config_path = write_config(_fresh(work / "kafka-stream"), bootstrap, topic, args)
        out["kafka_stream_s"] = run_stream(config_path)
        config = load_config(str(config_path))
        stream_rows = table_rows(config.table.path)

        out["raw_kafka_python_s"], read = timed(lambda: consume_kafka_python(bootstrap, topic, partitions))
        out["raw_confluent_s"], read_confluent = timed(lambda: consume_confluent(bootstrap, topic, partitions, rows))
        out["kafka_source_read_s"], batches = timed(lambda: read_source(bootstrap, topic, partitions))
    out["kafka_decode_s"], records = timed(lambda: decode_all(batches, config.source.decoder))
    sink_path = str(work / "kafka-sink-alone")
    out["kafka_sink_alone_s"] = sink_alone(spark, config, records, sink_path)
    counts = {"stream table": stream_rows, "kafka-python": read, "confluent-kafka": read_confluent,
              "source read": sum(b.num_rows for b in batches), "decoded": records.num_rows,
              "sink-alone table": table_rows(sink_path)}
    wrong = {name: n for name, n in counts.items() if n != rows}
    if wrong:
        raise RuntimeError(f"expected {rows} rows everywhere, got {wrong}")

    for name in ("kafka_produce", "kafka_stream", "raw_kafka_python", "raw_confluent", "kafka_source_read",
                 "kafka_decode", "kafka_sink_alone"):
        out[f"{name}_rows_per_s"] = rows / out[f"{name}_s"]
    out["kafka_stream_vs_raw_kafka_python"] = out["kafka_stream_rows_per_s"] / out["raw_kafka_python_rows_per_s"]
    out["kafka_stream_vs_raw_confluent"] = out["kafka_stream_rows_per_s"] / out["raw_confluent_rows_per_s"]
    out["kafka_stream_vs_sink_alone"] = out["kafka_stream_rows_per_s"] / out["kafka_sink_alone_rows_per_s"]
    return out


def _fresh(folder: Path) -> Path:
    folder.mkdir(parents=True)
    return folder


def report_kafka(figures: dict) -> list[tuple[str, object]]:
    """The Kafka figures as (label, value) rows for `benchmark.report`'s table."""
    return [
        ("Kafka: messages (JSON, 12 columns) x topic partitions",
         f"{figures['kafka_rows']:,} x {figures['kafka_partitions']}"),
        ("Kafka: produce, confluent-kafka (rows/s)", figures["kafka_produce_rows_per_s"]),
        ("Kafka: `ingest stream --available-now` end to end (s)", figures["kafka_stream_s"]),
        ("  stream rows/s", figures["kafka_stream_rows_per_s"]),
        ("Kafka: raw consume, kafka-python, one consumer (rows/s)", figures["raw_kafka_python_rows_per_s"]),
        ("  stream rows/s / kafka-python rows/s", figures["kafka_stream_vs_raw_kafka_python"]),
        ("Kafka: raw consume, confluent-kafka, one consumer (rows/s)", figures["raw_confluent_rows_per_s"]),
        ("  stream rows/s / confluent-kafka rows/s", figures["kafka_stream_vs_raw_confluent"]),
        ("Kafka: source read alone, partitions in turn (rows/s)", figures["kafka_source_read_rows_per_s"]),
        ("Kafka: JSON decode alone (rows/s)", figures["kafka_decode_rows_per_s"]),
        ("Kafka: HudiSink alone on the decoded rows (s)", figures["kafka_sink_alone_s"]),
        ("  stream rows/s / sink-alone rows/s", figures["kafka_stream_vs_sink_alone"]),
    ]
