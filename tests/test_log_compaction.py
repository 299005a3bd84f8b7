"""A log compaction Hudi ran on a table ingest writes (`call run_log_compaction`, `hoodie.log.compaction.enable`):
its compacted block stands in for the blocks it merged, where they were, and the cleaner keeps what a pending
one reads. Hudi's `LogCompactionExecutionHelper` cannot run here; `log_compact` writes what it writes."""

from __future__ import annotations

import random

from model import Op
from service_tables import ModelWriter, data_files, hudi_rs_rows, our_rows

from ingest.hudi.config.service_settings import CleanerPolicy, CleanSettings, CompactionSettings
from ingest.hudi.log.compacted_blocks import merge_order
from ingest.hudi.log.log_block import BlockType, HeaderKey, LogBlock, encode_log_block
from ingest.hudi.log.log_reader import iter_log_blocks
from ingest.hudi.services import cleaner, compaction
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import Timeline, read_instant


def block(instant: str, compacted: str | None = None) -> LogBlock:
    header = [(HeaderKey.INSTANT_TIME, instant)] + ([(HeaderKey.COMPACTED_BLOCK_TIMES, compacted)] if compacted else [])
    return LogBlock(BlockType.AVRO_DATA, header, instant.encode())


def order(blocks: list[LogBlock]) -> list[str]:
    return [b.instant_time for b in merge_order(blocks)]


def test_a_compacted_block_takes_the_place_of_the_newest_block_it_merged():
    """`BaseHoodieLogRecordReader.scanInternalV2`: instants in the order they first appear, walked newest
    first; a compacted block (`COMPACTED_BLOCK_TIMES`) maps its instants to itself (to the final block of
    a chain: "(B1 -> M2), (B2 -> M2), (B3 -> M2), (B4 -> M2), (M1 -> M2)"), and is queued once, where the
    newest of them was; a compacted block none of whose instants is in the slice is never queued."""
    plain = [block("1"), block("2"), block("3")]
    assert order(plain) == ["1", "2", "3"]
    # t4 was written after the log compaction t3 was planned, into the log before t3's block.
    assert order([block("1"), block("2"), block("4"), block("3", "1,2")]) == ["3", "4"]
    assert order([block("1"), block("2"), block("3", "1,2"), block("4"), block("5", "3,4"), block("6")]) == ["5", "6"]
    assert order([block("1"), block("3", "7,8")]) == ["1"]
    two = [block("1"), block("1"), block("2"), block("3", "1"), block("3")]
    assert [b.content for b in merge_order(two)] == [b"3", b"3", b"2"]


def request_log_compaction(w: ModelWriter, partition: str) -> tuple[str, list[LogBlock]]:
    """What Hudi's log compaction plans for the one file group of `partition` (a v6 bucket table of log
    files): `<t>.logcompaction.requested`/`.inflight`, and the blocks its scan merges (the plan's slice;
    later writes are past its instant)."""
    table = w.table
    timeline = table.timeline()
    (s,) = [s for s in table.view(timeline).latest_file_slices() if s.partition_path == partition and s.log_files]
    blocks = [b for lf in s.log_files for b in iter_log_blocks(table.storage, lf.path)
              if b.block_type == BlockType.AVRO_DATA]
    instant = timeline.new_instant_time()
    table.storage.write(f".hoodie/{instant}.logcompaction.requested", b"")
    table.storage.write(f".hoodie/{instant}.logcompaction.inflight", b"")
    return instant, blocks


def complete_log_compaction(w: ModelWriter, partition: str, instant: str, merged: list[LogBlock]) -> None:
    """`LogCompactionExecutionHelper.writeFileAndGetWriteStats`: a new log file version holding the merged
    records in a block with INSTANT_TIME t and COMPACTED_BLOCK_TIMES naming every merged instant
    (`scanner.getValidBlockInstants()`), then `<t>.deltacommit`. Every write merged rewrote the same keys,
    so the latest merged block is the merge."""
    table = w.table
    timeline = table.timeline()
    (s,) = [s for s in table.view(timeline).latest_file_slices() if s.partition_path == partition and s.log_files]
    header = [(k, instant if k == HeaderKey.INSTANT_TIME else v) for k, v in merged[-1].header]
    header.append((HeaderKey.COMPACTED_BLOCK_TIMES, ",".join(b.instant_time for b in merged)))
    name = s.latest_log_file.name.next_version("1-0-1")
    table.storage.write(f"{partition}/{name.name}", encode_log_block(
        LogBlock(BlockType.AVRO_DATA, header, merged[-1].content, merged[-1].footer)))
    last = timeline.last_completed(Action.DELTA_COMMIT)
    table.storage.write(f".hoodie/{instant}.deltacommit", read_instant(table.storage, last, timeline.layout))


