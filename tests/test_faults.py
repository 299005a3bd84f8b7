"""The crash points tests use to kill a writer where a real crash would hurt (`ingest.faults`)."""

import os
import subprocess
import sys

from ingest.faults import CRASH_EXIT_CODE

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = ("import sys\nfrom ingest.faults import crash_point\n"
          "for i in range(4):\n    crash_point('after_commit')\n    print(i, flush=True)\n")


def _run(spec: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "INGEST_CRASH_AT"}
    env["PYTHONPATH"] = REPO
    if spec is not None:
        env["INGEST_CRASH_AT"] = spec
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60)


def test_a_point_crashes_the_first_time_or_the_nth_time_it_is_reached():
    unset, first, third = _run(None), _run("mid_commit,after_commit"), _run("after_commit@3")
    assert (unset.returncode, unset.stdout.split()) == (0, ["0", "1", "2", "3"])
    assert (first.returncode, first.stdout.split()) == (CRASH_EXIT_CODE, [])
    assert (third.returncode, third.stdout.split()) == (CRASH_EXIT_CODE, ["0", "1"])
    assert _run("after_commit_x,after_data_write@1").returncode == 0  # other points, not a prefix match
