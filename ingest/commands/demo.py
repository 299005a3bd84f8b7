"""`ingest demo`: stream sample orders through an embedded Kafka broker into a table, and show it.

    ingest demo [--dir FOLDER] [--sync]

Needs nothing running: the broker is embedded and Spark runs locally. Prints the table and the
quarantine on stdout (progress is logged on stderr); the table, checkpoint and quarantine stay in
the folder (a new temporary one by default) for `ingest inspect` and friends. With `--sync`, an
embedded Hive Metastore (Hive 2.3's, from PySpark's jars) is started in the folder, the stream syncs
the table to it after each commit, and the registered tables and partitions are printed too.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

import pyarrow as pa

from ingest.commands.render import table_text

DATA_COLUMNS = ("order_id", "region", "amount", "updated_at", "_hoodie_commit_time")
QUARANTINE_COLUMNS = ("_kafka_topic", "_kafka_partition", "_kafka_offset", "_ingest_error", "value")
MAX_CELL = 60


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="stream sample orders from an embedded Kafka broker into a table, and show it",
        description="Start an embedded Kafka-protocol broker, send sample order events (new orders, updates, "
        "tombstone deletes, a late update, a malformed message), stream them into a Hudi table with "
        "conf/demo.yaml, and print the table and the quarantine.")
    parser.add_argument("--dir", metavar="FOLDER", help="where the table, checkpoint and quarantine go "
                        "(an empty or new folder; default: a new temporary folder, kept)")
    parser.add_argument("--sync", action="store_true", help="also start an embedded Hive Metastore, sync the "
                        "table to it after each commit and print the registered tables and partitions "
                        "(needs the ingest[hive] extra)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    parser.set_defaults(func=run)


def _quarantine_view(bad: pa.Table) -> pa.Table:
    """The quarantine's columns people look at; a message's value shown as the text it was sent as."""
    bad = bad.sort_by([(c, "ascending") for c in ("_kafka_partition", "_kafka_offset") if c in bad.column_names])
    columns = [bad.column(c) if c in bad.column_names else pa.nulls(bad.num_rows) for c in QUARANTINE_COLUMNS]
    value = columns[-1].to_pylist()
    columns[-1] = pa.array([v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else v for v in value],
                           pa.string())
    return pa.table(columns, names=["topic", "partition", "offset", "error", "value"])


def show(out: TextIO, result) -> None:
    from ingest.hudi.table.snapshot import read_snapshot
    from ingest.hudi.table.table import HudiTable
    from ingest.hudi.timeline.instant import Action
    from ingest.pipeline.demo import events
    from ingest.storage import Storage
    from ingest.write import quarantine

    config = result.config
    out.write(f"\nSent {result.messages} messages to topic 'orders' (3 partitions) on the embedded broker "
              f"{result.bootstrap_servers}:\n")
    for i, (message, what) in enumerate(events()):
        value = "null (tombstone)" if message.value is None else message.value.decode()
        out.write(f"  {i + 1:2d}. key={message.key.decode()} {value}  - {what}\n")

    table = HudiTable.open(config.table.path)
    rows = read_snapshot(table).select(list(DATA_COLUMNS)).sort_by([("region", "ascending"),
                                                                    ("order_id", "ascending")])
    timeline = table.timeline()
    out.write(f"\nTable {config.table.path} ({rows.num_rows} rows; "
              f"{len(timeline.completed(Action.DELTA_COMMIT))} delta commit(s), "
              f"{len(timeline.completed(Action.COMPACTION))} compaction(s)):\n\n")
    table_text(out, rows, max_width=MAX_CELL)

    out.write(f"\nQuarantine {config.quarantine.path}")
    bad = quarantine.read_all(Storage(config.quarantine.path))
    if bad is None:
        out.write(" (0 message(s))\n")
    else:
        out.write(f" ({bad.num_rows} message(s)):\n\n")
        table_text(out, _quarantine_view(bad), max_width=MAX_CELL)
    if result.metastore_uri:
        database = config.catalog.database
        out.write(f"\nRegistered in the embedded Hive Metastore ({result.metastore_uri}, now stopped), "
                  f"database {database}:\n\n")
        registered = pa.table({"table": [t.name for t in result.registered],
                               "columns": [t.columns for t in result.registered],
                               "partitions": [" ".join(t.partitions) for t in result.registered]})
        table_text(out, registered, max_width=MAX_CELL)
    out.write(f"\nEverything stays in {result.folder}. Look around:\n"
              f"  ingest read {config.table.path} --format table\n"
              f"  ingest inspect table {config.table.path}\n"
              f"  ls {config.table.path}/.hoodie\n")


def run(args: argparse.Namespace) -> int:
    from ingest.pipeline import logs
    from ingest.pipeline.demo import run_demo

    logs.configure(args.verbose)
    started = time.monotonic()
    result = run_demo(args.dir, sync=args.sync)
    show(sys.stdout, result)
    print(f"(demo took {time.monotonic() - started:.0f}s)", file=sys.stderr)
    return 0


