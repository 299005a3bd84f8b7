"""Archival at table versions 8 and 9 into Hudi 1.x's LSM timeline history, and a version-6 archive
converted into it: what the history holds, its files as Hudi lays them out, crashes at every step, and
tables hudi-rs still reads as the reference model says.

hudi-rs 0.5.0 does not read the LSM history (`TimelineLoader::load_archived_instants` returns nothing
for layout 2), so what it shows of archived instants is what file slicing alone gives: time travel to
an archived instant, checked here; an incremental read whose range lies in the history returns nothing
there, so it is not checked."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import fastavro
import pyarrow.parquet as pq
import pytest
from hudi_invariants import check
from model import Op
from service_tables import ModelWriter, hudi_rs_rows, our_rows, random_batch

from ingest import services
from ingest.errors import InvalidInstant
from ingest.faults import CRASH_EXIT_CODE
from ingest.hudi.avro import avro_models
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.services import archiver
from ingest.hudi.services.lsm_archival import history_of
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import decode_metadata
from ingest.hudi.timeline.instant import Action
from ingest.hudi.timeline.lsm_history import LSMHistory
from ingest.hudi.timeline.timeline_layout import TimelineLayout

REPO = Path(__file__).resolve().parent.parent
SMALL = {"hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
         "hoodie.compact.inline.max.delta.commits": "1"}
# HoodieLSMTimelineInstant.avsc (hudi-common/src/main/avro, release-1.2): name, type, default of each field.
HUDI_LSM_INSTANT_FIELDS = [
    ("instantTime", ["null", "string"], None),
    ("completionTime", ["null", "string"], None),
    ("action", ["null", "string"], None),
    ("metadata", ["null", "bytes"], None),
    ("plan", ["null", "bytes"], None),
    ("version", "int", 1),
]


def settings(**overrides: str) -> ServiceSettings:
    return ServiceSettings.from_mapping({**SMALL, **overrides})


def own_partition_batch(rng: random.Random, i: int) -> list[Op]:
    """Upserts and a delete of batch `i`'s own keys, in a partition no other batch writes."""
    keys = [f"k{i}-{j}" for j in range(3)]
    ops = [Op(k, f"p{i}", i, False, {"fare": round(rng.uniform(1, 100), 2)}) for k in keys]
    return [*ops, Op(keys[1], f"p{i}", i + 1, True), Op(keys[2], f"p{i}", i + 1, False, {"fare": 1.5})]


def write(w: ModelWriter, n: int, start: int = 0, archive: ServiceSettings | None = None,
          snapshots: dict | None = None, mixed: bool = False, completions: dict | None = None) -> list[str]:
    """`n` batches, after each the inline services when `archive` is given. Each batch in a partition
    of its own (so hudi-rs 0.5.0, which cannot read the history, still slices every file group right:
    `hudi_rs_limit`), or with `mixed` upserts and deletes of keys of every batch."""
    rng = random.Random(start + 7)
    instants = []
    for i in range(start, start + n):
        instant = w.write(random_batch(rng, i, keys=8, size=4) if mixed else own_partition_batch(rng, i))
        instants.append(instant)
        if snapshots is not None:
            snapshots[instant] = w.expected()
        if completions is not None:
            completions[instant] = w.table.timeline().get(instant).completion_time
        if archive is not None:
            services.run_inline_services(w.table, archive)
    return instants


def history(w: ModelWriter) -> LSMHistory:
    table = w.table
    return history_of(table.storage, table.layout)


def assert_each_instant_once(w: ModelWriter, instants: list[str]) -> list[dict]:
    """Every commit is either in the history or on the active timeline, exactly once overall."""
    rows = history(w).read()
    archived = [r["instantTime"] for r in rows]
    assert len(archived) == len(set(archived)), "an instant is twice in the history"
    active = {i.timestamp for i in w.table.timeline().completed()}
    assert not set(archived) & active, "an archived instant is still on the active timeline"
    assert set(archived) | active == set(instants)
    return rows


