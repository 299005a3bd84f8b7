"""Named crash points, so tests can kill a writer exactly where a real crash would hurt most.

`INGEST_CRASH_AT=<point>[,<point>...]` makes the process exit at once (no cleanup, no flush, exit code
86) when it reaches a named point. Unset, each point costs one environment lookup. Points:

* `after_data_write`: the batch's files are written, the commit is not.
* `mid_commit`: the commit file's bytes are written aside but not yet published.
* `after_commit`: the commit is complete; the stream has not recorded the batch as done.
* `mid_rollback`: a rollback has deleted some files but is not complete.
* `before_rollback_complete`: a rollback has removed the failed instant from the timeline; its own
  completed instant is not written yet.
* `mid_compaction`, `mid_clean`, `mid_archive`: a table service did part of its work.
"""

from __future__ import annotations

import os

CRASH_EXIT_CODE = 86


def crash_point(name: str) -> None:
    spec = os.environ.get("INGEST_CRASH_AT")
    if spec and name in spec.split(","):
        os._exit(CRASH_EXIT_CODE)
