"""Subcommands of the `ingest` command line; each module registers its own parsers."""
