"""Table services after each commit, by the job that made it, as Hudi's writers run them inline.

Compaction (when `hoodie.compact.inline` or `hoodie.compact.schedule.inline`), cleaning and
archival (`hoodie.clean.automatic`, `hoodie.archive.automatic`, on by default as in Hudi) run
right after a commit, still under the sink's writer lease; compaction operations run on executors
when a plan is big enough to be worth a Spark stage. A failure fails the batch after its commit:
the restarted job skips the committed batch and the services run again after the next commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.table.table import HudiTable
from ingest.services import ServicesRun, run_inline_services
from ingest.spark.compaction import SparkCompactionRunner
from ingest.write.batch import CommitResult
from ingest.write.lock import WriterLock

log = logging.getLogger(__name__)


class InlineServices:
    """A sink's `after_commit`: runs the services due; `last` holds what the latest round did."""

    def __init__(self, table_path: str, storage_options: Mapping[str, Any], settings: Mapping[str, str],
                 spark: SparkSession, lock: Callable[[], WriterLock | None]):
        self.table_path = table_path
        self.storage_options = dict(storage_options)
        self.settings = ServiceSettings.from_mapping(settings)
        self.runner = SparkCompactionRunner(spark)
        self.lock = lock
        self.last: ServicesRun | None = None

    @property
    def enabled(self) -> bool:
        s = self.settings
        return s.compaction.schedules_inline or s.clean.automatic or s.archive.automatic

    def __call__(self, result: CommitResult) -> None:
        self.last = None
        if not self.enabled:
            return
        table = HudiTable.open(self.table_path, self.storage_options)
        self.last = run_inline_services(table, self.settings, lock=self.lock(), runner=self.runner)
        if self.last.ran:
            log.info("after %s: %s", result.instant, self.last.log_line())
