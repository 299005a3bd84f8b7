"""`ingest stream`: run a pipeline's Kafka stream into its Hudi table.

    ingest stream --config conf/kafka-stream.yaml [--set SECTION.KEY=VALUE ...] [--available-now]

Runs until stopped (SIGTERM or Ctrl-C stop it between batches, exit code 0), or with
`--available-now` (or `stream.trigger: available_now`) until it has read what Kafka held when it
started. A restart resumes from the checkpoint; no batch is written twice. Exit codes: 0 done or
stopped, 1 the stream failed, 2 the configuration is invalid. `jobs/stream_kafka.py` is the same
command for spark-submit.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from ingest.config.loader import load_config
from ingest.errors import ConfigError, IngestError

log = logging.getLogger("ingest.commands.stream")
INVALID = 2


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="the pipeline's YAML configuration")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one setting (repeatable), e.g. --set source.kafka.max_offsets_per_trigger=1000")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level, other libraries' info too")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument("--available-now", action="store_true",
                        help="read what the topics hold now, in batches, then stop")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stream", help="stream Kafka into the table (a long-running job)",
        description="Stream the configured Kafka topics into the Hudi table, one commit per micro-batch. "
        "SIGTERM or Ctrl-C stop it between batches. Exit code 2 when the configuration is invalid.")
    add_arguments(parser)
    parser.set_defaults(func=run)


def load(args: argparse.Namespace):
    """The configuration, its warnings logged; None (after printing why) when it is invalid."""
    try:
        config = load_config(args.config, args.overrides)
    except ConfigError as e:
        print(f"ingest: error: {e}", file=sys.stderr)
        return None
    for warning in config.warnings:
        log.warning("%s", warning)
    return config


def run_job(args: argparse.Namespace, job: Callable[[object], object]) -> int:
    """Logs set up, the configuration loaded, then `job(config)`; exit code 2 when the configuration is invalid."""
    from ingest.pipeline import logs

    logs.configure(args.verbose)
    config = load(args)
    if config is None:
        return INVALID
    try:
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
    try:
        return run(args)
    except IngestError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    from ingest.pipeline.stream import stream

    return run_job(args, lambda config: stream(config, available_now=args.available_now))


def main(argv: list[str] | None = None, prog: str = "stream_kafka") -> int:
    """The spark-submit entry point's command line (`jobs/stream_kafka.py`)."""
    return job_main(argv, prog, __doc__, add_arguments, run)
