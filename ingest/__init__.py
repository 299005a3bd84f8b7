"""ingest: stream Kafka and batch data into Apache Hudi Merge-On-Read tables from PySpark."""

__version__ = "0.1.0"
