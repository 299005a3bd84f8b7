"""Column names Avro refuses: refused before anything is written, or renamed as Hudi's streamer does.

Every schema we emit must parse with Apache Avro's own parser (`avro.schema.parse`), which like
Java's `Schema.Parser` validates record names and namespaces (ours come from column names).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from ingest.config.loader import load_config
from ingest.errors import ConfigError, SchemaEvolutionError
from ingest.hudi.avro import schema as avro
from ingest.hudi.avro.avro_names import invalid_names, sanitize_name, sanitized_schema
from ingest.hudi.log.log_reader import read_log_file
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.spark.sink import HudiSink
from ingest.write.options import IndexOptions, IndexType, WriteOptions

avro_parser = pytest.importorskip("avro.schema", reason="Apache Avro's Python package (pip install avro)")

BAD = pa.schema([
    ("order-id", pa.string()),
    ("c d", pa.int64()),
    ("1x", pa.struct([("inner-name", pa.int32()), ("ok", pa.list_(pa.struct([("a b", pa.int8())])))])),
    ("fine", pa.map_(pa.string(), pa.struct([("é", pa.int8())]))),
])
NESTED = pa.schema([
    ("uuid", pa.string()),
    ("amount", pa.decimal128(12, 2)),
    ("address", pa.struct([("city", pa.string()), ("price", pa.decimal128(5, 1)),
                           ("tags", pa.list_(pa.struct([("name", pa.string())])))])),
    ("attrs", pa.map_(pa.string(), pa.struct([("v", pa.int64())]))),
    ("at", pa.timestamp("us", tz="UTC")),
])


def parses(schema: avro.AvroSchema) -> None:
    avro_parser.parse(avro.to_json(avro.with_meta_fields(schema)))


def test_names_avro_refuses_fail_naming_each_column_by_its_path():
    """Avro `Schema.validateName` (called by `Schema.Parser`): a name starts with a letter or `_` and
    holds letters, digits and `_`; Hudi tells bad names apart with `HoodieAvroUtils`'
    INVALID_AVRO_FIRST_CHAR_IN_NAMES / INVALID_AVRO_CHARS_IN_NAMES patterns."""
    with pytest.raises(SchemaEvolutionError) as e:
        avro.arrow_to_avro(BAD, "orders")
    message = str(e.value)
    for path in ("'order-id'", "'c d'", "'1x'", "'1x.inner-name'", "'1x.ok.a b'", "'fine.é'"):
        assert path in message
    assert invalid_names(NESTED) == []


def test_sanitize_name_renames_as_hudi():
    """`HoodieAvroUtils.sanitizeName(name, invalidCharMask)`: a bad first character is replaced by the
    mask (`replaceFirst`), then every bad character is (`replaceAll`), one mask per character."""
    assert sanitize_name("1x") == "__x"
    assert sanitize_name("order-id") == "order__id"
    assert sanitize_name("c d", "_") == "c_d"
    assert sanitize_name("-a.b") == "__a__b"
    assert sanitize_name("ok_1") == "ok_1"
    renamed = sanitized_schema(BAD)
    assert renamed.names == ["order__id", "c__d", "__x", "fine"]
    assert [f.name for f in renamed.field("__x").type] == ["inner__name", "ok"]
    assert invalid_names(renamed) == []
    parses(avro.arrow_to_avro(renamed, "orders"))
    with pytest.raises(SchemaEvolutionError, match="'a-b' and 'a b' would both be renamed 'a__b'"):
        sanitized_schema(pa.schema([("a-b", pa.int8()), ("a b", pa.int8())]))


@pytest.mark.parametrize("table_name", ["my-orders", "2024_orders"])
def test_every_schema_we_emit_parses_with_apache_avro(table_name):
    """`AvroSchemaUtils.getAvroRecordQualifiedName`: the record is `hoodie.<t>.<t>_record` with the table
    name sanitized by `HoodieAvroUtils.sanitizeName`; nested record names and namespaces come from
    field names (`AvroConversionUtils.convertStructTypeToAvroSchema`), and Avro's parser validates both."""
    schema = avro.arrow_to_avro(NESTED, table_name)
    parses(schema)
    name, namespace = avro.record_name(table_name)
    assert schema["name"] == name and schema["namespace"] == namespace
    assert name == f"{sanitize_name(table_name)}_record"


