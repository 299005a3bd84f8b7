"""Catalog sync after each commit of a job, as Hudi's writers run their sync tools after a commit
(`StreamSync.runMetaSync`, `HoodieSparkSqlWriter.metaSync`).

Hudi fails the write when a sync fails, after the commit. Here a failed sync leaves the commit
committed and the job running: the failure is logged (naming the catalog, database and table),
counted, and the sync retried after the next commit, which catches up everything since the last
successful one (the catalog's `last_commit_time_sync`). Only more than `write.sync_failures_allowed`
consecutive failures fail the job. A success logs one line per catalog with what changed and how
long it took.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ingest.catalog.run import CatalogSyncError, check_clients, sync
from ingest.catalog.settings import SyncSettings
from ingest.catalog.sync import SyncResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncOutcome:
    """What the sync after one commit did."""

    results: tuple[SyncResult, ...] = ()
    error: str | None = None
    consecutive_failures: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    def text(self) -> str:
        """The batch log line's part: ` sync=ok`, or ` sync=failed(N)` with N consecutive failures."""
        return " sync=ok" if self.ok else f" sync=failed({self.consecutive_failures})"

    def durations_ms(self) -> dict[str, int]:
        """Per sync tool (its class's short name), as `HoodieStreamerMetrics.updateStreamerMetaSyncMetrics`."""
        return {r.tool.rsplit(".", 1)[-1]: int(r.seconds * 1000) for r in self.results if r.tool}


class CatalogSync:
    """Runs after each commit when sync is enabled; `after_commit` returns None when it is not."""

    def __init__(self, table_path: str, storage_options: Mapping[str, Any], settings: SyncSettings | None):
        self.table_path = table_path
        self.storage_options = dict(storage_options)
        self.settings = settings
        self.consecutive_failures = 0
        if self.enabled:
            check_clients(settings)

    @property
    def enabled(self) -> bool:
        return self.settings is not None and self.settings.enabled

    def after_commit(self) -> SyncOutcome | None:
        if not self.enabled:
            return None
        allowed = self.settings.failures_allowed
        try:
            results = sync(self.table_path, self.storage_options, self.settings)
        except CatalogSyncError as e:
            self.consecutive_failures += 1
            if self.consecutive_failures > allowed:
                raise CatalogSyncError(f"{e} ({self.consecutive_failures} consecutive failed syncs; "
                                       f"write.sync_failures_allowed is {allowed})") from e
            log.warning("%s; the commit stays committed, the sync is retried after the next commit "
                        "(%d consecutive failure(s), %d allowed)", e, self.consecutive_failures, allowed)
            return SyncOutcome(error=str(e), consecutive_failures=self.consecutive_failures)
        self.consecutive_failures = 0
        for result in results:
            log.info("%s", result.text())
        return SyncOutcome(results=tuple(results))
