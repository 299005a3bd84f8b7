"""Resolving a gathered configuration into a checked `PipelineConfig`.

Rules across keys (one source; topics or a pattern; bucket settings only with the bucket index),
the writer's options and the Kafka decoder built (which check what they know), and, when the table
exists, its `hoodie.properties` compared with what the writer would record. Every failure is one
`ConfigError` naming the file or `--set`, the key, and what is allowed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import pyarrow as pa

from ingest.catalog.settings import TOOLS, SyncSettings, tool_classes
from ingest.catalog.settings import Key as SYNC_KEYS
from ingest.config import keys as K
from ingest.config.gathering import SET, Gathered, bare
from ingest.config.keys import HUDI, Secret, Type
from ingest.config.pipeline import (
    FileInput,
    KafkaInput,
    MetricsSettings,
    OnError,
    PipelineConfig,
    QuarantineSettings,
    Settings,
    SourceConfig,
    SparkSettings,
    StreamSettings,
    TableSettings,
    Trigger,
)
from ingest.errors import ConfigError, SchemaEvolutionError, TimelineError, UnsupportedTable
from ingest.hudi.avro.avro_names import check_names, sanitized_schema
from ingest.hudi.config import properties_file
from ingest.hudi.config.table_config import PROPERTIES_PATH, TableConfig
from ingest.hudi.keygen.bucket_index import hash_fields_from_config
from ingest.hudi.table.lock_provider import LockSettings
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.heartbeat import HeartbeatSettings
from ingest.kafka.client_config import consumer_config
from ingest.kafka.registry import RegistrySettings, SubjectVersion, subject_urls
from ingest.kafka.spec import DecoderSpec, decoder_spec
from ingest.storage import Storage, within
from ingest.write.file_group_writer import InsertMode
from ingest.write.index_bootstrap import Manifest, refuse_unmergeable_writes
from ingest.write.options import (
    BatchRetry,
    IndexOptions,
    IndexType,
    Operation,
    SmallFileOptions,
    WriteOptions,
)
from ingest.write.plan import bucket_count_mismatch, index_type_mismatch

RECORD_KEY = "hudi.hoodie.datasource.write.recordkey.field"
PARTITION_FIELD = "hudi.hoodie.datasource.write.partitionpath.field"
PRECOMBINE = "hudi.hoodie.datasource.write.precombine.field"
PAYLOAD = "hudi.hoodie.datasource.write.payload.class"
KEYGEN_CLASS = "hudi.hoodie.datasource.write.keygenerator.class"
KEYGEN_TYPE = "hudi.hoodie.datasource.write.keygenerator.type"
INDEX_TYPE = "hudi.hoodie.index.type"
BUCKETS = "hudi.hoodie.bucket.index.num.buckets"
INSERT_MODE = "write.insert_mode"
MAX_FILE_SIZE = "hudi.hoodie.parquet.max.file.size"
CLEANER_POLICY = "hudi.hoodie.cleaner.policy"
KEEP_MIN, KEEP_MAX = "hudi.hoodie.keep.min.commits", "hudi.hoodie.keep.max.commits"
COMMITS_RETAINED = "hudi.hoodie.cleaner.commits.retained"
RETAINED = {COMMITS_RETAINED: "KEEP_LATEST_COMMITS", "hudi.hoodie.cleaner.fileversions.retained": "KEEP_LATEST_FILE_VERSIONS"}
COMPACT_INLINE, SCHEDULE_INLINE = "hudi.hoodie.compact.inline", "hudi.hoodie.compact.schedule.inline"
REGISTRY = "hudi.hoodie.streamer.schemaprovider.registry."
REGISTRY_KEYS = tuple(f"{REGISTRY}{k}" for k in ("url", "targetUrl", "baseUrl", "urlSuffix", "sourceUrlSuffix",
                                                 "targetUrlSuffix"))
REGISTRY_CLIENT_KEYS = tuple(k.name for k in K.KEYS if k.name.startswith("source.schema_registry."))
KAFKA_ONLY = ("source.format", "source.schema_files_by_id", "source.key_fields", "source.key_source",
              "source.key_format", *REGISTRY_KEYS, *REGISTRY_CLIENT_KEYS)
# The config key behind each hoodie.properties entry the writer records (others keep their name).
_TABLE_PROPERTY_KEYS = {
    "hoodie.table.name": "table.name",
    "hoodie.database.name": "table.database",
    "hoodie.table.recordkey.fields": RECORD_KEY,
    "hoodie.table.partition.fields": PARTITION_FIELD,
    "hoodie.table.precombine.field": PRECOMBINE,
    "hoodie.compaction.payload.class": PAYLOAD,
}
# Keys lower layers name in their ConfigErrors, as this configuration names them.
_LOWER_KEYS = {
    "JVM default time zone": "write.jvm_timezone",
    "index.shards": "write.key_index_shards",
    "format": "source.format",
    "schema": "source.schema",
    "schema_file": "source.schema_file",
    "schema_files_by_id": "source.schema_files_by_id",
    "key_fields": "source.key_fields",
    "key_source": "source.key_source",
    "key_format": "source.key_format",
}


class Resolver:
    """Turns the gathered values into a `PipelineConfig`, checking the rules across keys."""

    def __init__(self, gathered: Gathered, origin: str):
        self.g = gathered
        self.origin_file = origin
        # Every key's effective value, shown by `redacted()`; derived defaults are filled in below.
        self.settings: dict[str, Any] = {}
        for key in K.KEYS:
            value = self.get(key.name)
            if value is not None and key.type is not Type.REFUSED:
                self.settings[key.name] = value

    def given(self, name: str) -> bool:
        return name in self.g.values

    def get(self, name: str) -> Any:
        given = self.g.values.get(name)
        return given.value if given is not None else K.BY_NAME[name].default

    def origin(self, name: str) -> str:
        given = self.g.values.get(name)
        return given.origin if given is not None else self.origin_file

    def written(self, name: str) -> str:
        given = self.g.values.get(name)
        return given.name if given is not None else name

    def fail(self, name: str, message: str) -> NoReturn:
        raise ConfigError(message, source=self.origin(name), key=self.written(name))

    def require(self, name: str, what: str) -> Any:
        value = self.get(name)
        if value is None or value == "" or value == ():
            raise ConfigError(f"is required: {what}", source=self.origin_file, key=name)
        return value

    def lower(self, error: ConfigError, default: str) -> NoReturn:
        """Re-raise a lower layer's error under the name this configuration gives the key."""
        name = error.key or default
        if name.startswith("hoodie."):
            name = f"{HUDI}.{name}"
        name = _LOWER_KEYS.get(name, name)
        if name not in K.BY_NAME and not name.startswith(HUDI + "."):
            name = default
        raise ConfigError(bare(error), source=self.origin(name), key=self.written(name)) from None

    # -- sections --------------------------------------------------------------------------------

    def config(self, check_table: bool) -> PipelineConfig:
        table = TableSettings(
            path=self.require("table.path", "the table's base URL (a path, or an fsspec URL such as s3://lake/orders)"),
            name=self.require("table.name", "the table's name (hoodie.table.name)"),
            database=self.get("table.database"),
            storage_options=Settings(self.get("table.storage_options")),
        )
        self.require(RECORD_KEY, "the record key field(s), comma-separated")
        self.index_rules()
        hudi = self.hudi_settings(table)
        write = self.write_options(table, hudi)
        source = self.source(write)
        quarantine = QuarantineSettings(self.get("quarantine.path"))
        stream = self.stream(source, quarantine, table)
        services = self.services()
        metrics = MetricsSettings(
            on=self.get("hudi.hoodie.metrics.on"),
            reporter_type=self.get("hudi.hoodie.metrics.reporter.type"),
            prometheus_port=self.get("hudi.hoodie.metrics.prometheus.port"),
            prefix=self.get("hudi.hoodie.metrics.reporter.metricsname.prefix"),
        )
        catalog = self.catalog(hudi)
        spark = SparkSettings(
            app_name=self.get("spark.app_name") or f"ingest-{table.name}",
            master=self.get("spark.master"),
            conf=Settings(self.get("spark.conf")),
        )
        self.settings["spark.app_name"] = spark.app_name
        if check_table:
            self.check_table(table, write)
        ordered = {key.name: self.settings[key.name] for key in K.KEYS if key.name in self.settings}
        ordered.update({name: given.value for name, given in (*self.g.honoured.items(), *self.g.extras.items())})
        return PipelineConfig(
            origin=self.origin_file, table=table, hudi=hudi, write=write, source=source, quarantine=quarantine,
            stream=stream, services=services, spark=spark, settings=Settings(ordered),
            warnings=tuple(self.warnings()), metrics=metrics, catalog=catalog,
        )

    def hudi_settings(self, table: TableSettings) -> Settings:
        """Hudi-named settings for the writer: those given or with a fixed default, and the unused ones."""
        out = {"hoodie.table.name": table.name, "hoodie.database.name": table.database}
        for key in K.KEYS:
            if key.section == HUDI and key.name in self.settings:
                out[key.path[1]] = self.settings[key.name]
        for name, given in (*self.g.honoured.items(), *self.g.extras.items()):
            out[name[len(HUDI) + 1 :]] = given.value
        return Settings({name: value if isinstance(value, Secret) else K.to_text(value) for name, value in out.items()})

    def index_rules(self) -> None:
        """Settings of the other index type are contradictions, and their defaults do not apply."""
        index_name = self.get(INDEX_TYPE)
        if K.INDEX_TYPES[index_name][0] == IndexType.BUCKET.value:
            if self.given("write.key_index_shards"):
                self.fail("write.key_index_shards", f"applies to key indexes only, and {INDEX_TYPE} is BUCKET")
            self.settings.pop("write.key_index_shards")
            return
        for name in (*K.BUCKET_KEYS, "hudi.hoodie.index.bucket.engine"):
            if self.given(name):
                self.fail(name, f"applies only to {INDEX_TYPE}=BUCKET, not {index_name}")
            self.settings.pop(name, None)

    def insert_mode(self, kind: str) -> InsertMode:
        """`log` only with an index that can index log files (Hudi's `HoodieIndex.canIndexLogFiles`)."""
        mode = self.get(INSERT_MODE)
        if mode == InsertMode.LOG.value and not IndexType(kind).can_index_log_files:
            self.fail(INSERT_MODE, f"is log, but {INDEX_TYPE} {self.get(INDEX_TYPE)} finds keys in base files only "
                      "(only BUCKET can index log files): Hudi's writers would not see these keys; use base")
        resolved = InsertMode(mode) if mode else (
            InsertMode.LOG if IndexType(kind).can_index_log_files else InsertMode.BASE)
        self.settings[INSERT_MODE] = resolved.value
        return resolved

    def file_group_max_bytes(self) -> int:
        size = self.get("write.file_group_max_bytes") or self.get(MAX_FILE_SIZE)
        self.settings["write.file_group_max_bytes"] = size
        return int(size)

    def small_files(self) -> SmallFileOptions:
        return SmallFileOptions(
            small_file_limit=self.get("hudi.hoodie.parquet.small.file.limit"),
            candidates=self.get("hudi.hoodie.merge.small.file.group.candidates.limit"),
            record_size_estimate=self.get("hudi.hoodie.copyonwrite.record.size.estimate"),
            estimation_threshold=float(self.get("hudi.hoodie.record.size.estimation.threshold")),
            insert_split_size=self.get("hudi.hoodie.copyonwrite.insert.split.size"),
            auto_split=bool(self.get("hudi.hoodie.copyonwrite.insert.auto.split")),
        )

    def write_options(self, table: TableSettings, hudi: Settings) -> WriteOptions:
        kind, global_scope = K.INDEX_TYPES[self.get(INDEX_TYPE)]
        hash_field = self.get("hudi.hoodie.bucket.index.hash.field")
        codec = self.get("hudi.hoodie.parquet.compression.codec")
        try:
            write = WriteOptions(
                table_path=table.path,
                table_name=table.name,
                hudi=dict(hudi),
                operation=Operation(self.get("hudi.hoodie.datasource.write.operation")),
                index=IndexOptions(
                    type=IndexType(kind),
                    bucket_count=self.get("hudi.hoodie.bucket.index.num.buckets"),
                    hash_fields=hash_fields_from_config(hash_field) if hash_field else (),
                    global_scope=global_scope,
                    shards=self.get("write.key_index_shards"),
                ),
                insert_mode=self.insert_mode(kind),
                file_group_max_bytes=self.file_group_max_bytes(),
                small_files=self.small_files(),
                log_file_max_bytes=self.get("hudi.hoodie.logfile.max.size"),
                log_block_max_bytes=self.get("hudi.hoodie.logfile.data.block.max.size"),
                delete_flag_column=self.get("write.delete_flag_column") or None,
                nested_field_additions=bool(self.get("write.nested_field_additions")),
                checkpoint_id=self.get("hudi.hoodie.datasource.write.streaming.checkpoint.identifier"),
                storage_options=dict(table.storage_options),
                parquet_compression="none" if codec == "uncompressed" else codec,
                jvm_timezone=self.get("write.jvm_timezone"),
                lock_expiry_seconds=float(self.get("write.lock_expiry_seconds")),
                lock_wait_seconds=float(self.get("write.lock_wait_seconds")),
                invalid_name_mask=self.get("source.invalid_char_mask") if self.get("source.sanitize_field_names")
                else None,
                heartbeat=HeartbeatSettings(self.get("hudi.hoodie.client.heartbeat.interval_in_ms"),
                                            self.get("hudi.hoodie.client.heartbeat.tolerable.misses")),
                batch_retry=BatchRetry(self.get("hudi.hoodie.datasource.write.streaming.retry.count"),
                                       self.get("hudi.hoodie.datasource.write.streaming.retry.interval.ms")),
            )
            write.keygen  # noqa: B018 - resolves and checks the key generator settings now
            write.table_settings()  # checks the bucket hash fields against the record key
            LockSettings.from_hudi(write.hudi, write.table_path)  # checks the lock Hudi writers share
        except ConfigError as e:
            self.lower(e, RECORD_KEY)
        return write

    # -- source ----------------------------------------------------------------------------------

    def _named(self, group: str) -> bool:
        return group in self.g.groups or any(n.startswith(group + ".") for n in self.g.values)

    def source(self, write: WriteOptions) -> SourceConfig:
        kafka, files = self._named("source.kafka"), self._named("source.files")
        if kafka and files:
            raise ConfigError("give source.kafka (a stream) or source.files (a backfill), not both",
                              source=self.origin_file, key="source")
        if not kafka and not files:
            raise ConfigError("is required: give source.kafka (a stream) or source.files (a backfill)",
                              source=self.origin_file, key="source")
        for name in [n for n in self.settings if n.startswith("source.kafka." if files else "source.files.")]:
            del self.settings[name]
        if files:
            return SourceConfig(files=self.file_input(write))
        kafka_input = self.kafka_input()
        decoder = self.decoder(write)
        self.check_fields(write, self.written_columns(write, decoder.records_schema))
        return SourceConfig(kafka=kafka_input, decoder=decoder)

    def kafka_input(self) -> KafkaInput:
        servers = self.require("source.kafka.bootstrap_servers", "the Kafka brokers, host:port")
        topics, pattern = self.get("source.kafka.topics"), self.get("source.kafka.topic_pattern")
        if topics and pattern:
            self.fail("source.kafka.topic_pattern", "contradicts source.kafka.topics: give one of them")
        if not topics and not pattern:
            raise ConfigError("is required: give source.kafka.topics or source.kafka.topic_pattern",
                              source=self.origin_file, key="source.kafka.topics")
        if pattern:
            try:
                re.compile(pattern)
            except re.error as e:
                self.fail("source.kafka.topic_pattern", f"is not a valid regular expression: {e}")
        client = self.get("source.kafka.options")
        for entry in client:
            if entry.lower() == "bootstrap.servers":
                self.fail("source.kafka.options", "bootstrap.servers: set source.kafka.bootstrap_servers instead")
            if entry.lower().startswith("kafka."):
                self.fail("source.kafka.options", f"{entry}: write Kafka properties without the kafka. prefix")
        kafka = KafkaInput(
            bootstrap_servers=servers,
            topics=topics or (),
            topic_pattern=pattern,
            starting_offsets=self.starting_offsets(),
            max_offsets_per_trigger=self.get("source.kafka.max_offsets_per_trigger"),
            fail_on_data_loss=self.get("source.kafka.fail_on_data_loss"),
            implementation=self.get("source.kafka.implementation"),
            client_options=Settings(client),
        )
        self.check_client_options(kafka)
        return kafka

    def check_client_options(self, kafka: KafkaInput) -> None:
        """The client settings as the Kafka source will read them, now rather than after Spark starts:
        all of kafka-python's rules for the Python source, the shared ones when Spark's connector may read them."""
        try:
            consumer_config(kafka.spark_options(), java_client=kafka.implementation != "python")
        except ConfigError as e:
            option = (e.key or "").removeprefix("kafka.")
            name = f"source.kafka.options.{option}" if option else "source.kafka.options"
            given = self.g.values.get("source.kafka.options")
            raise ConfigError(bare(e), source=given.origin if given else self.origin_file, key=name) from None

    def starting_offsets(self) -> str | None:
        name = "source.kafka.starting_offsets"
        if not self.given(name):
            return None
        text = self.get(name).strip()
        if text.lower() in ("earliest", "latest"):
            return text.lower()
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        valid = isinstance(parsed, dict) and all(
            isinstance(partitions, dict) and all(
                str(p).isdigit() and isinstance(o, int) and not isinstance(o, bool) and o >= -2
                for p, o in partitions.items())
            for partitions in parsed.values())
        if not valid:
            self.fail(name, f'{text!r} is not earliest, latest or JSON like {{"topic": {{"0": 23, "1": -2}}}} '
                            "(-2 earliest, -1 latest)")
        return text

    def _schema_path(self, name: str) -> str | None:
        """A schema file named in the configuration file is found beside it."""
        value = self.get(name)
        if value is None or self.origin(name) == SET or "://" in value or os.path.isabs(value):
            return value
        return str(Path(self.origin_file).parent / value)

    def _schema_choice(self, needs_avro: bool) -> tuple[str | None, str | None]:
        schema, schema_file = self.get("source.schema"), self._schema_path("source.schema_file")
        if schema and schema_file:
            self.fail("source.schema_file", "contradicts source.schema: give one of them")
        if needs_avro and schema:
            self.fail("source.schema", f"the {self.get('source.format')} format reads an Avro schema: give "
                                       "source.schema_file")
        return schema, schema_file

    def registry(self) -> RegistrySettings | None:
        """HoodieStreamer's SchemaRegistryProvider settings, with ours for TLS; None without a registry."""
        base = self.get(f"{REGISTRY}baseUrl")
        try:
            urls = subject_urls(self.get(f"{REGISTRY}url"), self.get(f"{REGISTRY}targetUrl"), base,
                                tuple(self.get("source.kafka.topics") or ()),
                                tuple(self.get(f"{REGISTRY}{k}") for k in ("urlSuffix", "sourceUrlSuffix",
                                                                            "targetUrlSuffix")))
            if urls is None:
                for name in REGISTRY_KEYS[1:] + REGISTRY_CLIENT_KEYS:
                    if self.given(name):
                        self.fail(name, f"applies to a schema registry: give {REGISTRY}url")
                return None
            source_key = f"{REGISTRY}url" if self.given(f"{REGISTRY}url") else f"{REGISTRY}baseUrl"
            target_key = f"{REGISTRY}targetUrl" if self.given(f"{REGISTRY}targetUrl") else source_key
            source, target = SubjectVersion.parse(urls[0], source_key), SubjectVersion.parse(urls[1], target_key)
        except ConfigError as e:
            self.lower(e, f"{REGISTRY}url")
        option = {k.rsplit(".", 1)[1]: self.get(k) for k in REGISTRY_CLIENT_KEYS}
        if (option["ssl_key_location"] or option["ssl_key_password"]) and not option["ssl_certificate_location"]:
            name = "source.schema_registry.ssl_key_" + ("location" if option["ssl_key_location"] else "password")
            self.fail(name, "needs source.schema_registry.ssl_certificate_location (the key's certificate)")
        return RegistrySettings(source=source, target=target, **option)

    def decoder(self, write: WriteOptions) -> DecoderSpec:
        value_format = self.get("source.format")
        registry = self.registry()
        if registry is not None:
            if value_format != "confluent_avro":
                self.fail(f"{REGISTRY}url", f"a schema registry serves source.format confluent_avro, not "
                                            f"{value_format}")
            for name in ("source.schema", "source.schema_file", "source.schema_files_by_id"):
                if self.given(name):
                    self.fail(name, "contradicts the schema registry, where the schemas come from")
            common: dict[str, Any] = dict(registry=registry)
        else:
            schema, schema_file = self._schema_choice(needs_avro=value_format != "json")
            if not schema and not schema_file:
                name, what = (("source.schema", "give source.schema (Spark DDL) or source.schema_file (Avro .avsc)")
                              if value_format == "json" else
                              ("source.schema_file", f"the {value_format} format reads an Avro schema (.avsc), "
                                                     f"or give {REGISTRY}url"))
                raise ConfigError(f"is required: {what}", source=self.origin_file, key=name)
            ids = {i: self._relative_to_file(p, "source.schema_files_by_id")
                   for i, p in self.get("source.schema_files_by_id").items()}
            common = dict(schema=schema, schema_file=schema_file, schema_files_by_id=ids)
        spec_format = value_format.replace("_", "-")
        try:
            key_fields = self.get("source.key_fields")
            if key_fields is None:
                declared = decoder_spec(spec_format, **common).schema
                # The record key names the table's columns; the Kafka key, the declared ones they come from.
                source_name = dict(zip(self.written_columns(write, declared), declared.names, strict=True))
                record_fields = write.keygen.record_key_fields
                key_fields = tuple(source_name[f] for f in record_fields) \
                    if all(f in source_name for f in record_fields) else ()
                self.settings["source.key_fields"] = key_fields
            key_format = self.get("source.key_format") or ("json" if len(key_fields) > 1 else "string")
            self.settings["source.key_format"] = key_format
            return decoder_spec(spec_format, **common, key_fields=key_fields,
                                key_source=self.get("source.key_source"), key_format=key_format)
        except ConfigError as e:
            self.lower(e, "source.schema")

    def _relative_to_file(self, path: str, name: str) -> str:
        if self.origin(name) == SET or "://" in path or os.path.isabs(path):
            return path
        return str(Path(self.origin_file).parent / path)

    def file_input(self, write: WriteOptions) -> FileInput:
        path = self.require("source.files.path", "the input files (a folder or glob)")
        for name in KAFKA_ONLY:
            if self.given(name):
                self.fail(name, "applies to Kafka sources only (file sources take source.files.format)")
            self.settings.pop(name, None)
        file_format = self.get("source.files.format")
        schema, schema_file = self._schema_choice(needs_avro=False)
        arrow = None
        if schema or schema_file:
            try:
                arrow = decoder_spec("json", schema=schema, schema_file=schema_file).schema
            except ConfigError as e:
                self.lower(e, "source.schema")
            self.check_fields(write, self.written_columns(write, arrow))
        elif file_format in ("json", "csv"):
            raise ConfigError(f"is required: {file_format} files need source.schema (Spark DDL) or "
                              "source.schema_file (Avro .avsc)", source=self.origin_file, key="source.schema")
        return FileInput(path=path, format=file_format, schema=arrow, options=Settings(self.get("source.files.options")),
                         max_files_per_trigger=self.get("source.files.max_files_per_trigger"))

    def written_columns(self, write: WriteOptions, declared: pa.Schema) -> list[str]:
        """The columns the table gets from the declared schema: renamed as Hudi's streamer does with
        source.sanitize_field_names, else checked now, before Spark starts, against Avro's name rule."""
        if write.invalid_name_mask is not None:
            return sanitized_schema(declared, write.invalid_name_mask).names
        try:
            check_names(declared, where="the source schema has ")
        except SchemaEvolutionError as e:
            name = "source.schema" if self.get("source.schema") else "source.schema_file"
            raise ConfigError(str(e), source=self.origin(name), key=self.written(name)) from None
        return declared.names

    def check_fields(self, write: WriteOptions, columns: Sequence[str]) -> None:
        """Record key, partition, ordering and delete-flag fields must be columns of the records."""
        spec = write.keygen
        fields = [(RECORD_KEY, f) for f in spec.record_key_fields]
        fields += [(PARTITION_FIELD, f.name) for f in spec.partition_fields]
        fields += [(PRECOMBINE, write.precombine_field), ("write.delete_flag_column", write.delete_flag_column)]
        for name, field in fields:
            if field and field.split(".")[0] not in columns:
                self.fail(name, f"field {field!r} is not in the source schema (columns: {', '.join(columns)})")

    # -- stream, services, table ----------------------------------------------------------------

    def stream(self, source: SourceConfig, quarantine: QuarantineSettings, table: TableSettings) -> StreamSettings:
        on_error = OnError(self.get("stream.on_error") or ("quarantine" if quarantine.path else "fail"))
        self.settings["stream.on_error"] = on_error.value
        if on_error is OnError.QUARANTINE and not quarantine.path:
            raise ConfigError("is required when stream.on_error is quarantine: where bad records go",
                              source=self.origin("stream.on_error"), key="quarantine.path")
        if quarantine.path and within(table.path, quarantine.path):
            self.fail("quarantine.path", f"must be outside the table ({table.path}): Hudi readers would see its files")
        checkpoint = self.get("stream.checkpoint")
        if source.kafka is not None and not checkpoint:
            raise ConfigError("is required for Kafka sources: where Spark keeps the stream's offsets",
                              source=self.origin_file, key="stream.checkpoint")
        trigger = self.get("stream.trigger")
        return StreamSettings(checkpoint=checkpoint, trigger=Trigger(None if trigger == K.AVAILABLE_NOW else trigger),
                              on_error=on_error)

    def catalog(self, hudi: Settings) -> SyncSettings:
        """Catalog sync under Hudi's keys; a tool class ingest cannot run is refused here."""
        for tool in tool_classes(hudi):
            if tool not in TOOLS:
                self.fail(f"{HUDI}.{SYNC_KEYS.TOOL}", f"names {tool}; ingest syncs with "
                          f"{' or '.join(TOOLS)}")
        try:
            return SyncSettings.from_hudi(hudi, failures_allowed=self.get("write.sync_failures_allowed"))
        except ValueError as e:
            self.fail(f"{HUDI}.{SYNC_KEYS.EXTRACTOR}", str(e))

    def services(self) -> Settings:
        """The table-service keys, complete, after the rules Hudi's write config enforces."""
        if not self.given(CLEANER_POLICY):
            inferred = [policy for name, policy in RETAINED.items() if self.given(name)]
            self.settings[CLEANER_POLICY] = inferred[0] if len(inferred) == 1 else "KEEP_LATEST_COMMITS"
        low, high = self.get(KEEP_MIN), self.get(KEEP_MAX)
        if high <= low:
            if self.given(KEEP_MAX) or not self.given(KEEP_MIN):
                self.fail(KEEP_MAX, f"must be greater than {KEEP_MIN[len(HUDI) + 1:]} ({low}), got {high}")
            self.fail(KEEP_MIN, f"must be less than {KEEP_MAX[len(HUDI) + 1:]} ({high}), got {low}")
        retained = self.get(COMMITS_RETAINED)
        if self.settings[CLEANER_POLICY] == "KEEP_LATEST_COMMITS" and low <= retained:
            if self.given(KEEP_MIN) or not self.given(COMMITS_RETAINED):
                self.fail(KEEP_MIN, f"must be greater than {COMMITS_RETAINED[len(HUDI) + 1:]} ({retained}), got "
                                    f"{low}: archiving commits the cleaner keeps would hide them from incremental reads")
            self.fail(COMMITS_RETAINED, f"must be less than {KEEP_MIN[len(HUDI) + 1:]} ({low}), got {retained}")
        if self.get(COMPACT_INLINE) and self.get(SCHEDULE_INLINE):
            self.fail(SCHEDULE_INLINE, f"contradicts {COMPACT_INLINE[len(HUDI) + 1:]}=true: compaction is "
                                       "either run inline or only scheduled inline")
        return Settings({k.path[1]: K.to_text(self.settings[k.name]) for k in K.SERVICE_KEYS})

    def warnings(self) -> list[str]:
        return [f"{g.origin}: {name}: not used by ingest; kept with the Hudi settings" for name, g in self.g.extras.items()]

    def check_table(self, table: TableSettings, write: WriteOptions) -> None:
        """An existing table must agree with every setting the writer would record in it."""
        properties = f"{table.path.rstrip('/')}/{PROPERTIES_PATH}"
        try:
            storage = Storage(table.path, table.storage_options)
            if not properties_file.present(storage):
                return
            existing = TableConfig.load(storage)
            existing.check_supported(table.path, write=True)  # a pipeline writes it
            existing.check_keyed_records(table.path)
            hudi_table = HudiTable(storage, existing)
            timeline = hudi_table.timeline()
            hudi_table.schema(timeline)  # the latest commit parses: writers build on it
            hudi_table.check_no_schema_history(timeline)
            hudi_table.check_no_bucket_index_metadata()
            refuse_unmergeable_writes(hudi_table, timeline, Manifest.read(hudi_table))
            slices = hudi_table.view(timeline).latest_writer_slices()
        except UnsupportedTable as e:
            raise ConfigError(str(e).removeprefix(f"{table.path}: "), source=properties) from None
        except TimelineError:
            raise  # the table is broken, not the configuration: its own one line, exit code 1
        except Exception as e:  # noqa: BLE001 - any storage backend's error (missing credentials, network)
            detail = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ConfigError(f"cannot read the table at {table.path} to compare settings: {detail} "
                              "(--no-table-check validates without it)", source=self.origin("table.path"),
                              key="table.path") from None
        try:
            write = write.for_table(existing.props)
        except ConfigError as e:
            raise ConfigError(bare(e), source=properties, key=f"{HUDI}.{e.key}") from None
        conflicts = existing.conflicts_with(write.table_settings())
        mismatch = index_type_mismatch(existing, slices, write.index.type)
        if mismatch and not conflicts:
            raise ConfigError(f"{table.path}: {mismatch}", source=self.origin(INDEX_TYPE), key=self.written(INDEX_TYPE))
        count = bucket_count_mismatch(slices, write.index.bucket_count) if write.index.type is IndexType.BUCKET else None
        if count and not conflicts:
            raise ConfigError(f"{table.path}: {count}", source=self.origin(BUCKETS), key=self.written(BUCKETS))
        if not conflicts:
            return
        details = []
        for prop, theirs, ours in conflicts:
            name = self._property_key(prop)
            how = "" if self.given(name) else ", by default" if name in K.BY_NAME else ", inferred"
            details.append(f"{prop}: table has {theirs!r}, {self.origin(name)} gives {ours!r} "
                           f"({self.written(name)}{how})")
        raise ConfigError("; ".join(details), source=properties)

    def _property_key(self, prop: str) -> str:
        if prop == "hoodie.table.keygenerator.class":
            return KEYGEN_TYPE if self.given(KEYGEN_TYPE) and not self.given(KEYGEN_CLASS) else KEYGEN_CLASS
        return _TABLE_PROPERTY_KEYS.get(prop, f"{HUDI}.{prop}")

