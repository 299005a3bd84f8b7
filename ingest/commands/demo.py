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
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TextIO

from ingest.commands.render import text_table

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


def _text(value: Any) -> str:
    """A cell as people read it: times in UTC with a Z, decimals as written, bytes as text."""
    if value is None:
        return "null"
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    return str(value)


def _table(out: TextIO, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    text_table(out, columns, ([_text(v) for v in row] for row in rows), max_width=MAX_CELL)


def show(out: TextIO, result) -> None:
    from ingest.hudi.instant import Action
    from ingest.hudi.snapshot import read_snapshot
    from ingest.hudi.table import HudiTable
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
    rows = sorted(read_snapshot(table).to_pylist(), key=lambda r: (r["region"], r["order_id"]))
    timeline = table.timeline()
    out.write(f"\nTable {config.table.path} ({len(rows)} rows; "
              f"{len(timeline.completed(Action.DELTA_COMMIT))} delta commit(s), "
              f"{len(timeline.completed(Action.COMPACTION))} compaction(s)):\n\n")
    _table(out, DATA_COLUMNS, ([r.get(c) for c in DATA_COLUMNS] for r in rows))

    bad = quarantine.read_all(Storage(config.quarantine.path))
    quarantined = [] if bad is None else sorted(bad.to_pylist(), key=lambda r: (r.get("_kafka_partition"),
                                                                                r.get("_kafka_offset")))
    out.write(f"\nQuarantine {config.quarantine.path} ({len(quarantined)} message(s)):\n\n")
    _table(out, ("topic", "partition", "offset", "error", "value"),
               ([r.get(c) for c in QUARANTINE_COLUMNS] for r in quarantined))
    if result.metastore_uri:
        database = config.catalog.database
        out.write(f"\nRegistered in the embedded Hive Metastore ({result.metastore_uri}, now stopped), "
                  f"database {database}:\n\n")
        _table(out, ("table", "columns", "partitions"),
               ([t.name, t.columns, " ".join(t.partitions)] for t in result.registered))
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


