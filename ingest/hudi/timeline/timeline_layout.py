"""Timeline layouts: where a table's instant files live, and what their names say.

Layout 1 (table version 6): instant files directly under `.hoodie/`; a completed instant is
`<ts>.<action>`, so when it completed is not recorded anywhere a reader can list.

Layout 2 (table version 8, Hudi 1.x): instant files under `.hoodie/<hoodie.timeline.path>/` (default
`timeline`; archived instants live in its `history/` folder, `lsm_history`). Requested and
inflight files are named as in layout 1 (a commit in flight is still `<ts>.inflight`); a completed
instant is `<requested>_<completed>.<action>`. The completion time is what Hudi 1.x orders writes by:
log files carry the instant of the deltacommit that wrote them, and belong to the file slice that was
current when that deltacommit completed. A completed file without the `_<completed>` part is a legacy
instant carried over from 0.x; its completion time is unknown (Hudi takes the file's modification time).

As in layout 1, a completed compaction is a `.commit`; in layout 2 a log compaction completes as a
`.deltacommit` and a clustering (`.clustering.requested`) as a `.replacecommit`. Completed instants'
metadata is an Avro object container in layout 2 (JSON for legacy instants): see `commit_metadata`.

Sources: Hudi's `InstantFileNameGeneratorV2`, `InstantGeneratorV2`, `HoodieTableConfig` (1.x);
hudi-rs `timeline/instant.rs` and `timeline/loader.rs`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ingest.errors import UnsupportedTable
from ingest.hudi.config.table_config import TableConfig, TableConfigKey
from ingest.hudi.timeline.instant import Instant, State, comparable_action

METAFOLDER = ".hoodie"

@dataclass(frozen=True)
class TimelineLayout:
    """One timeline layout version and the folder its instant files are in."""

    version: int
    folder: str
    history: str | None = None  # layout 2: the LSM history folder (`hoodie.timeline.history.path` in it)

    @property
    def has_completion_times(self) -> bool:
        return self.version == 2

    def parse(self, file_name: str) -> Instant | None:
        """The instant a timeline file names (with its completion time in layout 2), or None."""
        return _parsed(self.has_completion_times, file_name)

    def file_name(self, instant: Instant) -> str:
        """The name of the file an instant (in its state) is stored as."""
        if not self.has_completion_times or not instant.is_completed:
            return instant.file_name
        action = comparable_action(instant.action).value
        if instant.completion_time is None:
            return f"{instant.timestamp}.{action}"  # legacy instant
        return f"{instant.timestamp}_{instant.completion_time}.{action}"

    def path(self, instant: Instant) -> str:
        return f"{self.folder}/{self.file_name(instant)}"

    @classmethod
    def of(cls, config: TableConfig) -> TimelineLayout:
        """The layout a table's config names; without `hoodie.timeline.layout.version`, as its version implies."""
        raw = config.props.get(TableConfigKey.TIMELINE_LAYOUT_VERSION.key)
        try:
            version = int(raw) if raw else config.table_version.timeline_layout
        except ValueError as e:
            raise UnsupportedTable(f"{TableConfigKey.TIMELINE_LAYOUT_VERSION.key}={raw} is not a number") from e
        if version == 1:
            return LAYOUT_1
        if version == 2:
            path = (config.raw(TableConfigKey.TIMELINE_PATH) or "timeline").strip("/")
            history = (config.raw(TableConfigKey.TIMELINE_HISTORY_PATH) or "history").strip("/")
            return cls(2, f"{METAFOLDER}/{path}", f"{METAFOLDER}/{path}/{history}")
        raise UnsupportedTable(f"timeline layout version {version} (only layouts 1 and 2 are read)")


# A writer lists its timeline several times per commit (the lease's checks, beginning, completing),
# and from one commit to the next nearly every name is the same: each is parsed once. Instants are
# immutable, so one parsed instant serves every timeline that lists its file.
@functools.lru_cache(maxsize=8192)
def _parsed(has_completion_times: bool, file_name: str) -> Instant | None:
    if not has_completion_times:
        return Instant.parse(file_name)
    head, dot, rest = file_name.partition(".")
    requested, underscore, completed = head.partition("_")
    if not dot or not underscore:
        return Instant.parse(file_name)  # requested, inflight, or a legacy completed instant
    if not (requested.isdigit() and completed.isdigit()):
        return None
    instant = Instant.parse(f"{requested}.{rest}")
    if instant is None or not instant.is_completed:
        return None  # only completed instants carry a completion time
    return Instant(requested, instant.action, State.COMPLETED, completed)


LAYOUT_1 = TimelineLayout(1, METAFOLDER)
