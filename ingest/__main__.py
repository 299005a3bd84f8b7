"""`python -m ingest` is the `ingest` command."""

from ingest.cli import run

run()
