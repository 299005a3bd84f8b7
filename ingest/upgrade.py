"""Upgrading a table from version 6 to 8 or 9 (or from 8 to 9), in the steps Hudi 1.x's upgrade takes.

Mirrors `UpgradeDowngrade.run` of Hudi 1.2 with its handlers (`SixToSevenUpgradeHandler`,
`SevenToEightUpgradeHandler`, `EightToNineUpgradeHandler`), which a Hudi 1.x writer runs on its first
write to an older table (`hoodie.write.auto.upgrade`). Under the writer lease, each step re-runnable:

1. roll back failed writes (`UpgradeDowngradeUtils.rollbackFailedWritesAndCompact`, EAGER policy: any
   pending write whose writer is gone; a Hudi writer's with a live heartbeat is refused);
2. compact: the 7-to-8 and 8-to-9 handlers require it (`UPGRADE_HANDLERS_REQUIRING_ROLLBACK_AND_COMPACT`),
   and Hudi schedules one compaction of every file slice with log files (`NUM_COMMITS` trigger at 1,
   `UnBoundedCompactionStrategy`) and runs it. ingest first completes the compactions already pending:
   their log files are named with the slice's base instant, as version 6 names them, and would be
   sliced wrongly by completion time at 8 and 9;
3. move the timeline into `.hoodie/timeline/`, completed instants named with their completion time and
   commit metadata rewritten as Avro (`ingest.hudi.services.upgrade_timeline`);
4. convert the archived timeline into the LSM history (`SevenToEightUpgradeHandler.upgradeToLSMTimeline`,
   `ingest.hudi.services.archiver.convert_to_lsm_history`); `.hoodie/archived` stays, as Hudi leaves it;
5. rewrite `hoodie.properties` (`ingest.hudi.services.upgrade_properties`), last, through the backup
   protocol: until then the table is at version 6 for every reader, and a crash at any step is
   finished by running the upgrade again (a version-6 table whose instants are partly in
   `.hoodie/timeline/` is refused by every reader and writer until then).

A table already at the target version is left alone; a downgrade is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ingest.errors import UnsupportedTable
from ingest.faults import crash_point
from ingest.hudi.config import properties_file
from ingest.hudi.config.service_settings import CompactionSettings, CompactionStrategy, TriggerStrategy
from ingest.hudi.config.table_config import TableConfig, TableConfigKey
from ingest.hudi.config.table_version import TableVersion
from ingest.hudi.services import archiver, compaction, upgrade_properties, upgrade_timeline
from ingest.hudi.table import metadata_table
from ingest.hudi.table.lock_provider import LockSettings
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.instant import Action
from ingest.hudi.timeline.timeline import METAFOLDER, UPGRADE_FOLDER, refuse_pending_restore
from ingest.hudi.timeline.timeline_layout import TimelineLayout
from ingest.storage import Storage
from ingest.write import commit
from ingest.write.lock import WriterLock

log = logging.getLogger(__name__)

UPGRADE_TARGETS = (8, 9)
# `UpgradeDowngradeUtils.rollbackFailedWritesAndCompact`: compact every slice with logs, now.
_COMPACT_ALL = CompactionSettings(trigger=TriggerStrategy.NUM_COMMITS, max_delta_commits=1,
                                  strategy=CompactionStrategy.UNBOUNDED)


@dataclass(frozen=True)
class UpgradeResult:
    from_version: int
    to_version: int
    rolled_back: tuple[str, ...] = ()
    compacted: tuple[str, ...] = ()
    moved: int = 0
    history_files: int = 0  # LSM history files the archived timeline was converted into
    resumed: bool = False

    @property
    def changed(self) -> bool:
        return self.from_version != self.to_version

    def line(self, path: str) -> str:
        if not self.changed:
            return f"{path} is already at table version {self.to_version}; nothing to do"
        return (f"upgraded {path} from table version {self.from_version} to {self.to_version}"
                f"{' (resumed)' if self.resumed else ''}: rolled back {list(self.rolled_back)}, "
                f"compacted {list(self.compacted)}, {self.moved} timeline file(s) moved, "
                f"{self.history_files} history file(s) written from the archived timeline")


def _moving_started(storage: Storage) -> bool:
    """Whether a run before this one has begun moving the timeline (step 3)."""
    return any(not e.is_dir and e.name[:1].isdigit() for e in storage.list(f"{METAFOLDER}/{UPGRADE_FOLDER}"))


def _check(table: HudiTable, target: TableVersion) -> upgrade_properties.PropertyChanges:
    """Everything that refuses the upgrade, before anything changes; the property changes it makes."""
    where, current = table.base_url, table.version
    if current.number > target.number:
        raise UnsupportedTable(f"{where} is at table version {current.number}: ingest does not downgrade it to "
                               f"{target.number} (Hudi's downgrade handlers do)")
    table.config.check_writable(where)
    upgrade_properties.check_upgradable(table.config, target, where)
    changes = upgrade_properties.changes(table.config, target)
    TableConfig(changes.applied_to(dict(table.config.props))).check_supported(where, write=True)
    if not current.has_completion_times and _moving_started(table.storage):
        return changes  # steps 1 and 2 are done; what they needed was checked before they ran
    timeline = table.timeline()
    refuse_pending_restore(timeline, where)
    table.check_no_schema_history(timeline)
    clustering = timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING)
    if clustering:
        raise UnsupportedTable(f"{where}: {clustering[0].action.value} {clustering[0].timestamp} is pending; Hudi's "
                               "compaction before the upgrade leaves its file groups alone (their log files would "
                               "stay named as version 6 names them): finish it with Hudi, then run the upgrade")
    if not _compacts(table) and _pending_logs(table):
        raise UnsupportedTable(f"{where}: Hudi compacts every file slice with log files before upgrading to table "
                               f"version {target.number} (UpgradeDowngrade.performRollbackAndCompactionIfRequired), "
                               f"and ingest does not compact at version {current.number}: compact this table with "
                               "Hudi, then run the upgrade again")
    return changes


def _pending_logs(table: HudiTable) -> bool:
    return bool(table.timeline().pending(Action.COMPACTION)) or any(
        g.latest_slice is not None and g.latest_slice.log_files for g in table.view().file_groups())


def _compacts(table: HudiTable) -> bool:
    """Whether ingest runs compaction at the table's version."""
    try:
        compaction.check_writable(table)
    except UnsupportedTable:
        return False
    return True


