"""A writer's partition listings kept between its commits (`ingest.hudi.table.listing_sync`).

The rule these tests hold it to: every listing a commit's file system view is built from equals a
full listing of the table taken at the same moment, whatever ran between the writer's commits
(compactions, cleans, archival, another writer's failed write and its rollback), and the table
lists in full only where the timeline cannot say what changed. Hudi keeps the same rule in
`IncrementalTimelineSyncFileSystemView` and `TimelineDiffHelper.getNewInstantsForIncrementalSync`.
"""

from __future__ import annotations

import dataclasses

import pytest
from crashes import in_child
from model import Op
from service_tables import ModelWriter, hudi_rs_rows, our_rows, service_settings, to_table

from ingest import services
from ingest.errors import TimelineError
from ingest.hudi.config.table_version import TableVersion
from ingest.hudi.table import listing_sync
from ingest.hudi.table.file_system_view import list_partitions, partition_listings
from ingest.hudi.table.listing_sync import ListingSync, partitions_named
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.commit_metadata import decode_metadata
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import read_instant, request, start
from ingest.write.batch import LocalWriter


def _files(listing) -> dict[str, list[tuple[str, int]]]:
    return {p: sorted((e.name, e.size) for e in entries if not e.is_dir) for p, entries in listing.items()}


class CheckedSync(ListingSync):
    """Compares each listing it hands a commit with a full listing of the table at that moment."""

    def __init__(self) -> None:
        super().__init__()
        self.checked = 0

    def listing(self, storage, timeline, own):
        got = super().listing(storage, timeline, own)
        assert _files(got) == _files(partition_listings(storage))
        self.checked += 1
        return got


def _checked(w: ModelWriter) -> CheckedSync:
    sync = CheckedSync()
    w.writer.listings = sync
    return sync


def _ops(batch_no: int, keys: list[int], city: str | None = None) -> list[Op]:
    cities = ("san_francisco", "chennai", "sao_paulo")
    return [Op(f"key-{k}", city or cities[k % 3], batch_no, False, {"fare": float(k + batch_no)}) for k in keys]


@pytest.mark.parametrize("version", [6, 9])
def test_a_stream_lists_its_table_once_and_then_only_what_each_instant_changed(tmp_path, version):
    """Commits, and a compaction, a clean and archival between them: each commit's listing is the full
    listing of that moment, yet after the writer's first commit it lists only the partitions that the
    instants completed since then name (its own last commit's, the compaction's, the clean's)."""
    w = ModelWriter(tmp_path / "t", version=version)
    sync = _checked(w)
    w.write(_ops(1, [0, 3, 6], city="san_francisco"))  # one partition so far
    assert sync.full_listings == 1
    w.write(_ops(2, [0, 1, 2]))  # two partitions new to the table
    w.write(_ops(3, [4]))
    assert sync.full_listings == 1
    # The third commit's listing relisted the second commit's three partitions, no more.
    assert sync.partitions_listed == 1 + 3
    settings = service_settings(TableVersion.of(version), **{"hoodie.cleaner.commits.retained": "1",
                                                             "hoodie.keep.min.commits": "2",
                                                             "hoodie.keep.max.commits": "3"})
    assert services.compact(w.path, settings).executed  # new base files in every partition
    w.write(_ops(4, [0, 1, 2]))
    w.write(_ops(5, [3], city="san_francisco"))
    cleaned = services.clean(w.path, settings)  # the slices before the compaction go, in every partition
    assert cleaned and len(cleaned[0].partitions) == 3, cleaned
    w.write(_ops(6, [6], city="san_francisco"))  # its listing: the clean's partitions, its last commit's
    assert services.archive(w.path, settings).archived
    for n in range(7, 10):
        w.write(_ops(n, [n], city="san_francisco"))
    assert sync.full_listings == 1 and sync.checked == 9
    assert our_rows(w.path) == w.expected()
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())


