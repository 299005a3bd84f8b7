"""The jobs people deploy: a Kafka stream and a file backfill into a Hudi table.

`ingest.pipeline.stream.stream(config)` and `ingest.pipeline.backfill.backfill(config, input)` hold
the job logic; the `ingest stream` / `ingest backfill` / `ingest demo` commands and the spark-submit
entry points in `jobs/` are thin wrappers over them, so a pipeline behaves the same however it is
launched.
"""
