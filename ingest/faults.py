"""Named crash points, so tests can kill a writer exactly where a real crash would hurt most.

`INGEST_CRASH_AT=<point>[,<point>...]` makes the process exit at once (no cleanup, no flush, exit code
86) when it reaches a named point; `<point>@<n>` exits the n-th time it is reached, so a long-running
writer can be stopped after some batches committed. Unset, each point costs one environment lookup.
Points:

* `after_data_write`: the batch's files are written, the commit is not.
* `mid_commit`: the commit file's bytes are written aside but not yet published.
* `after_commit`: the commit is complete; the stream has not recorded the batch as done.
* `mid_rollback`: a rollback has deleted some files but is not complete.
* `before_rollback_complete`: a rollback has removed the failed instant from the timeline; its own
  completed instant is not written yet.
* `mid_compaction`, `mid_clean`, `mid_archive`: a table service did part of its work.
* `lsm_after_file`, `lsm_after_manifest`, `lsm_version_deleted`, `lsm_after_compacted_file`: archival
  at table versions 8 and 9 wrote a history file, then its manifest, then deleted `_version_`; or a
  history compaction wrote its merged file (`ingest.hudi.timeline.lsm_history`).
* `mid_properties`: a rewrite of `hoodie.properties` has deleted the file; only its backup is left.
* `upgrade_rolled_back`, `upgrade_compacted`, `upgrade_mid_timeline` (one instant file moved),
  `upgrade_timeline_moved`, `upgrade_archive_converted`: `ingest upgrade` finished that step; the
  properties are not rewritten yet.

`INGEST_PAUSE_AT=<point>` instead stops the process there, alive, after printing `paused at <point>`
to stderr: a test can then kill it with the signal it wants (SIGKILL), as an operator would.
"""

from __future__ import annotations

import os
import sys
import time

CRASH_EXIT_CODE = 86

# Every point a `crash_point` call names, in the order a write, the services and an upgrade reach them;
# tests inject a crash at each (tests/crashes.py says where), so a new point is listed here.
POINTS = ("after_data_write", "mid_commit", "after_commit", "mid_rollback", "before_rollback_complete",
          "mid_compaction", "mid_clean", "mid_archive",
          "lsm_after_file", "lsm_after_manifest", "lsm_version_deleted", "lsm_after_compacted_file",
          "mid_properties", "upgrade_rolled_back", "upgrade_compacted", "upgrade_mid_timeline",
          "upgrade_timeline_moved", "upgrade_archive_converted")


_reached: dict[str, int] = {}


def crash_point(name: str) -> None:
    spec = os.environ.get("INGEST_CRASH_AT")
    if spec and name in spec:
        _reached[name] = times = _reached.get(name, 0) + 1
        for item in spec.split(","):
            point, _, nth = item.partition("@")
            if point == name and (not nth or int(nth) == times):
                os._exit(CRASH_EXIT_CODE)
    pause = os.environ.get("INGEST_PAUSE_AT")
    if pause and name in pause.split(","):
        sys.stderr.write(f"paused at {name}\n")
        sys.stderr.flush()
        while True:
            time.sleep(3600)