@pytest.mark.parametrize("version", [6, 9])
def test_another_writers_failed_write_and_its_rollback_are_seen(tmp_path, version):
    """Another writer dies after writing its files; this writer's next commit rolls it back (Hudi's
    rollback metadata names the partitions it touched) and lists no more than those anew."""
    w = ModelWriter(tmp_path / "t", version=version)
    sync = _checked(w)
    w.write(_ops(1, list(range(6))))
    w.write(_ops(2, [0], city="san_francisco"))
    other = LocalWriter(w.writer.options)
    # At table version 6 the failed write appends to chennai's log files, and its rollback appends a
    # command block to them: that partition differs from what this writer listed before.
    assert in_child("after_data_write", lambda: other.write(to_table(_ops(3, [1, 4], city="chennai"))))
    w.write(_ops(4, [2], city="sao_paulo"))
    assert HudiTable.open(w.path).timeline().completed(Action.ROLLBACK), "the failed write was rolled back"
    assert sync.full_listings == 1 and sync.checked == 3
    assert our_rows(w.path) == w.expected()


def test_a_write_under_way_or_a_vanished_instant_means_a_full_listing(tmp_path):
    """What the timeline cannot describe is listed in full: another writer's write in flight (its files
    may include a failed task attempt's that its commit will not name), and a pending instant that
    left the timeline without completing (`TimelineDiffHelper`'s lost pending compaction)."""
    w = ModelWriter(tmp_path / "t", version=9)
    sync = _checked(w)
    w.write(_ops(1, list(range(6))))
    table = w.table
    storage, layout = table.storage, table.layout
    # A plan requested: nothing written yet, still listed incrementally.
    planned = request(storage, table.timeline().new_instant_time(), Action.CLUSTERING, layout=layout)
    w.write(_ops(2, [1]))
    assert sync.full_listings == 1
    # The plan goes: it may have written files and had them removed without a rollback to say where.
    storage.delete(layout.path(planned))
    w.write(_ops(3, [2]))
    assert sync.full_listings == 2
    # Another writer's write in flight, seen by the commit's listing: that listing is not kept.
    other = HudiTable.open(w.path).timeline().new_instant_time()
    started = listing_sync.partition_listings

    def with_a_write_starting(storage_):
        start(storage_, request(storage_, other, Action.DELTA_COMMIT, layout=layout), layout=layout)
        return started(storage_)

    sync._kept = None  # the next commit lists in full, and another write starts while it does
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(listing_sync, "partition_listings", with_a_write_starting)
        w.write(_ops(4, [3]))
    assert sync.full_listings == 3
    for state in (State.INFLIGHT, State.REQUESTED):  # that writer gave up before writing
        storage.delete(layout.path(Instant(other, Action.DELTA_COMMIT, state)))
    w.write(_ops(5, [4]))
    assert sync.full_listings == 4, "the listing taken while another write started was not kept"
    w.write(_ops(6, [5]))
    assert sync.full_listings == 4
    assert our_rows(w.path) == w.expected()


def test_an_instant_archived_while_its_metadata_is_read_means_a_full_listing(tmp_path, monkeypatch):
    """A Hudi archiver running beside the writer may delete a completed instant's file between the
    writer's timeline read and its read of that instant (the instant then is no metadata anyone reads):
    the table is listed in full, and the commit goes on."""
    w = ModelWriter(tmp_path / "t", version=9)
    sync = _checked(w)
    w.write(_ops(1, list(range(6))))
    assert services.compact(w.path, service_settings(TableVersion.of(9))).executed
    real = listing_sync.read_instant

    def archived(storage, instant, layout):
        if instant.action is Action.COMPACTION:
            raise TimelineError(f"instant file {layout.path(instant)} is missing")
        return real(storage, instant, layout)

    monkeypatch.setattr(listing_sync, "read_instant", archived)
    w.write(_ops(2, [1]))
    assert sync.full_listings == 2 and sync.checked == 2
    assert our_rows(w.path) == w.expected()


