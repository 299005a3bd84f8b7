"""Ending the process once a command is done, without the native teardown that can abort it.

pyarrow's C++ thread pools are torn down by the C runtime after Python has finalized, and now and
then one of their threads is still joinable then: `std::terminate` aborts a process whose work is
complete and flushed (apache/arrow#34314, "terminate called without an active exception", exit
-6). A scheduler or spark-submit reads that as a failed run. So the command line and the jobs leave
with `os._exit` after Python's own exit handlers (logging's flush among them) have run.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


def leave(code: int) -> NoReturn:
    """Run Python's exit handlers, flush stdout and stderr, and end the process with `code`."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with the descriptor closed (`>&-`)
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`ingest read ... | head`) or a closed stream
            pass
    os._exit(code)
