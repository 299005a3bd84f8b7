"""Which key form a single-field ComplexKeyGenerator table uses, recorded and required (HUDI-7001)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from test_config import base, write

from ingest.config.loader import load_config
from ingest.errors import ConfigError
from ingest.hudi.config import properties
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

ENCODING = "hoodie.write.complex.keygen.new.encoding"
COMPLEX = {
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
}


def _options(path: Path, **hudi: str) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="t", hudi={**COMPLEX, **hudi},
                        index=IndexOptions(type=IndexType.BUCKET, bucket_count=1))


def _rows(*ids: str) -> pa.Table:
    return pa.table({"id": list(ids), "part": ["p"] * len(ids), "ts": pa.array([1] * len(ids), pa.int64())})


def _props(table: Path) -> dict[str, str]:
    return properties.loads(properties.decode_bytes((table / ".hoodie" / "hoodie.properties").read_bytes()))


def _forget_encoding(table: Path) -> None:
    """As a table Hudi wrote looks: no release records the choice in hoodie.properties."""
    props = _props(table)
    del props[ENCODING]
    (table / ".hoodie" / "hoodie.properties").write_bytes(properties.encode_text(properties.dumps(props, "x")))


def _stored_keys(table: Path) -> set[str]:
    return set(read_snapshot(HudiTable.open(str(table))).column("_hoodie_record_key").to_pylist())


def test_a_new_table_records_the_field_prefixed_form():
    """Hudi 0.14.2/0.15.1 `KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen`:
    `!hoodie.write.complex.keygen.new.encoding` (default false), so `ComplexAvroKeyGenerator.getRecordKey`
    writes `field:value` unless the config asks for the bare value 0.14.1/0.15.0/1.0.0-1.0.2 wrote; no Hudi
    `HoodieTableConfig` key records it, so we record the write key itself for a later writer."""
    from ingest.hudi.keygen.key_generator import KeyGeneratorSpec

    assert KeyGeneratorSpec.from_config(COMPLEX).table_properties()[ENCODING] == "false"
    assert KeyGeneratorSpec.from_config({**COMPLEX, ENCODING: "true"}).table_properties()[ENCODING] == "true"
    two = {**COMPLEX, "hoodie.datasource.write.recordkey.field": "id,part"}
    assert ENCODING not in KeyGeneratorSpec.from_config(two).table_properties()


def test_the_recorded_form_is_used_and_an_unrecorded_one_must_be_given(tmp_path):
    """`ComplexAvroKeyGenerator.getRecordKey` (0.14.1/0.15.0/1.0.0-1.0.2: one field gives the bare value;
    0.14.0, 0.14.2+, 0.15.1+, 1.0.3+: `field:value`, `hoodie.write.complex.keygen.new.encoding`): a writer that
    guesses the other form keys every record anew. The form recorded in hoodie.properties is followed;
    a table that records none is refused until the config says which it is."""
    table = tmp_path / "t"
    LocalWriter(_options(table, **{ENCODING: "true"})).write(_rows("a"))
    assert _props(table)[ENCODING] == "true"
    LocalWriter(_options(table)).write(_rows("b"))            # silent config: the recorded form
    assert _stored_keys(table) == {"a", "b"}

    _forget_encoding(table)
    with pytest.raises(ConfigError, match=ENCODING):
        LocalWriter(_options(table)).write(_rows("c"))
    LocalWriter(_options(table, **{ENCODING: "true"})).write(_rows("c"))
    assert _stored_keys(table) == {"a", "b", "c"}


def test_validation_refuses_an_existing_table_that_records_no_form(tmp_path):
    """The same rule (`KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen`, HUDI-7001), checked when the
    configuration is validated against the table: a form contradicting the recorded one, or no form for
    a table that records none, is refused naming the key."""
    config = base(tmp_path)
    table = Path(config["table"]["path"])
    complex_ = ["hudi.hoodie.datasource.write.keygenerator.class=org.apache.hudi.keygen.ComplexKeyGenerator"]
    hudi = {"hoodie.datasource.write.recordkey.field": "order_id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "updated_at",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator"}
    # The configuration's index is SIMPLE (Hudi's default), so the table is written with the key index.
    LocalWriter(WriteOptions(table_path=str(table), table_name="orders", hudi=hudi,
                             index=IndexOptions(type=IndexType.KEY))).write(
        pa.table({"order_id": ["o1"], "region": ["eu"], "updated_at": pa.array([1], pa.int64())}))
    path = write(tmp_path, config)
    assert load_config(path, complex_).write.keygen.plain_record_key is False
    with pytest.raises(ConfigError, match=f"{ENCODING}: table has 'false'"):
        load_config(path, [*complex_, f"hudi.{ENCODING}=true"])

    _forget_encoding(table)
    with pytest.raises(ConfigError, match=f"hoodie.properties: hudi.{ENCODING}: "):
        load_config(path, complex_)
    assert load_config(path, [*complex_, f"hudi.{ENCODING}=true"]).write.keygen.plain_record_key is True


def test_at_version_9_keys_are_field_prefixed_whatever_the_writer_says(tmp_path):
    """Hudi 1.1 `KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen`: from write table version 9 on,
    `field:value` whatever `hoodie.write.complex.keygen.new.encoding` says (and
    `mayUseNewEncodingForComplexKeyGen` is false there). A new table at 9 asked for the bare form is
    refused before anything is written; an existing table at 9 that records no form (as Hudi writes
    it) is written `field:value` without being told, and the bare form is refused for it too."""
    config = base(tmp_path)
    complex_ = ["hudi.hoodie.datasource.write.keygenerator.class=org.apache.hudi.keygen.ComplexKeyGenerator",
                "hudi.hoodie.write.table.version=9"]
    with pytest.raises(ConfigError, match=f"hudi.{ENCODING}: true .* cannot be written at table version 9"):
        load_config(write(tmp_path, config), [*complex_, f"hudi.{ENCODING}=true"])
    assert not Path(config["table"]["path"]).exists()

    at_9 = {"hoodie.write.table.version": "9"}
    table = tmp_path / "t"
    with pytest.raises(ConfigError, match=f"{ENCODING}: true .* cannot be written at table version 9"):
        LocalWriter(_options(table, **at_9, **{ENCODING: "true"})).write(_rows("a"))
    assert not (table / ".hoodie" / "hoodie.properties").exists()

    LocalWriter(_options(table, **at_9)).write(_rows("a"))
    assert _props(table)[ENCODING] == "false"
    _forget_encoding(table)
    LocalWriter(_options(table)).write(_rows("b"))              # silent config, nothing recorded
    assert _stored_keys(table) == {"id:a", "id:b"}
    with pytest.raises(ConfigError, match=f"{ENCODING}: true .* cannot be written at table version 9"):
        LocalWriter(_options(table, **{ENCODING: "true"})).write(_rows("c"))
    assert _stored_keys(table) == {"id:a", "id:b"}


def test_an_existing_table_keeps_its_versions_form_whatever_version_new_tables_get(tmp_path):
    """An existing table is written at its own version (`hoodie.write.table.version` is for new tables):
    a version-8 table of bare keys stays writable, bare, under a config that creates tables at 9."""
    table = tmp_path / "t"
    LocalWriter(_options(table, **{"hoodie.write.table.version": "8", ENCODING: "true"})).write(_rows("a"))
    LocalWriter(_options(table, **{"hoodie.write.table.version": "9"})).write(_rows("b"))
    assert _props(table)["hoodie.table.version"] == "8"
    assert _stored_keys(table) == {"a", "b"}
