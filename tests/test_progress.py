"""Progress lines for long phases (`ingest.phases`, `PhaseReporter`): after a delay, at a bounded rate.

No Hudi rule is involved: the cadence is Spark's `org.apache.spark.ui.ConsoleProgressBar`
(a stage shows after it has run `firstDelayMSec`, then refreshes every `updatePeriodMSec`).
"""

from __future__ import annotations

import logging
import random
import re
import time

from service_tables import HUDI_SETTINGS, random_batch, to_table

from ingest import phases
from ingest.hudi.table.table import HudiTable
from ingest.index import key_state as ks
from ingest.pipeline.progress import PhaseReporter
from ingest.write import index_bootstrap
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

log = logging.getLogger("ingest.test.progress")


def lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == log.name]


def test_a_long_phase_gets_lines_after_the_delay_then_at_a_bounded_rate(caplog):
    """ConsoleProgressBar's cadence: nothing for a phase shorter than the delay, then at most one
    line per period, however often the phase advances."""
    caplog.set_level(logging.INFO, logger=log.name)
    interval = 0.2
    with PhaseReporter("batch 7", log, interval=interval, probe=lambda: "Spark tasks 1/4"):
        with phases.phase("quick", total=3, unit="things") as p:
            p.advance(3)
        assert lines(caplog) == [], "a phase shorter than the interval prints nothing"
        started = time.monotonic()
        with phases.phase("counting", total=400, unit="things") as p:
            for _ in range(400):
                time.sleep(0.003)
                p.advance()
        took = time.monotonic() - started
    got = lines(caplog)
    assert 1 <= len(got) <= took / interval + 1, got
    for line in got:
        m = re.fullmatch(r"batch 7: counting: (\d+)/400 things, Spark tasks 1/4 \(running for \d+s\)", line)
        assert m, line
    assert [int(re.search(r"(\d+)/400", x).group(1)) for x in got] == sorted(
        int(re.search(r"(\d+)/400", x).group(1)) for x in got)


def test_a_phase_that_does_not_count_is_reported_by_the_clock(caplog):
    """A Spark job advances nothing in Python: the reporter's clock reports it (as ConsoleProgressBar
    polls `statusTracker`), with what the probe says."""
    caplog.set_level(logging.INFO, logger=log.name)
    with PhaseReporter("batch 0", log, interval=0.1, probe=lambda: "Spark tasks 3/8"):
        with phases.phase("reading and decoding Kafka messages"):
            time.sleep(0.6)
    got = lines(caplog)
    assert got and all(x.startswith("batch 0: reading and decoding Kafka messages, Spark tasks 3/8") for x in got)
    assert len(got) <= 0.6 / 0.1 + 1


def test_the_key_index_bootstrap_reports_its_file_slices(tmp_path, caplog):
    """The bootstrap reads every latest file slice of the table; its line counts them."""
    path = tmp_path / "t"
    options = WriteOptions(table_path=str(path), table_name="trips", hudi=HUDI_SETTINGS,
                           index=IndexOptions(type=IndexType.KEY))
    rng = random.Random(3)
    for n in range(3):
        LocalWriter(options).write(to_table(random_batch(rng, n, keys=9, size=5)))
    slices = len(HudiTable.open(str(path)).view().latest_file_slices())
    assert slices >= 2
    HudiTable.open(str(path)).storage.delete_tree(ks.INDEX_ROOT)  # an index to build, as for a table Hudi wrote
    caplog.set_level(logging.INFO, logger=log.name)
    with PhaseReporter("batch 1", log, interval=0):
        LocalWriter(options).write(to_table(random_batch(rng, 9, keys=9, size=3)))
    got = [x for x in lines(caplog) if index_bootstrap.BOOTSTRAP_PHASE in x]
    assert got[-1].startswith(f"batch 1: {index_bootstrap.BOOTSTRAP_PHASE}: {slices}/{slices} file slices"), got
    assert any("writing the file groups" in x for x in lines(caplog))