def test_rows_a_log_compaction_merged_are_not_read_again_after_later_writes(tmp_path):
    """A key deleted after the log compaction was planned, in an earlier log file than its compacted block:
    read in file order (`scanInternalV1`), the compacted block would bring the key back after its delete.
    It does once the merged instants are archived (their blocks count as committed, and so does the
    compacted block, older than the active timeline's first write); before, only by chance."""
    w = ModelWriter(tmp_path / "t", buckets=1)
    firsts = [w.write([Op("k1", "chennai", n, False, {"fare": float(n)}),
                       Op("k2", "chennai", n, False, {"fare": 10.0 + n})]) for n in (1, 2)]
    instant, merged = request_log_compaction(w, "city=chennai")
    w.write([Op("k1", "chennai", 3, True), Op("k2", "chennai", 3, False, {"fare": 13.0})])
    complete_log_compaction(w, "city=chennai", instant, merged)
    expected = {("k2", "chennai", 3, 13.0)}
    assert w.expected() == expected
    assert our_rows(w.path) == expected
    storage = w.table.storage
    for name in [e.name for e in storage.list(".hoodie") if e.name.split(".")[0] in firsts]:
        storage.delete(f".hoodie/{name}")  # as archival moves them out of the active timeline
    assert our_rows(w.path) == expected
    compaction.execute(w.table, compaction.schedule(w.table, CompactionSettings(), force=True))
    assert our_rows(w.path) == expected
    assert sorted(hudi_rs_rows(w.path)) == sorted(expected)


def test_the_cleaner_keeps_the_slice_a_pending_log_compaction_reads(tmp_path):
    """`CleanPlanner.isFileSliceNeededForPendingLogCompaction`: a slice at or after the planned operation's
    base instant stays, and the group counts it among the kept versions
    (`isFileGroupInPendingMajorOrMinorCompaction`)."""
    rng = random.Random(2)
    w = ModelWriter(tmp_path / "t", buckets=1)
    for n in range(2):
        w.write([Op(f"k{rng.randrange(4)}", "chennai", n, False, {"fare": float(n)})])
    planned = compaction.schedule(w.table, CompactionSettings(), force=True)
    storage = w.table.storage
    plan = storage.read(f".hoodie/{planned}.compaction.requested")
    storage.delete(f".hoodie/{planned}.compaction.requested")
    storage.write(f".hoodie/{planned}.logcompaction.requested", plan)  # the same HoodieCompactionPlan record
    needed = {p for s in w.table.view().latest_file_slices() for p in s.paths}
    w.write([Op("k9", "chennai", 5, False, {"fare": 5.0})])
    compaction.execute(w.table, compaction.schedule(w.table, CompactionSettings(), force=True))
    w.write([Op("k9", "chennai", 6, False, {"fare": 6.0})])
    compaction.execute(w.table, compaction.schedule(w.table, CompactionSettings(), force=True))
    assert w.table.timeline().pending(Action.LOG_COMPACTION) == [Instant(planned, Action.LOG_COMPACTION,
                                                                         State.REQUESTED)]
    result = cleaner.clean(w.table, CleanSettings(policy=CleanerPolicy.KEEP_LATEST_FILE_VERSIONS,
                                                  file_versions_retained=1), force=True)
    assert needed <= data_files(w.path)
    assert not result or not set(result[0].deleted) & needed
    assert our_rows(w.path) == w.expected()


