"""spark-submit entry point: stream a pipeline's Kafka topics into its Hudi table.

    spark-submit --py-files ingest.zip jobs/stream_kafka.py pipeline.yaml \
        [--set SECTION.KEY=VALUE ...] [--available-now]

The same job as `ingest stream` (ingest.pipeline.stream): the package may be installed on the
cluster or shipped as a zip of `ingest/` with --py-files (its dependencies installed). The master is
spark-submit's unless the configuration sets `spark.master`. SIGTERM to the driver's Python process
stops the stream between batches; exit code 0 when it drained or was stopped, 1 when it failed, 2
when the configuration is invalid.
"""

from __future__ import annotations

import sys

from ingest.commands.stream import main
from ingest.process_exit import leave

if __name__ == "__main__":
    leave(main(sys.argv[1:], prog="stream_kafka.py"))
