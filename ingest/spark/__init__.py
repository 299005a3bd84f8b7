"""Everything that needs a SparkSession: the foreachBatch sink, the Kafka source, session setup."""