@pytest.mark.parametrize("version", [8, 9])
def test_inline_archival_writes_lsm_history_hudi_rs_reads_the_model(tmp_path, version):
    """`TimelineArchiverV2.archiveIfRequired`: beyond `hoodie.keep.max.commits` completed commits the
    oldest go, down to `hoodie.keep.min.commits`, each one row of the history, and leave the active
    timeline; hudi-rs then reads exactly the model's rows, and as of each archived instant the model's
    rows at that instant."""
    w = ModelWriter(tmp_path / "t", version=version)
    snapshots: dict[str, set] = {}
    completions: dict[str, str] = {}
    instants = write(w, 12, archive=settings(), snapshots=snapshots, completions=completions)
    rows = assert_each_instant_once(w, instants)
    assert len(rows) >= 8
    assert len(w.table.timeline().completed()) <= 3
    assert {r["action"] for r in rows} == {"deltacommit"}
    assert {(r["instantTime"], r["completionTime"]) for r in rows} <= set(completions.items())
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())
    assert our_rows(w.path) == w.expected()
    assert check(w.path, bucket_index=True)["schemas"] > 0
    import hudi

    for row in rows:
        options = hudi.HudiReadOptions().with_as_of_timestamp(row["instantTime"])
        table = hudi.HudiTableBuilder.from_base_uri(w.path).build()
        got = {(r["uuid"], r["city"], r["ts"], r["fare"]) for b in table.read(options) for r in b.to_pylist()}
        assert got == snapshots[row["instantTime"]], f"as of {row['instantTime']}"


@pytest.mark.xfail(strict=True, reason="hudi-rs 0.5.0 reads no LSM history: a log file of an archived "
                   "deltacommit has no completion time there, and in a file group without base file that also "
                   "has a log file of an active deltacommit it is left out")
def test_hudi_rs_limit_log_only_groups_across_archived_instants(tmp_path):
    """Java Hudi slices such a group by completion times it loads from the history
    (`CompletionTimeQueryViewV2.loadCompletionTimeIncrementally`, LoadMode.TIME), as our reader counts
    every instant before the active timeline as committed: ours reads the model; hudi-rs 0.5.0 does not."""
    w = ModelWriter(tmp_path / "t", version=8)
    write(w, 14, archive=settings(), mixed=True)
    assert history(w).read()
    assert our_rows(w.path) == w.expected()
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())


def test_history_rows_carry_each_instants_files(tmp_path):
    """`MetadataConversionUtils.createLSMTimelineInstant`: instant and completion time and action of
    the completed file, its bytes as `metadata` (here the Avro `HoodieCommitMetadata` of 1.x), version 1;
    a deltacommit has no plan."""
    w = ModelWriter(tmp_path / "t", version=9)
    write(w, 6)
    table = w.table
    timeline = table.timeline()
    completed = {i.timestamp: i for i in timeline.completed()}
    before = {ts: table.storage.read(table.layout.path(i)) for ts, i in completed.items()}
    result = archiver.archive(table, settings())
    assert result.archived
    for row in history(w).read():
        ts = row["instantTime"]
        assert row["completionTime"] == completed[ts].completion_time
        assert row["metadata"] == before[ts]
        assert row["plan"] is None and row["version"] == 1
        assert decode_metadata(row["metadata"])["operationType"] == "UPSERT"


