"""The `ingest` command line.

Each subcommand lives in `ingest.commands.<module>` and exposes `register(subparsers)`; the
parser it adds carries its handler as `func`. Handlers return a process exit code. Every command
line follows the conventions of `ingest.commands.args` (`ingest COMMAND TARGET [options]`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from ingest import __version__
from ingest.commands.args import resolve_targets
from ingest.errors import IngestError, os_error_line
from ingest.process_exit import leave

COMMAND_MODULES: tuple[str, ...] = (
    "ingest.commands.inspect",
    "ingest.commands.read",
    "ingest.commands.config",
    "ingest.commands.services",
    "ingest.commands.upgrade",
    "ingest.commands.sync",
    "ingest.commands.stream",
    "ingest.commands.backfill",
    "ingest.commands.demo",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ingest", description="Stream data into Apache Hudi tables.")
    parser.add_argument("--version", action="version", version=f"ingest {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    resolve_targets(args)
    try:
        return int(args.func(args) or 0)
    except IngestError as e:
        print(f"ingest: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `ingest read ... | head`
        return 0
    except OSError as e:  # storage failed under us: a full disk, a read-only folder
        print(f"ingest: error: {os_error_line(e)}", file=sys.stderr)
        return 1


def run() -> NoReturn:
    """The `ingest` executable: `main()`, then the process ends without native teardown
    (`ingest.process_exit`). Usage errors still leave through argparse's `SystemExit`."""
    leave(main())
