"""`ingest stream`: run a pipeline's Kafka stream into its Hudi table.

    ingest stream conf/kafka-stream.yaml [--set SECTION.KEY=VALUE ...] [--available-now]

Runs until stopped (SIGTERM or Ctrl-C stop it between batches, exit code 0), or with
`--available-now` (or `stream.trigger: available_now`) until it has read what Kafka held when it
started. A restart resumes from the checkpoint; no batch is written twice. Exit codes: 0 done or
stopped, 1 the stream failed, 2 the configuration is invalid. `jobs/stream_kafka.py` is the same
command for spark-submit.
"""

from __future__ import annotations

import argparse

from ingest.commands.job import add_common, job_main, run_job


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser, "source.kafka.max_offsets_per_trigger=1000")
    parser.add_argument("--available-now", action="store_true",
                        help="read what the topics hold now, in batches, then stop")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stream", help="stream Kafka into the table (a long-running job)",
        description="Stream the configured Kafka topics into the Hudi table, one commit per micro-batch. "
        "SIGTERM or Ctrl-C stop it between batches. Exit code 2 when the configuration is invalid.")
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ingest.pipeline.stream import stream

    return run_job(args, lambda config: stream(config, available_now=args.available_now))


def main(argv: list[str] | None = None, prog: str = "stream_kafka") -> int:
    """The spark-submit entry point's command line (`jobs/stream_kafka.py`)."""
    return job_main(argv, prog, __doc__, add_arguments, run)