def test_history_file_is_parquet_of_hudis_lsm_instant_schema(tmp_path):
    """`LSMTimelineWriter.write` through `HoodieAvroParquetWriter`: the file's `parquet.avro.schema` is
    `HoodieLSMTimelineInstant.avsc` of Hudi 1.2 (record name and namespace; each field's name, type
    and default, checked against the avsc's text above; Apache Avro's parser accepts it), the parquet
    columns are parquet-avro's mapping of it (optional UTF8 strings, optional binaries, required int32),
    `writer.model.name` is avro, and the file name is `<min>_<max>_0.parquet` of its rows."""
    import avro.schema

    w = ModelWriter(tmp_path / "t", version=8)
    write(w, 6)
    archiver.archive(w.table, settings())
    h = history(w)
    (entry,) = h.manifest()
    meta = pq.read_metadata(io.BytesIO(h.storage.read(f"{h.folder}/{entry.name}")))
    kv = {k.decode(): v.decode() for k, v in meta.metadata.items()}
    schema = json.loads(kv["parquet.avro.schema"])
    assert (schema["name"], schema["namespace"]) == ("HoodieLSMTimelineInstant", "org.apache.hudi.avro.model")
    assert [(f["name"], f["type"], f.get("default")) for f in schema["fields"]] == HUDI_LSM_INSTANT_FIELDS
    assert avro.schema.parse(kv["parquet.avro.schema"]).fullname == "org.apache.hudi.avro.model.HoodieLSMTimelineInstant"
    assert kv["writer.model.name"] == "avro"
    columns = {meta.schema.column(i).name: meta.schema.column(i) for i in range(meta.num_columns)}
    assert list(columns) == [name for name, _, _ in HUDI_LSM_INSTANT_FIELDS]
    for name in ("instantTime", "completionTime", "action"):
        assert (columns[name].physical_type, columns[name].logical_type.type) == ("BYTE_ARRAY", "STRING")
        assert columns[name].max_definition_level == 1
    for name in ("metadata", "plan"):
        assert columns[name].physical_type == "BYTE_ARRAY" and columns[name].max_definition_level == 1
    assert columns["version"].physical_type == "INT32" and columns["version"].max_definition_level == 0
    times = [r["instantTime"] for r in h.read_file(entry.name)]
    assert entry.name == f"{times[0]}_{times[-1]}_0.parquet"


def test_manifest_and_version_files_are_hudis(tmp_path):
    """`HoodieLSMTimelineManifest.toJsonString` (Jackson's pretty printer of its `files`, each
    `fileName` and `fileLen`), `manifest_<N>` from 1 up, `_version_` holding the latest N
    (`LSMTimelineWriter.updateManifest`, `LSMTimeline.latestSnapshotVersion`)."""
    w = ModelWriter(tmp_path / "t", version=9)
    write(w, 12, archive=settings())
    h = history(w)
    folder = Path(w.path) / h.folder
    version = int((folder / "_version_").read_text())
    assert version == max(int(p.name.split("_")[1]) for p in folder.glob("manifest_*")) >= 2
    text = (folder / f"manifest_{version}").read_text()
    raw = json.loads(text)
    assert list(raw) == ["files"] and raw["files"]
    for f in raw["files"]:
        assert list(f) == ["fileName", "fileLen"]
        assert f["fileLen"] == (folder / f["fileName"]).stat().st_size
    first = raw["files"][0]
    assert text.startswith('{\n  "files" : [ {\n    "fileName" : "' + first["fileName"] + '",\n    "fileLen" : ')
    assert text.endswith("\n  } ]\n}")


def test_history_compaction_merges_a_full_layer_into_the_next(tmp_path):
    """`LSMTimelineWriter.compactAndClean`: when a layer holds `hoodie.timeline.compaction.batch.size`
    files they become one file of the next layer, named by the min and max of theirs, holding all
    their rows; `clean` keeps the files of the latest 3 (+ layers compacted) manifests only."""
    w = ModelWriter(tmp_path / "t", version=8)
    instants = write(w, 14, archive=settings(**{"hoodie.timeline.compaction.batch.size": "2"}))
    h = history(w)
    entries = h.manifest()
    assert max(e.layer for e in entries) >= 2
    for e in entries:
        rows = h.read_file(e.name)
        assert (e.min_instant, e.max_instant) == (rows[0]["instantTime"], rows[-1]["instantTime"])
    assert_each_instant_once(w, instants)
    manifests = sorted(Path(w.path, h.folder).glob("manifest_*"))
    assert len(manifests) <= 3 + 2
    kept = {e.name for v in h.all_versions() for e in h.manifest(v)}
    assert {p.name for p in Path(w.path, h.folder).glob("*.parquet")} <= kept
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())


