"""`hoodie.properties` read, repaired and rewritten with Hudi's backup protocol, on a Hudi-written table.

Each situation is built from the fixture `v6_trips_8i1u`: the file missing with its backup present (a
Hudi rewrite killed between its steps), the file with a wrong checksum beside a good backup, both
files valid, and a timeline with neither file."""

from __future__ import annotations

import shutil

import pytest

from ingest.hudi.config import properties, properties_file
from ingest.hudi.config.table_config import TableConfig, TableConfigKey
from ingest.hudi.table.table import HudiTable

FIXTURE = "v6_trips_8i1u"
PRECOMBINE = TableConfigKey.PRECOMBINE_FIELD.key


def _paths(table):
    meta = table / ".hoodie"
    return meta / "hoodie.properties", meta / "hoodie.properties.backup"


def _rewrite(path, **changes) -> None:
    """Change keys in a properties file as a text editor would (the checksum is left as it was)."""
    props = properties.loads(path.read_bytes().decode("latin-1"))
    props.update(changes)
    path.write_bytes(properties.encode_text(properties.dumps(props, "edited")))


def _settings(table) -> dict[str, str]:
    props = TableConfig.load(HudiTable.open(str(table)).storage).props
    return {k: props[k] for k in (TableConfigKey.NAME.key, TableConfigKey.RECORD_KEY_FIELDS.key, PRECOMBINE)}


def test_missing_file_is_read_from_the_backup_and_never_recreated(hudi_table_copy):
    """HoodieTableConfig.fetchConfigs: when hoodie.properties is missing the reader loads
    hoodie.properties.backup; readers never repair (only HoodieTableConfig.modify calls recoverIfNeeded)."""
    table = hudi_table_copy(FIXTURE)
    props, backup = _paths(table)
    original = props.read_bytes()
    settings = _settings(table)
    props.rename(backup)  # a Hudi rewrite killed after step 2 (file deleted, backup kept)

    opened = HudiTable.open_or_create(str(table), settings)

    assert opened.name == FIXTURE and opened.config.precombine_field == "ts"
    assert HudiTable.exists(str(table))
    assert not props.exists(), "a reader must not write hoodie.properties"
    assert backup.read_bytes() == original


def test_wrong_checksum_falls_back_to_a_good_backup(hudi_table_copy):
    """HoodieTableConfig.fetchConfigs with validateChecksum: a hoodie.properties whose
    hoodie.table.checksum does not match CRC32(<database>.<table>) is skipped for the backup."""
    table = hudi_table_copy(FIXTURE)
    props, backup = _paths(table)
    shutil.copyfile(props, backup)
    _rewrite(props, **{TableConfigKey.NAME.key: "renamed", PRECOMBINE: "fare"})  # checksum now wrong

    config = HudiTable.open(str(table)).config

    assert config.name == FIXTURE and config.precombine_field == "ts"


def test_rewrite_restores_from_backup_then_updates_and_drops_it(hudi_table_copy):
    """HoodieTableConfig.modify: recoverIfNeeded first (copy the backup over a missing file, delete the
    backup), then backup, delete, write anew with storeProperties, verify the checksum, delete the backup."""
    table = hudi_table_copy(FIXTURE)
    props, backup = _paths(table)
    props.rename(backup)
    storage = HudiTable.open(str(table)).storage

    updated = TableConfig.update(storage, {"hoodie.table.metadata.partitions": ""})

    assert not backup.exists()
    on_disk = properties.loads(props.read_bytes().decode("latin-1"))
    assert on_disk == updated.props and on_disk["hoodie.table.metadata.partitions"] == ""
    assert properties_file.valid_checksum(on_disk) and on_disk[PRECOMBINE] == "ts"
    assert props.read_bytes().startswith(b"#Updated at ")  # storeProperties kept the valid checksum
    import hudi

    assert hudi.HudiTableBuilder.from_base_uri(str(table)).build().hudi_options()["hoodie.table.name"] == FIXTURE


def test_both_valid_reads_the_file_and_rewrite_drops_the_backup(hudi_table_copy):
    """HoodieTableConfig.fetchConfigs reads hoodie.properties before the backup; recoverIfNeeded keeps a
    valid file and deletes the backup regardless ("we don't need the backup anymore")."""
    table = hudi_table_copy(FIXTURE)
    props, backup = _paths(table)
    shutil.copyfile(props, backup)
    _rewrite(backup, **{PRECOMBINE: "fare"})  # still a valid checksum: name and database unchanged
    assert HudiTable.open(str(table)).config.precombine_field == "ts"

    TableConfig.update(HudiTable.open(str(table)).storage, {"hoodie.table.cdc.enabled": "false"})

    assert not backup.exists()
    assert HudiTable.open(str(table)).config.precombine_field == "ts"


def test_rewrite_replaces_a_file_with_a_wrong_checksum_by_the_backup(hudi_table_copy):
    """HoodieTableConfig.recoverIfNeeded: a hoodie.properties that fails validateChecksum is deleted and
    the backup copied in its place before the rewrite."""
    table = hudi_table_copy(FIXTURE)
    props, backup = _paths(table)
    shutil.copyfile(props, backup)
    _rewrite(props, **{TableConfigKey.NAME.key: "renamed"})

    TableConfig.update(HudiTable.open(str(table)).storage, {"hoodie.table.cdc.enabled": "false"})

    on_disk = properties.loads(props.read_bytes().decode("latin-1"))
    assert on_disk[TableConfigKey.NAME.key] == FIXTURE and properties_file.valid_checksum(on_disk)
    assert not backup.exists()


def test_timeline_without_either_file_is_an_error_not_a_new_table(hudi_table_copy, monkeypatch):
    """HoodieTableConfig.fetchConfigs: with neither file, after its retries, the table's config is
    reported unreadable; a table with a timeline is never given a fresh config."""
    monkeypatch.setattr(properties_file, "READ_RETRY_DELAY_S", 0.0)
    table = hudi_table_copy(FIXTURE)
    props, _ = _paths(table)
    settings = _settings(table)
    props.unlink()

    with pytest.raises(properties_file.TableConfigDamaged, match=r"\.hoodie holds a table but neither"):
        HudiTable.open_or_create(str(table), settings)
    assert not props.exists()
    assert not HudiTable.exists(str(table))


def test_both_files_invalid_is_an_error(hudi_table_copy, monkeypatch):
    """HoodieTableConfig.fetchConfigs: when every file found fails validateChecksum it throws
    "hoodie.properties file seems invalid" instead of loading one of them."""
    monkeypatch.setattr(properties_file, "READ_RETRY_DELAY_S", 0.0)
    table = hudi_table_copy(FIXTURE)
    props, backup = _paths(table)
    _rewrite(props, **{TableConfigKey.NAME.key: "renamed"})
    shutil.copyfile(props, backup)

    with pytest.raises(properties_file.TableConfigDamaged, match="both fail"):
        HudiTable.open(str(table))
