"""Archival: what leaves the active timeline and what stays, the archive files as Hudi reads them, and
tables that read and take writes as before. Plus the inline services keeping a long-running table
within its bounds."""

from __future__ import annotations

import io
import json
import random
from datetime import datetime, timezone

import fastavro
import pytest
from hudi_avsc import hudi_schema
from model import Op
from service_tables import CITIES, ModelWriter, hudi_rs_rows, options_for, our_rows, random_batch, to_table

from ingest import services
from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.log.log_block import BlockType, HeaderKey
from ingest.hudi.log.log_reader import iter_log_blocks
from ingest.hudi.services import archiver, cleaner, compaction
from ingest.hudi.timeline.instant import Action, State, instant_after
from ingest.hudi.timeline.timeline import read_instant
from ingest.write import index_bootstrap
from ingest.write.batch import LocalEngine, incoming_avro_schema, open_table
from ingest.write.commit import begin
from ingest.write.plan import build_plan

SMALL = {"hoodie.cleaner.commits.retained": "2", "hoodie.keep.min.commits": "4", "hoodie.keep.max.commits": "6",
         "hoodie.commits.archival.batch": "3"}


def small(**overrides: str) -> ServiceSettings:
    return ServiceSettings.from_mapping({**SMALL, **overrides})


def write_with_compactions(w: ModelWriter, n: int, every: int = 3, seed: int = 5, start: int = 0) -> None:
    rng = random.Random(seed)
    for i in range(start, start + n):
        w.write(random_batch(rng, i, keys=8, size=4))
        if (i + 1) % every == 0:
            compaction.execute(w.table, compaction.schedule(w.table, small().compaction, force=True))


def die_before_commit(w: ModelWriter, ops: list[Op]) -> str:
    options = options_for(w.path)
    data = to_table(ops)
    engine = LocalEngine()
    table = open_table(options, data.schema)
    prepared = engine.prepare(data, options, table.config.precombine_field)
    txn = begin(table, incoming_avro_schema(data.schema, options.table_name), "upsert")
    plan = build_plan(txn, options)
    index_bootstrap.ensure(table, txn.timeline, options, plan.ordering_type)
    engine.run(plan, prepared)
    return txn.instant_time


def test_archives_down_to_min_commits_as_a_prefix(tmp_path):
    path = tmp_path / "t"
    w = ModelWriter(path)
    write_with_compactions(w, 12)
    before = w.table.timeline()
    commits = before.completed(*archiver.COMMIT_ACTIONS)
    assert len(commits) > 6
    result = archiver.archive(w.table, small())
    after = w.table.timeline()
    kept = after.completed(*archiver.COMMIT_ACTIONS)
    # Down to keep.min.commits, unless the compaction trigger needs more (from the last compaction on).
    last_compaction = compaction.earliest_instant_to_retain(before, small().compaction)
    assert len(kept) == 4 or (len(kept) > 4 and kept[0].timestamp == last_compaction)
    assert result.archived and max(result.archived) < min(i.timestamp for i in after)
    assert result.archived == tuple(i.timestamp for i in before if i.timestamp <= max(result.archived))
    assert [i.timestamp for i in after] == [i.timestamp for i in before if i.timestamp > max(result.archived)]
    assert result.file == ".hoodie/archived/.commits_.archive.1_1-0-1"
    assert our_rows(path) == w.expected()
    assert sorted(hudi_rs_rows(path)) == sorted(w.expected())
    assert archiver.archive(w.table, small()).archived == ()  # within bounds now


