"""Reading Kafka from Spark: the built-in connector when it is there, else a Python data source.

`kafka_stream` returns the same columns either way (`key`, `value`, `topic`, `partition`, `offset`,
`timestamp`, `timestampType`, and `headers` with `includeHeaders=true`) and takes Spark's option
names, so a pipeline moves between the two without changes.

The Python source (`ingest_kafka`) keeps offsets the way Spark's own does: a stream offset is the
JSON `{"topic": {"partition": next offset}}`, which Spark writes to the checkpoint's offset log
before a batch runs, so a restarted query replays or resumes exactly from there. The driver only
plans: each batch becomes one input partition per topic-partition range, and executors read their
ranges with kafka-python (`assign` + `seek`) in parallel, handing Spark Arrow batches.

Options (Spark's names):

    kafka.bootstrap.servers   required
    subscribe                 comma-separated topics; or
    subscribePattern          a regex matched against whole topic names (new topics and
                              partitions are picked up between batches); or
    assign                    JSON {"topic": [0, 1]}
    startingOffsets           earliest | latest (default) | JSON {"topic": {"0": 23, "1": -2}}
                              with -2 = earliest, -1 = latest. Only used by a new query; partitions
                              found later always start at earliest.
    maxOffsetsPerTrigger      cap on records per batch, shared fairly among partitions
    failOnDataLoss            true (default): fail when offsets to read are gone (retention,
                              deleted topic, offsets moved back); false: log and skip what is lost
    includeHeaders            true adds `headers` array<struct<key string, value binary>>
    kafkaConsumer.pollTimeoutMs  how long an executor waits without progress (default 120000)

`kafka.*` options go to the client. The Python source maps them to kafka-python's settings:

    kafka.bootstrap.servers              bootstrap_servers
    kafka.security.protocol              security_protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
    kafka.sasl.mechanism                 sasl_mechanism (PLAIN, SCRAM-SHA-256/512, GSSAPI, OAUTHBEARER)
    kafka.sasl.jaas.config               username/password of a PlainLoginModule or ScramLoginModule
                                         -> sasl_plain_username / sasl_plain_password
    kafka.sasl.plain.username/password   sasl_plain_username / sasl_plain_password
    kafka.sasl.kerberos.service.name     sasl_kerberos_service_name
    kafka.ssl.truststore.location        ssl_cafile (PEM only: kafka.ssl.truststore.type=PEM)
    kafka.ssl.keystore.location          ssl_certfile (PEM holding certificate and key)
    kafka.ssl.keystore.password,
    kafka.ssl.key.password               ssl_password
    kafka.ssl.endpoint.identification.algorithm   "" -> ssl_check_hostname=false
    kafka.ssl.cafile/certfile/keyfile/password/crlfile/ciphers/check.hostname   the same ssl_* names
    kafka.api.version                    api_version, e.g. 2.3 (default: probed from the broker)
    kafka.group.id                       group_id: the driver commits each finished batch's end
                                         offsets there, for lag monitoring only (the checkpoint stays
                                         the source of truth; executors never join the group)
    kafka.<other.name>                   the kafka-python setting <other_name> when one exists
                                         (client.id, request.timeout.ms, isolation.level, ...)

Anything else under `kafka.` fails with a ConfigError rather than being silently ignored, as do
the settings the source manages itself (auto.offset.reset, enable.auto.commit, deserializers).
For the built-in connector, `kafka.sasl.plain.username`/`password` become a PLAIN `sasl.jaas.config`
and `kafka.api.version` is dropped; everything else is passed as given.

Trigger.AvailableNow is supported (pyspark >= 4.2 lets Python sources implement it): the source
records every partition's end offset when the query starts and never plans past it, so the query
stops once it has read up to there, in batches of at most maxOffsetsPerTrigger.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ingest.errors import ConfigError, IngestError
from ingest.kafka.client_config import consumer_config, parse_api_version  # noqa: F401 - part of this API

log = logging.getLogger(__name__)

SOURCE_NAME = "ingest_kafka"
KAFKA_PROVIDER_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
EARLIEST = -2
LATEST = -1
DEFAULT_POLL_TIMEOUT_MS = 120_000
ARROW_BATCH_ROWS = 10_000
# How long one poll of an executor's read waits. A poll that finds nothing it can fetch yet (the first,
# before the partition's leader is known) sleeps up to that long in kafka-python 3 (at most
# retry_backoff_ms, 100 ms): with 1000 ms every range, so every Kafka partition of every batch, began
# with 100 ms asleep. Waiting for data that is slow to come is the read loop's (pollTimeoutMs).
POLL_WAIT_MS = 10

# An offset per topic-partition, as Spark's Kafka source writes it: {"topic": {"0": 23}}.
Offsets = dict[str, dict[str, int]]
TopicPartitionKey = tuple[str, int]


class KafkaDataLossError(IngestError):
    """Offsets the stream still had to read are gone (retention, a deleted topic, offsets reset)."""


class KafkaUnreachableError(IngestError):
    """No broker answered the client's bootstrap: one line, with what to check, instead of the client's trace."""

    def __init__(self, servers: Any, waited: float, cause: Exception, last_log: str | None = None):
        shown = servers if isinstance(servers, str) else ",".join(servers or ())
        detail = str(cause) if str(cause).startswith(type(cause).__name__) else f"{type(cause).__name__}: {cause}"
        if last_log:
            detail += f"; last: {last_log}"
        super().__init__(
            f"Kafka bootstrap from {shown} failed after {waited:.1f} s ({detail}): check "
            "source.kafka.bootstrap_servers and that the brokers are reachable from the driver; brokers "
            "kafka-python cannot probe (older brokers, librdkafka's mock cluster) need "
            "source.kafka.options.api.version, e.g. 2.3 (the kafka.api.version option)"
        )


# -- options ------------------------------------------------------------------------------------

_SOURCE_OPTIONS = {
    "subscribe",
    "subscribepattern",
    "assign",
    "startingoffsets",
    "maxoffsetspertrigger",
    "failondataloss",
    "includeheaders",
    "kafkaconsumer.polltimeoutms",
}
# Spark options the Python source does not implement: refusing them beats ignoring them.
_UNSUPPORTED_SOURCE_OPTIONS = {
    "startingoffsetsbytimestamp": "use startingOffsets",
    "startingoffsetsbytimestampstrategy": "use startingOffsets",
    "startingtimestamp": "use startingOffsets",
    "endingoffsets": "streams end through Trigger.AvailableNow",
    "endingoffsetsbytimestamp": "streams end through Trigger.AvailableNow",
    "endingtimestamp": "streams end through Trigger.AvailableNow",
    "minoffsetspertrigger": "only maxOffsetsPerTrigger is supported",
    "maxtriggerdelay": "only maxOffsetsPerTrigger is supported",
    "minpartitions": "the source reads one Spark partition per Kafka partition",
    "maxrecordsperpartition": "the source reads one Spark partition per Kafka partition",
    "groupidprefix": "executors read without a consumer group; set kafka.group.id for lag monitoring",
}


def _bool_option(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name.lower())
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"must be true or false, got {value!r}", key=name)
    return text == "true"


def _positive_int_option(options: Mapping[str, str], name: str) -> int | None:
    value = options.get(name.lower())
    if value is None:
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"must be a positive integer, got {value!r}", key=name) from None
    if number <= 0:
        raise ConfigError(f"must be a positive integer, got {value!r}", key=name)
    return number


@dataclass(frozen=True)
class SourceOptions:
    """The validated options of one Kafka stream (what the driver and executors need)."""

    client: Mapping[str, Any]
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartitionKey, ...] = ()
    starting: str | Offsets = "latest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    group_id: str | None = None

    def subscribes(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        if self.assigned:
            return any(t == topic for t, _ in self.assigned)
        return topic in self.topics


def _parse_starting_offsets(value: str) -> str | Offsets:
    text = value.strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        raise ConfigError(
            'must be earliest, latest or JSON like {"topic": {"0": 23, "1": -2}}', key="startingOffsets"
        ) from None
    if not isinstance(parsed, dict) or not all(isinstance(p, dict) for p in parsed.values()):
        raise ConfigError('JSON must map topics to {"partition": offset}', key="startingOffsets")
    offsets: Offsets = {}
    for topic, partitions in parsed.items():
        offsets[topic] = {}
        for partition, offset in partitions.items():
            if not str(partition).isdigit() or not isinstance(offset, int) or isinstance(offset, bool) or offset < -2:
                raise ConfigError(
                    f"{topic}: partition {partition!r} -> {offset!r}: partitions are numbers and offsets "
                    "are >= 0, or -2 (earliest) / -1 (latest)",
                    key="startingOffsets",
                )
            offsets[topic][str(int(partition))] = offset
    return offsets


def parse_options(options: Mapping[str, str]) -> SourceOptions:
    """Validate a Kafka stream's options; every mistake is a ConfigError naming the option."""
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    for name in lowered:
        if name in _UNSUPPORTED_SOURCE_OPTIONS:
            raise ConfigError(f"is not supported here: {_UNSUPPORTED_SOURCE_OPTIONS[name]}", key=name)
        if not name.startswith("kafka.") and name not in _SOURCE_OPTIONS:
            raise ConfigError(
                "is not an option of the Kafka source (known: kafka.*, subscribe, subscribePattern, assign, "
                "startingOffsets, maxOffsetsPerTrigger, failOnDataLoss, includeHeaders, "
                "kafkaConsumer.pollTimeoutMs)",
                key=name,
            )
    client = consumer_config(options)
    chosen = [n for n in ("subscribe", "subscribepattern", "assign") if lowered.get(n, "").strip()]
    if len(chosen) != 1:
        raise ConfigError("exactly one of subscribe, subscribePattern or assign is required", key="subscribe")
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartitionKey, ...] = ()
    if chosen[0] == "subscribe":
        topics = tuple(t.strip() for t in lowered["subscribe"].split(",") if t.strip())
    elif chosen[0] == "subscribepattern":
        pattern = lowered["subscribepattern"].strip()
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"is not a valid regular expression: {e}", key="subscribePattern") from None
    else:
        try:
            parsed = json.loads(lowered["assign"])
            assigned = tuple(sorted((str(t), int(p)) for t, ps in parsed.items() for p in ps))
        except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
            raise ConfigError('must be JSON like {"topic": [0, 1]}', key="assign") from None
    poll_timeout = _positive_int_option(lowered, "kafkaConsumer.pollTimeoutMs") or DEFAULT_POLL_TIMEOUT_MS
    return SourceOptions(
        client=client,
        topics=topics,
        pattern=pattern,
        assigned=assigned,
        starting=_parse_starting_offsets(lowered.get("startingoffsets", "latest")),
        max_offsets_per_trigger=_positive_int_option(lowered, "maxOffsetsPerTrigger"),
        fail_on_data_loss=_bool_option(lowered, "failOnDataLoss", True),
        include_headers=_bool_option(lowered, "includeHeaders", False),
        poll_timeout_ms=poll_timeout,
        group_id=client.get("group_id"),
    )


