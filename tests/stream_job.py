"""A streaming job for tests that must run Spark in their own process (crashes, local-cluster).

Streams JSON files from a folder, one file per micro-batch, through `HudiSink` on a checkpoint,
until the folder is drained (`Trigger.AvailableNow`). `INGEST_CRASH_AT` kills it at a crash point.

    python tests/stream_job.py SOURCE CHECKPOINT TABLE [--master M] [--index bucket|key] [--insert-mode log|base] [--parallelism N]
        [--checkpoint-id ID] [--lock-wait SECONDS] [--hudi KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import sys

SCHEMA = "id STRING, part STRING, ts LONG, v STRING, _hoodie_is_deleted BOOLEAN"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("checkpoint")
    parser.add_argument("table")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--index", default="bucket")
    parser.add_argument("--insert-mode", default=None, help="default: log for bucket, base for key (as Hudi)")
    parser.add_argument("--parallelism", type=int, default=None, help="write tasks for every batch")
    parser.add_argument("--checkpoint-id", default="test-stream")
    parser.add_argument("--lock-wait", type=float, default=0.0, help="seconds a commit waits for another writer's")
    parser.add_argument("--hudi", action="append", default=[], help="another Hudi setting, KEY=VALUE")
    parser.add_argument("--heartbeat-ms", type=int, default=60_000, help="hoodie.client.heartbeat.interval_in_ms")
    args = parser.parse_args(argv)

    from ingest.hudi.timeline.heartbeat import HeartbeatSettings
    from ingest.spark.session import get_or_create
    from ingest.spark.sink import HudiSink
    from ingest.write.file_group_writer import InsertMode
    from ingest.write.options import IndexOptions, IndexType, WriteOptions

    spark = get_or_create(master=args.master, app_name="ingest-test-stream",
                          conf={"spark.sql.shuffle.partitions": "2"})
    options = WriteOptions(
        table_path=args.table,
        table_name="events",
        hudi={
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts",
            **dict(setting.split("=", 1) for setting in args.hudi),
        },
        index=IndexOptions(type=IndexType(args.index), bucket_count=2, shards=2),
        insert_mode=InsertMode(args.insert_mode) if args.insert_mode else None,
        checkpoint_id=args.checkpoint_id,
        lock_expiry_seconds=2.0,
        lock_wait_seconds=args.lock_wait,
        heartbeat=HeartbeatSettings(args.heartbeat_ms),
    )
    sink = HudiSink(options, spark=spark, parallelism=args.parallelism)
    stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(args.source))
    query = (stream.writeStream.foreachBatch(sink).option("checkpointLocation", args.checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    sink.close()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
