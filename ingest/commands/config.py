"""`ingest validate-config`: check a pipeline configuration without starting Spark.

Prints the resolved configuration (defaults filled in, secrets redacted) as YAML and exits 0, or
prints the one-line error and exits 2, so deployment repositories can check their files in CI.
Warnings (Hudi keys ingest does not use, ...) go to stderr and do not fail the check.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from ingest.commands.args import add_set, pipeline_sets
from ingest.commands.job import INVALID, add_config
from ingest.config.loader import load_config
from ingest.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate-config",
        help="check a pipeline configuration file and print it resolved",
        description="Check a pipeline configuration file (and, if the table exists, that it agrees with its "
        "hoodie.properties) and print it resolved, secrets redacted. Exit code 2 when it is invalid.",
    )
    add_config(parser)
    add_set(parser, "hudi.hoodie.index.type=BUCKET")
    parser.add_argument(
        "--no-table-check",
        action="store_true",
        help="do not open the table to compare with its hoodie.properties (when the lake is out of reach)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config, pipeline_sets(args.overrides), check_table=not args.no_table_check)
    except ConfigError as e:
        print(f"ingest: error: {e}", file=sys.stderr)
        return INVALID
    for warning in config.warnings:
        print(f"ingest: warning: {warning}", file=sys.stderr)
    sys.stdout.write(yaml.safe_dump(config.redacted(), sort_keys=False, allow_unicode=True, width=110))
    return 0
