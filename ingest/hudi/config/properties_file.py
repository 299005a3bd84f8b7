"""`hoodie.properties` on storage: read, repaired and rewritten with Hudi's backup protocol.

Mirrors `HoodieTableConfig` of Hudi 0.14/0.15 (`fetchConfigs`, `validateChecksum`, `recoverIfNeeded`,
`modify`, `storeProperties`; moved to `ConfigUtils` in 1.x with the same rules):

* a rewrite copies the file to `hoodie.properties.backup`, deletes the file, writes it anew from the
  backup plus the changes, reads it back to verify its checksum, and only then deletes the backup;
* a reader takes `hoodie.properties`, else the backup, skipping a file whose `hoodie.table.checksum`
  does not match, and retries a few times (a rewrite may be under way). Readers never repair;
* the repair (`recoverIfNeeded`, the first step of every rewrite) deletes an invalid file, restores
  the file from the backup when it is missing or was invalid, and deletes the backup in every case.

A `.hoodie` folder that holds files but neither properties file is a damaged table, not a missing
one: creating a fresh config there would overwrite the real table's settings with defaults.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Mapping
from datetime import datetime, timezone

from ingest.errors import TableNotFound, UnsupportedTable
from ingest.faults import crash_point
from ingest.hudi.config import properties
from ingest.storage import Storage

log = logging.getLogger(__name__)

METAFOLDER = ".hoodie"
PROPERTIES_PATH = f"{METAFOLDER}/hoodie.properties"
BACKUP_PATH = f"{METAFOLDER}/hoodie.properties.backup"  # HoodieTableConfig.HOODIE_PROPERTIES_FILE_BACKUP
NAME_KEY = "hoodie.table.name"
DATABASE_KEY = "hoodie.database.name"
CHECKSUM_KEY = "hoodie.table.checksum"
READ_RETRIES = 5           # HoodieTableConfig.MAX_READ_RETRIES
READ_RETRY_DELAY_S = 1.0   # HoodieTableConfig.READ_RETRY_DELAY_MSEC


class TableConfigDamaged(UnsupportedTable):
    """`.hoodie` holds a table, but neither `hoodie.properties` nor its backup is readable."""


def checksum(database: str | None, table: str) -> int:
    """Hudi's `hoodie.table.checksum` (`generateChecksum`): CRC32 of `<database>.<table>`."""
    return zlib.crc32(f"{database or ''}.{table}".encode())


def valid_checksum(props: Mapping[str, str]) -> bool:
    """`validateChecksum`: the stored checksum equals the one the table and database names give."""
    try:
        return int(props[CHECKSUM_KEY]) == checksum(props.get(DATABASE_KEY), props[NAME_KEY])
    except (KeyError, ValueError):
        return False


def encode(props: Mapping[str, str], comment: str) -> bytes:
    return properties.encode_text(properties.dumps(props, comment))


def present(storage: Storage) -> bool:
    """True when the table has a config to read: the file or, mid-rewrite, its backup."""
    return storage.exists(PROPERTIES_PATH) or storage.exists(BACKUP_PATH)


def has_timeline(storage: Storage) -> bool:
    """True when `.hoodie` (or layout 2's `.hoodie/timeline`) holds instant files (named by their instant
    time) of a real table; other files, such as Hudi's `lock` (FileSystemBasedLockProvider) taken
    before the first commit, are no timeline."""
    return any(not e.is_dir and e.name[:1].isdigit()
               for folder in (METAFOLDER, f"{METAFOLDER}/timeline") for e in storage.list(folder))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _parse(data: bytes) -> dict[str, str]:
    return properties.loads(properties.decode_bytes(data))


def _read(storage: Storage, path: str) -> dict[str, str] | None:
    try:
        return _parse(storage.read(path))
    except FileNotFoundError:
        return None