def test_time_travel_before_the_active_timeline_names_the_history(tmp_path):
    """Our as-of read refuses an instant before the active timeline, saying older ones are archived
    when the LSM history holds them (`LSMTimeline.latestSnapshotVersion` >= 0)."""
    w = ModelWriter(tmp_path / "t", version=8)
    instants = write(w, 8, archive=settings())
    with pytest.raises(InvalidInstant, match="older ones are archived"):
        read_snapshot(HudiTable.open(w.path), instants[0])


def test_backfill_progress_reads_archived_commits(tmp_path):
    """The backfill's resume reads its records from archived commits too: at 8 and 9 from the
    history's `metadata` (the completed file's bytes, `ArchivedTimelineV2` loads them so)."""
    w = ModelWriter(tmp_path / "t", version=9)
    write(w, 8, archive=settings())
    metadata = archiver.archived_commit_metadata(w.table)
    assert len(metadata) == len(history(w).read()) > 0
    assert all(m["operationType"] == "UPSERT" for m in metadata)


# -- crashes ---------------------------------------------------------------------------------------

ARCHIVE_SCRIPT = """
import json, sys
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.services import archiver
from ingest.hudi.table.table import HudiTable
archiver.archive(HudiTable.open(sys.argv[1]), ServiceSettings.from_mapping(json.loads(sys.argv[2])))
"""


def archive_in_process_that_crashes(path: str, point: str, overrides: dict) -> None:
    env = {**os.environ, "INGEST_CRASH_AT": point, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", ARCHIVE_SCRIPT, path, json.dumps({**SMALL, **overrides})],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == CRASH_EXIT_CODE, done.stderr


@pytest.mark.parametrize("point", ["lsm_after_file", "lsm_after_manifest", "lsm_version_deleted", "mid_archive",
                                   "lsm_after_compacted_file"])
def test_crash_at_each_step_then_rerun(tmp_path, point):
    """A crash at each step of `TimelineArchiverV2.archiveIfRequired` (history file written; manifest
    written, `_version_` not; `_version_` deleted; some instant files deleted; a compacted file written,
    its manifest not), then a rerun: the reader takes `_version_` or else the latest manifest
    (`LSMTimeline.latestSnapshotVersion`), a file not in it is rewritten (`LSMTimelineWriter.write`),
    every instant is in the history or on the active timeline exactly once, hudi-rs reads the model."""
    overrides = {"hoodie.timeline.compaction.batch.size": "2"}
    w = ModelWriter(tmp_path / "t", version=9)
    instants = write(w, 6)
    if point == "lsm_after_compacted_file":
        archiver.archive(w.table, settings(**overrides))  # one layer-0 file; the next archival compacts
        instants += write(w, 2, start=6)
    archive_in_process_that_crashes(w.path, point, overrides)
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())
    archiver.archive(w.table, settings(**overrides))
    instants += write(w, 4, start=10, archive=settings(**overrides))
    assert_each_instant_once(w, instants)
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())
    assert our_rows(w.path) == w.expected()
    assert check(w.path, bucket_index=True)["schemas"] > 0


# -- a version-6 archive into the history (upgrade) -------------------------------------------------

V2_LAYOUT = TimelineLayout(2, ".hoodie/timeline", ".hoodie/timeline/history")


def v6_archived_table(tmp_path) -> tuple[ModelWriter, list[dict]]:
    from ingest.hudi.services import compaction

    w = ModelWriter(tmp_path / "t6")
    rng = random.Random(3)
    s = settings(**{"hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4"})
    for i in range(14):
        w.write(random_batch(rng, i, keys=8, size=4))
        if i % 4 == 3:
            compaction.execute(w.table, compaction.schedule(w.table, s.compaction, force=True))
        services.run_inline_services(w.table, s)
    entries = archiver.read_archived_timeline(w.table.storage)
    assert {e["actionType"] for e in entries} >= {"deltacommit", "commit", "compaction", "clean"}
    return w, entries


