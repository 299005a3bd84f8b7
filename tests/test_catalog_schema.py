"""The table's schema as Hudi's sync registers it for Spark (`spark.sql.sources.schema.part.N`), text for
text: Hudi compares the stored text with its own (`HoodieHiveSyncClient.updateTableProperties`) and writes
its own over anything else, so a sync by Hudi after one by ingest must find the same string."""

from __future__ import annotations

import json

from pyspark.sql.types import StructType

from ingest.catalog.schema import spark_schema_json

SCHEMA = {"type": "record", "name": "trips_record", "fields": [
    {"name": "uuid", "type": "string"},
    {"name": "tags", "type": ["null", {"type": "array", "items": ["null", "string"]}], "default": None},
    {"name": "attrs", "type": ["null", {"type": "map", "values": ["null", "long"]}], "default": None},
    {"name": "rider", "type": ["null", {"type": "record", "name": "rider", "fields": [
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "age", "type": "int"}]}], "default": None},
    {"name": "city", "type": ["null", "string"], "default": None},
]}


def test_the_spark_schema_is_the_text_parquet2sparkschemautils_writes():
    """`Parquet2SparkSchemaUtils.convertToSparkSchemaJson` builds the JSON by hand: compact, but `"array", ` and
    `"map", ` followed by a space; the table's lists are parquet-avro's 2-level ones (`AvroSchemaConverter`
    with `parquet.avro.write-old-list-structure` at its default), whose repeated field is the element, so
    `containsNull` is false (`arrayType(repeatedType, false)`); the partition column goes last."""
    expected = (
        '{"type":"struct","fields":['
        '{"name":"uuid","type":"string","nullable":false,"metadata":{}},'
        '{"name":"tags","type":{"type":"array", "elementType":"string","containsNull":false},"nullable":true,"metadata":{}},'
        '{"name":"attrs","type":{"type":"map", "keyType":"string","valueType":"long","valueContainsNull":true},'
        '"nullable":true,"metadata":{}},'
        '{"name":"rider","type":{"type":"struct","fields":[{"name":"name","type":"string","nullable":true,"metadata":{}},'
        '{"name":"age","type":"integer","nullable":false,"metadata":{}}]},"nullable":true,"metadata":{}},'
        '{"name":"city","type":"string","nullable":true,"metadata":{}}]}')
    text = spark_schema_json(SCHEMA, ("city",))
    assert text == expected
    assert StructType.fromJson(json.loads(text)).fieldNames()[-1] == "city"  # Spark reads it back


def test_a_partition_field_that_is_no_column_is_registered_as_a_required_string():
    """`SparkDataSourceTableUtils.getSparkTableProperties`: "Default the unknown partition fields to be String"
    (`new PrimitiveType(REQUIRED, BINARY, partitionName, UTF8)`). Without it Spark's `HiveExternalCatalog`
    cannot find the partition column among the schema's and refuses to load the table."""
    text = spark_schema_json(SCHEMA, ("datestr",))
    fields = json.loads(text)["fields"]
    assert fields[-1] == {"name": "datestr", "type": "string", "nullable": False, "metadata": {}}
    assert [f["name"] for f in fields[:-1]] == ["uuid", "tags", "attrs", "rider", "city"]
    assert StructType.fromJson(json.loads(text)).fieldNames()[-1] == "datestr"
