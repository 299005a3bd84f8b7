"""`ingest read PATH`: a table's snapshot (or its state as of an instant), meta fields included."""

from __future__ import annotations

import argparse
import sys

from ingest.commands.args import add_path
from ingest.commands.render import json_line, plain_rows, table_text
from ingest.hudi.snapshot import read_incremental, read_snapshot
from ingest.hudi.table import HudiTable


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "read", help="print a table's rows",
        description="Print the rows of a Hudi table (meta fields included), as of now or of an instant.",
    )
    add_path(parser)
    parser.add_argument("--as-of", metavar="INSTANT", help="read the table as of this completed instant time")
    parser.add_argument("--since", metavar="INSTANT",
                        help="incremental read: only rows written by commits after this instant (up to --as-of)")
    parser.add_argument("--format", choices=("jsonl", "table"), default="jsonl",
                        help="jsonl: one JSON object per row, every column (default); table: aligned text")
    parser.add_argument("--limit", type=int, metavar="N", help="print at most N rows")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = HudiTable.open(args.path)
    if args.since:
        rows = read_incremental(table, args.since, args.as_of)
    else:
        rows = read_snapshot(table, args.as_of)
    if args.limit is not None:
        rows = rows.slice(0, args.limit)
    out = sys.stdout
    if args.format == "table":
        table_text(out, rows)
        out.write(f"({rows.num_rows} rows)\n")
    else:
        for record in plain_rows(rows):
            out.write(json_line(record) + "\n")
    return 0
