"""`ingest upgrade PATH --to 8|9`: a version-6 table upgraded as Hudi 1.x's upgrade handlers do, then
continued at the new version, read by hudi-rs and by us as the reference model says.

Each test's docstring names the Hudi (Java, release 1.2 / master) class and method whose rule it checks.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import avro.schema
import hudi_invariants
import pytest
from service_tables import ModelWriter, hudi_rs_rows, our_rows, random_batch
from test_write_versions import crash_writer, hudi_rs_instant

from ingest import services
from ingest.cli import main
from ingest.errors import TimelineError
from ingest.faults import CRASH_EXIT_CODE
from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.config.table_config import TableConfig
from ingest.hudi.config.table_version import TableVersion
from ingest.hudi.services import lsm_archival, upgrade_properties
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import AVRO_MAGIC, decode_metadata, upgraded_metadata
from ingest.hudi.timeline.instant import Instant, format_instant
from ingest.upgrade import upgrade

hudi = pytest.importorskip("hudi")

DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"


def v6_table(path: Path, seed: int = 7) -> ModelWriter:
    """A version-6 table as ingest writes it: deltacommits of upserts, deletes and inserts over three
    partitions, a compaction, a clean, then more deltacommits (log files in the latest slices) and a
    write that died after its data files (an inflight deltacommit to roll back)."""
    w = ModelWriter(path)
    rng = random.Random(seed)
    for n in range(1, 5):
        w.write(random_batch(rng, n, keys=12, size=7))
    assert services.compact(str(path), ServiceSettings()).executed
    for n in range(5, 7):
        w.write(random_batch(rng, n, keys=12, size=7))
    assert services.clean(str(path), ServiceSettings.from_mapping({"hoodie.cleaner.commits.retained": "1"}))
    for n in range(7, 9):
        w.write(random_batch(rng, n, keys=14, size=7))
    crash_writer(str(path), 6, random_batch(rng, 50, keys=14, size=5), "after_data_write")
    return w


def legacy_files(path: Path) -> dict[str, tuple[float, bytes]]:
    """Layout-1 instant files under `.hoodie/`: their modification times and contents."""
    return {p.name: (p.stat().st_mtime, p.read_bytes()) for p in (path / ".hoodie").iterdir()
            if p.is_file() and Instant.parse(p.name)}


def timeline_names(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir() if p.is_file())


def props(path: Path) -> dict[str, str]:
    return dict(HudiTable.open(str(path)).config.props)


def continue_writing(w: ModelWriter, seed: int, rounds: int = 3) -> ModelWriter:
    """More upserts, deletes and inserts into the upgraded table (a new writer: the table is reopened)."""
    after = ModelWriter(w.path)
    after.model = w.model
    rng = random.Random(seed)
    for n in range(100, 100 + rounds):
        after.write(random_batch(rng, n, keys=16, size=7))
    return after


@pytest.mark.parametrize("target", [9, 8])
def test_v6_table_upgraded_then_continued_reads_as_the_model(tmp_path, target, capsys):
    """`UpgradeDowngrade.run` to `target` through `SevenToEightUpgradeHandler` (and `EightToNineUpgradeHandler`):
    failed writes rolled back and every file slice with log files compacted first
    (`UpgradeDowngradeUtils.rollbackFailedWritesAndCompact`); each instant file moved to `.hoodie/timeline/`,
    completed ones renamed `<requested>_<completion>.<action>` with the completion time taken from the
    file's modification time (`InstantGeneratorV1.createNewInstant(StoragePathInfo)`), commit and
    deltacommit files of every state rewritten as Avro `HoodieCommitMetadata` (`rewriteTimelineV1InstantFileToV2Format`,
    `CommitMetadataSerDeV2`; an empty requested file becomes an empty commit of operation UNKNOWN);
    properties as the handlers set them (`upgradeMergeMode`, `setInitialVersion`, `upgradeKeyGeneratorType`,
    `HoodieTableConfig.setTableVersion`; at 9 `reconcileMergeModeConfig`, `reconcilePayloadClassConfig`,
    `reconcileOrderingFieldsConfig`). The table, continued at the new version, reads as the model with
    hudi-rs and with ours, every timeline file name parses with hudi-rs's rules, and the invariants hold."""
    w = v6_table(tmp_path / "t")
    path = Path(w.path)
    before = legacy_files(path)
    failed = [n for n in before if n.endswith(".deltacommit.inflight") and n.replace(".inflight", "") not in before]
    assert len(failed) == 1
    assert main(["upgrade", str(path), "--to", str(target)]) == 0
    out = capsys.readouterr().out
    assert f"from table version 6 to {target}" in out and failed[0].split(".")[0] in out

    p = props(path)
    assert (p["hoodie.table.version"], p["hoodie.timeline.layout.version"], p["hoodie.timeline.path"]) == \
        (str(target), "2", "timeline")
    assert (p["hoodie.table.initial.version"], p["hoodie.table.keygenerator.type"]) == ("6", "SIMPLE")
    assert p["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    if target == 8:
        assert p["hoodie.record.merge.strategy.id"] == EVENT_TIME_STRATEGY
        assert (p["hoodie.compaction.payload.class"], p["hoodie.table.precombine.field"]) == (DEFAULT_PAYLOAD, "ts")
    else:
        for gone in ("hoodie.record.merge.strategy.id", "hoodie.compaction.payload.class",
                     "hoodie.table.precombine.field"):
            assert gone not in p, gone
        assert (p["hoodie.table.legacy.payload.class"], p["hoodie.table.ordering.fields"]) == (DEFAULT_PAYLOAD, "ts")

    assert not legacy_files(path), "no instant file is left under .hoodie/"
    assert (path / ".hoodie" / "timeline" / "history").is_dir()
    moved = {}
    for name in timeline_names(path):
        requested, completed, action, state = hudi_rs_instant(name)
        moved[name] = (requested, completed, action, state)
    failed_ts = failed[0].split(".")[0]
    kept = {n: m for n, m in before.items() if not n.startswith(failed_ts)}
    for old, (mtime, content) in kept.items():
        instant = Instant.parse(old)
        expected = old
        if instant.is_completed:
            done = format_instant(datetime.fromtimestamp(mtime, timezone.utc))
            expected = old.replace(instant.timestamp, f"{instant.timestamp}_{done}", 1)
        assert expected in moved, (old, expected)
        data = (path / ".hoodie" / "timeline" / expected).read_bytes()
        if instant.action.value in ("commit", "deltacommit"):
            assert data.startswith(AVRO_MAGIC), expected
            new = decode_metadata(data)
            if instant.state.value == "REQUESTED":
                assert new["operationType"] == "UNKNOWN" and not new["partitionToWriteStats"]
            else:
                old_stats = decode_metadata(content)["partitionToWriteStats"]
                assert {p: [s["fileId"] for s in v] for p, v in new["partitionToWriteStats"].items()} == \
                    {p: [s["fileId"] for s in v] for p, v in old_stats.items()}, expected
        else:
            assert data == content, expected  # plans and metadata of other actions: renamed as they are
    assert not any(n.startswith(failed_ts) for n in moved), "the failed write was rolled back first"
    new_instants = {m[0] for m in moved.values()} - {Instant.parse(n).timestamp for n in before}
    assert len(new_instants) == 2  # the rollback and the compaction of every slice with logs

    expected_rows = w.expected()
    assert sorted(hudi_rs_rows(path)) == sorted(expected_rows)
    assert our_rows(path) == expected_rows
    after = continue_writing(w, seed=target)
    assert sorted(hudi_rs_rows(path)) == sorted(after.expected())
    assert our_rows(path) == after.expected()
    assert hudi_invariants.check(path, bucket_index=True)["schemas"] > 0
    for name in timeline_names(path):
        hudi_rs_instant(name)


# -- a crash at each step -------------------------------------------------------------------------------


def _normalized(names: list[str], known: set[str]) -> list[str]:
    """Timeline file names with the instants the upgrade itself created (its rollback, its compaction)
    named by their rank, and their completion times by that rank too: two runs create them at
    different times."""
    created = sorted({n.split(".")[0].split("_")[0] for n in names} - known)
    rank = {t: f"NEW{i}" for i, t in enumerate(created)}
    out = []
    for name in names:
        head, dot, rest = name.partition(".")
        requested, underscore, completed = head.partition("_")
        if requested in rank:
            head = rank[requested] + (f"_{rank[requested]}-done" if underscore else "")
        out.append(head + dot + rest)
    return sorted(out)


@pytest.fixture(scope="module")
def upgraded_once(tmp_path_factory):
    """One version-6 table (kept as it is) and the same table upgraded to 9 without interruption."""
    root = tmp_path_factory.mktemp("upgrade")
    w = v6_table(root / "base")
    reference = root / "reference"
    shutil.copytree(w.path, reference)  # copy2: modification times, and so completion times, kept
    upgrade(str(reference), 9)
    return w, reference


UPGRADE_STEPS = ["upgrade_rolled_back", "mid_compaction", "upgrade_compacted", "upgrade_mid_timeline",
                 "upgrade_timeline_moved", "mid_properties"]


@pytest.mark.parametrize("crash_at", UPGRADE_STEPS)
def test_a_crash_at_each_step_then_a_rerun_gives_the_uninterrupted_table(tmp_path, upgraded_once, crash_at):
    """`UpgradeDowngrade.run` writes `hoodie.properties` last (`HoodieTableConfig.updateAndDeleteProps`,
    the backup protocol of `HoodieTableConfig.modify`), after the rollback and compaction
    (`rollbackFailedWritesAndCompact`) and the timeline move (`SevenToEightUpgradeHandler.upgrade`): the
    upgrade killed at `crash_at` leaves a version-6 table (a half-moved timeline is refused, not misread),
    and running `ingest upgrade` again gives the table the uninterrupted upgrade gives: the same timeline
    file names (the instants the upgrade creates compared by rank), the same properties, the same rows
    for hudi-rs and for us."""
    w, reference = upgraded_once
    path = tmp_path / "t"
    shutil.copytree(w.path, path)
    done = subprocess.run([sys.executable, "-m", "ingest", "upgrade", str(path), "--to", "9"],
                          env={**os.environ, "INGEST_CRASH_AT": crash_at}, capture_output=True, text=True, timeout=300)
    assert done.returncode == CRASH_EXIT_CODE, done.stderr
    table = HudiTable.open(str(path))
    assert table.version.number == 6
    if crash_at in ("upgrade_mid_timeline", "upgrade_timeline_moved", "mid_properties"):
        with pytest.raises(TimelineError, match="run `ingest upgrade` again"):
            table.timeline()

    assert main(["upgrade", str(path), "--to", "9"]) == 0
    known = {Instant.parse(n).timestamp for n in legacy_files(Path(w.path))}
    assert _normalized(timeline_names(path), known) == _normalized(timeline_names(reference), known)
    strip = ("hoodie.table.checksum",)
    assert {k: v for k, v in props(path).items() if k not in strip} == \
        {k: v for k, v in props(reference).items() if k not in strip}
    assert sorted(hudi_rs_rows(path)) == sorted(hudi_rs_rows(reference)) == sorted(w.expected())
    assert our_rows(path) == w.expected()
    assert hudi_invariants.check(path, bucket_index=True)["schemas"] > 0


# -- Hudi-written tables ------------------------------------------------------------------------------------

COLUMNS = ("uuid", "rider", "driver", "fare", "city", "ts")


def _hudi_rs(path: Path) -> list[tuple]:
    table = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    return sorted(tuple(r[c] for c in COLUMNS) for batch in table.read() for r in batch.to_pylist())


@pytest.mark.parametrize("name", ["v6_trips_8i1u", "v6_trips_8i3d"])
def test_hudi_written_v6_tables_upgraded_to_9_read_as_before(hudi_table_copy, name):
    """`SevenToEightUpgradeHandler` and `EightToNineUpgradeHandler` on tables Hudi 0.14/0.15 wrote (an
    update in a log file, deletes in a DELETE block): compacted, moved, properties rewritten (their
    OverwriteWithLatestAvroPayload with a precombine field becomes event-time ordering:
    `SevenToEightUpgradeHandler.upgradeMergeMode`; the legacy payload class is the one on storage,
    `reconcilePayloadClassConfig` reading the config as it was). hudi-rs reads the same rows as before."""
    path = hudi_table_copy(name)
    before = _hudi_rs(path)
    assert before
    assert main(["upgrade", str(path), "--to", "9"]) == 0
    p = props(path)
    assert p["hoodie.table.version"] == "9" and p["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    assert p["hoodie.table.legacy.payload.class"] == "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
    assert _hudi_rs(path) == before
    assert sorted(tuple(r[c] for c in COLUMNS) for r in
                  read_snapshot(HudiTable.open(str(path))).to_pylist()) == before
    for n in timeline_names(path):
        hudi_rs_instant(n)
    hudi_invariants.check(path, bucket_index=False)


def test_a_completion_time_is_never_before_its_instant(hudi_table_copy):
    """`InstantGeneratorV1.createNewInstant(StoragePathInfo)` takes a completed instant's completion time
    from its file's modification time; `InstantComparator` (and hudi-rs's timeline) order a completion
    after its request. A file whose modification time is earlier than its instant (a timeline written in
    a zone ahead of ours, a clock set back) completes a millisecond after its instant."""
    path = hudi_table_copy("v6_trips_8i1u")
    old = sorted((path / ".hoodie").glob("*.deltacommit"))[-1]
    os.utime(old, (946684800, 946684800))  # 2000-01-01, before every instant of the table
    assert main(["upgrade", str(path), "--to", "9"]) == 0
    stem = old.name.split(".")[0]
    moved = [n for n in timeline_names(path) if n.startswith(stem + "_") and n.endswith(".deltacommit")]
    assert moved == [f"{stem}_{int(stem) + 1}.deltacommit"]
    for n in timeline_names(path):
        hudi_rs_instant(n)
    hudi_invariants.check(path, bucket_index=False)


# -- nothing to do, and refusals -----------------------------------------------------------------------------


def test_same_version_is_a_no_op_and_a_downgrade_is_refused(tmp_path, capsys):
    """`UpgradeDowngrade.needsUpgradeOrDowngrade`: nothing to do at the table's own version; a lower
    version is a downgrade, which ingest refuses (Hudi runs `NineToEightDowngradeHandler` there)."""
    w = ModelWriter(tmp_path / "t", version=9)
    w.write(random_batch(random.Random(1), 1, keys=6, size=4))
    path = Path(w.path)
    files = sorted(str(p.relative_to(path)) for p in path.rglob("*") if ".aux" not in p.parts)
    assert main(["upgrade", str(path), "--to", "9"]) == 0
    assert capsys.readouterr().out.strip() == f"{path} is already at table version 9; nothing to do"
    assert main(["upgrade", str(path), "--to", "8"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not downgrade" in err[0]
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*") if ".aux" not in p.parts) == files


def test_archived_instants_are_converted_into_the_lsm_history(tmp_path):
    """`SevenToEightUpgradeHandler.upgradeToLSMTimeline` writes every completed instant of the version-6
    archived timeline (`LegacyArchivedMetaEntryReader`) into the LSM history before the properties change;
    `.hoodie/archived` stays where it is. After the upgrade every archived instant is in the history once,
    none is on the active timeline, and hudi-rs and our reader read the model's rows, also after more
    writes at 9. A crash right after the conversion, then a re-run, gives the same history."""
    w = ModelWriter(tmp_path / "t")
    rng = random.Random(2)
    for n in range(1, 8):
        w.write(random_batch(rng, n, keys=8, size=4))
    settings = ServiceSettings.from_mapping({"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                                             "hoodie.cleaner.commits.retained": "1"})
    archived = services.archive(w.path, settings).archived
    assert archived
    crashed = tmp_path / "crashed"
    shutil.copytree(w.path, crashed)

    assert main(["upgrade", w.path, "--to", "9"]) == 0
    table = HudiTable.open(w.path)
    history = [r["instantTime"] for r in lsm_archival.history_of(table.storage, table.layout).read()]
    assert sorted(history) == sorted(set(history)) and set(archived) <= set(history)
    assert not set(history) & {i.timestamp for i in table.timeline().instants}
    assert any((Path(w.path) / ".hoodie" / "archived").iterdir())
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())
    assert our_rows(w.path) == w.expected()
    w.write(random_batch(rng, 8, keys=8, size=4))
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())
    assert hudi_invariants.check(Path(w.path), bucket_index=True)["schemas"] > 0

    done = subprocess.run([sys.executable, "-m", "ingest", "upgrade", str(crashed), "--to", "9"],
                          env={**os.environ, "INGEST_CRASH_AT": "upgrade_archive_converted"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == CRASH_EXIT_CODE, done.stderr
    assert main(["upgrade", str(crashed), "--to", "9"]) == 0
    again = HudiTable.open(str(crashed))
    assert [r["instantTime"] for r in lsm_archival.history_of(again.storage, again.layout).read()] == history


def test_eight_to_nine_after_eight_writes_compacts_or_refuses(tmp_path, capsys):
    """From 8, `--to 9` runs `EightToNineUpgradeHandler` after `rollbackFailedWritesAndCompact` (the (8, 9)
    pair is in `UPGRADE_HANDLERS_REQUIRING_ROLLBACK_AND_COMPACT`). Straight after a 6-to-8 upgrade nothing
    is left to compact and the properties end as a 6-to-9 upgrade leaves them; after writes at 8, the
    upgrade compacts where ingest compacts at 8, and is refused in one line, changing nothing, where not."""
    w = ModelWriter(tmp_path / "t")
    rng = random.Random(4)
    for n in range(1, 4):
        w.write(random_batch(rng, n, keys=10, size=6))
    one_step = tmp_path / "one"
    shutil.copytree(w.path, one_step)
    assert main(["upgrade", str(one_step), "--to", "9"]) == 0
    assert main(["upgrade", w.path, "--to", "8"]) == 0
    assert main(["upgrade", w.path, "--to", "9"]) == 0
    strip = ("hoodie.table.checksum",)
    assert {k: v for k, v in props(Path(w.path)).items() if k not in strip} == \
        {k: v for k, v in props(one_step).items() if k not in strip}
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())

    at8 = ModelWriter(tmp_path / "e")
    for n in range(1, 3):
        at8.write(random_batch(rng, n, keys=10, size=6))
    assert main(["upgrade", at8.path, "--to", "8"]) == 0
    at8 = continue_writing(at8, seed=8, rounds=2)
    capsys.readouterr()
    code = main(["upgrade", at8.path, "--to", "9"])
    if code == 0:
        assert props(Path(at8.path))["hoodie.table.version"] == "9"
        assert not any(g.latest_slice.log_files for g in HudiTable.open(at8.path).view().file_groups())
    else:
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "compact" in err[0] and "ingest does not compact at version 8" in err[0]
        assert props(Path(at8.path))["hoodie.table.version"] == "8"
    assert sorted(hudi_rs_rows(at8.path)) == sorted(at8.expected())


def test_with_hudis_occ_settings_the_upgrade_holds_hudis_lock_too(tmp_path, capsys):
    """`BaseHoodieWriteClient.tryUpgrade` "is called within a lock": a Hudi writer upgrades the table holding
    the table lock, which `FileSystemBasedLockProvider` keeps as `.hoodie/lock` (`tryLock` fails while a
    fresh one exists). With Hudi's optimistic concurrency settings the upgrade takes that lock beside
    ingest's lease: refused in one line, the table untouched, while a Hudi writer holds it; done, and the
    lock file released, once it is free."""
    w = ModelWriter(tmp_path / "t")
    w.write(random_batch(random.Random(3), 1, keys=6, size=4))
    lock_file = Path(w.path) / ".hoodie" / "lock"
    lock_file.write_text('{\n  "lockCreateTime" : "2026-11-25 01:00:00.000",\n  "lockThreadName" : "main"\n}')
    occ = ["--set", "hudi.hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL",
           "--set", "hudi.hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"]
    assert main(["upgrade", w.path, "--to", "9", *occ]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Hudi's table lock" in err[0], err
    assert props(Path(w.path))["hoodie.table.version"] == "6" and legacy_files(Path(w.path))
    lock_file.unlink()  # the Hudi writer's unlock
    assert main(["upgrade", w.path, "--to", "9", *occ]) == 0
    assert props(Path(w.path))["hoodie.table.version"] == "9" and not lock_file.exists()
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())


OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
EVENT_TIME_PAYLOAD = "org.apache.hudi.common.model.EventTimeAvroPayload"
COMMIT_TIME_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"


@pytest.mark.parametrize(("payload", "precombine", "mode", "payload_at_8", "strategy_at_8"), [
    (DEFAULT_PAYLOAD, "ts", "EVENT_TIME_ORDERING", DEFAULT_PAYLOAD, EVENT_TIME_STRATEGY),
    (OVERWRITE_PAYLOAD, "ts", "EVENT_TIME_ORDERING", DEFAULT_PAYLOAD, EVENT_TIME_STRATEGY),
    (OVERWRITE_PAYLOAD, None, "COMMIT_TIME_ORDERING", OVERWRITE_PAYLOAD, COMMIT_TIME_STRATEGY),
    (DEFAULT_PAYLOAD, None, "EVENT_TIME_ORDERING", DEFAULT_PAYLOAD, EVENT_TIME_STRATEGY),
    (EVENT_TIME_PAYLOAD, "ts", "EVENT_TIME_ORDERING", DEFAULT_PAYLOAD, EVENT_TIME_STRATEGY),
])
def test_merge_properties_of_a_v6_config_at_8_and_9(payload, precombine, mode, payload_at_8, strategy_at_8):
    """`SevenToEightUpgradeHandler.upgradeMergeMode` on a Merge-On-Read table: with a precombine field,
    DefaultHoodieRecordPayload and event-time ordering whatever the payload; without one, by payload
    (`setEventTimeOrCommitTimeBasedOnPayload`). To 9 in the same run, `EightToNineUpgradeHandler` reads the
    config as stored: the legacy payload class is the stored one (`reconcilePayloadClassConfig`), the
    strategy id is removed (`reconcileMergeModeConfig`), the precombine field becomes the ordering fields
    (`reconcileOrderingFieldsConfig`), and the removals win over the 7-to-8 settings
    (`HoodieTableConfig.updateAndDeleteProps`).

    `UpgradeDowngrade.run` sets every key a handler sets under its alternatives too ("add alternate keys"),
    and removes the main key only: `hoodie.compaction.record.merger.strategy`, the alternative of
    `RECORD_MERGE_STRATEGY_ID`, holds the strategy the upgrade set at 8 and still at 9. Left at version 6's
    value (event time on every table), a commit-time table downgraded to 8 by Hudi's
    `NineToEightDowngradeHandler` fails `inferMergingConfigsForPreV9Table` ("Configured payload class ...
    and record merge strategy ID ... conflict with each other")."""
    stored = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "6",
              "hoodie.compaction.record.merger.strategy": EVENT_TIME_STRATEGY,  # what every v6 table holds
              "hoodie.compaction.payload.class": payload,
              "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleAvroKeyGenerator"}
    if precombine:
        stored["hoodie.table.precombine.field"] = precombine
    config = TableConfig(stored)
    at8 = upgrade_properties.changes(config, TableVersion.of(8)).applied_to(stored)
    assert (at8["hoodie.record.merge.mode"], at8["hoodie.compaction.payload.class"],
            at8["hoodie.record.merge.strategy.id"]) == (mode, payload_at_8, strategy_at_8)
    assert (at8["hoodie.table.initial.version"], at8["hoodie.table.keygenerator.type"]) == ("6", "SIMPLE_AVRO")
    assert at8["hoodie.compaction.record.merger.strategy"] == strategy_at_8
    at9 = upgrade_properties.changes(config, TableVersion.of(9)).applied_to(stored)
    assert at9["hoodie.record.merge.mode"] == mode and at9["hoodie.table.legacy.payload.class"] == payload
    assert at9["hoodie.compaction.record.merger.strategy"] == strategy_at_8
    for gone in ("hoodie.record.merge.strategy.id", "hoodie.compaction.payload.class", "hoodie.table.precombine.field"):
        assert gone not in at9, gone
    assert at9.get("hoodie.table.ordering.fields") == precombine


# `hudi-common/src/main/avro/HoodieReplaceCommitMetadata.avsc` (release 1.x): its record and its fields, in order.
REPLACE_AVSC_FIELDS = ["partitionToWriteStats", "extraMetadata", "version", "operationType", "partitionToReplaceFileIds"]


def test_a_completed_replacecommit_is_rewritten_as_hudi_replace_commit_metadata():
    """`SevenToEightUpgradeHandler.rewriteTimelineV1InstantFileToV2Format` reads a completed replacecommit
    as `HoodieReplaceCommitMetadata` and writes it with `CommitMetadataSerDeV2.serialize`, which converts it
    to the Avro record `HoodieReplaceCommitMetadata` (`MetadataConversionUtils.convertReplaceCommitMetadata`):
    the file's writer schema is that record (namespace, name and fields of Hudi's .avsc, parsed by Apache
    Avro's strict parser) and holds the replaced file ids and the write stats."""
    legacy = json.dumps({
        "partitionToWriteStats": {"city=chennai": [{"fileId": "f1", "path": "city=chennai/f1_0-1-0_20250101000000000.parquet",
                                                    "numWrites": 3, "prevCommit": "null"}]},
        "partitionToReplaceFileIds": {"city=chennai": ["f0"]},
        "compacted": False, "extraMetadata": {"schema": "{}"}, "operationType": "INSERT_OVERWRITE"}).encode()
    data = upgraded_metadata(legacy, replace=True)
    assert data.startswith(AVRO_MAGIC)
    schema = avro_models.writer_schema(data)
    parsed = avro.schema.parse(json.dumps(schema))
    assert (parsed.namespace, parsed.name) == ("org.apache.hudi.avro.model", "HoodieReplaceCommitMetadata")
    assert [f.name for f in parsed.fields] == REPLACE_AVSC_FIELDS
    record = decode_metadata(data)
    assert record["partitionToReplaceFileIds"] == {"city=chennai": ["f0"]}
    assert record["operationType"] == "INSERT_OVERWRITE"
    assert [s["fileId"] for s in record["partitionToWriteStats"]["city=chennai"]] == ["f1"]
