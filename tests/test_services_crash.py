"""Table services killed midway (a subprocess exits at `mid_compaction`, `mid_clean`, `mid_archive`),
then run again: the timeline ends consistent, no half-written file is visible, reads never change.
Also the commands that run services by hand (`ingest compact | clean | archive | rollback`)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

import pytest
from service_tables import (
    ModelWriter,
    abandon,
    data_files,
    hudi_rs_rows,
    options_for,
    our_rows,
    random_batch,
    to_table,
)

from ingest import services
from ingest.cli import main
from ingest.faults import CRASH_EXIT_CODE
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.services import archiver, cleaner, compaction
from ingest.hudi.table import markers
from ingest.hudi.timeline.instant import Action, State
from ingest.write import index_bootstrap
from ingest.write.batch import LocalEngine, incoming_avro_schema, open_table
from ingest.write.commit import begin
from ingest.write.lock import WriterLock
from ingest.write.plan import build_plan

SETTINGS = {"hoodie.cleaner.commits.retained": "2", "hoodie.keep.min.commits": "4", "hoodie.keep.max.commits": "6",
            "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"}

SERVICE = textwrap.dedent("""
    import json, sys
    from ingest.hudi.services import archiver, cleaner, compaction
    from ingest.hudi.config.service_settings import ServiceSettings
    from ingest.hudi.table.table import HudiTable

    path, what, settings = sys.argv[1], sys.argv[2], ServiceSettings.from_mapping(json.loads(sys.argv[3]))
    table = HudiTable.open(path)
    if what == "compaction":
        compaction.execute(table, sys.argv[4])
    elif what == "clean":
        cleaner.clean(table, settings.clean, force=True)
    else:
        archiver.archive(table, settings)
