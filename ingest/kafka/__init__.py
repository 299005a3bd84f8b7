"""Kafka: decoding messages, and the embedded Kafka-protocol broker used by `ingest demo` and tests."""
