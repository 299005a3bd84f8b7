"""What the configuration-driven job commands share (`ingest stream`, `ingest backfill` and their
spark-submit entry points): the common arguments, loading the configuration, and exit codes.

Exit codes: 0 done, 1 failed, 2 the configuration is invalid (one line naming the file and key).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from ingest.commands.args import add_set, add_target, pipeline_sets, resolve_targets
from ingest.config.loader import load_config
from ingest.errors import ConfigError, IngestError, os_error_line

log = logging.getLogger(__name__)
INVALID = 2


def add_common(parser: argparse.ArgumentParser, example: str) -> None:
    """The pipeline's FILE (positional, or `--config FILE`), `--set` with an example of this command's, -v."""
    add_config(parser)
    add_set(parser, example)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level, other libraries' info too")


def add_config(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "config", "FILE", "the pipeline's YAML configuration", "--config")


def run_job(args: argparse.Namespace, job: Callable[[object], object]) -> int:
    """Logs set up, the configuration loaded (its warnings logged), then `job(config)`; a
    configuration error, found before or while the job starts, is one line and exit code 2."""
    from ingest.pipeline import logs

    logs.configure(args.verbose)
    try:
        config = load_config(args.config, pipeline_sets(args.overrides))
        for warning in config.warnings:
            log.warning("%s", warning)
        job(config)
    except ConfigError as e:
        print(f"ingest: error: {e}", file=sys.stderr)
        return INVALID
    return 0


def job_main(argv: list[str] | None, prog: str, doc: str, add: Callable, run: Callable) -> int:
    """A spark-submit entry point's command line: the subcommand's arguments, errors as one line."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    add(parser)
    args = parser.parse_args(argv)
    resolve_targets(args)
    try:
        return run(args)
    except IngestError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{prog}: error: {os_error_line(e)}", file=sys.stderr)
        return 1