""")


def run_service(path, what: str, crash_at: str | None, *extra: str) -> int:
    env = dict(os.environ)
    env.pop("INGEST_CRASH_AT", None)
    if crash_at:
        env["INGEST_CRASH_AT"] = crash_at
    done = subprocess.run([sys.executable, "-c", SERVICE, str(path), what, json.dumps(SETTINGS), *extra],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, CRASH_EXIT_CODE), done.stderr
    return done.returncode


def table_with_slices(path, rounds: int = 3) -> ModelWriter:
    rng = random.Random(17)
    w = ModelWriter(path, buckets=2)
    n = 0
    for _ in range(rounds):
        for _ in range(2):
            w.write(random_batch(rng, n, keys=8, size=6))
            n += 1
        compaction.execute(w.table, compaction.schedule(w.table, ServiceSettings().compaction, force=True))
    w.write(random_batch(rng, n, keys=8, size=6))
    return w


def assert_consistent(w: ModelWriter, path) -> None:
    """Nothing pending, every base file visible, reads equal the model (ours and hudi-rs)."""
    timeline = w.table.timeline()
    assert not timeline.pending(), [i.file_name for i in timeline.pending()]
    view = w.table.view(timeline)
    visible = {p for g in view.file_groups() for s in g.slices for p in s.paths}
    on_disk = {f for f in data_files(path) if f.endswith(".parquet") or ".log." in f}
    assert on_disk == visible, f"files no slice owns: {sorted(on_disk - visible)}"
    assert not any(name.endswith(".tmp") for name in data_files(path))
    assert our_rows(path) == w.expected()
    rs = hudi_rs_rows(path)
    assert sorted(rs) == sorted(w.expected()) and len(rs) == len(set(rs))


# -- crashes --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_crash_mid_compaction_then_execute_again(tmp_path):
    path = tmp_path / "t"
    w = table_with_slices(path)
    instant = compaction.schedule(w.table, ServiceSettings().compaction, force=True)
    assert len(compaction.read_plan(w.table.storage, instant).operations) >= 2
    assert run_service(path, "compaction", "mid_compaction", instant) == CRASH_EXIT_CODE
    timeline = w.table.timeline()
    assert timeline.get(instant).state is State.INFLIGHT
    half = [m.data_file_path for m in markers.list_markers(w.table.storage, instant)]
    assert len(half) == 1 and w.table.storage.exists(half[0]), "one base file written before the crash"
    assert our_rows(path) == w.expected(), "an uncommitted compaction is invisible"
    # A writer meanwhile routes around the pending compaction; it never rolls it back.
    w.write(random_batch(random.Random(4), 50, keys=8, size=6))
    assert w.table.timeline().get(instant).state is State.INFLIGHT
    assert our_rows(path) == w.expected()

    assert run_service(path, "compaction", None, instant) == 0
    timeline = w.table.timeline()
    assert timeline.get(instant).is_completed
    committed = {s.path for s in w.table.commit_metadata(timeline.get(instant)).all_write_stats()}
    written = {f for f in data_files(path) if f.endswith(f"_{instant}.parquet")}
    assert written == committed, "the failed attempt's file was removed (via its marker) and written again"
    assert not w.table.storage.exists(markers.marker_folder(instant))
    assert_consistent(w, path)


@pytest.mark.slow
def test_crash_mid_clean_then_clean_again(tmp_path):
    path = tmp_path / "t"
    w = table_with_slices(path)
    assert run_service(path, "clean", "mid_clean") == CRASH_EXIT_CODE
    (pending,) = w.table.timeline().pending(Action.CLEAN)
    assert pending.state is State.INFLIGHT
    plan = cleaner.read_plan(w.table, pending.timestamp)
    planned = [p for paths in plan.files.values() for p in paths]
    gone = [p for p in planned if not w.table.storage.exists(p)]
    assert len(gone) == 1 and len(planned) > 1
    assert our_rows(path) == w.expected()

    assert run_service(path, "clean", None) == 0
    timeline = w.table.timeline()
    assert timeline.get(pending.timestamp).is_completed
    assert not any(w.table.storage.exists(p) for p in planned)
    assert_consistent(w, path)


@pytest.mark.slow
def test_crash_mid_archive_then_archive_again(tmp_path):
    path = tmp_path / "t"
    w = table_with_slices(path, rounds=5)
    before = w.table.timeline()
    assert run_service(path, "archive", "mid_archive") == CRASH_EXIT_CODE
    files = archiver.archive_files(w.table.storage)
    assert len(files) == 1
    written = archiver.read_archive_file(w.table.storage, files[0][1])
    mid = w.table.timeline()
    assert len(mid.files) == len(before.files) - 1, "the crash came after the first file was deleted"
    assert [i.timestamp for i in mid] == [i.timestamp for i in before], "no instant lost its completed file yet"
    assert our_rows(path) == w.expected()

    assert run_service(path, "archive", None) == 0
    assert len(archiver.archive_files(w.table.storage)) == 1, "nothing new to write: no duplicate entries"
    entries = archiver.read_archived_timeline(w.table.storage)
    keys = [(e["commitTime"], e["actionType"], e["actionState"]) for e in entries]
    assert len(keys) == len(set(keys)) == len(written)
    after = w.table.timeline()
    archived = {e["commitTime"] for e in entries}
    assert archived and max(archived) < min(i.timestamp for i in after)
    assert {i.timestamp for i in after} | archived == {i.timestamp for i in before}
    assert_consistent(w, path)


# -- commands ---------------------------------------------------------------------------------------------


def die_before_commit(w: ModelWriter) -> str:
    ops = random_batch(random.Random(99), 77, keys=8, size=4)
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


def test_rollback_command_rolls_back_a_pending_write_only(tmp_path, capsys):
    path = tmp_path / "t"
    w = table_with_slices(path, rounds=1)
    failed = die_before_commit(w)
    assert our_rows(path) == w.expected()
    assert main(["rollback", str(path), failed]) == 0
    timeline = w.table.timeline()
    assert timeline.get(failed) is None and timeline.completed(Action.ROLLBACK)
    assert_consistent(w, path)

    completed = timeline.last_completed(Action.DELTA_COMMIT).timestamp
    assert main(["rollback", str(path), completed]) == 1
    err = capsys.readouterr().err
    assert "is completed" in err and "restore" in err
    assert main(["rollback", str(path), "20000101000000000"]) == 1

    w.write(random_batch(random.Random(1), 60, keys=8, size=4))
    pending = compaction.schedule(w.table, ServiceSettings().compaction, force=True)
    assert main(["rollback", str(path), pending]) == 1
    assert f"ingest compact {w.table.base_url} --execute {pending}" in capsys.readouterr().err
    assert w.table.timeline().get(pending).state is State.REQUESTED


def test_compact_clean_archive_commands(tmp_path, capsys):
    path = tmp_path / "t"
    w = table_with_slices(path, rounds=4)
    assert main(["compact", "--path", str(path), "--schedule-only"]) == 0
    (pending,) = w.table.timeline().pending(Action.COMPACTION)
    listed = services.pending_services(w.table)
    assert [(p.instant, p.action, p.state) for p in listed] == [(pending.timestamp, "compaction", "REQUESTED")]
    assert listed[0].items >= 1 and listed[0].plan_bytes > 0
    assert main(["compact", "--path", str(path), "--execute", pending.timestamp]) == 0
    assert w.table.timeline().get(pending.timestamp).is_completed
    sets = [arg for k, v in SETTINGS.items() for arg in ("--set", f"{k}={v}")]
    assert main(["clean", "--path", str(path), *sets]) == 0
    assert "deleted" in capsys.readouterr().out
    assert main(["archive", "--path", str(path), *sets]) == 0
    assert "archived" in capsys.readouterr().out
    assert_consistent(w, path)
    assert main(["clean", "--path", str(path), "--set", "hoodie.cleaner.policy=NONE"]) == 1
    assert "hoodie.cleaner.policy" in capsys.readouterr().err


def test_services_that_need_the_lease_wait_for_no_writer(tmp_path, capsys):
    path = tmp_path / "t"
    w = table_with_slices(path, rounds=1)
    writer = WriterLock(w.table.storage, expiry_seconds=60)
    writer.acquire()
    try:
        assert main(["clean", "--path", str(path)]) == 1
        assert "another writer" in capsys.readouterr().err
        result = services.compact(w.table, ServiceSettings())
        assert result.scheduled is None and result.note and "not scheduling" in result.note
    finally:
        writer.release()
    assert services.compact(w.table, ServiceSettings()).scheduled is not None


def test_inline_services_resume_a_crashed_compaction(tmp_path):
    path = tmp_path / "t"
    w = table_with_slices(path, rounds=1)
    instant = compaction.schedule(w.table, ServiceSettings().compaction, force=True)
    execution = compaction.start_execution(w.table, instant)
    compaction.compact_operation(execution.job, execution.plan.operations[0], "9-9-9")
    skipped = services.run_inline_services(w.table, ServiceSettings.from_mapping({"hoodie.compact.inline": "true"}))
    assert instant not in skipped.compacted, "a live executor's compaction is left to it"
    abandon(execution)  # then its process died
    run = services.run_inline_services(w.table, ServiceSettings.from_mapping({"hoodie.compact.inline": "true"}))
    assert instant in run.compacted
    assert_consistent(w, path)
