"""Every pipeline configuration key in one place: name, type, default, allowed values, meaning.

The loader checks files against this registry, redaction asks it what is secret, and
`docs/configuration.md` is generated from it (`python -m ingest.config.keys docs/configuration.md`),
so the code, the checks and the reference cannot disagree.

A key's full name is its path in the YAML file joined with dots (`source.kafka.topics`), except in
the `hudi` section, whose keys are Hudi's own dotted names kept whole (`hudi.hoodie.index.type`).
"""

from __future__ import annotations

import difflib
import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ingest.config.hudi_keys import WRITABLE_TABLE_VERSIONS
from ingest.config.hudi_keys import irrelevant_table as _irrelevant_table
from ingest.config.hudi_keys import reference_table as _refused_table

REDACTED = "<redacted>"

# Names of secret settings: Kafka's sasl.jaas.config and ssl.*.password, fsspec's `secret`/`token`,
# Spark's fs.s3a.secret.key, Azure account keys... Matched against the full name, map entries included.
_SECRET_NAME = re.compile(
    r"password|passwd|secret|token|credential|jaas|private[._-]?key|account[._-]?key|access[._-]?key"
    r"|connection[._-]?string"
    # Schema registry URLs may carry `user:password@` (HoodieStreamer's SchemaRegistryProvider sends it as
    # basic auth): the whole URL is a secret; messages show it without the credentials.
    r"|schemaprovider\.registry\.(?:target|base)?url$",
    re.IGNORECASE,
)


# Last name segments that say the value only points at or names a secret (`...credentials.provider`).
_NOT_SECRET_LAST = frozenset({"provider", "type", "class", "location", "path", "file"})


def is_secret(name: str) -> bool:
    """True for settings whose values must never be shown (s3fs names its access key id plain `key`)."""
    last = name.rsplit(".", 1)[-1].lower()
    return last == "key" or (bool(_SECRET_NAME.search(name)) and last not in _NOT_SECRET_LAST)


class Secret(str):
    """A secret value: the text itself where used, `<redacted>` wherever it is repr'd or logged."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(REDACTED)


class Type(Enum):
    STRING = "text"
    INTEGER = "integer"
    NUMBER = "number"
    BOOLEAN = "true / false"
    CHOICE = "one of"
    LIST = "list of text (a YAML list, or comma-separated)"
    SIZE = "bytes (an integer, or with a unit: 64MiB, 1 GB)"
    TRIGGER = "trigger"
    TEXT_MAP = "map of text"
    VALUE_MAP = "map"
    ID_MAP = "map of schema id to file"
    REFUSED = "refused"

    @property
    def is_map(self) -> bool:
        return self in (Type.TEXT_MAP, Type.VALUE_MAP, Type.ID_MAP)


@dataclass(frozen=True)
class Key:
    """One setting. `default` is typed; `default_doc` describes a default derived from other keys."""

    name: str
    type: Type
    doc: str
    default: Any = None
    default_doc: str | None = None
    required: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None
    aliases: tuple[str, ...] = ()
    service: bool = False
    reason: str = ""  # why a value is refused (REFUSED keys, restricted choices, patterns)

    @property
    def section(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def path(self) -> tuple[str, ...]:
        """Where the key sits in the YAML file."""
        if self.section == HUDI:
            return (HUDI, self.name[len(HUDI) + 1 :])
        return tuple(self.name.split("."))

    @property
    def secret(self) -> bool:
        return is_secret(self.name)


HUDI = "hudi"

# Hudi's index types and what they become here: (our index type, global scope).
INDEX_TYPES: Mapping[str, tuple[str, bool]] = {
    "BUCKET": ("bucket", False),
    "SIMPLE": ("key", False),
    "BLOOM": ("key", False),
    "GLOBAL_SIMPLE": ("key", True),
    "GLOBAL_BLOOM": ("key", True),
    "RECORD_INDEX": ("key", True),
}
BUCKET_KEYS = ("hudi.hoodie.bucket.index.num.buckets", "hudi.hoodie.bucket.index.hash.field")

_PAYLOADS = (
    "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
    "org.apache.hudi.common.model.EventTimeAvroPayload",
    "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
)
_STRATEGIES = "org.apache.hudi.table.action.compact.strategy"
_TIMEBASED = "hoodie.keygen.timebased."
_OLD_TIMEBASED = "hoodie.deltastreamer.keygen.timebased."


def _streamer(suffix: str) -> tuple[str, ...]:
    """HoodieStreamer's key and its older `hoodie.deltastreamer.` spelling, as `hudi.` names."""
    return (f"hudi.hoodie.streamer.{suffix}", f"hudi.hoodie.deltastreamer.{suffix}")


def _timebased(suffix: str, doc: str) -> Key:
    return Key(f"hudi.{_TIMEBASED}{suffix}", Type.STRING, doc, aliases=(f"hudi.{_OLD_TIMEBASED}{suffix}",))


SECTIONS: Mapping[str, str] = {
    "table": "The Hudi table written: where it is and what it is called.",
    HUDI: (
        "Settings Hudi itself names, under Hudi's own keys, so HoodieStreamer and Spark datasource "
        "properties carry over unchanged. Only the keys below are read; see *Hudi keys* above for the rest."
    ),
    "source": (
        "Where records come from: `source.kafka` (a stream) or `source.files` (a backfill), exactly one; "
        "and, for Kafka, how message values are decoded."
    ),
    "write": "ingest's own write settings (those Hudi has no key for).",
    "stream": "The streaming query: its checkpoint, how often it commits, what happens to bad records.",
    "quarantine": "Where records that cannot be written go, when `stream.on_error` is `quarantine`.",
    "spark": "The Spark session the job starts.",
}
GROUPS = frozenset({*SECTIONS, "source.kafka", "source.files", "source.schema_registry"})