# -- schema -------------------------------------------------------------------------------------

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def kafka_schema(include_headers: bool = False) -> StructType:
    """The columns of a Kafka stream, as Spark's connector names and types them."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


# -- offsets ------------------------------------------------------------------------------------


def offsets_json(offsets: Mapping[TopicPartitionKey, int]) -> Offsets:
    """Offsets in Spark's Kafka JSON shape, sorted so equal offsets serialize identically."""
    out: Offsets = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def offsets_from_json(offsets: Mapping[str, Mapping[str, int]] | str) -> dict[TopicPartitionKey, int]:
    if isinstance(offsets, str):
        offsets = json.loads(offsets)
    return {(topic, int(p)): int(o) for topic, parts in offsets.items() for p, o in parts.items()}


def spread_limit(limit: int, available: Mapping[TopicPartitionKey, int]) -> dict[TopicPartitionKey, int]:
    """Share `limit` records among partitions max-min fairly: equal shares, and what a partition
    with less data cannot use goes to the others. Deterministic for the same inputs."""
    taken = {tp: 0 for tp in available}
    left = limit
    open_ = sorted(tp for tp, n in available.items() if n > 0)
    while left > 0 and open_:
        share = max(1, left // len(open_))
        for tp in list(open_):
            if left == 0:
                break
            take = min(share, available[tp] - taken[tp], left)
            taken[tp] += take
            left -= take
            if taken[tp] == available[tp]:
                open_.remove(tp)
    return taken


@dataclass(frozen=True)
class PartitionRange(InputPartition):
    """Offsets [start, end) of one topic-partition: what one Spark task reads."""

    topic: str
    partition: int
    start: int
    end: int


# -- the Kafka metadata the driver needs ---------------------------------------------------------


class _ClientLogKept(logging.Handler):
    """While the driver's consumer bootstraps, kafka-python's retry warnings (a few lines a second)
    are held back; the last one is kept for the one-line error if bootstrapping fails."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last: str | None = None
        self.client_log = logging.getLogger("kafka")

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "failed: " in message and not message.startswith("Bootstrap failed"):  # why a connection failed
            self.last = re.sub(r"\s*\(backoff [^)]*\)$", "", message)

    def __enter__(self) -> _ClientLogKept:
        self.saved = (self.client_log.level, self.client_log.propagate)
        self.client_log.addHandler(self)
        self.client_log.setLevel(logging.WARNING)
        self.client_log.propagate = False
        return self

    def __exit__(self, *exc: object) -> None:
        self.client_log.removeHandler(self)
        self.client_log.level, self.client_log.propagate = self.saved


def _bootstrap(consumer, timeout_s: float) -> None:
    """Wait, at most `timeout_s`, for the consumer's first metadata from the brokers.

    Given `api_version`, kafka-python 3 skips its version probe, so its constructor returns before
    any broker answered; its metadata calls then wait without a bound, retrying every few seconds in
    the log, and a consumer closed while it still connects logs the aborted connection as an error
    with its trace. The metadata is asked for on a thread and waited for here instead: a broker that
    never answers is the one-line `KafkaUnreachableError` after the bootstrap timeout, as without
    `api_version`. (Closed on timeout, the consumer's blocked call is left to its daemon thread.)"""
    from kafka.errors import KafkaTimeoutError

    answered = threading.Event()
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            consumer.topics()
        except BaseException as error:  # handed to the waiting thread
            failed.append(error)
        finally:
            answered.set()

    threading.Thread(target=ask, name="kafka-bootstrap", daemon=True).start()
    if not answered.wait(max(timeout_s, 0.0)):
        consumer.close(autocommit=False)
        raise KafkaTimeoutError(f"no metadata from the brokers in {max(timeout_s, 0.0):.1f} s")
    if failed:
        consumer.close(autocommit=False)
        raise failed[0]


class _Metadata:
    """The driver's view of the cluster through one kafka-python consumer that never joins a group."""

    def __init__(self, options: SourceOptions):
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        config = {k: v for k, v in options.client.items() if k != "group_id"}
        timeout_ms = config.get("bootstrap_timeout_ms", KafkaConsumer.DEFAULT_CONFIG.get("bootstrap_timeout_ms", 30_000))
        began = time.monotonic()
        with _ClientLogKept() as kept:
            try:
                self.consumer = KafkaConsumer(**config, enable_auto_commit=False)
                _bootstrap(self.consumer, timeout_ms / 1000 - (time.monotonic() - began))
            except KafkaError as e:
                raise KafkaUnreachableError(config.get("bootstrap_servers"), time.monotonic() - began, e,
                                            kept.last) from None
        self.options = options

    def partitions(self) -> list[TopicPartitionKey]:
        """The topic-partitions the stream reads now (fresh metadata, so new ones show up)."""
        options = self.options
        topics = self.consumer.topics()
        if options.assigned:
            return sorted(tp for tp in options.assigned if tp[1] in (self.consumer.partitions_for_topic(tp[0]) or ()))
        found: list[TopicPartitionKey] = []
        for topic in topics:
            if options.subscribes(topic):
                found += [(topic, p) for p in self.consumer.partitions_for_topic(topic) or ()]
        return sorted(found)

    def _offsets(self, partitions: Sequence[TopicPartitionKey], which: str) -> dict[TopicPartitionKey, int]:
        from kafka import TopicPartition

        if not partitions:
            return {}
        tps = [TopicPartition(t, p) for t, p in partitions]
        fetched = self.consumer.end_offsets(tps) if which == "end" else self.consumer.beginning_offsets(tps)
        return {(tp.topic, tp.partition): int(o) for tp, o in fetched.items()}

    def latest(self, partitions: Sequence[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        return self._offsets(partitions, "end")

    def earliest(self, partitions: Sequence[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        return self._offsets(partitions, "beginning")

    def close(self) -> None:
        self.consumer.close(autocommit=False)


def subscribed_partitions(options: Mapping[str, str]) -> list[TopicPartitionKey]:
    """The topic-partitions a stream with these options reads now (asked of the cluster)."""
    metadata = _Metadata(parse_options(options))
    try:
        return metadata.partitions()
    finally:
        metadata.close()


def _report_data_loss(options: SourceOptions, message: str) -> None:
    if options.fail_on_data_loss:
        raise KafkaDataLossError(
            f"{message}. Some data may have been lost (retention, or a topic deleted or recreated). "
            "Set source.kafka.fail_on_data_loss: false (the failOnDataLoss=false option) to skip what is lost "
            "and go on."
        )
    log.warning("%s; skipping what is lost because source.kafka.fail_on_data_loss is false", message)


# -- the stream reader --------------------------------------------------------------------------


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans batches on the driver from Kafka metadata; executors read their ranges."""

    def __init__(self, options: SourceOptions, schema: StructType):
        self.options = options
        self.schema = schema
        self._metadata: _Metadata | None = None
        self._group_consumer = None
        self._target: dict[TopicPartitionKey, int] | None = None
        self._latest: dict[TopicPartitionKey, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors get the reader pickled; clients stay behind.
        state = dict(self.__dict__)
        state.update(_metadata=None, _group_consumer=None)
        return state

    @property
    def metadata(self) -> _Metadata:
        if self._metadata is None:
            self._metadata = _Metadata(self.options)
        return self._metadata

    # driver side

    def initialOffset(self) -> Offsets:
        options = self.options
        partitions = self.metadata.partitions()
        if isinstance(options.starting, str):
            which = self.metadata.earliest if options.starting == "earliest" else self.metadata.latest
            return offsets_json(which(partitions))
        specified = offsets_from_json(options.starting)
        unknown = sorted(set(specified) - set(partitions))
        if unknown:
            raise ConfigError(
                f"names partitions the stream does not read or that do not exist: {unknown}", key="startingOffsets"
            )
        missing = sorted(set(partitions) - set(specified))
        if missing:
            raise ConfigError(
                f"must give an offset for every partition of the subscribed topics; missing {missing}",
                key="startingOffsets",
            )
        earliest = self.metadata.earliest([tp for tp, o in specified.items() if o == EARLIEST])
        latest = self.metadata.latest([tp for tp, o in specified.items() if o == LATEST])
        resolved = {tp: earliest.get(tp, latest.get(tp, o)) for tp, o in specified.items()}
        return offsets_json(resolved)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of an available-now run: every partition's end offset right now."""
        self._target = self.metadata.latest(self.metadata.partitions())

    def _starts(
        self, start: Mapping[TopicPartitionKey, int], ends: Mapping[TopicPartitionKey, int]
    ) -> dict[TopicPartitionKey, int]:
        """Where each partition's next range begins; new partitions and reset offsets start at earliest."""
        fresh = [tp for tp, end in ends.items() if tp not in start or start[tp] > end]
        earliest = self.metadata.earliest(fresh)
        starts = {}
        for tp, end in ends.items():
            if tp not in start:
                starts[tp] = min(earliest[tp], end)
                continue
            if start[tp] > end:
                _report_data_loss(
                    self.options, f"{tp[0]}-{tp[1]}: offset went back from {start[tp]} to {end}"
                )
                starts[tp] = min(earliest[tp], end)
                continue
            starts[tp] = start[tp]
        return starts

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        previous = offsets_from_json(start)
        partitions = self.metadata.partitions()
        gone = sorted(set(previous) - set(partitions))
        if gone:
            _report_data_loss(self.options, f"partitions {gone} are no longer in Kafka")
        latest = self.metadata.latest(partitions)
        self._latest = latest
        starts = self._starts(previous, latest)
        ends: dict[TopicPartitionKey, int] = {}
        for tp, end in latest.items():
            if self._target is not None:
                # An available-now run never passes the ends fixed when it began; partitions
                # found since then wait (in place) for the next run.
                if tp not in self._target:
                    if tp in previous:
                        ends[tp] = starts[tp]
                    continue
                end = max(starts[tp], min(end, self._target[tp]))
            ends[tp] = end
        if isinstance(limit, ReadMaxRows):
            granted = spread_limit(limit.max_rows, {tp: ends[tp] - starts[tp] for tp in ends})
            ends = {tp: starts[tp] + granted[tp] for tp in ends}
        return offsets_json(ends)

    def reportLatestOffset(self) -> Offsets | None:
        return offsets_json(self._latest) if self._latest is not None else None

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[PartitionRange]:
        begin = offsets_from_json(start)
        until = offsets_from_json(end)
        starts = self._starts(begin, until)
        readable = [tp for tp in until if until[tp] > starts[tp]]
        earliest = self.metadata.earliest(readable)
        ranges = []
        for tp in readable:
            first = starts[tp]
            if first < earliest[tp]:
                _report_data_loss(
                    self.options,
                    f"{tp[0]}-{tp[1]}: offsets {first}..{earliest[tp] - 1} were deleted before they were read",
                )
                first = min(earliest[tp], until[tp])
            if until[tp] > first:
                ranges.append(PartitionRange(tp[0], tp[1], first, until[tp]))
        return ranges

    def commit(self, end: Offsets) -> None:
        if self.options.group_id is None:
            return
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata

        try:
            if self._group_consumer is None:
                self._group_consumer = KafkaConsumer(**self.options.client, enable_auto_commit=False)
            self._group_consumer.commit(
                {
                    TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                    for (t, p), o in offsets_from_json(end).items()
                }
            )
        except Exception as e:  # lag monitoring must never stop the stream
            log.warning("could not commit offsets to consumer group %s: %s", self.options.group_id, e)

    def stop(self) -> None:
        if self._metadata is not None:
            self._metadata.close()
            self._metadata = None
        if self._group_consumer is not None:
            self._group_consumer.close(autocommit=False)
            self._group_consumer = None

    # executor side

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PartitionRange)
        return read_range(self.options, partition, _arrow_schema(self.schema))


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _to_batch(rows: list, schema: pa.Schema, include_headers: bool) -> pa.RecordBatch:
    columns = [
        pa.array([r.key for r in rows], pa.binary()),
        pa.array([r.value for r in rows], pa.binary()),
        pa.array([r.topic for r in rows], pa.string()),
        pa.array([r.partition for r in rows], pa.int32()),
        pa.array([r.offset for r in rows], pa.int64()),
        pa.array([r.timestamp * 1000 for r in rows], pa.int64()).cast(schema.field("timestamp").type),
        pa.array([r.timestamp_type for r in rows], pa.int32()),
    ]
    if include_headers:
        headers = [[{"key": k, "value": v} for k, v in (r.headers or ())] for r in rows]
        columns.append(pa.array(headers, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def read_range(options: SourceOptions, part: PartitionRange, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Consume exactly offsets [start, end) of one partition (gaps from compaction or transaction
    markers are simply absent) and yield them as Arrow batches."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import OffsetOutOfRangeError

    config = {k: v for k, v in options.client.items() if k != "group_id"}
    consumer = KafkaConsumer(**config, enable_auto_commit=False, auto_offset_reset="none")
    tp = TopicPartition(part.topic, part.partition)
    name = f"{part.topic}-{part.partition}"
    try:
        consumer.assign([tp])
        consumer.seek(tp, part.start)
        rows: list = []
        last_progress = time.monotonic()
        while consumer.position(tp) < part.end:
            try:
                fetched = consumer.poll(timeout_ms=POLL_WAIT_MS, max_records=ARROW_BATCH_ROWS).get(tp, [])
            except OffsetOutOfRangeError:
                earliest = consumer.beginning_offsets([tp])[tp]
                _report_data_loss(options, f"{name}: offset {consumer.position(tp)} is out of range")
                if earliest >= part.end:
                    break
                consumer.seek(tp, max(earliest, part.start))
                continue
            if fetched:
                last_progress = time.monotonic()
            for record in fetched:
                if record.offset >= part.end:
                    break
                rows.append(record)
            if len(rows) >= ARROW_BATCH_ROWS:
                yield _to_batch(rows, schema, options.include_headers)
                rows = []
            if not fetched and time.monotonic() - last_progress > options.poll_timeout_ms / 1000:
                end = consumer.end_offsets([tp])[tp]
                if end < part.end:
                    _report_data_loss(options, f"{name}: the partition now ends at {end}, before {part.end}")
                    break
                raise IngestError(
                    f"{name}: no progress reading offsets {consumer.position(tp)}..{part.end - 1} for "
                    f"{options.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs)"
                )
        if rows:
            yield _to_batch(rows, schema, options.include_headers)
    finally:
        consumer.close(autocommit=False)


class KafkaDataSource(DataSource):
    """The `ingest_kafka` streaming source: Spark's Kafka options, kafka-python underneath."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return kafka_schema(_bool_option({k.lower(): v for k, v in self.options.items()}, "includeHeaders", False))

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(parse_options(self.options), schema)


# -- choosing an implementation ------------------------------------------------------------------


def builtin_kafka_available(spark: SparkSession) -> bool:
    """True when Spark's Kafka connector is on the driver's classpath (e.g. via --packages)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: no JVM to ask, so use the Python source
        return False
    return bool(jvm.org.apache.spark.util.Utils.classIsLoadable(KAFKA_PROVIDER_CLASS))


def builtin_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options for Spark's connector: our simpler SASL settings become a JAAS line."""
    out = {k: str(v) for k, v in options.items() if k.lower() != "kafka.api.version"}
    user_key = next((k for k in out if k.lower() == "kafka.sasl.plain.username"), None)
    password_key = next((k for k in out if k.lower() == "kafka.sasl.plain.password"), None)
    if user_key or password_key:
        if not (user_key and password_key):
            raise ConfigError("needs both kafka.sasl.plain.username and kafka.sasl.plain.password", key="kafka.sasl")
        user = out.pop(user_key).replace('"', '\\"')
        password = out.pop(password_key).replace('"', '\\"')
        mechanism = next((v for k, v in out.items() if k.lower() == "kafka.sasl.mechanism"), "PLAIN").upper()
        module = (
            "org.apache.kafka.common.security.scram.ScramLoginModule"
            if mechanism.startswith("SCRAM")
            else "org.apache.kafka.common.security.plain.PlainLoginModule"
        )
        out["kafka.sasl.jaas.config"] = f'{module} required username="{user}" password="{password}";'
    return out


def native_crc32c() -> bool:
    """Whether kafka-python computes CRC-32C with the `crc32c` extension. It checks every record
    batch's checksum (`check_crcs`, on by default, as in Java's consumer, which Hudi's Kafka sources use
    with that default); in pure Python that check is most of a read's time (docs/performance.md, "The Kafka path")."""
    from kafka.record import util

    return util.crc32c_c is not None


def kafka_stream(spark: SparkSession, options: Mapping[str, str], *, implementation: str = "auto") -> DataFrame:
    """A streaming DataFrame of Kafka records.

    `implementation`: "auto" uses Spark's connector when its classes are present and the Python
    source otherwise; "builtin" or "python" force one.
    """
    if implementation not in ("auto", "builtin", "python"):
        raise ConfigError(f"must be auto, builtin or python, got {implementation!r}", key="implementation")
    use_builtin = implementation == "builtin" or (implementation == "auto" and builtin_kafka_available(spark))
    if use_builtin:
        return spark.readStream.format("kafka").options(**builtin_options(options)).load()
    parsed = parse_options(options)  # fail here, with the option named, rather than inside Spark's planner
    _Metadata(parsed).close()  # and reach the brokers here: inside Spark a failure is also a page of trace
    if not native_crc32c():
        log.warning("kafka-python checks each record batch's CRC-32C in pure Python here, most of the time "
                    "its reads take; install its C implementation on every node: pip install 'kafka-python[crc32c]'")
    spark.dataSource.register(KafkaDataSource)
    return spark.readStream.format(SOURCE_NAME).options(**{k: str(v) for k, v in options.items()}).load()


# -- lag ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionLag:
    """How far a stream is behind one partition's end."""

    topic: str
    partition: int
    processed: int
    end: int

    @property
    def lag(self) -> int:
        return max(0, self.end - self.processed)


def kafka_lag(
    options: Mapping[str, str], processed: Mapping[str, Mapping[str, int]] | str
) -> list[PartitionLag]:
    """Per-partition lag (end offset - processed offset) of a stream.

    `processed` is the stream's offset JSON, e.g. a batch's `endOffset` from
    `query.lastProgress["sources"][0]`. Partitions the stream has not seen yet count from their
    earliest offset.
    """
    metadata = _Metadata(parse_options(options))
    try:
        done = offsets_from_json(processed)
        current = metadata.partitions()
        latest = metadata.latest(current)
        earliest = metadata.earliest([tp for tp in current if tp not in done])
    finally:
        metadata.close()
    return [PartitionLag(t, p, done.get((t, p), earliest.get((t, p), 0)), latest[(t, p)]) for t, p in current]
