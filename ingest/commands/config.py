"""`ingest validate-config`: check a pipeline configuration without starting Spark.

Prints the resolved configuration (defaults filled in, secrets redacted) as YAML and exits 0, or
prints the one-line error and exits 2, so deployment repositories can check their files in CI.
Warnings (Hudi keys ingest does not use, ...) go to stderr and do not fail the check.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from ingest.commands.job import INVALID
from ingest.config.loader import load_config
from ingest.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate-config",
        help="check a pipeline configuration file and print it resolved",
        description="Check a pipeline configuration file (and, if the table exists, that it agrees with its "
        "hoodie.properties) and print it resolved, secrets redacted. Exit code 2 when it is invalid.",
    )
    parser.add_argument("file", metavar="FILE", help="the YAML configuration")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one setting (repeatable), e.g. --set hudi.hoodie.index.type=BUCKET",
    )
    parser.add_argument(
        "--no-table-check",
        action="store_true",
        help="do not open the table to compare with its hoodie.properties (when the lake is out of reach)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.file, args.overrides, check_table=not args.no_table_check)
    except ConfigError as e:
        print(f"ingest: error: {e}", file=sys.stderr)
        return INVALID
    for warning in config.warnings:
        print(f"ingest: warning: {warning}", file=sys.stderr)
    sys.stdout.write(yaml.safe_dump(config.redacted(), sort_keys=False, allow_unicode=True, width=110))
    return 0