def test_every_entry_carries_its_files_state_transition_time(tmp_path):
    """Hudi 0.14/0.15 `MetadataConversionUtils.createMetaWrapper` sets `stateTransitionTime` from the
    instant's file (`HoodieInstant(StoragePathInfo)`: `HoodieInstantTimeGenerator.formatDate` of its
    modification time). Hudi 1.x's upgrade reads it back as the completion time
    (`LegacyArchivedMetaEntryReader.readInstant`, `(String) record.get(STATE_TRANSITION_TIME)`), and its
    archived timeline calls `toString()` on that completion time (`ArchivedTimelineV2.readCommit`,
    `CompletionTimeQueryViewV2.readCompletionTime`): a missing one fails every reader after the upgrade."""
    w = ModelWriter(tmp_path / "t")
    write_with_compactions(w, 12)
    before = w.table.timeline()
    mtimes = {name: w.table.storage.modified(f".hoodie/{name}")
              for i in before for name in before.files_of(i)}
    result = archiver.archive(w.table, small())
    entries = archiver.read_archive_file(w.table.storage, result.file, hudi_schema("HoodieArchivedMetaEntry"))
    assert entries and len(entries) == sum(len(before.files_of(before.get(t))) for t in result.archived)
    for entry in entries:
        transition = entry["stateTransitionTime"]
        assert isinstance(transition, str) and len(transition) == 17 and transition > entry["commitTime"]
    # Each is its own file's modification time, in the table's timeline zone (UTC here).
    commit = next(e for e in entries if e["actionType"] == "deltacommit" and e["actionState"] == "COMPLETED")
    name = f"{commit['commitTime']}.deltacommit"
    assert commit["stateTransitionTime"] == max(
        datetime.fromtimestamp(mtimes[name], timezone.utc).strftime("%Y%m%d%H%M%S%f")[:17],
        instant_after(commit["commitTime"]))


def test_archive_file_is_hudis_log_of_archived_meta_entries(tmp_path):
    w = ModelWriter(tmp_path / "t")
    write_with_compactions(w, 12)
    result = archiver.archive(w.table, small())
    storage = w.table.storage
    blocks = list(iter_log_blocks(storage, result.file))
    assert blocks and all(b.block_type == BlockType.AVRO_DATA for b in blocks)
    assert all([k for k, _ in b.header] == [HeaderKey.SCHEMA] for b in blocks), "Hudi's header: the schema only"
    assert json.loads(blocks[0].schema)["name"] == "HoodieArchivedMetaEntry"
    entries = archiver.read_archive_file(storage, result.file)
    assert [len(archiver.read_archive_file(storage, result.file))] == [result.entries]
    assert all(len(e) <= 3 for e in [entries[i:i + 3] for i in range(0, len(entries), 3)])
    by_state = {(e["commitTime"], e["actionType"], e["actionState"]): e for e in entries}
    assert len(by_state) == len(entries)
    for ts in result.archived:
        states = {(a, s) for (t, a, s) in by_state if t == ts}
        assert states in ({("deltacommit", "REQUESTED"), ("deltacommit", "INFLIGHT"), ("deltacommit", "COMPLETED")},
                          {("compaction", "REQUESTED"), ("compaction", "INFLIGHT"), ("commit", "COMPLETED")})
    delta = next(e for e in entries if e["actionType"] == "deltacommit" and e["actionState"] == "COMPLETED")
    assert delta["hoodieCommitMetadata"]["partitionToWriteStats"] and delta["hoodieCommitMetadata"]["compacted"] is False
    stat = next(iter(delta["hoodieCommitMetadata"]["partitionToWriteStats"].values()))[0]
    assert stat["logFiles"] and stat["prevCommit"] and stat["runtimeStats"] is not None
    requested = next(e for e in entries if e["actionType"] == "deltacommit" and e["actionState"] == "REQUESTED")
    assert requested["hoodieCommitMetadata"]["partitionToWriteStats"] == {}
    assert requested["hoodieCommitMetadata"]["operationType"] == "UNKNOWN"
    plan = next(e for e in entries if e["actionType"] == "compaction" and e["actionState"] == "REQUESTED")
    assert plan["hoodieCompactionPlan"]["operations"]
    inflight = next(e for e in entries if e["actionType"] == "compaction" and e["actionState"] == "INFLIGHT"
                    and e["commitTime"] == plan["commitTime"])
    assert inflight["hoodieCompactionPlan"] == plan["hoodieCompactionPlan"]
    done = next(e for e in entries if e["actionType"] == "commit")
    assert done["hoodieCommitMetadata"]["compacted"] is True
    assert done["hoodieCommitMetadata"]["operationType"] == "COMPACT"