def test_a_completed_log_compaction_counts_toward_the_compaction_trigger():
    """`CompactionUtils.getDeltaCommitsSinceLatestCompaction` counts the delta commit timeline, where a log
    compaction completes as `<t>.deltacommit`; a pending one is a `logcompaction` and does not count."""
    names = ["100.deltacommit", "200.compaction.requested", "200.commit", "300.deltacommit",
             "400.logcompaction.requested", "400.deltacommit", "500.logcompaction.requested"]
    assert compaction.delta_commits_since_compaction(Timeline.from_file_names(names)) == (2, "200")


def test_archival_counts_completed_log_compactions_as_the_trigger_does():
    """`CompactionUtils.getEarliestInstantToRetainForCompaction` takes the count and the instants from one delta
    commit timeline (`deltaCommitTimeline...limit(numDeltaCommits - maxDeltaCommits + 1)`), completed log
    compactions among them."""
    names = ["100.compaction.requested", "100.commit", "200.deltacommit", "300.logcompaction.requested",
             "300.deltacommit", "400.deltacommit", "500.logcompaction.requested", "500.deltacommit",
             "600.logcompaction.requested", "600.deltacommit"]
    settings = CompactionSettings(max_delta_commits=2)
    assert compaction.earliest_instant_to_retain(Timeline.from_file_names(names), settings) == "500"


def test_the_cleaner_counts_a_completed_log_compaction_as_the_commit_it_is_to_hudi():
    """`CleanerUtils.getEarliestCommitToRetain` over `getCommitsAndCompactionTimeline`, where a completed log
    compaction is a deltacommit; a pending one neither counts nor caps the earliest commit to retain."""
    names = ["100.deltacommit", "200.deltacommit", "300.logcompaction.requested", "300.deltacommit",
             "400.deltacommit", "500.logcompaction.requested"]
    settings = CleanSettings(commits_retained=2)
    assert cleaner.earliest_commit_to_retain(Timeline.from_file_names(names), settings).timestamp == "300"


def test_a_clean_reads_a_completed_log_compaction_as_the_deltacommit_it_is(tmp_path):
    """A log compaction completes as `<t>.deltacommit` (`LogCompactionExecutionHelper
    .transitionLogCompactionInflightToComplete`); the incremental clean reads its metadata for the partitions
    it wrote (`CleanPlanner.getPartitionsForInstants`), from that file."""
    assert Instant("300", Action.LOG_COMPACTION, State.COMPLETED).file_name == "300.deltacommit"
    w = ModelWriter(tmp_path / "t", buckets=1)
    settings = CleanSettings(commits_retained=2)
    for n in range(4):
        w.write([Op("k1", "chennai", n, False, {"fare": float(n)})])
    compaction.execute(w.table, compaction.schedule(w.table, CompactionSettings(), force=True))
    for n in range(4, 7):
        w.write([Op("k1", "chennai", n, False, {"fare": float(n)})])
    assert cleaner.clean(w.table, settings, force=True)
    instant, merged = request_log_compaction(w, "city=chennai")
    complete_log_compaction(w, "city=chennai", instant, merged)
    for n in range(7, 10):
        w.write([Op("k1", "chennai", n, False, {"fare": float(n)})])
        compaction.execute(w.table, compaction.schedule(w.table, CompactionSettings(), force=True))
    assert cleaner.clean(w.table, settings, force=True)  # incremental, across the log compaction
    assert our_rows(w.path) == w.expected()


def test_a_clean_plan_names_its_earliest_commit_to_retain_by_its_completed_action():
    """`CleanPlanActionExecutor` writes `new HoodieActionInstant(instant.requestedTime(), instant.getAction(), ...)`
    of the completed instant: a log compaction's is `deltacommit`, a 1.x clustering's `replacecommit`."""
    for instant, action in [(Instant("1", Action.LOG_COMPACTION, State.COMPLETED), "deltacommit"),
                            (Instant("1", Action.CLUSTERING, State.COMPLETED), "replacecommit"),
                            (Instant("1", Action.COMPACTION, State.COMPLETED), "commit"),
                            (Instant("1", Action.COMPACTION, State.INFLIGHT), "compaction")]:
        assert cleaner.ActionInstant.of(instant).action == action
