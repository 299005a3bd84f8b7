"""A command that reads parquet bytes just before it exits must exit cleanly.

Arrow's pre-buffered reads could leave an I/O thread holding the bytes' Python owner; released
while the interpreter shuts down, that thread aborted the whole process (about every third run of
the script below, before the reads became synchronous). `ingest demo` reads the quarantine last
and failed that way now and then. Reading the timeline's LSM history goes the same way.
"""

from __future__ import annotations

import io
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.hudi.timeline.lsm_history import LSMHistory
from ingest.index import key_state as ks
from ingest.storage import Storage
from ingest.write import quarantine

READ_THEN_EXIT = """
import sys
from ingest.hudi.log.data_block import decode_parquet_content
from ingest.hudi.timeline.lsm_history import LSMHistory
from ingest.index import key_state as ks
from ingest.storage import Storage
from ingest.write import quarantine

folder, shard, instant = sys.argv[1:]
history = LSMHistory(Storage(folder), "history")
storage = Storage(folder)
segment = ks.Segment(shard, instant, "base")
content = storage.read(segment.path)
for _ in range(3):
    assert quarantine.read_all(storage.child("quarantine")).num_rows == 2
    assert ks._read(storage, segment).num_rows == 100
    assert decode_parquet_content(content).num_rows == 100
    assert len(history.read()) == 3 and len(history.instant_times("0", "9")) == 3
"""
RUNS = 24
AT_ONCE = 4


def test_reading_parquet_bytes_then_exiting_never_aborts(tmp_path):
    storage = Storage(str(tmp_path))
    quarantine.write(storage.child("quarantine"), pa.table({"value": [b"{", b"["], "_ingest_error": ["a", "b"]}),
                     "0", "00000")
    segment = ks.Segment("bucket-00000000", "20240101000000000", "base")
    buf = io.BytesIO()
    pq.write_table(pa.table({ks.KEY: [f"k{i}" for i in range(100)], ks.ORDERING: list(range(100))}), buf)
    storage.write(segment.path, buf.getvalue())
    LSMHistory(storage, "history").write([{"instantTime": t, "completionTime": t + "1", "action": "deltacommit",
                                           "version": 1} for t in ("20240101000000001", "20240101000000002",
                                                                   "20240101000000003")])

    failures = []
    for start in range(0, RUNS, AT_ONCE):
        procs = [subprocess.Popen([sys.executable, "-c", READ_THEN_EXIT, str(tmp_path), segment.shard,
                                   segment.instant], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(start, min(RUNS, start + AT_ONCE))]
        for p in procs:
            _, err = p.communicate(timeout=120)
            if p.returncode != 0:
                failures.append((p.returncode, err[-500:]))
    assert not failures, f"{len(failures)} of {RUNS} runs failed, first: {failures[0]}"
