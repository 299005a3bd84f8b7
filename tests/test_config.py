"""Pipeline configuration: every error as its one line, env and --set, secrets, examples, CLI, docs."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import pytest
import yaml

from ingest import cli
from ingest.config import keys
from ingest.config.loader import load_config
from ingest.config.pipeline import OnError
from ingest.errors import ConfigError
from ingest.hudi.table.table import HudiTable
from ingest.write.options import IndexOptions, IndexType, Operation, WriteOptions

REPO = Path(__file__).resolve().parent.parent
RK = "hoodie.datasource.write.recordkey.field"
PP = "hoodie.datasource.write.partitionpath.field"
PC = "hoodie.datasource.write.precombine.field"
HIVE = "hoodie.datasource.write.hive_style_partitioning"
SCHEMA = "order_id STRING NOT NULL, region STRING, amount DECIMAL(12,2), updated_at TIMESTAMP"
SECRET = "s3cr3t-Pa55-word-value"


def base(tmp_path: Path) -> dict:
    return {
        "table": {"path": str(tmp_path / "lake" / "orders"), "name": "orders"},
        "hudi": {RK: "order_id", PP: "region", PC: "updated_at"},
        "source": {"kafka": {"bootstrap_servers": "localhost:9092", "topics": ["orders"]}, "schema": SCHEMA},
        "stream": {"checkpoint": str(tmp_path / "checkpoints" / "orders")},
    }


def write(tmp_path: Path, config: dict | str, name: str = "pipeline.yaml") -> Path:
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False))
    return path


def set_(*pairs):
    """An edit setting each (path, value); a path is a tuple of YAML keys (Hudi keys stay whole)."""

    def edit(config: dict) -> None:
        for path, value in zip(pairs[::2], pairs[1::2], strict=True):
            node = config
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = value

    return edit


def drop(path):
    def edit(config: dict) -> None:
        node = config
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]

    return edit


def files_source(config: dict) -> None:
    config["source"] = {"files": {"path": "/data/exports"}, "format": "json"}


COLUMNS = "order_id, region, amount, updated_at, _kafka_topic, _kafka_partition, _kafka_offset, _kafka_timestamp, " \
          "_ingest_is_tombstone, _ingest_is_deleted"

# (id, edit of the base config, --set items, the exact error line)
ERRORS = [
    ("unknown key, suggested", set_(("source", "kafka", "topcs"), ["x"]), [],
     "{file}: source.kafka.topcs: unknown key; did you mean source.kafka.topics?"),
    ("unknown key, keys listed", set_(("stream", "xyzzy_frobnicate"), 1), [],
     "{file}: stream.xyzzy_frobnicate: unknown key; stream takes checkpoint, on_error, trigger"),
    ("unknown section", set_(("sinks",), {"a": 1}), [],
     "{file}: sinks: unknown key; the sections are hudi, quarantine, source, spark, stream, table, write"),
    ("unknown Hudi key: a typo", set_(("hudi", "hoodie.datasource.write.hive_style_partitoning"), True), [],
     "{file}: hudi.hoodie.datasource.write.hive_style_partitoning: unknown Hudi key; did you mean "
     "hudi.hoodie.datasource.write.hive_style_partitioning?"),
    ("not a Hudi key in the hudi section", set_(("hudi", "recordkey.field"), "id"), [],
     "{file}: hudi.recordkey.field: unknown key: keys of the hudi section are Hudi's (hoodie.*); did you mean "
     "hudi.hoodie.datasource.write.recordkey.field?"),
    ("refused Hudi key", set_(("hudi", "hoodie.deltastreamer.transformer.class"), "a.b.Transformer"),
     [], "{file}: hudi.hoodie.deltastreamer.transformer.class: is not supported: ingest applies no transformers: "
     "shape records before they reach the topic or files"),
    ("schema registry for JSON values",
     set_(("hudi", "hoodie.deltastreamer.schemaprovider.registry.url"), "http://r:8081/subjects/o-value/versions/latest"),
     [], "{file}: hudi.hoodie.deltastreamer.schemaprovider.registry.url: a schema registry serves source.format "
     "confluent_avro, not json"),
    ("schema registry URL that names no subject version",
     set_(("hudi", "hoodie.streamer.schemaprovider.registry.url"), "https://u:pw@r:8081"),
     [], "{file}: hudi.hoodie.streamer.schemaprovider.registry.url: 'https://r:8081' is not a schema registry "
     "subject version URL (http[s]://[user:pass@]host[:port][/path]/subjects/<subject>/versions/latest)"),
    ("wrong type: integer", set_(("source", "kafka", "max_offsets_per_trigger"), "lots"), [],
     "{file}: source.kafka.max_offsets_per_trigger: expected an integer, got 'lots'"),
    ("wrong type: boolean", set_(("hudi", HIVE), "yes please"), [],
     "{file}: hudi.hoodie.datasource.write.hive_style_partitioning: expected true or false, got 'yes please'"),
    ("wrong type: list for text", set_(("table", "name"), ["orders"]), [],
     "{file}: table.name: expected text, got a list"),
    ("wrong type: a section", set_(("source",), ["orders"]), [],
     "{file}: source: is a section: expected a mapping of its keys, got a list"),
    ("wrong type: a Hudi key as a mapping", set_(("hudi", "hoodie.upsert"), {"shuffle": 1}), [],
     "{file}: hudi.hoodie.upsert: expected a value, got a mapping (write Hudi keys whole: hoodie.a.b: value)"),
    ("below the minimum", set_(("hudi", "hoodie.bucket.index.num.buckets"), 0), [],
     "{file}: hudi.hoodie.bucket.index.num.buckets: must be at least 1, got 0"),
    ("bad size", set_(("write", "file_group_max_bytes"), "big"), [],
     "{file}: write.file_group_max_bytes: expected a size in bytes such as 134217728, 128MiB or 1 GB, got 'big'"),
    ("bad trigger", set_(("stream", "trigger"), "soon"), [],
     "{file}: stream.trigger: expected available_now or an interval such as '30 seconds' or '5 minutes', got 'soon'"),
    ("bad enum value", set_(("hudi", "hoodie.index.type"), "HASH"), [],
     "{file}: hudi.hoodie.index.type: 'HASH' is not one of BUCKET, SIMPLE, BLOOM, GLOBAL_SIMPLE, GLOBAL_BLOOM, "
     "RECORD_INDEX"),
    ("bad enum value with a reason", set_(("hudi", "hoodie.datasource.write.table.type"), "COPY_ON_WRITE"), [],
     "{file}: hudi.hoodie.datasource.write.table.type: 'COPY_ON_WRITE' is not one of MERGE_ON_READ (ingest writes "
     "Merge-On-Read tables only)"),
    ("bad table name", set_(("table", "name"), "orders-v2"), [],
     "{file}: table.name: 'orders-v2' is not valid: letters, digits and _, not starting with a digit (it names "
     "the table's Avro record)"),
    ("bad starting offsets", set_(("source", "kafka", "starting_offsets"), "beginning"), [],
     "{file}: source.kafka.starting_offsets: 'beginning' is not earliest, latest or JSON like "
     '{"topic": {"0": 23, "1": -2}} (-2 earliest, -1 latest)'),
    ("missing table.path", drop(("table", "path")), [],
     "{file}: table.path: is required: the table's base URL (a path, or an fsspec URL such as s3://lake/orders)"),
    ("missing table.name", drop(("table", "name")), [],
     "{file}: table.name: is required: the table's name (hoodie.table.name)"),
    ("missing record key", drop(("hudi", RK)), [],
     "{file}: hudi.hoodie.datasource.write.recordkey.field: is required: the record key field(s), comma-separated"),
    ("missing source", drop(("source",)), [],
     "{file}: source: is required: give source.kafka (a stream) or source.files (a backfill)"),
    ("missing brokers", drop(("source", "kafka", "bootstrap_servers")), [],
     "{file}: source.kafka.bootstrap_servers: is required: the Kafka brokers, host:port"),
    ("missing topics", drop(("source", "kafka", "topics")), [],
     "{file}: source.kafka.topics: is required: give source.kafka.topics or source.kafka.topic_pattern"),
    ("missing schema", drop(("source", "schema")), [],
     "{file}: source.schema: is required: give source.schema (Spark DDL) or source.schema_file (Avro .avsc)"),
    ("missing Avro schema file", set_(("source", "format"), "confluent_avro"), [],
     "{file}: source.schema: the confluent_avro format reads an Avro schema: give source.schema_file"),
    ("missing checkpoint", drop(("stream", "checkpoint")), [],
     "{file}: stream.checkpoint: is required for Kafka sources: where Spark keeps the stream's offsets"),
    ("missing quarantine path", set_(("stream", "on_error"), "quarantine"), [],
     "{file}: quarantine.path: is required when stream.on_error is quarantine: where bad records go"),
    ("contradiction: a Kafka-only key with files", files_source, [],
     "{file}: source.format: applies to Kafka sources only (file sources take source.files.format)"),
    ("missing environment variable", set_(("source", "kafka", "options"), {"sasl.jaas.config": "${INGEST_TEST_UNSET}"}),
     [], "{file}: source.kafka.options.sasl.jaas.config: environment variable INGEST_TEST_UNSET is not set"),
    ("malformed variable reference", set_(("table", "name"), "${orders"), [],
     "{file}: table.name: has a '${' without its closing '}'"),
    ("bad --set syntax", None, ["stream.trigger"], "--set: expected SECTION.KEY=VALUE, got 'stream.trigger'"),
    ("bad --set: a section only", None, ["table=x"], "--set: expected SECTION.KEY=VALUE, got 'table=x'"),
    ("bad --set: unknown key", None, ["stream.triger=1 minute"],
     "--set: stream.triger: unknown key; did you mean stream.trigger?"),
    ("bad --set: a whole map", None, ["spark.conf=x"],
     "--set: spark.conf: holds several settings: set them one by one, spark.conf.<name>=VALUE"),
    ("bad --set: wrong type", None, ["hudi.hoodie.bucket.index.num.buckets=many"],
     "--set: hudi.hoodie.bucket.index.num.buckets: expected an integer, got 'many'"),
    ("bad --set: missing variable", None, ["stream.checkpoint=${INGEST_TEST_UNSET}/x"],
     "--set: stream.checkpoint: environment variable INGEST_TEST_UNSET is not set"),
    ("contradiction: bucket count with a key index",
     set_(("hudi", "hoodie.index.type"), "GLOBAL_SIMPLE", ("hudi", "hoodie.bucket.index.num.buckets"), 16), [],
     "{file}: hudi.hoodie.bucket.index.num.buckets: applies only to hudi.hoodie.index.type=BUCKET, not GLOBAL_SIMPLE"),
    ("contradiction: a bucket index given a global scope", None, ["hudi.hoodie.index.type=GLOBAL_BLOOM",
                                                                  "hudi.hoodie.bucket.index.hash.field=order_id"],
     "--set: hudi.hoodie.bucket.index.hash.field: applies only to hudi.hoodie.index.type=BUCKET, not GLOBAL_BLOOM"),
    ("contradiction: key index shards with the bucket index", set_(("write", "key_index_shards"), 4),
     ["hudi.hoodie.index.type=BUCKET"],
     "{file}: write.key_index_shards: applies to key indexes only, and hudi.hoodie.index.type is BUCKET"),
    ("contradiction: topics and a pattern", set_(("source", "kafka", "topic_pattern"), "orders\\..*"), [],
     "{file}: source.kafka.topic_pattern: contradicts source.kafka.topics: give one of them"),
    ("contradiction: two sources", set_(("source", "files"), {"path": "/data/exports"}), [],
     "{file}: source: give source.kafka (a stream) or source.files (a backfill), not both"),
    ("contradiction: a HoodieStreamer key and ours", set_(("hudi", "hoodie.streamer.source.kafka.topic"), "payments"),
     [], "{file}: source.kafka.topics: contradicts hudi.hoodie.streamer.source.kafka.topic='payments': give one of them"),
    ("contradiction: archival bounds", set_(("hudi", "hoodie.keep.max.commits"), 15), [],
     "{file}: hudi.hoodie.keep.max.commits: must be greater than hoodie.keep.min.commits (20), got 15"),
    ("contradiction: archival below the cleaner", set_(("hudi", "hoodie.keep.min.commits"), 8), [],
     "{file}: hudi.hoodie.keep.min.commits: must be greater than hoodie.cleaner.commits.retained (10), got 8: "
     "archiving commits the cleaner keeps would hide them from incremental reads"),
    ("contradiction: compaction run and only scheduled",
     set_(("hudi", "hoodie.compact.inline"), True, ("hudi", "hoodie.compact.schedule.inline"), True), [],
     "{file}: hudi.hoodie.compact.schedule.inline: contradicts hoodie.compact.inline=true: compaction is either run "
     "inline or only scheduled inline"),
    ("contradiction: quarantine inside the table", set_(("quarantine", "path"), "{table}/quarantine"), [],
     "{file}: quarantine.path: must be outside the table ({table}): Hudi readers would see its files"),
    ("contradiction: quarantine inside the table by URL", set_(("quarantine", "path"), "file://{table}/bad"), [],
     "{file}: quarantine.path: must be outside the table ({table}): Hudi readers would see its files"),
    ("contradiction: quarantine inside the table through ..", set_(("quarantine", "path"), "{table}-old/../orders/q"),
     [], "{file}: quarantine.path: must be outside the table ({table}): Hudi readers would see its files"),
    ("contradiction: quarantine is the table", set_(("quarantine", "path"), "{table}/"), [],
     "{file}: quarantine.path: must be outside the table ({table}): Hudi readers would see its files"),
    ("key generator settings", set_(("hudi", "hoodie.datasource.write.keygenerator.type"), "SIMPLE",
                                    ("hudi", RK), "order_id,region"), [],
     "{file}: hudi.hoodie.datasource.write.recordkey.field: org.apache.hudi.keygen.SimpleKeyGenerator takes a single "
     "record key field, got 'order_id,region'"),
    ("a field the source lacks", set_(("hudi", PP), "regoin"), [],
     "{file}: hudi.hoodie.datasource.write.partitionpath.field: field 'regoin' is not in the source schema "
     f"(columns: {COLUMNS})"),
    ("a bad DDL schema", set_(("source", "schema"), "order_id STRNG"), [],
     "{file}: source.schema: unknown type STRNG in 'order_id STRNG'"),
    ("a failed batch skipped", set_(("hudi", "hoodie.datasource.write.streaming.ignore.failed.batch"), True), [],
     "{file}: hudi.hoodie.datasource.write.streaming.ignore.failed.batch: true is not one of false (a skipped "
     "batch's records would be lost while the stream goes on; ingest stops instead, and a restart writes the "
     "batch again)"),
    ("no attempt at a batch", set_(("hudi", "hoodie.datasource.write.streaming.retry.count"), 0), [],
     "{file}: hudi.hoodie.datasource.write.streaming.retry.count: must be at least 1, got 0"),
]


@pytest.mark.parametrize("edit, overrides, expected", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_each_error_is_one_line_naming_file_key_and_what_is_allowed(tmp_path, monkeypatch, edit, overrides, expected):
    monkeypatch.delenv("INGEST_TEST_UNSET", raising=False)
    config = base(tmp_path)
    table = config["table"]["path"]
    if edit is not None:
        edit(config)
        text = yaml.safe_dump(config, sort_keys=False).replace("{table}", table)
    else:
        text = yaml.safe_dump(config, sort_keys=False)
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(path, overrides)
    message = str(raised.value)
    assert message == expected.replace("{file}", str(path)).replace("{table}", table)
    assert "\n" not in message


def test_a_table_that_cannot_be_read_is_one_line_naming_the_path(tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    config = base(tmp_path)
    config["table"]["path"] = "s3://ingest-no-such-bucket/orders"
    path = write(tmp_path, config)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value) == (
        f"{path}: table.path: cannot read the table at s3://ingest-no-such-bucket/orders to compare settings: "
        "Unable to locate credentials (--no-table-check validates without it)")
    assert load_config(path, check_table=False).table.path == "s3://ingest-no-such-bucket/orders"


def test_where_the_quarantine_goes_is_checked_without_reaching_the_lake(tmp_path):
    """`--no-table-check` validates where the lake is out of reach: telling whether the quarantine folder
    is inside the table opens no file system (here HDFS, whose client needs a JVM and a name node)."""
    config = base(tmp_path)
    config["table"]["path"] = "hdfs://namenode:8020/lake/orders"
    config["quarantine"] = {"path": "hdfs://namenode:8020/lake/quarantine/orders"}
    loaded = load_config(write(tmp_path, config), check_table=False)
    assert loaded.quarantine.path == "hdfs://namenode:8020/lake/quarantine/orders"
    config["quarantine"] = {"path": "hdfs://namenode:8020/lake/orders/../orders/bad"}
    with pytest.raises(ConfigError, match="quarantine.path: must be outside the table"):
        load_config(write(tmp_path, config), check_table=False)


RAW_ERRORS = [
    ("a key given twice", "table:\n  path: /a\n  path: /b\n",
     "{file}: is not valid YAML: key 'path' is given twice (line 3, column 3)"),
    ("not YAML", "table: [unclosed\n", "{file}: is not valid YAML: expected ',' or ']', but got '<stream end>' "
     "(line 2, column 1)"),
    ("empty", "", "{file}: expected a mapping of sections (table, hudi, source, write, stream, quarantine, spark), "
     "got nothing"),
    ("not a mapping", "- table\n", "{file}: expected a mapping of sections (table, hudi, source, write, stream, "
     "quarantine, spark), got a list"),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in RAW_ERRORS], ids=[c[0] for c in RAW_ERRORS])
def test_unreadable_files(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value) == expected.replace("{file}", str(path))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"nope\.yaml: cannot read it: No such file or directory$"):
        load_config(tmp_path / "nope.yaml")


def test_contradiction_with_the_existing_tables_properties(tmp_path):
    table_path = tmp_path / "lake" / "orders"
    existing = WriteOptions(str(table_path), "orders", hudi={RK: "id", PP: "region", HIVE: "true"},
                            index=IndexOptions(bucket_count=256))
    HudiTable.create(str(table_path), existing.table_settings())
    path = write(tmp_path, base(tmp_path))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    props = f"{table_path}/.hoodie/hoodie.properties"
    assert str(raised.value) == (
        f"{props}: hoodie.table.recordkey.fields: table has 'id', {path} gives 'order_id' "
        f"(hudi.hoodie.datasource.write.recordkey.field); hoodie.datasource.write.hive_style_partitioning: "
        f"table has 'true', {path} gives 'false' (hudi.hoodie.datasource.write.hive_style_partitioning, by default)"
    )
    # Agreeing settings pass, and --no-table-check style loading never opens the table.
    agreeing = [f"hudi.{RK}=id", f"hudi.{HIVE}=true", "source.schema=id STRING NOT NULL, region STRING, updated_at TIMESTAMP",
                "hudi.hoodie.index.type=BUCKET", "hudi.hoodie.bucket.index.num.buckets=256"]
    assert load_config(path, agreeing).write.hudi[RK] == "id"
    assert load_config(path, check_table=False).table.name == "orders"


def test_a_table_of_another_version_is_refused_naming_its_properties(tmp_path):
    table_path = tmp_path / "lake" / "orders"
    HudiTable.create(str(table_path), WriteOptions(str(table_path), "orders", hudi={RK: "order_id", PP: "region"})
                     .table_settings())
    props = table_path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.type=MERGE_ON_READ", "hoodie.table.type=COPY_ON_WRITE"))
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, base(tmp_path)))
    assert str(raised.value) == (f"{props}: hoodie.table.type=COPY_ON_WRITE: ingest writes "
                                 "MERGE_ON_READ tables only")


# -- values: types, env, --set ------------------------------------------------------------------------


def test_resolved_config_and_what_jobs_get(tmp_path):
    config = load_config(write(tmp_path, base(tmp_path)))
    assert config.table.name == "orders" and config.table.database == "default"
    assert config.write.operation is Operation.UPSERT
    assert config.write.index.type is IndexType.KEY and not config.write.index.global_scope
    assert config.write.keygen.class_name == "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert config.write.parquet_compression == "snappy"
    assert config.source.kafka.spark_options() == {
        "kafka.bootstrap.servers": "localhost:9092", "subscribe": "orders", "startingOffsets": "latest",
        "failOnDataLoss": "true",
    }
    assert config.source.decoder.format == "json" and config.source.decoder.key_fields == ("order_id",)
    assert config.stream.trigger.spark_kwargs() == {"processingTime": "1 minute"}
    assert config.stream.on_error is OnError.FAIL
    assert config.spark.app_name == "ingest-orders"
    assert config.services["hoodie.cleaner.policy"] == "KEEP_LATEST_COMMITS"
    assert config.services["hoodie.compact.inline"] == "false"
    assert config.hudi[RK] == "order_id" and config.hudi["hoodie.table.name"] == "orders"
    assert config.warnings == ()
    restored = pickle.loads(pickle.dumps(config))
    assert restored.write == config.write and restored.services == config.services


@pytest.mark.parametrize("index_type, kind, global_scope", [
    ("BUCKET", IndexType.BUCKET, False), ("SIMPLE", IndexType.KEY, False), ("BLOOM", IndexType.KEY, False),
    ("GLOBAL_SIMPLE", IndexType.KEY, True), ("GLOBAL_BLOOM", IndexType.KEY, True),
    ("RECORD_INDEX", IndexType.KEY, True),
])
def test_hudi_index_types_map_to_ours(tmp_path, index_type, kind, global_scope):
    config = load_config(write(tmp_path, base(tmp_path)), [f"hudi.hoodie.index.type={index_type.lower()}"])
    assert (config.write.index.type, config.write.index.global_scope) == (kind, global_scope)
    assert config.hudi["hoodie.index.type"] == index_type


@pytest.mark.parametrize("index_type", ["SIMPLE", "BLOOM", "GLOBAL_SIMPLE", "GLOBAL_BLOOM", "RECORD_INDEX"])
def test_log_inserts_are_refused_with_an_index_that_cannot_index_log_files(tmp_path, index_type):
    """Hudi's `HoodieIndex.canIndexLogFiles()` is false for HoodieSimpleIndex, HoodieBloomIndex, their global
    forms and SparkMetadataTableRecordIndex, and `BaseSparkDeltaCommitActionExecutor.handleInsert` then
    writes inserts to base files: keys we put in log files would be invisible to Hudi's writers. The
    configuration is refused in one line naming both keys."""
    config = base(tmp_path)
    config["hudi"]["hoodie.index.type"] = index_type
    config["write"] = {"insert_mode": "log"}
    path = write(tmp_path, config)
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value) == (
        f"{path}: write.insert_mode: is log, but hudi.hoodie.index.type {index_type} finds keys in base files only "
        "(only BUCKET can index log files): Hudi's writers would not see these keys; use base")


@pytest.mark.parametrize(("index_type", "mode"), [("BUCKET", "log"), ("SIMPLE", "base"), ("BLOOM", "base")])
def test_insert_mode_defaults_to_where_hudis_writer_puts_inserts(tmp_path, index_type, mode):
    """`BaseSparkDeltaCommitActionExecutor.handleInsert`: log files when `canIndexLogFiles()` (the bucket
    index), base files otherwise; Hudi's sizing keys reach the writer with Hudi's defaults
    (`HoodieCompactionConfig.PARQUET_SMALL_FILE_LIMIT` 100 MiB, `HoodieStorageConfig.PARQUET_MAX_FILE_SIZE`)."""
    config = load_config(write(tmp_path, base(tmp_path)), [f"hudi.hoodie.index.type={index_type}"])
    assert config.write.insert_mode.value == mode
    assert config.settings["write.insert_mode"] == mode
    assert config.write.small_files.small_file_limit == 104857600
    assert config.write.file_group_max_bytes == 120 * 1024**2
    tuned = load_config(write(tmp_path, base(tmp_path)), [
        f"hudi.hoodie.index.type={index_type}", "hudi.hoodie.parquet.small.file.limit=0",
        "hudi.hoodie.parquet.max.file.size=1000"])
    assert tuned.write.small_files.small_file_limit == 0 and tuned.write.file_group_max_bytes == 1000


def test_nested_field_additions_are_off_unless_set(tmp_path):
    """`write.nested_field_additions` reaches the writer (`avro.evolve`); a value that is not a boolean
    names the file and key."""
    assert load_config(write(tmp_path, base(tmp_path))).write.nested_field_additions is False
    assert load_config(write(tmp_path, base(tmp_path)), ["write.nested_field_additions=true"]).write.nested_field_additions
    config = base(tmp_path)
    set_(("write", "nested_field_additions"), "sometimes")(config)
    path = write(tmp_path, config)
    with pytest.raises(ConfigError, match=f"{path}: write.nested_field_additions: expected true or false"):
        load_config(path)


def test_streaming_retry_settings_reach_the_sink_with_hudis_defaults(tmp_path):
    """DataSourceWriteOptions.STREAMING_RETRY_CNT (3) and STREAMING_RETRY_INTERVAL_MS (2000), which
    HoodieStreamingSink.retry reads: attempts in all, and the first pause, doubled after each failure."""
    default = load_config(write(tmp_path, base(tmp_path))).write.batch_retry
    assert (default.attempts, default.interval_ms) == (3, 2000)
    assert [default.pause(n) for n in (1, 2)] == [2.0, 4.0]
    given = load_config(write(tmp_path, base(tmp_path)), ["hudi.hoodie.datasource.write.streaming.retry.count=5",
                                                          "hudi.hoodie.datasource.write.streaming.retry.interval.ms=250"])
    assert (given.write.batch_retry.attempts, given.write.batch_retry.interval_ms) == (5, 250)
    assert not [w for w in given.warnings if "streaming.retry" in w], given.warnings


def test_write_options_refuse_log_inserts_with_the_key_index():
    """The same rule for writers built without a configuration file (`HoodieIndex.canIndexLogFiles`)."""
    with pytest.raises(ConfigError, match="write.insert_mode"):
        WriteOptions(table_path="/t", table_name="t", index=IndexOptions(type=IndexType.KEY), insert_mode="log")


def test_env_interpolation(tmp_path):
    config = base(tmp_path)
    config["table"]["path"] = "${LAKE}/orders"
    config["source"]["kafka"]["bootstrap_servers"] = "${BROKERS:-localhost:9092}"
    config["stream"]["checkpoint"] = "${CHECKPOINTS:-/tmp/ckpt}/orders"
    config["hudi"]["hoodie.datasource.write.streaming.checkpoint.identifier"] = "cost-$$5-${EMPTY:-none}"
    env = {"LAKE": str(tmp_path / "lake"), "CHECKPOINTS": "s3a://ckpt", "EMPTY": ""}
    loaded = load_config(write(tmp_path, config), env=env)
    assert loaded.table.path == f"{tmp_path}/lake/orders"
    assert loaded.source.kafka.bootstrap_servers == ("localhost:9092",)
    assert loaded.stream.checkpoint == "s3a://ckpt/orders"
    assert loaded.write.checkpoint_id == "cost-$5-none"


def test_set_overrides_the_file_and_is_typed_by_the_registry(tmp_path):
    config = base(tmp_path)
    config["hudi"]["hoodie.index.type"] = "BUCKET"
    config["hudi"]["hoodie.bucket.index.num.buckets"] = 8
    config["source"]["kafka"]["options"] = {"security.protocol": "SSL", "client.id": "a"}
    config["table"]["storage_options"] = {"client_kwargs": {"region_name": "eu-west-1"}}
    overrides = [
        "hudi.hoodie.bucket.index.num.buckets=16",
        "hudi.hoodie.streamer.source.kafka.topic=payments,refunds",  # HoodieStreamer's key, over ours in the file
        "source.kafka.options.security.protocol=SASL_SSL",
        "table.storage_options.anon=true",
        "table.storage_options.client_kwargs.endpoint_url=http://localhost:9000",
        "write.file_group_max_bytes=64MiB",
        "stream.trigger=available_now",
        "hudi.hoodie.compact.inline=TRUE",
        "stream.checkpoint=${CKPT}",
    ]
    loaded = load_config(write(tmp_path, config), overrides, env={"CKPT": "/ckpt"})
    assert loaded.write.index.bucket_count == 16
    assert loaded.source.kafka.topics == ("payments", "refunds")
    assert dict(loaded.source.kafka.client_options) == {"security.protocol": "SASL_SSL", "client.id": "a"}
    assert dict(loaded.table.storage_options) == {
        "client_kwargs": {"region_name": "eu-west-1", "endpoint_url": "http://localhost:9000"}, "anon": True}
    assert loaded.write.file_group_max_bytes == 64 * 2**20
    assert loaded.stream.trigger.available_now and loaded.stream.trigger.spark_kwargs() == {"availableNow": True}
    assert loaded.services["hoodie.compact.inline"] == "true"
    assert loaded.stream.checkpoint == "/ckpt"
    # The last --set of a key wins, as on any command line.
    assert load_config(write(tmp_path, config), ["stream.trigger=5 s", "stream.trigger=90 s"]).stream.trigger.interval \
        == "90 seconds"


def test_aliases_and_hudi_spellings_are_read_as_our_keys(tmp_path):
    config = base(tmp_path)
    del config["table"]["name"]
    del config["source"]["kafka"]["topics"]
    config["hudi"].update({
        "hoodie.table.name": "orders",
        "hoodie.deltastreamer.source.kafka.topic": "orders",
        "hoodie.compaction.payload.class": "EventTimeAvroPayload",  # a class name without its package
        "hoodie.clean.fileversions.retained": 2,  # Hudi 1.x's name; the policy is inferred from it
        "hoodie.deltastreamer.keygen.timebased.timezone": "UTC",
    })
    loaded = load_config(write(tmp_path, config))
    assert loaded.table.name == "orders" and loaded.source.kafka.topics == ("orders",)
    assert loaded.hudi["hoodie.datasource.write.payload.class"] == "org.apache.hudi.common.model.EventTimeAvroPayload"
    assert loaded.services["hoodie.cleaner.policy"] == "KEEP_LATEST_FILE_VERSIONS"
    assert loaded.services["hoodie.cleaner.fileversions.retained"] == "2"
    assert loaded.hudi["hoodie.keygen.timebased.timezone"] == "UTC"


def test_unused_hudi_keys_are_kept_and_warned_about(tmp_path):
    config = base(tmp_path)
    config["hudi"]["hoodie.upsert.shuffle.parallelism"] = 200
    path = write(tmp_path, config)
    loaded = load_config(path, ["hudi.hoodie.embed.timeline.server=false"])
    assert loaded.hudi["hoodie.upsert.shuffle.parallelism"] == "200"
    assert loaded.write.hudi["hoodie.embed.timeline.server"] == "false"
    assert loaded.warnings == (
        f"{path}: hudi.hoodie.upsert.shuffle.parallelism: not used by ingest; kept with the Hudi settings",
        "--set: hudi.hoodie.embed.timeline.server: not used by ingest; kept with the Hudi settings",
    )


def test_file_sources(tmp_path):
    schema = tmp_path / "orders.avsc"
    schema.write_text(json.dumps({"type": "record", "name": "orders", "fields": [
        {"name": "order_id", "type": "string"}, {"name": "region", "type": "string"},
        {"name": "updated_at", "type": "long"}]}))
    config = base(tmp_path)
    config["source"] = {"files": {"path": "/exports/orders", "format": "json", "max_files_per_trigger": 10},
                        "schema_file": "orders.avsc"}  # relative to the configuration file
    del config["stream"]
    loaded = load_config(write(tmp_path, config))
    assert loaded.source.kafka is None and loaded.source.files.schema.names == ["order_id", "region", "updated_at"]
    assert loaded.source.files.spark_options() == {"maxFilesPerTrigger": "10"}
    assert "source.format" not in loaded.settings and "source.kafka.starting_offsets" not in loaded.settings
    config["source"] = {"files": {"path": "/exports/orders", "format": "csv"}}
    with pytest.raises(ConfigError, match=r": source.schema: is required: csv files need source.schema"):
        load_config(write(tmp_path, config))


def test_avro_sources_read_schema_files_beside_the_config(tmp_path):
    (tmp_path / "schemas").mkdir()
    record = {"type": "record", "name": "orders", "fields": [
        {"name": "region", "type": "string"}, {"name": "updated_at", "type": "long"}]}
    (tmp_path / "schemas" / "orders.avsc").write_text(json.dumps(record))
    (tmp_path / "schemas" / "orders-v1.avsc").write_text(json.dumps(record))
    config = base(tmp_path)
    config["source"] = {
        "kafka": {"bootstrap_servers": ["b1:9092", "b2:9092"], "topic_pattern": "orders\\..*",
                  "starting_offsets": '{"orders.eu": {"0": 5}}'},
        "format": "confluent_avro", "schema_file": "schemas/orders.avsc",
        "schema_files_by_id": {7: "schemas/orders-v1.avsc"},
        "key_source": "kafka_key", "key_fields": ["order_id"],  # the id is only in the Kafka key
    }
    loaded = load_config(write(tmp_path, config))
    decoder = loaded.source.decoder
    assert decoder.format == "confluent-avro" and [i for i, _ in decoder.writer_schemas] == [7]
    assert decoder.schema.names == ["region", "updated_at", "order_id"] and decoder.key_format == "string"
    assert loaded.source.kafka.spark_options()["subscribePattern"] == "orders\\..*"
    assert loaded.source.kafka.spark_options()["kafka.bootstrap.servers"] == "b1:9092,b2:9092"
    assert loaded.source.kafka.starting_offsets == '{"orders.eu": {"0": 5}}'


# -- secrets -------------------------------------------------------------------------------------------


def secret_config(tmp_path: Path) -> dict:
    config = base(tmp_path)
    config["source"]["kafka"]["options"] = {
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
                            'password="${KAFKA_PASSWORD}";',
        "ssl.key.password": "${KAFKA_PASSWORD}",
    }
    config["table"]["storage_options"] = {"key": "AKIA-${KAFKA_PASSWORD}", "client_kwargs": {
        "aws_secret_access_key": "${KAFKA_PASSWORD}"}}
    config["spark"] = {"conf": {"spark.hadoop.fs.s3a.secret.key": "${KAFKA_PASSWORD}"}}
    config["hudi"]["hoodie.aws.secret.key"] = "${KAFKA_PASSWORD}"
    return config


def test_secrets_never_show_but_stay_usable(tmp_path, capsys):
    path = write(tmp_path, secret_config(tmp_path))
    env = {"KAFKA_PASSWORD": SECRET}
    loaded = load_config(path, env=env)
    shown = [repr(loaded), json.dumps(loaded.redacted()), repr(loaded.write), repr(loaded.source),
             repr(loaded.table), repr(loaded.spark), repr(loaded.hudi), repr(dict(loaded.settings)), *loaded.warnings]
    for text in shown:
        assert SECRET not in text
    assert loaded.redacted()["source"]["kafka"]["options"] == {
        "security.protocol": "SASL_SSL", "sasl.jaas.config": "<redacted>", "ssl.key.password": "<redacted>"}
    assert loaded.redacted()["table"]["storage_options"] == {
        "key": "<redacted>", "client_kwargs": {"aws_secret_access_key": "<redacted>"}}
    # The values themselves reach Kafka, fsspec, Spark and Hudi intact.
    assert str(loaded.source.kafka.spark_options()["kafka.ssl.key.password"]) == SECRET
    assert SECRET in str(loaded.source.kafka.spark_options()["kafka.sasl.jaas.config"])
    assert str(loaded.write.storage_options["client_kwargs"]["aws_secret_access_key"]) == SECRET
    assert str(loaded.spark.conf["spark.hadoop.fs.s3a.secret.key"]) == SECRET

    # validate-config output, warnings included.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KAFKA_PASSWORD", SECRET)
        assert cli.main(["validate-config", str(path)]) == 0
    out, err = capsys.readouterr()
    assert SECRET not in out and SECRET not in err and "<redacted>" in out


def test_secrets_are_not_repeated_by_error_messages(tmp_path, capsys):
    env = {"KAFKA_PASSWORD": SECRET}
    config = secret_config(tmp_path)
    del config["hudi"]["hoodie.aws.secret.key"]
    # The secret also lands in a key that rejects it, read before any secret key: the message must
    # not repeat it.
    config["hudi"]["hoodie.index.type"] = "${KAFKA_PASSWORD}"
    path = write(tmp_path, config)
    with pytest.raises(ConfigError) as raised:
        load_config(path, env=env)
    assert SECRET not in str(raised.value)
    assert str(raised.value).startswith(f"{path}: hudi.hoodie.index.type: '<redacted>' is not one of BUCKET")
    # A malformed --set carrying a secret is not echoed either.
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, secret_config(tmp_path), "valid.yaml"),
                    [f"source.kafka.options.sasl.jaas.config:{SECRET}"], env=env)
    assert str(raised.value) == "--set: expected SECTION.KEY=VALUE, got '<redacted>'"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KAFKA_PASSWORD", SECRET)
        assert cli.main(["validate-config", str(path)]) == 2
    out, err = capsys.readouterr()
    assert SECRET not in out + err


# -- examples, CLI, reference, services ------------------------------------------------------------------


EXAMPLE_ENV = {"KAFKA_USER": "ingest", "KAFKA_PASSWORD": SECRET}


@pytest.mark.parametrize("name", ["kafka-stream", "backfill", "demo"])
def test_example_configs_validate(name):
    config = load_config(REPO / "conf" / f"{name}.yaml", env=EXAMPLE_ENV, check_table=False)
    assert config.warnings == ()
    assert config.table.name == "orders"
    assert SECRET not in repr(config)
    assert config.services["hoodie.compact.inline"] == "true"
    if name == "backfill":
        assert config.source.files.format == "parquet" and config.stream.trigger.available_now
    else:
        assert config.source.decoder is not None and config.stream.checkpoint


def test_kafka_stream_example_resolves_its_secrets_from_the_environment():
    config = load_config(REPO / "conf" / "kafka-stream.yaml", env=EXAMPLE_ENV, check_table=False)
    jaas = str(config.source.kafka.client_options["sasl.jaas.config"])
    assert 'username="ingest"' in jaas and SECRET in jaas
    assert config.stream.on_error is OnError.QUARANTINE
    assert config.write.delete_flag_column == "is_deleted"


def test_cli_exit_codes_and_output(tmp_path, capsys):
    path = write(tmp_path, base(tmp_path))
    assert cli.main(["validate-config", str(path), "--set", "hudi.hoodie.index.type=BUCKET",
                     "--set", "hudi.hoodie.bucket.index.num.buckets=16"]) == 0
    out, err = capsys.readouterr()
    printed = yaml.safe_load(out)
    assert printed == load_config(path, ["hudi.hoodie.index.type=BUCKET",
                                         "hudi.hoodie.bucket.index.num.buckets=16"]).redacted()
    assert printed["hudi"]["hoodie.bucket.index.num.buckets"] == 16 and err == ""

    assert cli.main(["validate-config", str(path), "--set", "stream.trigger=soon"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("ingest: error: --set: stream.trigger: expected available_now or an interval such as "
                   "'30 seconds' or '5 minutes', got 'soon'\n")

    config = base(tmp_path)
    config["hudi"]["hoodie.upsert.shuffle.parallelism"] = 8
    path = write(tmp_path, config)
    assert cli.main(["validate-config", str(path), "--no-table-check"]) == 0
    out, err = capsys.readouterr()
    assert err == (f"ingest: warning: {path}: hudi.hoodie.upsert.shuffle.parallelism: not used by ingest; "
                   "kept with the Hudi settings\n")


def test_reference_doc_is_generated_from_the_registry():
    doc = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert doc == keys.reference_markdown(), "regenerate: python -m ingest.config.keys docs/configuration.md"
    for key in keys.KEYS:
        assert f"`{key.path[-1] if key.section == 'hudi' else key.name}`" in doc


def test_registry_is_consistent():
    for key in keys.KEYS:
        assert key.section in keys.SECTIONS, key.name
        if key.default is not None and key.type is not keys.Type.REFUSED:
            assert keys.parse(key, key.default) == key.default, key.name
        for choice in key.choices:
            assert keys.parse(key, choice) == choice
    names = [*keys.BY_NAME, *keys.BY_ALIAS]
    assert len(names) == len(set(names))
    for alias in keys.BY_ALIAS:
        assert alias.startswith("hudi.hoodie."), alias


def test_service_keys_agree_with_the_table_services():
    settings = pytest.importorskip("ingest.hudi.config.service_settings")
    ours = {key.path[1] for key in keys.SERVICE_KEYS}
    theirs = {value for name, value in vars(settings.Key).items() if not name.startswith("_")}
    assert theirs <= ours
    defaults = {key.path[1]: keys.to_text(key.default) for key in keys.SERVICE_KEYS if key.default is not None}
    assert settings.ServiceSettings.from_mapping(defaults) == settings.ServiceSettings.from_mapping({})
    policy = keys.BY_NAME["hudi.hoodie.cleaner.policy"]
    assert set(policy.choices) == {p.value for p in settings.CleanerPolicy}
    strategy = keys.BY_NAME["hudi.hoodie.compact.inline.trigger.strategy"]
    assert set(strategy.choices) == {t.value for t in settings.TriggerStrategy}


def test_base_config_is_not_shared_between_cases(tmp_path):
    first = base(tmp_path)
    second = copy.deepcopy(first)
    set_(("hudi", "hoodie.index.type"), "SIMPLE")(first)
    assert "hoodie.index.type" not in second["hudi"]


# -- Kafka client options, checked before Spark starts -------------------------------------------------


@pytest.mark.parametrize("implementation, option, value, expected", [
    ("auto", "request.timeout.ms", "${KAFKA_TIMEOUT}", "must be an integer, got '<redacted>'"),
    ("builtin", "auto.offset.reset", "${KAFKA_TIMEOUT}", "is not supported: offsets come from startingOffsets"),
    ("python", "sasl.jaas.config", 'org.example.TokenLoginModule required token="${KAFKA_TIMEOUT}";',
     "only PlainLoginModule and ScramLoginModule are understood"),
    ("python", "fetch.max.wait", "${KAFKA_TIMEOUT}", "has no kafka-python equivalent"),
])
def test_kafka_client_options_are_checked_by_the_loader_without_their_environment_values(
        tmp_path, implementation, option, value, expected):
    """Kafka's client settings, not Hudi's: what ingest.spark.kafka_source builds its consumers from
    (kafka-python's KafkaConsumer.DEFAULT_CONFIG names and types) is checked by load_config, and the
    value `${KAFKA_TIMEOUT}` brought in is never shown."""
    leaked = "30s-" + SECRET
    config = base(tmp_path)
    config["source"]["kafka"].update(implementation=implementation, options={option: value})
    path = write(tmp_path, config)
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={"KAFKA_TIMEOUT": leaked})
    message = str(raised.value)
    assert message.startswith(f"{path}: source.kafka.options.{option}: {expected}")
    assert leaked not in message and SECRET not in message


def test_kafka_client_options_for_spark_connector_are_not_held_to_kafka_pythons_reading(tmp_path):
    """Spark's connector (KafkaSourceProvider) hands `kafka.*` to the Java client, which takes any
    JAAS login module and settings kafka-python lacks; only their shared types are checked."""
    config = base(tmp_path)
    options = {"sasl.jaas.config": 'org.example.TokenLoginModule required token="t";', "fetch.max.wait": "x",
               "request.timeout.ms": "30000"}
    config["source"]["kafka"].update(implementation="builtin", options=options)
    loaded = load_config(write(tmp_path, config))
    assert dict(loaded.source.kafka.client_options)["fetch.max.wait"] == "x"
    # A shared setting of the wrong type is still refused.
    with pytest.raises(ConfigError, match="request.timeout.ms: must be an integer, got '30 s'"):
        load_config(write(tmp_path, config), ["source.kafka.options.request.timeout.ms=30 s"])


def test_readme_validate_config_example_runs_as_written(monkeypatch, capsys):
    """Not a Hudi rule: the README's command, with the environment it names, validates the example."""
    import shlex

    line = next(line for line in (REPO / "README.md").read_text().splitlines()
                if "ingest validate-config conf/" in line)
    words = shlex.split(line)
    for name in ("KAFKA_USER", "KAFKA_PASSWORD", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        monkeypatch.setenv(name, value)
    assert words[:2] == ["ingest", "validate-config"]
    monkeypatch.chdir(REPO)
    assert cli.main(words[1:]) == 0, capsys.readouterr().err


# -- Hudi keys ingest does not honour --------------------------------------------------------------------


@pytest.mark.parametrize("key, value, expected", [
    ("hoodie.write.table.version", 7, "7 is not one of 6, 8, 9"),
    ("hoodie.table.version", "7", "'7' is not supported (accepted: 6, 8, 9): ingest writes table version 6"),
    ("hoodie.datasource.hive_sync.mode", "jdbc", "ingest syncs through the metastore's Thrift API (hms)"),
    ("hoodie.meta.sync.client.tool.class", "org.apache.hudi.gcp.bigquery.BigQuerySyncTool",
     "names org.apache.hudi.gcp.bigquery.BigQuerySyncTool; ingest syncs with"),
    ("hoodie.metadata.record.index.enable", "true", "is not supported (accepted: false): ingest does not maintain"),
    ("hoodie.logfile.data.block.format", "parquet", "(accepted: avro): log data blocks are Avro"),
    ("hoodie.parquet.outputtimestamptype", "TIMESTAMP_MILLIS", "(accepted: TIMESTAMP_MICROS)"),
    ("hoodie.table.timeline.timezone", "LOCAL", "(accepted: UTC): instant times are UTC"),
    ("hoodie.payload.delete.field", "Op", "deletes are marked by a boolean column"),
    ("hoodie.payload.delete.marker", "D", "deletes are marked by a boolean column"),
])
def test_hudi_keys_that_change_what_is_written_are_refused(tmp_path, key, value, expected):
    """HoodieWriteConfig.WRITE_TABLE_VERSION, HoodieTableConfig.VERSION / TIMELINE_TIMEZONE,
    HiveSyncConfig.HIVE_SYNC_ENABLED, HoodieSyncConfig.META_SYNC_*, HoodieMetadataConfig.RECORD_INDEX_ENABLE_PROP,
    HoodieStorageConfig.LOGFILE_DATA_BLOCK_FORMAT / PARQUET_OUTPUT_TIMESTAMP_TYPE, HoodiePayloadConfig's
    delete field and marker (`DefaultHoodieRecordPayload.isDeleteRecord`): each changes what Hudi writes
    or promises, so a value ingest does not honour is an error naming the key, never a warning."""
    config = base(tmp_path)
    config["hudi"][key] = value
    path = write(tmp_path, config)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}: hudi.{key}: ")
    assert expected in str(raised.value)
    with pytest.raises(ConfigError, match=f"--set: hudi.{key}: "):
        load_config(write(tmp_path, base(tmp_path), "plain.yaml"), [f"hudi.{key}={keys.to_text(value)}"])


def test_hudi_keys_given_what_ingest_does_are_accepted_without_a_warning(tmp_path):
    """HoodieWriteConfig.WRITE_TABLE_VERSION = 6 and HiveSyncConfig.HIVE_SYNC_ENABLED = false say
    what ingest does: accepted, passed on, and not reported as unused."""
    config = base(tmp_path)
    config["hudi"].update({"hoodie.write.table.version": 6, "hoodie.datasource.hive_sync.enable": "false",
                           "hoodie.upsert.shuffle.parallelism": 8})
    loaded = load_config(write(tmp_path, config))
    assert loaded.hudi["hoodie.write.table.version"] == "6"
    assert [w.split(": ")[1] for w in loaded.warnings] == ["hudi.hoodie.upsert.shuffle.parallelism"]


def test_refused_hudi_keys_are_classified_once():
    """Each refused key is classified in ingest/config/hudi_keys.py only: not also a registry key (which
    would shadow it), not within the registry's typo distance, with the Hudi class that defines it and
    what ingest does instead, and listed in docs/configuration.md."""
    from ingest.config import hudi_keys

    doc = (REPO / "docs" / "configuration.md").read_text()
    for name, rule in hudi_keys.REFUSED.items():
        assert keys.lookup(f"hudi.{name}") is None, name
        assert keys.misspelt_hudi_key(f"hudi.{name}") is None, name
        assert rule.instead and rule.source.startswith(("Hoodie", "HiveSync", "DataSource", "KeyGenerator")), name
        assert f"| `{name}` |" in doc, name
    assert hudi_keys.reference_table() in doc and hudi_keys.irrelevant_table() in doc
    assert hudi_keys.refusal("hoodie.write.table.version", " 6 ") is None
    assert hudi_keys.refusal("hoodie.upsert.shuffle.parallelism", "8") is None
