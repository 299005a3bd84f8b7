"""spark-submit entry point: load files into a pipeline's Hudi table, a commit per group of files.

    spark-submit --py-files ingest.zip jobs/backfill.py backfill.yaml [--input PATH] \
        [--format parquet|json|csv|orc|avro] [--max-bytes-per-commit SIZE] [--set SECTION.KEY=VALUE ...]

The same job as `ingest backfill` (ingest.pipeline.backfill); files an earlier run committed are
skipped, so a failed backfill is submitted again as it was. The package may be installed on the
cluster or shipped as a zip of `ingest/` with --py-files. Exit code 0 done, 1 failed, 2 invalid
configuration.
"""

from __future__ import annotations

import sys

from ingest.commands.backfill import main
from ingest.process_exit import leave

if __name__ == "__main__":
    leave(main(sys.argv[1:], prog="backfill.py"))