def test_inflight_compaction_entry_carries_the_plan(tmp_path):
    """Hudi 0.14/0.15 `MetadataConversionUtils.createMetaWrapper`, COMPACTION_ACTION: the entry gets
    `CompactionUtils.getCompactionPlan(metaClient, hoodieInstant.getTimestamp())` whatever the state,
    so the INFLIGHT entry (whose own file is empty) carries the plan read from the requested file."""
    w = ModelWriter(tmp_path / "t")
    write_with_compactions(w, 2, every=100)
    ts = compaction.schedule(w.table, small().compaction, force=True)
    compaction.execute(w.table, ts)
    storage = w.table.storage
    zone = w.table.timeline().zone
    requested = archiver.archived_entry(storage, f"{ts}.compaction.requested", zone)
    inflight = archiver.archived_entry(storage, f"{ts}.compaction.inflight", zone)
    assert requested["hoodieCompactionPlan"]["operations"]
    assert inflight["actionState"] == "INFLIGHT"
    assert inflight["hoodieCompactionPlan"] == requested["hoodieCompactionPlan"]


def test_entries_read_with_hudis_schema(tmp_path):
    w = ModelWriter(tmp_path / "t")
    rng = random.Random(3)
    w.write(random_batch(rng, 0))
    die_before_commit(w, random_batch(rng, 1))
    write_with_compactions(w, 6, start=2)        # the first of these rolls the failed write back
    cleaner.clean(w.table, small().clean, force=True)
    write_with_compactions(w, 6, start=8)
    cleaner.clean(w.table, small().clean, force=True)  # moves the cleaning horizon past the first clean
    write_with_compactions(w, 3, start=14)
    assert w.table.timeline().completed(Action.ROLLBACK) and len(w.table.timeline().completed(Action.CLEAN)) == 2
    rollback_file = read_instant(w.table.storage, w.table.timeline().completed(Action.ROLLBACK)[0])
    result = archiver.archive(w.table, small())
    kinds = {(e["actionType"], e["actionState"]) for e in archiver.read_archive_file(w.table.storage, result.file)}
    assert {("rollback", "COMPLETED"), ("clean", "COMPLETED"), ("clean", "REQUESTED")} <= kinds
    schema = hudi_schema("HoodieArchivedMetaEntry")
    if schema is None:
        # Without Hudi's files: the field list verified against HoodieArchivedMetaEntry.avsc (0.15).
        assert [f["name"] for f in avro_models.ARCHIVED_META_ENTRY["fields"]] == [
            "hoodieCommitMetadata", "hoodieCleanMetadata", "hoodieCompactionMetadata", "hoodieRollbackMetadata",
            "hoodieSavePointMetadata", "commitTime", "actionType", "version", "hoodieCompactionPlan",
            "hoodieCleanerPlan", "actionState", "hoodieReplaceCommitMetadata", "hoodieRequestedReplaceMetadata",
            "HoodieInflightReplaceMetadata", "hoodieIndexCommitMetadata", "stateTransitionTime"]
        schema = avro_models.ARCHIVED_META_ENTRY
    entries = archiver.read_archive_file(w.table.storage, result.file, schema)
    rollback = next(e for e in entries if e["actionType"] == "rollback" and e["actionState"] == "COMPLETED")
    assert rollback["hoodieRollbackMetadata"]["commitsRollback"]
    clean = next(e for e in entries if e["actionType"] == "clean" and e["actionState"] == "COMPLETED")
    assert clean["hoodieCleanMetadata"]["totalFilesDeleted"] >= 0
    assert next(e for e in entries if e["actionType"] == "clean" and e["actionState"] == "REQUESTED")[
        "hoodieCleanerPlan"]["policy"] == "KEEP_LATEST_COMMITS"
    # The `.rollback` file itself (written by the commit protocol) reads with Hudi's schema too.
    rollback_schema = hudi_schema("HoodieRollbackMetadata") or avro_models.ROLLBACK_METADATA
    meta = next(iter(fastavro.reader(io.BytesIO(rollback_file), reader_schema=fastavro.parse_schema(rollback_schema))))
    assert meta["instantsRollback"][0]["action"] == "deltacommit"
    assert meta == rollback["hoodieRollbackMetadata"]


