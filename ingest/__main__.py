"""`python -m ingest` is the `ingest` command."""

from ingest.cli import main

raise SystemExit(main())