def fetch(storage: Storage) -> dict[str, str]:
    """`fetchConfigs`: the first valid one of `hoodie.properties` and its backup, retrying a while.

    A valid `hoodie.properties` is read first, with no look at the folder around it: on an object
    store a folder's existence costs a listing, and a commit reads the config several times."""
    props = _read(storage, PROPERTIES_PATH)
    if props is not None and (CHECKSUM_KEY not in props or valid_checksum(props)):
        return props
    if not storage.exists(METAFOLDER):
        raise TableNotFound(f"no Hudi table at {storage.base_url} ({PROPERTIES_PATH} is missing)")
    if not present(storage) and not has_timeline(storage):
        # Only our own folders (a lease taken before creating the table, a create that died early).
        raise TableNotFound(f"no Hudi table at {storage.base_url} ({PROPERTIES_PATH} is missing)")
    found = False
    for attempt in range(READ_RETRIES):
        for path in (PROPERTIES_PATH, BACKUP_PATH):
            props = _read(storage, path)
            if props is None:
                continue
            found = True
            # A file without a checksum (tables older than version 3) is taken as it is, as Hudi does.
            if CHECKSUM_KEY not in props or valid_checksum(props):
                return props
            log.warning("%s: %s has a wrong %s; trying the backup", storage.base_url, path, CHECKSUM_KEY)
        if attempt + 1 < READ_RETRIES:
            time.sleep(READ_RETRY_DELAY_S)  # a rewrite may be between its steps
    where = storage.url(METAFOLDER)
    if found:
        raise TableConfigDamaged(f"{where}: hoodie.properties and hoodie.properties.backup both fail their "
                                 f"{CHECKSUM_KEY} check; restore the table's config by hand")
    if has_timeline(storage):
        raise TableConfigDamaged(f"{where} holds a table but neither hoodie.properties nor hoodie.properties.backup; "
                                 "refusing to create a new config over it (restore hoodie.properties by hand)")
    raise TableNotFound(f"no Hudi table at {storage.base_url} ({PROPERTIES_PATH} is missing)")


def recover_if_needed(storage: Storage) -> None:
    """`recoverIfNeeded`: restore `hoodie.properties` from the backup if missing or invalid; drop the backup."""
    current = _read(storage, PROPERTIES_PATH)
    need_copy = current is None
    if current is not None and not valid_checksum(current):
        storage.delete(PROPERTIES_PATH)  # the file is invalid
        need_copy = True
    if need_copy:
        try:
            backup = storage.read(BACKUP_PATH)
        except FileNotFoundError:
            backup = None
        if backup is not None:
            if not valid_checksum(_parse(backup)):
                # Hudi 1.x: an invalid backup is deleted too, since reads would fail on it anyway.
                storage.delete(BACKUP_PATH)
                raise TableConfigDamaged(f"{storage.url(BACKUP_PATH)} is corrupted (wrong {CHECKSUM_KEY})")
            storage.create(PROPERTIES_PATH, backup)
    storage.delete(BACKUP_PATH)  # regardless, the backup is not needed any more


def _store(props: dict[str, str]) -> tuple[bytes, str]:
    """`storeProperties`: keep a valid checksum (comment "Updated at"), else compute and add one."""
    if valid_checksum(props):
        return encode(props, "Updated at " + _now()), props[CHECKSUM_KEY]
    props[CHECKSUM_KEY] = str(checksum(props.get(DATABASE_KEY), props[NAME_KEY]))
    return encode(props, "Properties saved on " + _now()), props[CHECKSUM_KEY]


def modify(storage: Storage, updates: Mapping[str, str], deletes: tuple[str, ...] = ()) -> dict[str, str]:
    """`modify`: rewrite `hoodie.properties` so that a crash at any step leaves a readable config."""
    recover_if_needed(storage)                                    # 0. finish a prior attempt
    if not storage.create(BACKUP_PATH, storage.read(PROPERTIES_PATH)):  # 1. back up (no overwrite)
        raise TableConfigDamaged(f"{storage.url(BACKUP_PATH)} appeared while rewriting the config")
    storage.delete(PROPERTIES_PATH)                               # 2. readers now use the backup
    crash_point("mid_properties")
    props = _parse(storage.read(BACKUP_PATH))                     # 3. change and write anew
    props.update(updates)
    for key in deletes:
        props.pop(key, None)
    data, stored = _store(props)
    storage.write(PROPERTIES_PATH, data)
    written = _read(storage, PROPERTIES_PATH) or {}               # 4. verify, then drop the backup
    if written.get(CHECKSUM_KEY) != stored:
        storage.delete(PROPERTIES_PATH)  # the next rewrite recovers; reads use the backup until then
        raise TableConfigDamaged(f"{storage.url(PROPERTIES_PATH)}: checksum missing or wrong after rewriting")
    storage.delete(BACKUP_PATH)
    return written