def test_never_archives_past_a_pending_instant(tmp_path):
    w = ModelWriter(tmp_path / "t")
    write_with_compactions(w, 4)
    rng = random.Random(8)
    w.write(random_batch(rng, 10))
    pending = compaction.schedule(w.table, small().compaction, force=True)
    for i in range(11, 20):
        w.write(random_batch(rng, i))
    timeline = w.table.timeline()
    result = archiver.archive(w.table, small())
    assert all(ts < pending for ts in result.archived)
    before_pending = [c.timestamp for c in timeline.completed(*archiver.COMMIT_ACTIONS) if c.timestamp < pending]
    assert before_pending[-1] not in result.archived, "a completed commit before the pending one stays"
    assert w.table.timeline().get(pending).state is State.REQUESTED
    compaction.execute(w.table, pending)
    assert our_rows(tmp_path / "t") == w.expected()


def test_pending_clean_and_compaction_trigger_bound_archival(tmp_path):
    w = ModelWriter(tmp_path / "t")
    write_with_compactions(w, 6)
    pending_clean = cleaner.schedule(w.table, small().clean, force=True)
    assert pending_clean is not None
    write_with_compactions(w, 9, start=6)
    result = archiver.archive(w.table, small())
    assert all(ts < pending_clean for ts in result.archived)
    cleaner.clean(w.table, small().clean)
    horizon = archiver._LastClean.read(w.table, w.table.timeline()).earliest_commit_to_retain
    write_with_compactions(w, 6, start=15)
    archiver.archive(w.table, small())
    assert w.table.timeline().get(horizon) is not None, "the last clean's horizon stays for incremental cleaning"
    # Without compactions, enough delta commits stay for the NUM_COMMITS trigger to fire.
    w2 = ModelWriter(tmp_path / "u")
    rng = random.Random(1)
    for i in range(12):
        w2.write(random_batch(rng, i))
    settings = small(**{"hoodie.compact.inline.max.delta.commits": "8"})
    archiver.archive(w2.table, settings)
    assert len(w2.table.timeline().completed(Action.DELTA_COMMIT)) == 8


def test_writer_continues_after_archival_without_duplicates(tmp_path):
    path = tmp_path / "t"
    w = ModelWriter(path)
    rng = random.Random(12)
    for i in range(12):
        w.write(random_batch(rng, i, keys=6))
    settings = small(**{"hoodie.compact.inline.max.delta.commits": "2"})
    assert archiver.archive(w.table, settings).archived
    first = w.table.timeline().instants[0].timestamp
    # Update every key written before the archived horizon: the key index must still know them.
    for i in range(12, 16):
        w.write([Op(f"key-{k}", CITIES[k % 3], i, False, {"fare": float(i)}) for k in range(6)])
    assert our_rows(path) == w.expected()
    rs = hudi_rs_rows(path)
    assert sorted(rs) == sorted(w.expected()) and len(rs) == len(set(rs))
    assert w.table.timeline().instants[0].timestamp == first


def test_archived_before_timeline_start_counts_as_committed(tmp_path):
    path = tmp_path / "t"
    w = ModelWriter(path)
    rng = random.Random(2)
    for i in range(10):
        w.write(random_batch(rng, i))  # log files whose slices began at instants about to be archived
    archiver.archive(w.table, small(**{"hoodie.compact.inline.max.delta.commits": "1"}))
    timeline = w.table.timeline()
    first = timeline.first_write_timestamp
    old = [s for s in w.table.view().latest_file_slices() if s.base_instant < first]
    assert old, "some slices began before the active timeline"
    assert our_rows(path) == w.expected()


@pytest.mark.slow
def test_inline_services_keep_a_long_stream_within_bounds(tmp_path):
    path = tmp_path / "t"
    w = ModelWriter(path, buckets=2)
    settings = ServiceSettings.from_mapping({"hoodie.compact.inline": "true"})
    rng = random.Random(21)
    sizes = []
    for i in range(60):
        w.write(random_batch(rng, i, keys=20, size=6))
        run = services.run_inline_services(w.table, settings)
        timeline = w.table.timeline()
        commits = timeline.completed(*archiver.COMMIT_ACTIONS)
        assert len(commits) <= settings.archive.max_commits + 1, f"batch {i}: {len(commits)} commits active"
        slices = [len(g.slices) for g in w.table.view().file_groups()]
        sizes.append((len(timeline), max(slices)))
        if run.compacted:
            assert run.scheduled_compaction in run.compacted
    assert max(n for _, n in sizes) <= 12, "cleaning bounds the slices kept per file group"
    assert max(n for n, _ in sizes[30:]) <= 2 * settings.archive.max_commits
    assert archiver.read_archived_timeline(w.table.storage)
    assert our_rows(path) == w.expected()
    rs = hudi_rs_rows(path)
    assert sorted(rs) == sorted(w.expected()) and len(rs) == len(set(rs))