def test_v6_archive_converted_to_lsm_history_reads_back_every_instant(tmp_path):
    """`SevenToEightUpgradeHandler.upgradeToLSMTimeline` with `LegacyArchivedMetaEntryReader`: each
    archived instant with a completed entry becomes one history row: its completed entry's action,
    the record under the action's key as an Avro file (`HoodieAvroUtils.avroToFileBytes`) as
    metadata, a compaction's plan from its requested entry; files of `hoodie.commits.archival.batch`
    instants, no compaction; rerun, nothing is written twice."""
    w, entries = v6_archived_table(tmp_path)
    storage = w.table.storage
    written = archiver.convert_to_lsm_history(storage, V2_LAYOUT, batch=3)
    assert written and all(name.endswith("_0.parquet") for name in written)
    h = LSMHistory(storage, V2_LAYOUT.history)
    rows = h.read()
    completed = {e["commitTime"]: e for e in entries if e["actionState"] == "COMPLETED"}
    assert [r["instantTime"] for r in rows] == sorted(completed)
    assert all(len(h.read_file(e.name)) <= 3 for e in h.manifest())
    for row in rows:
        entry = completed[row["instantTime"]]
        assert row["action"] == entry["actionType"]
        # `LegacyArchivedMetaEntryReader.readInstant`: the completed entry's state transition time.
        assert row["completionTime"] == entry["stateTransitionTime"] > row["instantTime"]
        if row["action"] in ("commit", "deltacommit"):
            metadata = decode_metadata(row["metadata"])
            assert metadata["partitionToWriteStats"].keys() == entry["hoodieCommitMetadata"]["partitionToWriteStats"].keys()
        elif row["action"] == "clean":
            clean = avro_models.deserialize(row["metadata"])
            assert clean["earliestCommitToRetain"] == entry["hoodieCleanMetadata"]["earliestCommitToRetain"]
    compactions = {e["commitTime"] for e in entries if e["actionType"] == Action.COMPACTION.value}
    assert compactions
    for row in rows:
        if row["instantTime"] in compactions:
            plan = next(fastavro.reader(io.BytesIO(row["plan"])))
            assert plan["operations"]
    assert archiver.convert_to_lsm_history(storage, V2_LAYOUT, batch=3) == []
    assert len(h.read()) == len(rows)


def test_v6_archive_conversion_resumes_after_a_crash(tmp_path):
    """A crash after a history file is written and before its manifest, then the conversion again:
    every archived instant in the history once (`LSMTimelineWriter.write` replaces the file the
    manifest does not name)."""
    w, entries = v6_archived_table(tmp_path)
    script = ("import sys\nfrom ingest.storage import Storage\nfrom ingest.hudi.services import archiver\n"
              "from ingest.hudi.timeline.timeline_layout import TimelineLayout\n"
              "archiver.convert_to_lsm_history(Storage(sys.argv[1]), "
              "TimelineLayout(2, '.hoodie/timeline', '.hoodie/timeline/history'), batch=3)\n")
    env = {**os.environ, "INGEST_CRASH_AT": "lsm_after_manifest", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script, w.path], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == CRASH_EXIT_CODE, done.stderr
    archiver.convert_to_lsm_history(w.table.storage, V2_LAYOUT, batch=3)
    rows = LSMHistory(w.table.storage, V2_LAYOUT.history).read()
    times = [r["instantTime"] for r in rows]
    assert times == sorted({e["commitTime"] for e in entries if e["actionState"] == "COMPLETED"})


