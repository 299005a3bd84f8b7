"""`ingest read PATH`: a table's snapshot (or its state as of an instant), meta fields included."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ingest.commands.args import add_path
from ingest.commands.render import json_line, plain_rows, table_text
from ingest.hudi.table.snapshot import log as snapshot_log
from ingest.hudi.table.snapshot import read_incremental, read_snapshot
from ingest.hudi.table.table import HudiTable


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
    parser.add_argument("--skip-corrupt-blocks", action="store_true",
                        help="read past corrupt log blocks of committed instants (their rows are missing; "
                             "each is named on stderr) instead of failing")
    parser.set_defaults(func=run)


@contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    """Corrupt blocks skipped on request are named on stderr, in the CLI's own words."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("ingest: warning: %(message)s"))
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger(snapshot_log.name)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def run(args: argparse.Namespace) -> int:
    with _warnings_to_stderr():
        return _print(args)


def _print(args: argparse.Namespace) -> int:
    table = HudiTable.open(args.path)
    if args.since:
        rows = read_incremental(table, args.since, args.as_of, skip_corrupt=args.skip_corrupt_blocks)
    else:
        rows = read_snapshot(table, args.as_of, skip_corrupt=args.skip_corrupt_blocks)
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