# -- Hudi's merge of small archive files (0.14/0.15 `HoodieTimelineArchiver`, `hoodie.archive.merge.enable`) --

# hudi-common/src/main/avro/HoodieMergeArchiveFilePlan.avsc
MERGE_PLAN_AVSC = {"namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieMergeArchiveFilePlan",
                   "fields": [{"name": "candidate", "type": ["null", {"type": "array", "items": "string"}], "default": None},
                              {"name": "mergedArchiveFileName", "type": ["null", "string"], "default": None}]}
PLAN = ".hoodie/archived/mergeArchivePlan"


def write_merge_plan(storage, candidates: list[str], merged_name: str) -> None:
    """`buildArchiveMergePlan`: candidates by full path (`fs.getPath().toString()`), the merged file by name."""
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(MERGE_PLAN_AVSC),
                    [{"candidate": [f"file:{storage.full_path(c)}" for c in candidates],
                      "mergedArchiveFileName": merged_name}])
    storage.write(PLAN, buf.getvalue())


def hudi_verify_last_merge(storage) -> None:
    """`HoodieTimelineArchiver.verifyLastMergeArchiveFilesIfNecessary`, the first step of Hudi's next archival."""
    if not storage.exists(PLAN):
        return
    try:
        plan = next(iter(fastavro.reader(io.BytesIO(storage.read(PLAN)), fastavro.parse_schema(MERGE_PLAN_AVSC))))
    except Exception:
        storage.delete(PLAN)  # "Reading partial plan file"
        return
    merged = f".hoodie/archived/{plan['mergedArchiveFileName']}"
    candidates = [storage.relative(c) for c in plan["candidate"]]
    if all(storage.exists(c) for c in candidates):
        if storage.exists(merged):
            storage.delete(merged)  # "Revert last action by deleting mergedArchiveFile if existed"
    elif storage.exists(merged):
        for c in candidates:
            storage.delete(c)
    storage.delete(PLAN)


def archived_twice(tmp_path) -> tuple[ModelWriter, set[str]]:
    """A table archived twice (two archive files); the instants archived."""
    w = ModelWriter(tmp_path / "t")
    write_with_compactions(w, 12)
    first = archiver.archive(w.table, small())
    write_with_compactions(w, 9, seed=6, start=12)
    second = archiver.archive(w.table, small())
    assert first.archived and second.archived
    assert [p for _, p in archiver.archive_files(w.table.storage)] == [
        ".hoodie/archived/.commits_.archive.1_1-0-1", ".hoodie/archived/.commits_.archive.2_1-0-1"]
    return w, set(first.archived) | set(second.archived)


def assert_archived_once(storage, instants: set[str]) -> None:
    entries = archiver.read_archived_timeline(storage)
    keys = [archiver._entry_key(e) for e in entries]
    assert len(keys) == len(set(keys)), "every instant and state read once"
    assert {e["commitTime"] for e in entries} >= instants


def test_archival_settles_hudis_interrupted_merge_before_naming_its_file(tmp_path):
    """Hudi's merge wrote its plan (candidate `.1`, merged `.2`) and died before the merged file appeared.
    ingest's next file would be `.2`: left with the plan, Hudi's next archival would delete it as the
    merge's partial output (`verifyLastMergeArchiveFilesIfNecessary`), losing instants already gone from
    the active timeline. ingest settles the plan first, as Hudi would."""
    w = ModelWriter(tmp_path / "t")
    write_with_compactions(w, 12)
    first = archiver.archive(w.table, small())
    assert first.file == ".hoodie/archived/.commits_.archive.1_1-0-1"
    write_with_compactions(w, 9, seed=6, start=12)
    storage = w.table.storage
    write_merge_plan(storage, [first.file], ".commits_.archive.2_1-0-1")
    second = archiver.archive(w.table, small())
    assert second.archived and second.file
    plan_left = storage.exists(PLAN)
    hudi_verify_last_merge(storage)  # what Hudi's next archival does first
    assert storage.exists(second.file), "Hudi took ingest's archive file for its merge's and deleted it"
    assert_archived_once(storage, set(first.archived) | set(second.archived))
    assert not plan_left
    assert our_rows(w.path) == w.expected()


