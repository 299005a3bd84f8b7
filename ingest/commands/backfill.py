"""`ingest backfill`: load files into a pipeline's Hudi table, a commit per group of files.

    ingest backfill conf/backfill.yaml [--input PATH] [--format parquet|json|csv|orc|avro]
               [--max-bytes-per-commit SIZE] [--set SECTION.KEY=VALUE ...]

`--input` (a file, a folder or a glob; default `source.files.path`) is read in path order. Each
file's format comes from `--format`, else its extension (.parquet, .json/.jsonl/.ndjson, .csv, ...),
else `source.files.format`. Commits hold at most `source.files.max_files_per_trigger` files and
`--max-bytes-per-commit` bytes (default 1GiB). Files committed by an earlier run of the same backfill
(same checkpoint identifier) are skipped, so a failed backfill is started again as it was.
Exit codes: 0 done (or stopped between commits by SIGTERM), 1 failed, 2 invalid configuration.
`jobs/backfill.py` is the same command for spark-submit.
"""

from __future__ import annotations

import argparse

from ingest.commands.job import add_common, job_main, run_job
from ingest.config.keys import BY_NAME, parse
from ingest.errors import ConfigError

FORMATS = ("parquet", "json", "csv", "orc", "avro")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser, "source.files.max_files_per_trigger=50")
    parser.add_argument("--input", metavar="PATH", help="files to load: a file, folder or glob (default: source.files.path)")
    parser.add_argument("--format", choices=FORMATS, help="read every file as this format")
    parser.add_argument("--max-bytes-per-commit", default="1GiB", metavar="SIZE",
                        help="input bytes per commit, e.g. 512MiB (default 1GiB; 0: no limit)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "backfill", help="load files into the table (parquet, JSON lines, CSV)",
        description="Load files into the Hudi table with the configured operation (upsert, bulk_insert, ...), "
        "a commit per group of files; files an earlier run committed are skipped.")
    add_arguments(parser)
    parser.set_defaults(func=run)


def _size(text: str) -> int | None:
    """A size as configuration files write them (bytes, 512MiB, 1 GB); 0 means no limit."""
    if text.strip() in ("0", "none"):
        return None
    try:
        return int(parse(BY_NAME["write.file_group_max_bytes"], text))
    except ValueError as e:
        raise ConfigError(f"{e}", key="--max-bytes-per-commit") from None


def run(args: argparse.Namespace) -> int:
    from ingest.pipeline.backfill import backfill

    def job(config) -> None:
        max_bytes = _size(args.max_bytes_per_commit)
        backfill(config, args.input, file_format=args.format, max_bytes_per_commit=max_bytes)

    return run_job(args, job)


def main(argv: list[str] | None = None, prog: str = "backfill") -> int:
    """The spark-submit entry point's command line (`jobs/backfill.py`)."""
    return job_main(argv, prog, __doc__, add_arguments, run)