KEYS: tuple[Key, ...] = (
    # -- table ------------------------------------------------------------------------------------
    Key("table.path", Type.STRING, "Base URL of the table: a local path or any fsspec URL (`s3://`, `gs://`, "
        "`abfs://`, `file://`).", required=True),
    Key("table.name", Type.STRING, "Table name (`hoodie.table.name`); also names the table's Avro record, so "
        "letters, digits and `_` only.", required=True, pattern=r"[A-Za-z_][A-Za-z0-9_]*",
        reason="letters, digits and _, not starting with a digit (it names the table's Avro record)",
        aliases=("hudi.hoodie.table.name",)),
    Key("table.database", Type.STRING, "Database the table belongs to (`hoodie.database.name`).", default="default",
        aliases=("hudi.hoodie.database.name",)),
    Key("table.storage_options", Type.VALUE_MAP, "Options of the fsspec file system holding the table (s3fs: "
        "`key`, `secret`, `client_kwargs: {endpoint_url: ...}`; gcsfs: `token`; ...). Ours: `fsync: true` flushes "
        "each file written on local disk to the device before it is moved into place, so commits survive "
        "power loss too (a disk flush per file; off by default).", default={}),
    # -- hudi: keys and partitions ----------------------------------------------------------------
    Key("hudi.hoodie.datasource.write.recordkey.field", Type.STRING, "Record key field(s), comma-separated; "
        "nested fields as `a.b`.", required=True),
    Key("hudi.hoodie.datasource.write.partitionpath.field", Type.STRING, "Partition path field(s), "
        "comma-separated; `field:SIMPLE` / `field:TIMESTAMP` with the CUSTOM key generator. Unset: not "
        "partitioned."),
    Key("hudi.hoodie.datasource.write.precombine.field", Type.STRING, "Ordering field: of two versions of a "
        "record the larger value wins (with an event-time payload, across commits too). Hudi's writers default "
        "it to `ts`; here unset means no ordering field (the latest write wins).",
        aliases=("hudi.hoodie.table.precombine.field",)),
    Key("hudi.hoodie.datasource.write.keygenerator.class", Type.STRING, "Key generator class: Hudi's Simple, "
        "Complex, TimestampBased, Custom or Nonpartitioned key generator (Spark or Avro variant).",
        default_doc="from `keygenerator.type`, else inferred from the field counts as Hudi does"),
    Key("hudi.hoodie.datasource.write.keygenerator.type", Type.CHOICE, "Key generator type, when no class is "
        "given.", choices=("SIMPLE", "COMPLEX", "TIMESTAMP", "CUSTOM", "NON_PARTITION"),
        default_doc="inferred: NON_PARTITION without partition fields, SIMPLE with one key and one partition "
        "field, else COMPLEX"),
    Key("hudi.hoodie.datasource.write.hive_style_partitioning", Type.BOOLEAN, "Partition folders named "
        "`field=value`.", default=False),
    Key("hudi.hoodie.datasource.write.partitionpath.urlencode", Type.BOOLEAN, "Escape partition values in "
        "folder names (Hudi's `escapePathName`). Without it, a record whose value holds `/`, `\\`, `:`, a "
        "control character, `=` or a `%XX` Spark would decode is refused as a bad record.", default=False),
    Key("hudi.hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled", Type.BOOLEAN,
        "Render timestamp key and partition values as `yyyy-MM-dd HH:mm:ss.S` rather than epoch numbers "
        "(set it for tables keyed or partitioned by a timestamp).", default=False),
    Key("hudi.hoodie.write.table.version", Type.CHOICE, "Table version of a table ingest creates: 6 (Hudi "
        "0.14/0.15; every Hudi reader since 0.14 reads it), 8 (Hudi 1.0) or 9 (Hudi 1.1/1.2). An existing table is "
        "written at its own version, never upgraded. Table services run at every version.",
        default="6", choices=WRITABLE_TABLE_VERSIONS),
    Key("hudi.hoodie.write.complex.keygen.new.encoding", Type.BOOLEAN, "COMPLEX key generator with one key "
        "field: keys `field:value` (false, as Hudi 0.14.0, 0.14.2+, 0.15.1+ and 1.0.3+ write them) or the "
        "bare value (true, as Hudi 0.14.1, 0.15.0 and 1.0.0-1.0.2 wrote them). Recorded in hoodie.properties; "
        "an existing table at version 6 or 8 that records none (written by Hudi or an older ingest) must be "
        "given it. At table version 9 keys are always `field:value`, as Hudi writes them there: true is refused.",
        default_doc="the table's recorded value; false for a new table"),
    Key("hudi.hoodie.write.complex.keygen.encode.single.record.key.field.name", Type.REFUSED, "The name "
        "ingest used before; Hudi 0.14.2/0.15.1 name the setting as above, with the opposite meaning.", reason="use hoodie.write.complex.keygen.new.encoding (true for the "
        "bare value)"),
    _timebased("timestamp.type", "TIMESTAMP key generator: how the field is read (UNIX_TIMESTAMP, DATE_STRING, "
               "MIXED, EPOCHMILLISECONDS, EPOCHMICROSECONDS, SCALAR)."),
    _timebased("timestamp.scalar.time.unit", "TIMESTAMP key generator, SCALAR type: the unit of the numbers."),
    _timebased("input.dateformat", "TIMESTAMP key generator: Joda pattern(s) of DATE_STRING input."),
    _timebased("input.dateformat.list.delimiter.regex", "TIMESTAMP key generator: separates several input "
               "patterns."),
    _timebased("output.dateformat", "TIMESTAMP key generator: Joda pattern of the partition path."),
    _timebased("timezone", "TIMESTAMP key generator: zone of input and output."),
    _timebased("input.timezone", "TIMESTAMP key generator: zone of the input."),
    _timebased("output.timezone", "TIMESTAMP key generator: zone of the partition path."),
    Key("hudi.hoodie.keygen.datetime.parser.class", Type.STRING, "TIMESTAMP key generator: date parser (only "
        "Hudi's `HoodieDateTimeParser`).", aliases=("hudi.hoodie.deltastreamer.keygen.datetime.parser.class",)),
    # -- hudi: writing ----------------------------------------------------------------------------
    Key("hudi.hoodie.datasource.write.operation", Type.CHOICE, "What a batch does: `upsert` (insert or "
        "update), `insert` (records are new: no lookup), `bulk_insert` (a first load of new records), "
        "`delete` (every record deletes its key).", default="upsert",
        choices=("upsert", "insert", "bulk_insert", "delete")),
    Key("hudi.hoodie.datasource.write.payload.class", Type.CHOICE, "Merge rule across commits: Default / "
        "EventTime payloads keep the version with the larger ordering value, OverwriteWithLatest the latest "
        "write (Hudi 0.14/0.15 writers default to OverwriteWithLatest).", choices=_PAYLOADS,
        default_doc="DefaultHoodieRecordPayload with a precombine field, else OverwriteWithLatestAvroPayload",
        aliases=("hudi.hoodie.compaction.payload.class",)),
    Key("hudi.hoodie.datasource.write.streaming.checkpoint.identifier", Type.STRING, "Names this writer's "
        "batch ids in the commit metadata, so a replayed micro-batch is recognised and skipped; give each "
        "pipeline writing the same table its own (they take turns, one commit at a time: "
        "`write.lock_wait_seconds`).", default="default_single_writer"),
    Key("hudi.hoodie.datasource.write.streaming.retry.count", Type.INTEGER, "Attempts at writing a batch "
        "(stream or backfill) that fails for a reason another attempt can get past: its lease lost to another "
        "writer while it stalled, a Hudi writer's live write in the way, a storage error. Each attempt "
        "after the first takes the lease anew and rolls the failed one back; a batch that did commit is "
        "recognised by its checkpoint and not written again. Bad records and settings fail at once.",
        default=3, minimum=1),
    Key("hudi.hoodie.datasource.write.streaming.retry.interval.ms", Type.INTEGER, "Pause before the second "
        "attempt at a failed batch, doubled before each next one.", default=2000, minimum=0),
    Key("hudi.hoodie.datasource.write.streaming.ignore.failed.batch", Type.CHOICE, "Go on after a batch "
        "failed every attempt.", default="false", choices=("false",),
        reason="a skipped batch's records would be lost while the stream goes on; ingest stops instead, "
        "and a restart writes the batch again"),
    Key("hudi.hoodie.datasource.write.table.type", Type.CHOICE, "Table type.", default="MERGE_ON_READ",
        choices=("MERGE_ON_READ",), reason="ingest writes Merge-On-Read tables only",
        aliases=("hudi.hoodie.table.type", "hudi.hoodie.datasource.write.storage.type")),
    Key("hudi.hoodie.index.type", Type.CHOICE, "How records find their file group; see *Index types* above. "
        "SIMPLE, Hudi's Spark default, maps to ingest's key index per partition, which sizes file groups to the "
        "data; BUCKET needs no lookup and lets Hudi's own writers continue the table, but fixes the number of "
        "file groups per partition up front.", default="SIMPLE", choices=tuple(INDEX_TYPES)),
    Key("hudi.hoodie.bucket.index.num.buckets", Type.INTEGER, "BUCKET index: buckets (file groups) per "
        "partition. Fixed for the life of the table.", default=256, minimum=1, maximum=10**8),
    Key("hudi.hoodie.bucket.index.hash.field", Type.STRING, "BUCKET index: the record key fields hashed to a "
        "bucket (a subset of the record key fields).", default_doc="the record key fields"),
    Key("hudi.hoodie.index.bucket.engine", Type.CHOICE, "BUCKET index engine.", default="SIMPLE",
        choices=("SIMPLE",), reason="consistent hashing buckets are not supported"),
    Key("hudi.hoodie.logfile.max.size", Type.INTEGER, "Bytes after which a log file is closed and the next "
        "one started.", default=1024**3, minimum=1),
    Key("hudi.hoodie.logfile.data.block.max.size", Type.INTEGER, "Bytes of records after which a log data "
        "block is closed and the next one started in the same log file (`HoodieAppendHandle`), so a large "
        "commit never needs one block beyond what Hudi reads.", default=256 * 1024**2, minimum=1,
        maximum=2**31 - 1),
    Key("hudi.hoodie.parquet.compression.codec", Type.CHOICE, "Base file compression. Hudi defaults to gzip; "
        "snappy writes several times faster and every Hudi reader reads it.", default="snappy",
        choices=("snappy", "gzip", "zstd", "uncompressed")),
    Key("hudi.hoodie.metadata.enable", Type.CHOICE, "Hudi's metadata table. Hudi's writers default to true; "
        "ingest does not maintain one.", default="false", choices=("false",),
        reason="ingest does not maintain the metadata table"),
    Key("hudi.hoodie.populate.meta.fields", Type.CHOICE, "Hudi's `_hoodie_*` columns.", default="true",
        choices=("true",), reason="ingest always writes the meta fields"),
    Key("hudi.hoodie.datasource.write.drop.partition.columns", Type.CHOICE, "Drop partition columns from "
        "data files.", default="false", choices=("false",), reason="partition columns are always kept"),
    Key("hudi.hoodie.datasource.write.insert.drop.duplicates", Type.CHOICE, "Drop inserts of keys already in "
        "the table.", default="false", choices=("false",), reason="not supported; use upsert"),
    Key("hudi.hoodie.table.base.file.format", Type.CHOICE, "Base file format.", default="PARQUET",
        choices=("PARQUET",), reason="ingest writes parquet base files"),
    Key("hudi.hoodie.index.class", Type.REFUSED, "A custom Java index class.",
        reason="Java index classes cannot run here; set hoodie.index.type"),
    # -- hudi: catalog sync (HoodieSyncConfig, HiveSyncConfigHolder, AWS Glue sync) --
    Key("hudi.hoodie.datasource.meta.sync.enable", Type.BOOLEAN, "Register the table and its partitions in a "
        "catalog after every commit (see *Catalog sync* above).", default=False),
    Key("hudi.hoodie.datasource.hive_sync.enable", Type.BOOLEAN, "The same, under Hive sync's older key.",
        default=False),
    Key("hudi.hoodie.meta.sync.client.tool.class", Type.STRING, "Which catalogs, comma-separated: "
        "`org.apache.hudi.hive.HiveSyncTool` (a Hive Metastore) and/or "
        "`org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool` (AWS Glue).", default="org.apache.hudi.hive.HiveSyncTool"),
    Key("hudi.hoodie.datasource.hive_sync.mode", Type.CHOICE, "How Hive sync talks to Hive: ingest uses the "
        "metastore's Thrift API.", default="hms", choices=("hms",),
        reason="ingest syncs through the metastore's Thrift API (hms); jdbc and hiveql need HiveServer2"),
    Key("hudi.hoodie.datasource.hive_sync.use_jdbc", Type.CHOICE, "Hive sync through HiveServer2's JDBC.",
        default="false", choices=("false",), reason="set hoodie.datasource.hive_sync.mode: hms"),
    Key("hudi.hoodie.datasource.hive_sync.metastore.uris", Type.STRING, "The Hive Metastore's Thrift URIs, "
        "comma-separated.", default="thrift://localhost:9083"),
    Key("hudi.hoodie.datasource.hive_sync.database", Type.STRING, "Catalog database (created when missing, "
        "unless `auto_create_database` is false).", default_doc="`table.database`"),
    Key("hudi.hoodie.datasource.hive_sync.table", Type.STRING, "Catalog table name; a Merge-On-Read table is "
        "registered as `<name>_ro`, `<name>_rt` and `<name>` (see `table.strategy`).", default_doc="`table.name`"),
    Key("hudi.hoodie.datasource.hive_sync.partition_fields", Type.STRING, "The catalog's partition columns, "
        "comma-separated.", default_doc="the partition path fields"),
    Key("hudi.hoodie.datasource.hive_sync.partition_extractor_class", Type.CHOICE, "How a partition path "
        "becomes partition values.", default_doc="NonPartitionedExtractor without partition fields; "
        "HiveStylePartitionValueExtractor for one hive-style field, SinglePartPartitionValueExtractor for one "
        "other; MultiPartKeysValueExtractor for several",
        choices=tuple(f"org.apache.hudi.hive.{c}" for c in (
            "MultiPartKeysValueExtractor", "HiveStylePartitionValueExtractor", "SinglePartPartitionValueExtractor",
            "NonPartitionedExtractor", "SlashEncodedDayPartitionValueExtractor")),
        reason="the extractors ingest knows are Hudi's built-in ones"),
    Key("hudi.hoodie.datasource.hive_sync.skip_ro_suffix", Type.BOOLEAN, "Register the read-optimized table "
        "as `<name>` instead of `<name>_ro` (with `sync_snapshot_with_table_name` on, the snapshot table then "
        "takes `<name>`, as Hudi's sync leaves it).", default=False),
    Key("hudi.hoodie.datasource.hive_sync.table.strategy", Type.CHOICE, "Which tables a Merge-On-Read table is "
        "registered as: ALL (read optimized and snapshot), RO or RT (that one alone, under `<name>`).",
        default="ALL", choices=("ALL", "RO", "RT")),
    Key("hudi.hoodie.meta.sync.sync_snapshot_with_table_name", Type.BOOLEAN, "With the ALL strategy, also "
        "register the snapshot table under `<name>`, as Hudi 0.15 and 1.x do by default (0.14 did not).",
        default=True),
    Key("hudi.hoodie.datasource.hive_sync.sync_as_datasource", Type.BOOLEAN, "Add the Spark data source "
        "properties (provider, schema) so Spark reads the tables as Hudi tables.", default=True),
    Key("hudi.hoodie.datasource.hive_sync.support_timestamp", Type.BOOLEAN, "Register timestamp columns as "
        "`timestamp` instead of `bigint`.", default=False),
    Key("hudi.hoodie.datasource.hive_sync.create_managed_table", Type.BOOLEAN, "Leave out `EXTERNAL=TRUE`.",
        default=False),
    Key("hudi.hoodie.datasource.hive_sync.omit_metadata_fields", Type.BOOLEAN, "Leave the `_hoodie_*` "
        "columns out of the catalog.", default=False),
    Key("hudi.hoodie.datasource.hive_sync.batch_num", Type.INTEGER, "Partitions per metastore call.",
        default=1000, minimum=1),
    Key("hudi.hoodie.datasource.hive_sync.auto_create_database", Type.BOOLEAN, "Create the database when it "
        "is missing.", default=True),
    Key("hudi.hoodie.datasource.hive_sync.schema_string_length_thresh", Type.INTEGER, "Characters per "
        "`spark.sql.sources.schema.part.N` table property.", default=4000, minimum=1),
    Key("hudi.hoodie.datasource.hive_sync.table_properties", Type.STRING, "Extra table parameters, "
        "`key=value` one per line."),
    Key("hudi.hoodie.datasource.hive_sync.serde_properties", Type.STRING, "Extra serde parameters, "
        "`key=value` one per line."),
    Key("hudi.hoodie.aws.glue.region", Type.STRING, "AWS Glue: the region.", default_doc="boto3's default"),
    Key("hudi.hoodie.aws.glue.endpoint", Type.STRING, "AWS Glue: an endpoint URL other than AWS's."),
    Key("hudi.hoodie.aws.access.key", Type.STRING, "AWS Glue: access key id.", default_doc="boto3's chain"),
    Key("hudi.hoodie.aws.secret.key", Type.STRING, "AWS Glue: secret access key.", default_doc="boto3's chain"),
    Key("hudi.hoodie.aws.session.token", Type.STRING, "AWS Glue: session token."),
    Key("hudi.hoodie.datasource.meta.sync.glue.catalogId", Type.STRING, "AWS Glue: the catalog (account) id.",
        default_doc="the caller's account"),
    Key("hudi.hoodie.datasource.meta.sync.glue.skip_table_archive", Type.BOOLEAN, "AWS Glue: update tables "
        "without archiving their previous version (`UpdateTable`'s `SkipArchive`).", default=True),
    Key("hudi.hoodie.meta_sync.spark.version", Type.STRING, "Recorded as the tables' "
        "`spark.sql.create.version` parameter when given."),
    # -- hudi: metrics (HoodieMetricsConfig, HoodieMetricsPrometheusConfig) --
    Key("hudi.hoodie.metrics.on", Type.BOOLEAN, "Report per-commit metrics under Hudi's `HoodieMetrics` names "
        "(see *Metrics* above).", default=False),
    Key("hudi.hoodie.metrics.reporter.type", Type.CHOICE, "Where metrics go: an HTTP endpoint on the driver "
        "for Prometheus to scrape, or one log line per commit. Hudi's default, GRAPHITE, and its other "
        "reporters are Java-only.", default="PROMETHEUS", choices=("PROMETHEUS", "CONSOLE"),
        reason="ingest reports to PROMETHEUS (an endpoint on the driver) or CONSOLE"),
    Key("hudi.hoodie.metrics.prometheus.port", Type.INTEGER, "PROMETHEUS: the driver's port for `/metrics` "
        "(0 picks a free one, logged at start).", default=9090, minimum=0, maximum=65535),
    Key("hudi.hoodie.metrics.reporter.metricsname.prefix", Type.STRING, "Prefix of every metric name; dots "
        "become underscores.", default_doc="the table name, as Hudi infers it"),
    # -- hudi: table services (read by ingest.hudi.config.service_settings, with Hudi 0.14/0.15's defaults) --
    Key("hudi.hoodie.compact.inline", Type.BOOLEAN, "Schedule and run compaction in the writing job after "
        "commits. Merge-On-Read tables need compaction: turn this on, or compact with a separate job.",
        default=False, service=True),
    Key("hudi.hoodie.compact.schedule.inline", Type.BOOLEAN, "Only schedule compaction in the writing job; "
        "another job runs it.", default=False, service=True),
    Key("hudi.hoodie.compact.inline.trigger.strategy", Type.CHOICE, "When compaction is scheduled: after "
        "`max.delta.commits` commits, `max.delta.seconds` seconds, both, or either.", default="NUM_COMMITS",
        choices=("NUM_COMMITS", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME"), service=True),
    Key("hudi.hoodie.compact.inline.max.delta.commits", Type.INTEGER, "Delta commits between compactions.",
        default=5, minimum=1, service=True),
    Key("hudi.hoodie.compact.inline.max.delta.seconds", Type.INTEGER, "Seconds between compactions.",
        default=3600, minimum=0, service=True),
    Key("hudi.hoodie.compaction.strategy", Type.CHOICE, "Which file slices a compaction takes, in what order "
        "(the class name with or without its package).", default=f"{_STRATEGIES}.LogFileSizeBasedCompactionStrategy",
        choices=tuple(f"{_STRATEGIES}.{name}CompactionStrategy"
                      for name in ("LogFileSizeBased", "LogFileNumBased", "BoundedIO", "UnBounded")), service=True),
    Key("hudi.hoodie.compaction.logfile.size.threshold", Type.INTEGER, "LogFileSizeBased strategy: bytes of "
        "logs a file slice needs to be compacted.", default=0, minimum=0, service=True),
    Key("hudi.hoodie.compaction.logfile.num.threshold", Type.INTEGER, "LogFileNumBased strategy: log files a "
        "file slice needs to be compacted.", default=0, minimum=0, service=True),
    Key("hudi.hoodie.compaction.target.io", Type.INTEGER, "BoundedIO strategies: megabytes of IO one "
        "compaction may plan.", default=500 * 1024, minimum=0, service=True),
    Key("hudi.hoodie.parquet.max.file.size", Type.INTEGER, "Target base file size in bytes; compaction "
        "estimates its IO with it, a `bulk_insert` writes base files of this size, as Hudi's bulk insert does, "
        "and other inserts with an index other than BUCKET fill small files and new base files up to it "
        "(unless `write.file_group_max_bytes` says otherwise).",
        default=120 * 1024**2, minimum=1, service=True),
    Key("hudi.hoodie.parquet.small.file.limit", Type.INTEGER, "Index other than BUCKET: a file group whose "
        "latest slice is a base file smaller than this, without log files, takes new keys, rewritten into a new "
        "base file with them (and that batch's updates and deletes to it), as Hudi's Merge-On-Read writer does "
        "for an index that cannot index log files. 0: never; every batch's new keys open new file groups.",
        default=104857600, minimum=0),
    Key("hudi.hoodie.merge.small.file.group.candidates.limit", Type.INTEGER, "Index other than BUCKET: how "
        "many small files per partition take new keys in one commit, smallest first.", default=1, minimum=0),
    Key("hudi.hoodie.copyonwrite.record.size.estimate", Type.INTEGER, "Index other than BUCKET: bytes per "
        "record assumed when sizing files for new keys, until a commit (a compaction) wrote more than "
        "`hoodie.record.size.estimation.threshold` times the small file limit.", default=1024, minimum=1),
    Key("hudi.hoodie.record.size.estimation.threshold", Type.NUMBER, "Index other than BUCKET: see "
        "`hoodie.copyonwrite.record.size.estimate`.", default=1.0, minimum=0),
    Key("hudi.hoodie.copyonwrite.insert.split.size", Type.INTEGER, "Index other than BUCKET: new keys per "
        "new file group when `hoodie.copyonwrite.insert.auto.split` is false.", default=500000, minimum=1),
    Key("hudi.hoodie.copyonwrite.insert.auto.split", Type.BOOLEAN, "Index other than BUCKET: size new file "
        "groups to the max file size over the bytes per record, instead of the insert split size.",
        default=True),
    Key("hudi.hoodie.clean.automatic", Type.BOOLEAN, "Clean old file slices after commits.", default=True,
        service=True),
    Key("hudi.hoodie.cleaner.policy", Type.CHOICE, "What the cleaner keeps.",
        choices=("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"),
        default_doc="inferred, as Hudi does, from the one retention key given, else KEEP_LATEST_COMMITS",
        aliases=("hudi.hoodie.clean.policy",), service=True),
    Key("hudi.hoodie.cleaner.commits.retained", Type.INTEGER, "KEEP_LATEST_COMMITS: commits whose files stay "
        "readable (incremental and time-travel reads reach this far back).", default=10, minimum=1,
        aliases=("hudi.hoodie.clean.commits.retained",), service=True),
    Key("hudi.hoodie.cleaner.fileversions.retained", Type.INTEGER, "KEEP_LATEST_FILE_VERSIONS: file slices "
        "kept per file group.", default=3, minimum=1, aliases=("hudi.hoodie.clean.fileversions.retained",),
        service=True),
    Key("hudi.hoodie.cleaner.hours.retained", Type.REFUSED, "KEEP_LATEST_BY_HOURS retention.",
        reason="cleaning by hours is not supported; use hoodie.cleaner.commits.retained",
        aliases=("hudi.hoodie.clean.hours.retained",)),
    Key("hudi.hoodie.clean.max.commits", Type.INTEGER, "Commits since the last clean before the next one is "
        "planned.", default=1, minimum=1, aliases=("hudi.hoodie.clean.trigger.max.commits",), service=True),
    Key("hudi.hoodie.cleaner.incremental.mode", Type.BOOLEAN, "Plan cleaning from the partitions written "
        "since the last clean, not a listing of the whole table.", default=True,
        aliases=("hudi.hoodie.clean.incremental.enabled",), service=True),
    Key("hudi.hoodie.archive.automatic", Type.BOOLEAN, "Archive old instants of the timeline after commits.",
        default=True, service=True),
    Key("hudi.hoodie.keep.min.commits", Type.INTEGER, "Archival keeps at least this many commits on the "
        "active timeline; with KEEP_LATEST_COMMITS, more than `hoodie.cleaner.commits.retained`.", default=20,
        minimum=1, service=True),
    Key("hudi.hoodie.keep.max.commits", Type.INTEGER, "Archival starts when the active timeline holds more "
        "commits than this (more than `hoodie.keep.min.commits`).", default=30, minimum=1, service=True),
    Key("hudi.hoodie.commits.archival.batch", Type.INTEGER, "Archived instants per block of the archive.",
        default=10, minimum=1, service=True),
    Key("hudi.hoodie.timeline.compaction.batch.size", Type.INTEGER, "Table versions 8 and 9: when a layer of "
        "the LSM timeline history holds this many files, they are merged into one file of the next layer.",
        default=10, minimum=1, service=True),
    # -- hudi: HoodieStreamer settings without an equivalent ------------------------------------
    # -- hudi: HoodieStreamer's SchemaRegistryProvider (confluent_avro values) --------------------
    Key("hudi.hoodie.streamer.schemaprovider.registry.url", Type.STRING, "confluent_avro: the Confluent Schema "
        "Registry subject version records are read as, `http[s]://[user:pass@]host:port/subjects/<subject>/"
        "versions/latest`; fetched again before every batch, so a new version reaches the next commit. "
        "Credentials in the URL are sent as basic auth. The writer schema of each message's schema id comes "
        "from the same registry (once per executor process); an id it does not know is a bad record, a "
        "registry that does not answer fails the batch.",
        aliases=_streamer("schemaprovider.registry.url")[1:]),
    Key("hudi.hoodie.streamer.schemaprovider.registry.targetUrl", Type.STRING, "The subject version whose "
        "schema gives the table's columns (a nullable field added in a new version becomes a new column).",
        default_doc="`registry.url`", aliases=_streamer("schemaprovider.registry.targetUrl")[1:]),
    Key("hudi.hoodie.streamer.schemaprovider.registry.baseUrl", Type.STRING, "Without `registry.url` / "
        "`registry.targetUrl`: they are this + the topic + `urlSuffix` (HoodieMultiTableStreamer's rule), "
        "e.g. `https://host:8081/subjects/`; needs exactly one topic.",
        aliases=_streamer("schemaprovider.registry.baseUrl")[1:]),
    Key("hudi.hoodie.streamer.schemaprovider.registry.urlSuffix", Type.STRING, "What follows the topic in "
        "subject URLs built from `baseUrl`, e.g. `-value/versions/latest`.",
        aliases=_streamer("schemaprovider.registry.urlSuffix")[1:]),
    Key("hudi.hoodie.streamer.schemaprovider.registry.sourceUrlSuffix", Type.STRING, "Without `urlSuffix`: "
        "the suffix of the source subject URL built from `baseUrl`.",
        aliases=_streamer("schemaprovider.registry.sourceUrlSuffix")[1:]),
    Key("hudi.hoodie.streamer.schemaprovider.registry.targetUrlSuffix", Type.STRING, "Without `urlSuffix`: "
        "the suffix of the target subject URL built from `baseUrl`.",
        aliases=_streamer("schemaprovider.registry.targetUrlSuffix")[1:]),
    Key("hudi.hoodie.streamer.transformer.class", Type.REFUSED, "HoodieStreamer's transformers.",
        reason="ingest applies no transformers: shape records before they reach the topic or files",
        aliases=_streamer("transformer.class")[1:]),
    # -- source -----------------------------------------------------------------------------------
    Key("source.kafka.bootstrap_servers", Type.LIST, "Kafka brokers, `host:port`."),
    Key("source.kafka.topics", Type.LIST, "Topics to read (or `topic_pattern`).",
        aliases=_streamer("source.kafka.topic")),
    Key("source.kafka.topic_pattern", Type.STRING, "A regular expression matched against whole topic names; "
        "new topics and partitions are picked up between batches (or `topics`)."),
    Key("source.kafka.starting_offsets", Type.STRING, "Where a new query starts: `earliest`, `latest`, or "
        "JSON `{\"topic\": {\"0\": 23}}` (-2 earliest, -1 latest). A restarted query resumes from its "
        "checkpoint. Not given, a new query of one topic starts where the table's latest HoodieStreamer "
        "checkpoint of that topic says, else at latest.", default="latest"),
    Key("source.kafka.max_offsets_per_trigger", Type.INTEGER, "At most this many records per batch, shared "
        "among partitions. Unset: everything available.", minimum=1,
        aliases=("hudi.hoodie.streamer.kafka.source.maxEvents", "hudi.hoodie.deltastreamer.kafka.source.maxEvents")),
    Key("source.kafka.fail_on_data_loss", Type.BOOLEAN, "Fail when offsets still to be read are gone "
        "(retention, a deleted topic); false logs and skips them. HoodieStreamer defaults to false.",
        default=True, aliases=_streamer("source.kafka.enable.failOnDataLoss")),
    Key("source.kafka.implementation", Type.CHOICE, "Spark's Kafka connector (`builtin`), ingest's Python "
        "source (`python`), or the connector when its jars are on the classpath (`auto`).", default="auto",
        choices=("auto", "builtin", "python")),
    Key("source.kafka.options", Type.TEXT_MAP, "Kafka client properties, passed as `kafka.<name>` "
        "(`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.location`, `group.id`, "
        "...), checked when the file is read (names and types kafka-python takes for the Python source). "
        "`api.version` (e.g. `2.3`) skips kafka-python's broker version probe: older brokers and librdkafka's "
        "mock cluster need it (else the bootstrap fails, naming this setting). Secret ones are redacted.",
        default={}),
    Key("source.files.path", Type.STRING, "Folder (or glob) of input files, any fsspec/Hadoop URL Spark reads.",
        aliases=_streamer("source.dfs.root")),
    Key("source.files.format", Type.CHOICE, "Input file format.", default="parquet",
        choices=("parquet", "json", "csv", "orc", "avro")),
    Key("source.files.options", Type.TEXT_MAP, "Spark reader options (`header`, `multiLine`, ...).", default={}),
    Key("source.files.max_files_per_trigger", Type.INTEGER, "At most this many files per batch. Unset: all.",
        minimum=1),
    Key("source.format", Type.CHOICE, "Kafka message value encoding: JSON objects, Avro binary, or Confluent's "
        "framed Avro (magic byte and schema id). JSON FLOAT/DOUBLE values may be the bare literals `NaN`, "
        "`Infinity`, `-Infinity` (as Python's json and Jackson's ALLOW_NON_NUMERIC_NUMBERS write them; quoted "
        "\"NaN\" is an error), refused in the ordering and record key fields. `_hoodie_is_deleted: true` deletes "
        "the record whether or not the schema declares the column.", default="json", choices=("json", "avro", "confluent_avro")),
    Key("source.schema", Type.STRING, "Schema of the records as Spark DDL (`order_id STRING NOT NULL, amount "
        "DECIMAL(12,2), ...`); JSON values and files only. Or `schema_file`."),
    Key("source.schema_file", Type.STRING, "Avro schema (.avsc) of the records. A relative path is relative to "
        "the configuration file. Or `schema`.", aliases=_streamer("schemaprovider.source.schema.file")),
    Key("source.schema_files_by_id", Type.ID_MAP, "confluent_avro: the writer schema file registered under each "
        "schema id (ids not listed are bad records).", default={}),
    Key("source.schema_registry.ssl_ca_location", Type.STRING, "Schema registry over TLS: the CA certificate "
        "(PEM file or folder) that signs the registry's certificate (Hudi's `schema.registry.ssl.truststore.*` "
        "are Java key stores).", default_doc="the system's CAs"),
    Key("source.schema_registry.ssl_certificate_location", Type.STRING, "Schema registry over mutual TLS: "
        "this client's certificate (PEM; may hold the key too)."),
    Key("source.schema_registry.ssl_key_location", Type.STRING, "Schema registry over mutual TLS: this "
        "client's private key (PEM)."),
    Key("source.schema_registry.ssl_key_password", Type.STRING, "The password of `ssl_key_location`'s key."),
    Key("source.schema_registry.timeout_seconds", Type.NUMBER, "How long a schema registry request may take "
        "before it counts as the registry not answering.", default=30.0, minimum=0.1),
    Key("source.key_fields", Type.LIST, "Columns that form the record key; tombstones (null values) fill them "
        "from the Kafka key and delete the record.",
        default_doc="the record key fields, when they are all top-level columns"),
    Key("source.key_source", Type.CHOICE, "Where key fields come from: the decoded value, or the Kafka key.",
        default="value", choices=("value", "kafka_key")),
    Key("source.key_format", Type.CHOICE, "How the Kafka key is read: the text of the single key field, or a "
        "JSON object of the key fields.", choices=("string", "json"),
        default_doc="string for one key field, json for several"),
    Key("source.sanitize_field_names", Type.BOOLEAN, "Rename columns and nested fields whose names Avro refuses "
        "(`order-id`, `1x`) as HoodieStreamer does: each bad character becomes `invalid_char_mask`. Off: such "
        "names fail the job before it starts (Hudi's Java readers could not parse the table's schema).",
        default=False, aliases=_streamer("source.sanitize.invalid.schema.field.names")),
    Key("source.invalid_char_mask", Type.STRING, "What replaces each character Avro refuses in a name, with "
        "`sanitize_field_names`.", default="__", pattern=r"[A-Za-z0-9_]+",
        reason="letters, digits and _ (the mask becomes part of Avro names)",
        aliases=_streamer("source.sanitize.invalid.char.mask")),
    # -- write ------------------------------------------------------------------------------------
    Key("write.insert_mode", Type.CHOICE, "New records go to log files (`log`: cheap, compaction makes base "
        "files later; BUCKET only, the one index Hudi's writers use that can find keys in log files) or to base "
        "files (`base`: readers that skip logs see them, and Hudi's SIMPLE, BLOOM, GLOBAL_* and RECORD_INDEX "
        "writers find them).", choices=("log", "base"),
        default_doc="log with BUCKET, base with every other index type"),
    Key("write.nested_field_additions", Type.BOOLEAN, "Accept a field added to a nested record (a struct, or "
        "the structs of a list or map), as Hudi's writer does; Hudi's readers read it as null in the older files. "
        "Off: such a batch fails naming the field, because hudi-rs cannot read the log blocks written before it "
        "until a compaction rewrites them. Hive sync needs `hive.metastore.disallow.incompatible.col.type.changes"
        "=false` in the metastore for it, as Hudi's own sync does.", default=False),
    Key("write.delete_flag_column", Type.STRING, "A boolean column that, when true, makes the record a delete "
        "(besides Hudi's `_hoodie_is_deleted`)."),
    Key("write.file_group_max_bytes", Type.SIZE, "Index other than BUCKET: the size inserts fill small files "
        "and new file groups to.", default_doc="`hoodie.parquet.max.file.size`", minimum=1),
    Key("write.key_index_shards", Type.INTEGER, "Key index (every index type but BUCKET): shards of the "
        "persisted record key index.", default=8, minimum=1),
    Key("write.jvm_timezone", Type.STRING, "Default time zone of the JVMs of Hudi writers sharing the table; "
        "Hudi falls back to it when formatting timestamps without a zone.", default="UTC"),
    Key("write.sync_failures_allowed", Type.INTEGER, "Catalog sync: consecutive failed syncs the job "
        "tolerates (each is retried after the next commit); one more fails the job.", default=3, minimum=0),
    Key("hudi.hoodie.client.heartbeat.interval_in_ms", Type.INTEGER, "How often a writer refreshes the heartbeat "
        "file (`.hoodie/.heartbeat/<instant>`) of the instant it has in flight.", default=60_000, minimum=1000),
    Key("hudi.hoodie.client.heartbeat.tolerable.misses", Type.INTEGER, "Refreshes a writer may miss before its "
        "heartbeat expires and its pending instant may be rolled back (ingest waits as long before rolling "
        "back a Hudi writer's).", default=2, minimum=1),
    Key("write.lock_expiry_seconds", Type.NUMBER, "The writer's lease on the table expires this long after its "
        "last renewal (another writer may then take over). Taking the lease removes temporary files "
        "(`.*.tmp`) untouched for this long: a killed writer's.", default=60.0, minimum=1),
    Key("write.lock_wait_seconds", Type.NUMBER, "Writers of one table (a stream and a backfill, each with its "
        "own checkpoint identifier) take turns, one commit at a time: a commit waits this long for the lease "
        "(and Hudi's lock, with optimistic concurrency control) that another writer's commit holds, then "
        "fails naming the holder.", default=600.0, minimum=0),
    Key("hudi.hoodie.write.concurrency.mode", Type.CHOICE, "`OPTIMISTIC_CONCURRENCY_CONTROL`: Hudi writers "
        "share the table too; ingest then also takes Hudi's lock (`hoodie.write.lock.provider`) for each "
        "commit and leaves pending writes with a live heartbeat alone (failed writes are cleaned LAZY, as Hudi "
        "sets it in this mode).", default="SINGLE_WRITER", choices=("SINGLE_WRITER", "OPTIMISTIC_CONCURRENCY_CONTROL"),
        reason="ingest takes turns with other writers through a lock; non-blocking concurrency is not supported"),
    Key("hudi.hoodie.write.lock.provider", Type.STRING, "Hudi's lock, used with optimistic concurrency control "
        "only (as by Hudi): then it must be `org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider`, "
        "whose lock file ingest takes as that provider does (ZooKeeper, DynamoDB and Hive locks need Java "
        "clients); give the Hudi writers the same settings.", default_doc="none (Hudi: ZookeeperBasedLockProvider)"),
    Key("hudi.hoodie.write.lock.filesystem.path", Type.STRING, "Folder of Hudi's lock file `lock` "
        "(FileSystemBasedLockProvider).", default_doc="the table's `.hoodie` folder"),
    Key("hudi.hoodie.write.lock.filesystem.expire", Type.INTEGER, "Minutes after its last modification when "
        "Hudi's lock file counts as abandoned and may be deleted by the next writer; 0 never (then a crashed "
        "Hudi writer's lock file must be deleted by hand; ingest keeps its own fresh while it holds it).",
        default=0, minimum=0),
    Key("hudi.hoodie.fs.atomic_creation.support", Type.LIST, "Schemes besides file, hdfs, viewfs and hopsfs "
        "whose file create is atomic, so Hudi's file-system lock may live there (Hudi's writers refuse others). "
        "ingest takes the lock only where its own create is exclusive too: a local disk, or S3, GCS or Azure "
        "(s3fs, gcsfs, adlfs 2024.12 or later) listed here; not HDFS, which it reaches through pyarrow."),
    Key("hudi.hoodie.cleaner.policy.failed.writes", Type.CHOICE, "`LAZY`: a pending write is rolled back "
        "only once its heartbeat has expired (other writers may be running it); `EAGER`: before the next "
        "write, and a Hudi writer's with a live heartbeat fails that write. Always `LAZY` under optimistic "
        "concurrency control.", default="EAGER", choices=("EAGER", "LAZY")),
    # -- stream -----------------------------------------------------------------------------------
    Key("stream.checkpoint", Type.STRING, "Spark checkpoint location (offsets and state); a Hadoop URL "
        "(`s3a://`, `file:/`, ...). Required for Kafka sources. One per query: never share it."),
    Key("stream.trigger", Type.TRIGGER, "`available_now` (read what is there, then stop), or the interval "
        "between batches: `30 seconds`, `5 minutes`, `500 ms`. Each batch is one Hudi commit.",
        default="1 minute"),
    Key("stream.on_error", Type.CHOICE, "Records that cannot be written (undecodable, no key, bad partition "
        "value): `quarantine` them and go on, or `fail` the batch naming the first.",
        choices=("quarantine", "fail"), default_doc="quarantine when quarantine.path is set, else fail"),
    # -- quarantine -------------------------------------------------------------------------------
    Key("quarantine.path", Type.STRING, "Where bad records are written (raw key and value, topic, partition, "
        "offset, error), any fsspec URL; it uses table.storage_options."),
    # -- spark ------------------------------------------------------------------------------------
    Key("spark.master", Type.STRING, "Spark master URL. Unset: what spark-submit gives, else `local[2]`."),
    Key("spark.app_name", Type.STRING, "Spark application name.", default_doc="`ingest-` and the table name"),
    Key("spark.conf", Type.TEXT_MAP, "Spark settings (`spark.sql.shuffle.partitions: 8`, "
        "`spark.hadoop.fs.s3a.endpoint: ...`). Secret ones are redacted.", default={}),
)

BY_NAME: Mapping[str, Key] = {k.name: k for k in KEYS}
BY_ALIAS: Mapping[str, Key] = {alias: k for k in KEYS for alias in k.aliases}
SERVICE_KEYS: tuple[Key, ...] = tuple(k for k in KEYS if k.service)


def lookup(name: str) -> Key | None:
    """The key a name means: its own name or one of its aliases."""
    return BY_NAME.get(name) or BY_ALIAS.get(name)


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The most similar candidate, if any is reasonably similar (for "did you mean")."""
    found = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def _edits(a: str, b: str) -> int:
    """Edit distance counting a swap of neighbours as one edit (optimal string alignment)."""
    before, previous = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if before is not None and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        before, previous = previous, current
    return previous[-1]


def misspelt_hudi_key(name: str) -> str | None:
    """The listed Hudi key `name` is at most two edits from: then it is a typo, not another Hudi key.

    No key Hudi defines is that close to a listed one (checked against Hudi's sources), so this
    never refuses a real Hudi setting.
    """
    listed = [n for n in (*BY_NAME, *BY_ALIAS) if n.startswith(HUDI + ".")]
    near = [(d, n) for n in listed if (d := _edits(name, n)) <= 2]
    return min(near)[1] if near else None


# -- values ---------------------------------------------------------------------------------------

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb|kib|mib|gib|tib)?\s*", re.IGNORECASE)
_SIZE_UNITS = {None: 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_INTERVAL = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", re.IGNORECASE)
_INTERVAL_MS = {**dict.fromkeys(("ms", "millisecond", "milliseconds"), 1),
                **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1000),
                **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60_000),
                **dict.fromkeys(("h", "hour", "hours"), 3_600_000)}
_INTERVAL_WORDS = ((3_600_000, "hour"), (60_000, "minute"), (1000, "second"), (1, "millisecond"))
AVAILABLE_NOW = "available_now"


def kind_of(value: Any) -> str:
    """How an error names what it got instead."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "a number" if isinstance(value, (int, float)) else "text"


def to_text(value: Any) -> str:
    """The text form Hudi and Spark take: `true`/`false`, lists comma-joined."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(to_text(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(value: Any, integer: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError
    if isinstance(value, str):
        value = value.strip()
        return int(value) if integer else float(value)
    if integer and isinstance(value, float):
        raise ValueError
    return value


def _bounds(key: Key, number: float) -> None:
    if key.minimum is not None and number < key.minimum:
        raise ValueError(f"must be at least {to_text(key.minimum)}, got {to_text(number)}")
    if key.maximum is not None and number > key.maximum:
        raise ValueError(f"must be at most {to_text(key.maximum)}, got {to_text(number)}")


def trigger_interval_ms(text: str) -> int | None:
    """Milliseconds between batches, or None for `available_now`; ValueError when it is neither."""
    if text.strip().lower() == AVAILABLE_NOW:
        return None
    match = _INTERVAL.fullmatch(text)
    if not match or match.group(2).lower() not in _INTERVAL_MS:
        raise ValueError(f"expected {AVAILABLE_NOW} or an interval such as '30 seconds' or '5 minutes', got {text!r}")
    return round(float(match.group(1)) * _INTERVAL_MS[match.group(2).lower()])


def _interval_text(ms: int) -> str:
    """Spark's processingTime form, in the largest whole unit."""
    unit, word = next((u, w) for u, w in _INTERVAL_WORDS if ms % u == 0 and (ms or u == 1000))
    count = ms // unit
    return f"{count} {word}" + ("" if count == 1 else "s")


def parse(key: Key, value: Any) -> Any:
    """The typed value of `key` from what a file or --set gave; ValueError says what is wrong.

    Text is accepted for every scalar type, since --set, environment variables and Hudi
    properties are text. Messages never repeat the value of a secret key.
    """
    shown = REDACTED if key.secret else to_text(value) if isinstance(value, bool) else repr(value)
    kind = key.type
    if kind is Type.REFUSED:
        raise ValueError(f"is not supported: {key.reason}")
    if kind.is_map:
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a mapping, got {kind_of(value)}")
        return _parse_map(key, value)
    if isinstance(value, (Mapping, list, tuple)) and kind is not Type.LIST:
        raise ValueError(f"expected {kind.value if kind is not Type.CHOICE else 'a value'}, got {kind_of(value)}")
    if kind is Type.STRING:
        if isinstance(value, bool):
            raise ValueError(f"expected text, got {to_text(value)} (quote it)")
        text = value if isinstance(value, str) else to_text(value)
        if key.pattern and not re.fullmatch(key.pattern, text):
            raise ValueError(f"{shown} is not valid: {key.reason}")
        return text
    if kind in (Type.INTEGER, Type.NUMBER):
        try:
            number = _number(value, kind is Type.INTEGER)
        except ValueError:
            raise ValueError(f"expected {'an integer' if kind is Type.INTEGER else 'a number'}, got {shown}") from None
        if not math.isfinite(number):
            raise ValueError(f"expected a finite number, got {shown}")
        _bounds(key, number)
        return number
    if kind is Type.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ValueError(f"expected true or false, got {shown}")
    if kind is Type.CHOICE:
        text = to_text(value).strip()
        for choice in key.choices:  # class names may be given without their package
            if text.lower() in (choice.lower(), choice.rsplit(".", 1)[-1].lower()):
                return choice
        reason = f" ({key.reason})" if key.reason else ""
        raise ValueError(f"{shown} is not one of {', '.join(key.choices)}{reason}")
    if kind is Type.LIST:
        items = value if isinstance(value, (list, tuple)) else to_text(value).split(",")
        if any(isinstance(i, (Mapping, list, tuple, bool)) or i is None for i in items):
            raise ValueError("expected a list of text")
        return tuple(t for t in (to_text(i).strip() for i in items) if t)
    if kind is Type.SIZE:
        match = _SIZE.fullmatch(to_text(value)) if not isinstance(value, bool) else None
        if not match:
            raise ValueError(f"expected a size in bytes such as 134217728, 128MiB or 1 GB, got {shown}")
        number = int(float(match.group(1)) * _SIZE_UNITS[(match.group(2) or "").lower() or None])
        _bounds(key, number)
        return number
    if kind is Type.TRIGGER:
        if not isinstance(value, str):
            raise ValueError(f"expected {AVAILABLE_NOW} or an interval such as '30 seconds', got {shown}")
        ms = trigger_interval_ms(value)
        return AVAILABLE_NOW if ms is None else _interval_text(ms)
    raise AssertionError(kind)


def _parse_map(key: Key, value: Mapping[Any, Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for entry, item in value.items():
        if key.type is Type.ID_MAP:
            try:
                schema_id = _number(entry, integer=True)
            except ValueError:
                raise ValueError(f"entry {entry!r}: schema ids are integers") from None
            if not isinstance(item, str):
                raise ValueError(f"entry {entry}: expected a schema file path, got {kind_of(item)}")
            out[int(schema_id)] = item
            continue
        if not isinstance(entry, str):
            raise ValueError(f"entry {entry!r}: names are text")
        if key.type is Type.TEXT_MAP:
            if isinstance(item, (Mapping, list, tuple)) or item is None:
                raise ValueError(f"entry {entry!r}: expected a value, got {kind_of(item) if item is not None else 'nothing'} "
                                 "(write option names whole: `sasl.jaas.config: ...`)")
            out[entry] = to_text(item)
        else:
            out[entry] = item
    return out


# -- reference ------------------------------------------------------------------------------------


def _default_text(key: Key) -> str:
    if key.default_doc:
        return key.default_doc
    if key.required:
        return "**required**"
    if key.default is None or key.default == {}:
        return "unset"
    return f"`{to_text(key.default)}`"


def _type_text(key: Key) -> str:
    if key.type is Type.CHOICE:
        return "one of " + ", ".join(f"`{c}`" for c in key.choices)
    bounds = [f"≥ {to_text(key.minimum)}" if key.minimum is not None else "",
              f"≤ {to_text(key.maximum)}" if key.maximum is not None else ""]
    return " ".join([key.type.value, ", ".join(b for b in bounds if b)]).strip()


def _row(key: Key) -> str:
    name = key.path[-1] if key.section == HUDI else key.name
    notes = ["*Table service.*"] if key.service else []
    notes.append(key.doc)
    if key.aliases:
        notes.append("Also read from " + ", ".join(f"`{a}`" for a in key.aliases) + ".")
    if key.type is Type.REFUSED:
        notes.append(f"Refused: {key.reason}.")
    secret = "yes" if key.secret else ("by entry name" if key.type in (Type.TEXT_MAP, Type.VALUE_MAP) else "")
    doc = " ".join(notes).replace("|", "\\|")
    return f"| `{name}` | {_type_text(key)} | {_default_text(key)} | {secret} | {doc} |"


_INTRO = """\
# Configuration reference

<!-- Generated from ingest/config/keys.py by `python -m ingest.config.keys docs/configuration.md`;
     edit the registry, not this file (a test checks they agree). -->

A pipeline is one YAML file with up to seven sections. Check one, without starting Spark, with

    ingest validate-config conf/kafka-stream.yaml [--set SECTION.KEY=VALUE ...]

which prints the resolved configuration (defaults filled in, secrets redacted) or one line naming
the file, the key and what is allowed, with exit code 2 (`--no-table-check` skips comparing with
an existing table, for machines that cannot reach the lake). The smallest useful file:

```yaml
table:
  path: s3://lake/orders            # any fsspec URL
  name: orders
hudi:
  hoodie.datasource.write.recordkey.field: order_id
  hoodie.datasource.write.partitionpath.field: region
  hoodie.datasource.write.precombine.field: updated_at
source:
  kafka: {bootstrap_servers: "broker-1:9092", topics: [orders]}
  schema: "order_id STRING NOT NULL, region STRING, amount DECIMAL(12,2), updated_at TIMESTAMP"
stream:
  checkpoint: s3a://lake/_checkpoints/orders
```

`conf/kafka-stream.yaml`, `conf/backfill.yaml` and `conf/demo.yaml` are commented examples.

## Values

- Keys in the file are nested mappings (`source:` / `kafka:` / `topics:`); a key's full name joins
  its path with dots (`source.kafka.topics`). In the `hudi` section keys are Hudi's dotted names,
  written whole (`hoodie.index.type: BUCKET`). A key with no value (`key:` or `null`) is not given.
- Scalars may be given as text too (`"8"`, `"true"`); lists as YAML lists or comma-separated text.
- `${NAME}` is replaced by the environment variable `NAME` and `${NAME:-fallback}` by `fallback`
  when `NAME` is unset or empty; `$$` is a literal `$`. A variable that is unset (with no fallback)
  is an error naming the file and the key. Use it for every secret.
- `--set SECTION.KEY=VALUE` (repeatable) overrides the file: the first segment is the section,
  the rest the key, so `--set hudi.hoodie.index.type=BUCKET`, `--set stream.trigger=available_now`,
  `--set source.kafka.options.security.protocol=SASL_SSL`. Values are text, typed as the key says,
  and may use `${NAME}` too. Precedence: `--set`, then the file, then the defaults below.
- Map keys (`table.storage_options`, `source.kafka.options`, `source.files.options`, `spark.conf`)
  take any entry names; `--set` adds or replaces single entries.

## Validation

Everything is checked before Spark starts, and the first problem is reported as one line,
`<file>: <key>: <what is wrong and what is allowed>`: unknown keys (with the closest valid name),
wrong types, values outside the allowed set, missing required keys, settings that contradict each
other (say a bucket count with a key index, or both `topics` and `topic_pattern`), and settings
that contradict the existing table's `.hoodie/hoodie.properties` (record key, partition fields,
key generator, precombine field, payload, bucket index, names): the line then names that file and
each conflicting key with both values.

## Secrets

A setting is secret when its last name segment is `key` (s3fs's access key id), or when its full
name, map entries included, contains `password`, `passwd`, `secret`, `token`, `credential`,
`jaas`, `private.key`, `account.key`, `access.key` or `connection.string` (with `.`, `_` or `-`
between words) and does not end in `provider`, `type`, `class`, `location`, `path` or `file` (those
point at a secret rather than hold one). Schema registry URLs (`schemaprovider.registry.url`,
`targetUrl`, `baseUrl`) are secret too, as they may carry `user:password@`; messages about the
registry name it without the credentials. Secret values are shown as `<redacted>` in
`validate-config` output, in the configuration's `repr`, in `PipelineConfig.redacted()` (what jobs
record in commit metadata) and in logs; error messages never repeat them. Keep them out of the
file with `${NAME}`.

## Hudi keys

Settings Hudi has a key for are given under that key in the `hudi` section, so HoodieStreamer and
Spark datasource properties carry over. A `hoodie.*` key not listed below:

- is an error when it is at most two edits (a letter added, dropped or changed, two letters
  swapped) from a listed key: a likely typo (`hoodie.datasource.write.hive_style_partitoning`),
  and the listed key is suggested. No key Hudi defines is that close to a listed one;
- is refused when it would change what is written or what the table promises and ingest does not
  honour it (see *Hudi keys ingest refuses* below): the error names the key and what ingest does
  instead; the value that says what ingest does anyway is accepted;
- otherwise is kept, passed on with the other Hudi settings, and reported as a warning naming it
  as unused. Properties files written for Hudi's own writers carry many settings that only matter
  to them (parallelism, caching, marker types, ...); refusing those would make moving over
  needlessly hard, while ignoring them silently would hide a setting someone expects to act.

Some Hudi keys are listed only to refuse values ingest cannot honour (a copy-on-write table type,
the metadata table, a custom index class): ignoring them would change what the table means.
In the `hudi` section keys not starting with `hoodie.` are errors; in the other sections every
unknown key is.

### Hudi keys ingest refuses

Generated from `ingest/config/hudi_keys.py`, where each is classified:

{refused}

These families (but their keys listed in the tables of this page), like every other `hoodie.*` key
not listed here, are kept with a warning:

{irrelevant}

### HoodieStreamer keys

These HoodieStreamer properties (under `hoodie.streamer.` or the older `hoodie.deltastreamer.`)
have a clear equivalent and are read as it; give one spelling only, or the same value in both:

{streamer}

Other HoodieStreamer properties are kept and warned about like any unused Hudi key, except
`transformer.class`, which is refused (see below); the `schemaprovider.registry.*` keys are read as
HoodieStreamer's SchemaRegistryProvider reads them (`source.format: confluent_avro`). Kafka client
properties (`bootstrap.servers`, `security.protocol`, ...) go under `source.kafka`.

### Index types

`hoodie.index.type` chooses how records find their file group:

{index}

BUCKET is Hudi's simple bucket index: Hudi's own writers continue such a table. The key index is a
record-key index ingest persists beside the table (sharded by `write.key_index_shards`); a global
one moves a record whose partition value changes (Hudi's `*.update.partition.path=true`, the
default of GLOBAL_SIMPLE and GLOBAL_BLOOM; RECORD_INDEX defaults to keeping it in place). BUCKET
settings with another index type, and `write.key_index_shards` with BUCKET, are errors.

### Table services

`PipelineConfig.services` hands the table-service keys (marked *table service* below) to
compaction, cleaning and archival (`ingest.hudi.config.service_settings`) with every default filled in.
The defaults are Hudi 0.14/0.15's; in particular compaction is off (`hoodie.compact.inline`), which
a Merge-On-Read table can afford only if another job compacts it. As Hudi requires,
`hoodie.keep.max.commits` must exceed `hoodie.keep.min.commits`, which with KEEP_LATEST_COMMITS
must exceed `hoodie.cleaner.commits.retained`, and `hoodie.compact.inline` and
`hoodie.compact.schedule.inline` cannot both be true.

### Metrics

With `hoodie.metrics.on: true`, the stream and the backfill report every commit as Hudi's writers
do (`HoodieMetrics.updateCommitMetrics`): gauges named `<prefix>.deltacommit.<metric>`, the prefix
being `hoodie.metrics.reporter.metricsname.prefix` or else the table name, dots replaced by `_`.
With `hoodie.metrics.reporter.type: PROMETHEUS` the driver serves them at
`http://<driver>:<hoodie.metrics.prometheus.port>/metrics` with Prometheus's name rules (every `.`
becomes `_`, as Hudi's `DropwizardExports` does): for a table `orders`,

| metric | what it is (per commit, Hudi's definition) |
| --- | --- |
| `orders_deltacommit_totalRecordsWritten` | records written (`numWrites` summed over the write stats) |
| `orders_deltacommit_totalInsertRecordsWritten`, `..._totalUpdateRecordsWritten`, `..._totalRecordsDeleted` | inserts, updates, deletes |
| `orders_deltacommit_totalFilesInsert`, `..._totalFilesUpdate`, `..._totalPartitionsWritten` | new files, appended files, partitions |
| `orders_deltacommit_totalBytesWritten` | bytes written |
| `orders_deltacommit_duration`, `orders_deltacommit_commitTime` | the batch's milliseconds; the instant time in epoch milliseconds |
| `orders_deltacommit_commitLatencyInMs`, `..._commitFreshnessInMs` | only when write stats carry event times, as in Hudi |
| `orders_ingest_quarantinedRecords`, `orders_ingest_staleRecords`, `orders_ingest_missingDeletes` | ingest's own: records set aside, stale versions dropped, deletes of unknown keys |
| `orders_ingest_commits_total` | commits reported since the job started (a counter) |
| `orders_ingest_kafkaLag{topic,partition}` | messages behind each Kafka partition after the last batch |

`CONSOLE` logs the same figures in one line per commit (`metrics: orders.deltacommit.totalRecordsWritten=...`).
With catalog sync on, `orders_ingest_syncConsecutiveFailures` counts the failed syncs since the last
that worked, and `orders_deltastreamer_HiveSyncTool` (or `orders_deltastreamer_AwsGlueCatalogSyncTool`)
is the last sync's milliseconds, as Hudi's streamer reports it (`HoodieStreamerMetrics`).

### Catalog sync

With `hoodie.datasource.meta.sync.enable: true` (or `hoodie.datasource.hive_sync.enable`) the stream
and the backfill register the table after every commit, as Hudi's `HiveSyncTool` and
`AwsGlueCatalogSyncTool` do: a Merge-On-Read table becomes `<table>_ro` (read optimized, base files)
and `<table>_rt` (snapshot), with the latest commit's columns, the partition columns, the Spark data
source properties and `last_commit_time_sync`; partitions written since the last sync are added,
moved ones updated, dropped ones dropped. `hoodie.meta.sync.client.tool.class` picks the catalog:
`org.apache.hudi.hive.HiveSyncTool` (default; a Hive Metastore at
`hoodie.datasource.hive_sync.metastore.uris`, needs `pip install 'ingest[hive]'`) or
`org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool` (AWS Glue, `hoodie.aws.*`, needs
`pip install 'ingest[glue]'`), or both, comma-separated. A sync that fails leaves the commit
committed, is logged naming the catalog, database and table, shows as `sync=failed(N)` in the batch
line, and is retried after the next commit; more than `write.sync_failures_allowed` failures in a
row fail the job. `ingest sync --config FILE` or `ingest sync --path PATH --set KEY=VALUE` syncs on
demand; running it again changes nothing.
"""


def _streamer_table() -> str:
    rows = ["| HoodieStreamer key | Read as |", "| --- | --- |"]
    for key in KEYS:
        if key.type is Type.REFUSED:
            continue
        for alias in key.aliases:
            suffix = alias.removeprefix("hudi.hoodie.streamer.").removeprefix("hudi.hoodie.deltastreamer.")
            if alias.startswith("hudi.hoodie.streamer.") and not suffix.startswith("keygen"):
                rows.append(f"| `hoodie.streamer.{suffix}` | `{key.name}` |")
    return "\n".join(rows)


def _index_table() -> str:
    rows = ["| `hoodie.index.type` | index | scope |", "| --- | --- | --- |"]
    for name, (index, global_scope) in INDEX_TYPES.items():
        rows.append(f"| `{name}` | {index} | {'global' if global_scope else 'per partition'} |")
    return "\n".join(rows)


def reference_markdown() -> str:
    """`docs/configuration.md`: the prose above and a table of every key, section by section."""
    parts = [_INTRO.replace("{streamer}", _streamer_table()).replace("{index}", _index_table())
             .replace("{refused}", _refused_table()).replace("{irrelevant}", _irrelevant_table())]
    for section, about in SECTIONS.items():
        rows = [_row(key) for key in KEYS if key.section == section]
        parts.append(f"## `{section}`\n\n{about}\n\n| Key | Type | Default | Secret | Meaning |\n"
                     "| --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n")
    return "\n".join(parts)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m ingest.config.keys docs/configuration.md")
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write(reference_markdown())
