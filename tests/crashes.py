"""Crashes at the named fault points of `ingest.faults`, injected into a forked copy of the test process.

The child sets `INGEST_CRASH_AT` and does the work (a write, or one table service); it exits at the
point as a killed process would (`os._exit`, no cleanup), and the parent goes on with the table it
left. A fork costs milliseconds where a fresh interpreter costs a second or two of imports, so the
property-based scenarios can crash at every point.

Which work reaches which point:

* a write: `after_data_write`, `mid_commit` (its commit written aside, not published) and
  `after_commit` (committed: the model takes the batch);
* the rollback a write starts with: `mid_rollback`, `before_rollback_complete`: a first child leaves a
  failed write behind (`after_data_write`), the second dies rolling it back;
* a table service: `mid_compaction` (a plan is scheduled first), `mid_clean` (after a compaction, which
  leaves older slices to clean), `mid_archive` and, at layout 2, the LSM history's `lsm_after_file`,
  `lsm_after_manifest`, `lsm_version_deleted`; only at table versions whose services ingest runs
  (`service_tables.allowed_services`);
* elsewhere (`ELSEWHERE`): the points a write scenario does not reach, each crashed in the test named.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

import pyarrow as pa
from service_tables import allowed_services, service_settings

from ingest import faults
from ingest.hudi.services import archiver, cleaner, compaction
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.options import WriteOptions

WRITE_POINTS = ("after_data_write", "mid_commit", "after_commit")
ROLLBACK_POINTS = ("mid_rollback", "before_rollback_complete")
SERVICE_POINTS = {"mid_compaction": "compaction", "mid_clean": "cleaning", "mid_archive": "archival",
                  "lsm_after_file": "archival", "lsm_after_manifest": "archival", "lsm_version_deleted": "archival"}
LSM_POINTS = ("lsm_after_file", "lsm_after_manifest", "lsm_version_deleted")
ELSEWHERE = {
    "lsm_after_compacted_file": "tests/test_lsm_history.py (it needs ten history files)",
    "mid_properties": "tests/test_upgrade.py",
    **{p: "tests/test_upgrade.py" for p in faults.POINTS if p.startswith("upgrade_")},
}
SCENARIO_POINTS = tuple(p for p in faults.POINTS if p not in ELSEWHERE)
assert set(faults.POINTS) == {*WRITE_POINTS, *ROLLBACK_POINTS, *SERVICE_POINTS, *ELSEWHERE}, \
    "a fault point without a scenario"


def in_child(point: str, work: Callable[[], object]) -> bool:
    """Run `work` in a forked child that exits at `point`; True if it died there, False if it finished."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test
        code = 1
        try:
            os.environ["INGEST_CRASH_AT"] = point
            work()
            code = 0
        except BaseException:  # noqa: BLE001 - reported to the parent through the exit code
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, faults.CRASH_EXIT_CODE), f"the child crashing at {point} failed otherwise (exit {code})"
    return code == faults.CRASH_EXIT_CODE


def reachable(point: str, version) -> bool:
    """Whether ingest reaches `point` on a table of this `TableVersion` (services only where it runs them,
    the LSM history's points only where archival writes it)."""
    if point in LSM_POINTS and not version.lsm_history:
        return False
    return point not in SERVICE_POINTS or SERVICE_POINTS[point] in allowed_services(version)


def inject(point: str, options: WriteOptions, data: pa.Table) -> tuple[bool, bool]:
    """Crash at `point` on the table of `options` (writing `data` where the point is a write's).

    Returns (crashed there, `data` committed)."""
    if point in WRITE_POINTS:
        crashed = in_child(point, lambda: LocalWriter(options).write(data))
        return crashed, point == "after_commit" or not crashed
    if point in ROLLBACK_POINTS:
        assert in_child("after_data_write", lambda: LocalWriter(options).write(data))
        crashed = in_child(point, lambda: LocalWriter(options).write(data))
        return crashed, not crashed
    if not os.path.exists(os.path.join(options.table_path, ".hoodie", "hoodie.properties")):
        return False, False  # no table yet: no service to crash
    table = HudiTable.open(options.table_path)
    settings = service_settings(table.version)
    if point == "mid_compaction":
        instant = compaction.schedule(table, settings.compaction, force=True)
        if instant is None:
            return False, False
        return in_child(point, lambda: compaction.execute(table, instant)), False
    if point == "mid_clean":
        if "compaction" in allowed_services(table.version):  # a compaction leaves older slices to clean
            instant = compaction.schedule(table, settings.compaction, force=True)
            if instant is not None:
                compaction.execute(table, instant)
        return in_child(point, lambda: cleaner.clean(table, settings.clean, force=True)), False
    return in_child(point, lambda: archiver.archive(table, settings)), False  # mid_archive, lsm_*