def test_keeps_an_archive_file_named_as_the_plans_merge_that_holds_more(tmp_path):
    """A table an earlier ingest archived into `.2` while Hudi's plan (candidate `.1`, merged `.2`) was
    left: `.2` holds instants `.1` does not, so it is no merge's output. Settling keeps it and deletes
    the plan, where Hudi's `verifyLastMergeArchiveFilesIfNecessary` would have deleted it."""
    w, instants = archived_twice(tmp_path)
    storage = w.table.storage
    files = [p for _, p in archiver.archive_files(storage)]
    write_merge_plan(storage, files[:1], files[1].rsplit("/", 1)[-1])
    assert archiver.settle_interrupted_merge(storage) == [(1, files[0]), (2, files[1])]
    assert not storage.exists(PLAN)
    assert_archived_once(storage, instants)


@pytest.mark.parametrize("state", ["merged whole", "merged torn", "candidate deleted", "plan torn"])
def test_reads_and_settles_a_merge_cut_short_as_hudi(tmp_path, state):
    """`HoodieArchivedTimeline.loadInstants` reads every archive file into a set of instants, so a
    merge's candidates and merged file read together give each instant once, and skips a file that
    does not decode if it is the plan's merged file. Then `settle_interrupted_merge` does what Hudi's
    next archival does first (`verifyLastMergeArchiveFilesIfNecessary`)."""
    w, instants = archived_twice(tmp_path)
    storage = w.table.storage
    files = [p for _, p in archiver.archive_files(storage)]
    merged = ".hoodie/archived/.commits_.archive.3_1-0-1"
    whole = b"".join(storage.read(p) for p in files)  # `mergeArchiveFiles`: the candidates' blocks, in order
    if state == "merged torn":  # records that do not decode, in the merge's output
        end = len(storage.read(files[0]))
        storage.write(merged, whole[:end - 60] + b"\xff" * 20 + whole[end - 40:])
        with pytest.raises(Exception, match="does not decode"):
            archiver.read_archive_file(storage, merged)
    elif state != "plan torn":
        storage.write(merged, whole)
    if state == "candidate deleted":
        storage.delete(files[0])
    write_merge_plan(storage, files, merged.rsplit("/", 1)[-1])
    if state == "plan torn":
        storage.write(PLAN, storage.read(PLAN)[:30])
    assert_archived_once(storage, instants)
    assert len(archiver.archived_commit_metadata(w.table)) == len(archiver.read_archived_timeline(storage))

    archiver.settle_interrupted_merge(storage)
    assert not storage.exists(PLAN)
    left = [p for _, p in archiver.archive_files(storage)]
    assert left == ([merged] if state == "candidate deleted" else files)
    assert_archived_once(storage, instants)


def test_archive_files_without_a_write_token_are_read_and_numbered(tmp_path):
    """`HoodieArchivedTimeline.ARCHIVE_FILE_PATTERN` (`^\\.commits_\\.archive\\.([0-9]+).*`) and its glob
    `.commits_.archive*` take `.commits_.archive.1` (no write token, as older Hudi releases named them)
    as version 1: its instants are archived ones, and the next file is version 2."""
    w = ModelWriter(tmp_path / "t")
    write_with_compactions(w, 12)
    storage = w.table.storage
    first = archiver.archive(w.table, small())
    old_name = ".hoodie/archived/.commits_.archive.1"
    storage.write(old_name, storage.read(first.file))
    storage.delete(first.file)
    assert archiver.archive_files(storage) == [(1, old_name)]
    assert_archived_once(storage, set(first.archived))
    write_with_compactions(w, 9, seed=6, start=12)
    second = archiver.archive(w.table, small())
    assert second.file == ".hoodie/archived/.commits_.archive.2_1-0-1"
    assert_archived_once(storage, set(first.archived) | set(second.archived))