def _compact(table: HudiTable, lock: WriterLock) -> tuple[str, ...]:
    """Step 2: finish pending compactions, then compact every file slice with log files (at a version
    ingest does not compact, `_check` has made sure there is nothing to compact)."""
    if not _compacts(table):
        return ()
    done = []
    for pending in table.timeline().pending(Action.COMPACTION):
        compaction.execute(table, pending.timestamp)
        done.append(pending.timestamp)
    scheduled = compaction.schedule(table, _COMPACT_ALL, force=True, fence=lock.check)
    if scheduled is not None:
        compaction.execute(table, scheduled)
        done.append(scheduled)
    return tuple(done)


def upgrade(path: str, to_version: int, *, storage_options: Mapping[str, Any] | None = None,
            lease_expiry_seconds: float = 60.0, hudi_lock: LockSettings | None = None) -> UpgradeResult:
    """Upgrade the table at `path` to `to_version` (8 or 9), or finish an upgrade that was interrupted."""
    if to_version not in UPGRADE_TARGETS:
        raise UnsupportedTable(f"ingest upgrades tables to version {' or '.join(map(str, UPGRADE_TARGETS))}, "
                               f"not {to_version}")
    target = TableVersion.of(to_version)
    table = HudiTable.open(path, storage_options)
    start = table.version
    if start.number == target.number:
        return UpgradeResult(start.number, target.number)
    _check(table, target)
    storage = table.storage
    with WriterLock(storage, lease_expiry_seconds, description="ingest upgrade", hudi_lock=hudi_lock) as lock:
        if metadata_table.remove(table):  # as before every write: ingest does not maintain it
            table = HudiTable.open(path, storage_options)
        changes = _check(table, target)
        moving = not start.has_completion_times and target.has_completion_times
        resumed = moving and _moving_started(storage)
        rolled_back: tuple[str, ...] = ()
        compacted: tuple[str, ...] = ()
        if not resumed:
            _, rolled_back = commit.recover(table, table.timeline())
            crash_point("upgrade_rolled_back")
            compacted = _compact(table, lock)
            if _compacts(table) and _pending_logs(table):
                raise UnsupportedTable(f"{table.base_url}: file slices with log files are left after compacting "
                                       "(a compaction another executor runs?); run the upgrade again once it is done")
            crash_point("upgrade_compacted")
        moved = converted = 0
        if moving:
            upgraded = TableConfig(changes.applied_to(dict(table.config.props)))
            moved = upgrade_timeline.move_timeline(storage, TimelineLayout.of(upgraded),
                                                   upgraded.raw(TableConfigKey.TIMELINE_HISTORY_PATH),
                                                   table.config.timeline_zone)
            crash_point("upgrade_timeline_moved")
            converted = len(archiver.convert_to_lsm_history(storage, TimelineLayout.of(upgraded)))
            crash_point("upgrade_archive_converted")
        lock.check()
        properties_file.modify(storage, changes.updates, tuple(sorted(changes.deletes)))
    result = UpgradeResult(start.number, target.number, rolled_back, compacted, moved, converted, resumed)
    log.info("%s", result.line(path))
    return result