def test_archive_command_runs_at_version_9(tmp_path, capsys):
    """`ingest archive PATH` at 9 archives into the LSM history (`TimelineArchiverV2`) instead of
    refusing as the other services still do at this version."""
    from ingest.cli import main

    w = ModelWriter(tmp_path / "t", version=9)
    instants = write(w, 6)
    sets = [a for k, v in SMALL.items() for a in ("--set", f"hudi.{k}={v}")]
    assert main(["archive", w.path, *sets]) == 0
    assert "archived" in capsys.readouterr().out
    assert_each_instant_once(w, instants)
    assert history(w).read()


def test_a_rollback_is_archived_with_its_metadata_and_no_plan(tmp_path):
    """`createLSMTimelineInstant` for a rollback: action `rollback`, its completed file's Avro
    `HoodieRollbackMetadata` as metadata, no plan (only clean, compaction, log compaction, replace and
    clustering carry one); the failed deltacommit it rolled back is in no history row."""
    from test_archiver import die_before_commit

    w = ModelWriter(tmp_path / "t", version=9)
    write(w, 2)
    failed = die_before_commit(w, own_partition_batch(random.Random(1), 50))
    write(w, 5, start=2)
    archiver.archive(w.table, settings())
    rows = {r["action"]: r for r in history(w).read()}
    rollback = rows["rollback"]
    assert rollback["plan"] is None
    assert avro_models.deserialize(rollback["metadata"])["commitsRollback"] == [failed]
    assert failed not in {r["instantTime"] for r in history(w).read()}
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())


def test_the_view_slices_an_archived_deltacommits_log_by_its_completion_time_in_the_history(tmp_path):
    """`HoodieFileGroup.getBaseInstantTime` asks `CompletionTimeQueryViewV2.getCompletionTime`, which loads an
    archived instant's completion time from the LSM history (`loadCompletionTimeIncrementally`,
    LoadMode.TIME). A deltacommit requested before a compaction of its file group and completed after it
    was requested (writers under non-blocking concurrency control) belongs to the compaction's slice, also
    once archived; without its completion time a reader would put its log in the older slice, and the
    next compaction would leave its rows out. The history here says so of one archived deltacommit of a
    compacted group: the view takes its log into the later slice."""
    from datetime import timedelta

    from ingest.hudi.timeline.instant import format_instant, parse_instant

    w = ModelWriter(tmp_path / "t", version=8)
    completions: dict[str, str] = {}
    write(w, 14, archive=settings(**{"hoodie.clean.automatic": "false", "hoodie.compact.inline": "true",
                                     "hoodie.compact.inline.max.delta.commits": "3"}),
          completions=completions, mixed=True)
    table, lsm = w.table, history(w)
    rows = lsm.read()
    archived = {r["instantTime"] for r in rows}
    deltas = archived & set(completions)
    assert deltas and lsm.completion_times(deltas) == {i: completions[i] for i in deltas}
    candidates = [(group, s, log) for group in table.view().file_groups() for s in group.slices
                  for log in s.log_files if log.name.base_instant in deltas
                  and any(later.base_instant > completions[log.name.base_instant] for later in group.slices)]
    assert candidates, "an archived deltacommit's log in a group compacted after it"
    group, old_slice, log = candidates[0]
    later = min(s.base_instant for s in group.slices if s.base_instant > old_slice.base_instant)
    after = format_instant(parse_instant(later) + timedelta(milliseconds=1))  # a 17-digit time, as Hudi's
    moved = {**next(r for r in rows if r["instantTime"] == log.name.base_instant), "completionTime": after}
    table.storage.delete_tree(lsm.folder)
    lsm.write(sorted([r for r in rows if r["instantTime"] != log.name.base_instant] + [moved],
                     key=lambda r: r["instantTime"]))
    (again,) = [g for g in table.view().file_groups() if g.file_id == group.file_id
                and g.partition_path == group.partition_path]
    owner = next(s for s in again.slices if log in s.log_files)
    assert owner.base_instant == later != old_slice.base_instant
