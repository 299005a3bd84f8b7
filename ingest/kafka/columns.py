"""The columns of a decoded Kafka batch: what the source hands in, what records and error rows carry."""

from __future__ import annotations

import pyarrow as pa

FORMATS = ("json", "avro", "confluent-avro")
KEY_SOURCES = ("value", "kafka_key")
KEY_FORMATS = ("string", "json")

TOPIC = "_kafka_topic"
PARTITION = "_kafka_partition"
OFFSET = "_kafka_offset"
TIMESTAMP = "_kafka_timestamp"
IS_TOMBSTONE = "_ingest_is_tombstone"
# Hudi's delete marker, and where a JSON message's marker goes when the schema does not declare it.
HOODIE_IS_DELETED = "_hoodie_is_deleted"
MARKED_DELETED = "_ingest_is_deleted"
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

META_FIELDS = pa.schema(
    [
        pa.field(TOPIC, pa.string(), nullable=False),
        pa.field(PARTITION, pa.int32(), nullable=False),
        pa.field(OFFSET, pa.int64(), nullable=False),
        pa.field(TIMESTAMP, TIMESTAMP_TYPE),
        pa.field(IS_TOMBSTONE, pa.bool_(), nullable=False),
        pa.field(MARKED_DELETED, pa.bool_(), nullable=False),
    ]
)
ERRORS_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", TIMESTAMP_TYPE),
        pa.field("error", pa.string(), nullable=False),
        pa.field("error_seen_at", TIMESTAMP_TYPE, nullable=False),
    ]
)
INPUT_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")

CONFLUENT_MAGIC = 0
CONFLUENT_HEADER = 5
