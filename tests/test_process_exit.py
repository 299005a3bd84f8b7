"""How a finished command ends its process (`ingest.process_exit.leave`).

The process leaves with `os._exit`, so pyarrow's thread pools cannot abort it at teardown
(apache/arrow#34314); what Python's own exit would have done must still happen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Buffered, as a scheduler runs the command: what is still in a buffer at the end must be flushed.
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env=BUFFERED)


def test_leave_runs_exit_handlers_flushes_and_keeps_the_code(tmp_path):
    handled = tmp_path / "handled"
    done = _python(
        "import atexit, logging, sys\n"
        "from ingest.process_exit import leave\n"
        "atexit.register(lambda: open(sys.argv[1], 'w').write('ran'))\n"
        "logging.basicConfig(stream=sys.stderr)\n"
        "logging.getLogger('t').warning('logged before leaving')\n"
        "print('piped stdout is block-buffered', end='')\n"
        "sys.stderr.write('unflushed stderr')\n"
        "leave(3)\n"
        "print('never reached')\n", str(handled))
    assert done.returncode == 3
    assert done.stdout == "piped stdout is block-buffered"
    assert "logged before leaving" in done.stderr and done.stderr.endswith("unflushed stderr")
    assert handled.read_text() == "ran"


def test_leave_ignores_a_reader_that_went_away():
    """`ingest read ... | head`: stdout's reader closed before the last flush; the code is kept."""
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys\nfrom ingest.process_exit import leave\n"
                              "sys.stdout.write('still buffered')\nprint('written', file=sys.stderr, flush=True)\n"
                              "sys.stdin.readline()\nleave(0)\n"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                             env=BUFFERED)
    assert child.stderr.readline() == b"written\n"
    child.stdout.close()
    _, err = child.communicate(b"the reader is gone\n", timeout=60)
    assert child.returncode == 0, err
    assert b"Traceback" not in err


def test_leave_keeps_the_code_when_started_without_stdout():
    """`ingest compact ... >&-`: Python then has no `sys.stdout` at all."""
    done = subprocess.run([sys.executable, "-c", "from ingest.process_exit import leave\nleave(4)\n"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO, env=BUFFERED, timeout=60,
                          preexec_fn=lambda: os.close(1))
    assert done.returncode == 4, done.stderr


def test_the_command_line_and_the_jobs_end_through_leave(tmp_path):
    """`python -m ingest` and the jobs return main's code through `leave`; usage errors through argparse."""
    def module(*argv: str) -> int:
        return _python("import runpy, sys\nsys.argv = ['ingest', *sys.argv[1:]]\n"
                       "runpy.run_module('ingest', run_name='__main__')", *argv).returncode

    assert module("inspect", "table", str(tmp_path / "none")) == 1
    assert module("--no-such-option") == 2
    missing = str(tmp_path / "missing.yaml")
    for job in ("backfill.py", "stream_kafka.py"):
        done = subprocess.run([sys.executable, str(REPO / "jobs" / job), "--config", missing], capture_output=True,
                              text=True, timeout=60, cwd=REPO)
        assert done.returncode == 2 and f"{missing}: cannot read it" in done.stderr, (job, done.stderr)
