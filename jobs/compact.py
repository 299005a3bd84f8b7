"""spark-submit entry point: compact a table, the operations running on executors.

    spark-submit jobs/compact.py s3://bucket/table [--schedule-only | --execute INSTANT]
                                 [--set hudi.hoodie.compaction.strategy=LogFileNumBasedCompactionStrategy]

The command line is `ingest compact`'s (`--path PATH` and bare `hoodie.*` keys are accepted too).

Without `--execute`, a compaction of every slice with log files is scheduled under the writer lease
(skipped, with a note, while a writer holds it: that writer schedules inline) and every pending
compaction is executed, oldest first. The driver writes plans and commits; executors write base files.
"""

from __future__ import annotations

import argparse
import logging
import sys

from ingest import services
from ingest.commands.args import add_path, add_set, hudi_sets, resolve_targets
from ingest.errors import IngestError
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.process_exit import leave
from ingest.spark.compaction import SparkCompactionRunner
from ingest.spark.session import get_or_create


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compact", description=__doc__.split("\n\n")[0])
    add_path(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--schedule-only", action="store_true")
    mode.add_argument("--execute", metavar="INSTANT")
    add_set(parser, "hudi.hoodie.compaction.strategy=LogFileNumBasedCompactionStrategy")
    parser.add_argument("--local-below-mb", type=float, default=256.0,
                        help="plans with less estimated IO run in the driver (default 256)")
    args = parser.parse_args(argv)
    resolve_targets(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = ServiceSettings.from_mapping(hudi_sets(args.overrides), source="--set")
        table = services.open_table(args.path)  # fail on a missing table before starting Spark
        spark = get_or_create(app_name="ingest-compact")
        runner = SparkCompactionRunner(spark, args.local_below_mb)
        result = services.compact(table, settings, instant=args.execute, execute=not args.schedule_only,
                                  runner=runner)
    except IngestError as e:
        print(f"compact: error: {e}", file=sys.stderr)
        return 1
    if result.note:
        print(result.note, file=sys.stderr)
    print(f"scheduled: {result.scheduled or '-'}; executed: {', '.join(result.executed) or '-'}")
    return 0


if __name__ == "__main__":
    leave(main())
