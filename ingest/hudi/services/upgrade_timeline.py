"""Moving a version-6 timeline (layout 1, under `.hoodie/`) into layout 2, as Hudi 1.x's upgrade does.

Mirrors `SevenToEightUpgradeHandler.upgrade` (the timeline part), `upgradeActiveTimelineInstant` and
`rewriteTimelineV1InstantFileToV2Format`:

* the timeline folder and its LSM history folder are created first
  (`HoodieTableMetaClient.createTableLayoutOnStorage` with layout 2);
* every instant file directly under `.hoodie/` moves, each state of an instant being a file of its own
  (`scanHoodieInstantsFromFileSystem` with `ActiveTimelineV1.VALID_EXTENSIONS_IN_ACTIVE_TIMELINE`);
* a completed instant is renamed `<requested>_<completion>.<action>`, its completion time being the
  file's modification time (`InstantGeneratorV1.createNewInstant(StoragePathInfo)`). Hudi formats it in
  the JVM's zone (`HoodieInstantTimeGenerator.formatDate`); here it is the table's timeline zone, which is
  the same for LOCAL tables and for UTC tables upgraded on a UTC machine, and keeps completion times
  comparable with the instant times of the table otherwise. A modification time earlier than the
  instant's own time (a timeline written in a zone ahead of this one, or a clock set back) becomes the
  instant's time plus a millisecond: a completion before the request breaks `InstantComparator`'s order, which Hudi's
  and hudi-rs's timelines rely on;
* a pending `replacecommit` becomes a `clustering` (`UpgradeDowngradeUtils.SIX_TO_EIGHT_TIMELINE_ACTION_MAP`,
  pending instants only);
* `commit` and `deltacommit` files in every state, and completed `replacecommit`s, are read as commit
  metadata and written anew as Avro (`CommitMetadataSerDeV2`), then the old file is deleted; every
  other file is renamed, its content unchanged.

A file is written at its new name before the old one is deleted, so a crash leaves at most one file in
both places, and converting it again gives the same name (its modification time is unchanged).
"""

from __future__ import annotations

import logging

from ingest.faults import crash_point
from ingest.hudi.timeline.commit_metadata import upgraded_metadata
from ingest.hudi.timeline.instant import Action, Instant, State
from ingest.hudi.timeline.timeline import METAFOLDER, completion_time
from ingest.hudi.timeline.timeline_layout import TimelineLayout
from ingest.storage import Storage

log = logging.getLogger(__name__)

_METADATA_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT)


def legacy_instant_files(storage: Storage) -> list[str]:
    """Names of the layout-1 instant files still directly under `.hoodie/`, oldest instant first."""
    return sorted((e.name for e in storage.list(METAFOLDER) if not e.is_dir and Instant.parse(e.name)),
                  key=lambda n: (n.split(".", 1)[0], n))


def new_name(storage: Storage, name: str, layout: TimelineLayout, zone: str) -> str:
    """The layout-2 name of the layout-1 instant file `name`."""
    instant = Instant.parse(name)
    assert instant is not None, name
    if instant.is_completed:
        done = Instant(instant.timestamp, instant.action, State.COMPLETED,
                       completion_time(storage, f"{METAFOLDER}/{name}", zone, instant.timestamp))
        return layout.file_name(done)
    if instant.action is Action.REPLACE_COMMIT:
        return layout.file_name(Instant(instant.timestamp, Action.CLUSTERING, instant.state))
    return layout.file_name(instant)


def move_instant_file(storage: Storage, name: str, layout: TimelineLayout, zone: str) -> str:
    """Move one layout-1 instant file into the layout-2 folder; its new name."""
    instant = Instant.parse(name)
    assert instant is not None, name
    source = f"{METAFOLDER}/{name}"
    target = f"{layout.folder}/{new_name(storage, name, layout, zone)}"
    data = storage.read(source)
    if instant.action in _METADATA_ACTIONS or (instant.action is Action.REPLACE_COMMIT and instant.is_completed):
        data = upgraded_metadata(data, replace=instant.action is Action.REPLACE_COMMIT)
    storage.write(target, data)
    storage.delete(source)
    return target


def move_timeline(storage: Storage, layout: TimelineLayout, history_folder: str, zone: str) -> int:
    """Move every layout-1 instant file left under `.hoodie/` (all of them, or what a crashed run left);
    the number moved."""
    for folder in (layout.folder, f"{layout.folder}/{history_folder}"):
        storage.makedirs(folder)
    names = legacy_instant_files(storage)
    for n, name in enumerate(names):
        move_instant_file(storage, name, layout, zone)
        if n == 0:
            crash_point("upgrade_mid_timeline")
    if names:
        log.info("%s: moved %d timeline file(s) into %s", storage.base_url, len(names), layout.folder)
    return len(names)