def _config(tmp_path: Path, schema: str, hudi: dict) -> Path:
    config = {
        "table": {"path": str(tmp_path / "lake" / "orders"), "name": "orders"},
        "hudi": {"hoodie.datasource.write.recordkey.field": "order__id",
                 "hoodie.datasource.write.partitionpath.field": "region", **hudi},
        "source": {"kafka": {"bootstrap_servers": "localhost:9092", "topics": ["orders"]}, "schema": schema},
        "stream": {"checkpoint": str(tmp_path / "checkpoints")},
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_a_declared_schema_is_checked_before_spark_starts(tmp_path):
    """HoodieStreamer parses its source schema with `SanitizationUtils.parseAvroSchema`: Avro's
    `Schema.Parser` refuses bad names unless `hoodie.streamer.source.sanitize.invalid.schema.field.names`
    (`HoodieStreamerConfig.SANITIZE_SCHEMA_FIELD_NAMES`, default false) renames them."""
    schema = "`order-id` STRING NOT NULL, region STRING, `1x` STRUCT<`c d`: INT>"
    with pytest.raises(ConfigError) as e:
        load_config(_config(tmp_path, schema, {}), check_table=False)
    assert "source.schema" in str(e.value) and "'order-id'" in str(e.value) and "'1x.c d'" in str(e.value)
    sanitize = {"hoodie.streamer.source.sanitize.invalid.schema.field.names": True}
    config = load_config(_config(tmp_path, schema, sanitize), check_table=False)
    assert config.write.invalid_name_mask == "__"
    assert config.source.decoder.key_fields == ("order-id",), "the Kafka key carries the source's name"
    with pytest.raises(ConfigError, match="'order__id' is not in the source schema"):  # now order_x_id
        load_config(_config(tmp_path, schema, {"hoodie.streamer.source.sanitize.invalid.schema.field.names": True,
                                               "hoodie.streamer.source.sanitize.invalid.char.mask": "_x_"}),
                    check_table=False)


def _options(path: Path, mask: str | None) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="trips",
                        hudi={"hoodie.datasource.write.recordkey.field": "uuid",
                              "hoodie.datasource.write.partitionpath.field": "city"},
                        index=IndexOptions(type=IndexType.BUCKET, bucket_count=1), invalid_name_mask=mask)


def test_the_sink_refuses_or_renames_bad_columns(spark, tmp_path):
    """`SanitizationUtils.sanitizeColumnNamesForAvro`: columns renamed, nested ones by a cast to the
    sanitized struct (`sanitizeDataTypeForAvro`); the log block's SCHEMA header then parses with Avro."""
    rows = pa.table({"uuid": ["a", "b"], "city": ["x", "y"], "fare-usd": [Decimal("1.50"), Decimal("2.25")],
                     "1x": [{"c d": 1}, {"c d": 2}]})
    df = spark.createDataFrame(rows.to_pandas())
    with HudiSink(_options(tmp_path / "refused", None), spark=spark) as sink, \
            pytest.raises(SchemaEvolutionError, match=r"'fare-usd', '1x', '1x\.c d'"):
        sink.write(df)
    assert not (tmp_path / "refused" / ".hoodie" / "hoodie.properties").exists(), "nothing written"

    with HudiSink(_options(tmp_path / "renamed", "__"), spark=spark) as sink:
        assert sink.write(df).instant is not None
    table = HudiTable.open(str(tmp_path / "renamed"))
    snapshot = read_snapshot(table)
    assert {"fare__usd", "__x"} <= set(snapshot.column_names)
    assert sorted((r["uuid"], r["fare__usd"], r["__x"]["c__d"]) for r in snapshot.to_pylist()) == \
        [("a", Decimal("1.50"), 1), ("b", Decimal("2.25"), 2)]
    logs = [p for p in (tmp_path / "renamed").rglob(".*.log.*")]
    assert logs
    for log in logs:
        for block in read_log_file(table.storage, str(log.relative_to(tmp_path / "renamed"))):
            parsed = avro_parser.parse(block.schema)
            assert "fare__usd" in [f.name for f in parsed.fields]
            assert json.loads(block.schema)["name"] == "trips_record"