def test_a_table_upgraded_between_commits_is_listed_in_full(tmp_path):
    """`ingest upgrade` between two commits moves the timeline to layout 2 and the table to version 9:
    the kept listings belong to another layout, so the next commit lists the table in full."""
    from service_tables import HUDI_SETTINGS

    from ingest.upgrade import upgrade

    w = ModelWriter(tmp_path / "t", version=6)
    sync = _checked(w)
    w.write(_ops(1, list(range(6))))
    w.write(_ops(2, [1]))
    assert sync.full_listings == 1
    upgrade(w.path, 9)
    w.writer.options = dataclasses.replace(w.writer.options, hudi=HUDI_SETTINGS)
    w.write(_ops(3, [2]))
    assert HudiTable.open(w.path).version.number == 9
    assert sync.full_listings == 2 and sync.checked == 3
    w.write(_ops(4, [3]))
    assert sync.full_listings == 2
    assert our_rows(w.path) == w.expected()
    assert sorted(hudi_rs_rows(w.path)) == sorted(w.expected())


def test_hudis_own_instants_name_the_partitions_they_changed(fixture_tables):
    """Hudi's deltacommit, replacecommit (insert overwrite), clustering and compaction metadata, as Hudi
    0.14 and 1.x wrote it (JSON at table version 6, Avro from 8 on), parse into partitions of the
    table: exactly those of its write stats and replaced file groups. (These tables hold no clean or
    rollback; ingest's own, written as Hudi writes them, are read in the tests above.)"""
    seen: set[Action] = set()
    for name, path in fixture_tables.items():
        table = HudiTable.open(str(path))
        timeline = table.timeline()
        partitions = set(list_partitions(table.storage))
        for instant in timeline.completed():
            meta = decode_metadata(read_instant(table.storage, instant, timeline.layout))
            named = partitions_named(instant.action, meta)
            assert named <= partitions, (name, instant, named - partitions)
            if instant.action in (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION,
                                  Action.CLUSTERING):
                assert named == set(meta.get("partitionToWriteStats") or {}) | \
                    set(meta.get("partitionToReplaceFileIds") or {}), (name, instant)
                assert named, (name, instant, "a write of these tables names a partition")
            seen.add(instant.action)
    assert {Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION, Action.CLUSTERING} <= seen, seen


def test_a_stream_on_an_object_store_lists_only_the_partitions_its_last_commit_touched(s3, monkeypatch):
    """On S3 each folder listed is a request: a writer's second commit into one of eight partitions lists
    the partition folders its previous commit wrote, not the table's."""
    import s3fs

    table = "t_listing_sync"
    listed: list[str] = []
    real = s3fs.S3FileSystem._lsdir

    async def spy(self, path, *args, **kwargs):
        listed.append(path.split(f"/{table}/", 1)[-1])
        return await real(self, path, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_lsdir", spy)
    w = ModelWriter(f"s3://lake/{table}")
    w.writer = LocalWriter(dataclasses.replace(w.writer.options, storage_options=s3))
    parts = [f"city{i}" for i in range(8)]
    w.write([Op(f"k{i}", p, 1, False, {"fare": 1.0}) for i, p in enumerate(parts)])
    w.write([Op("k0", parts[0], 2, False, {"fare": 2.0})])
    listed.clear()
    w.write([Op("k1", parts[1], 3, False, {"fare": 3.0})])
    partition_folders = [p for p in listed if p.startswith("city=")]
    assert partition_folders == ["city=city0"], listed
    assert w.writer.listings.full_listings == 1
    got = HudiTable.open(f"s3://lake/{table}", s3)
    assert {r["uuid"]: r["fare"] for r in read_snapshot(got).to_pylist()} == \
        {**{f"k{i}": 1.0 for i in range(8)}, "k0": 2.0, "k1": 3.0}
