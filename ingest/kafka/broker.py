"""An embedded Kafka-protocol broker: librdkafka's mock cluster, started through ctypes.

No Kafka distribution is needed for `ingest demo` or the tests: the librdkafka bundled with
confluent-kafka contains a mock cluster that speaks the real wire protocol on loopback. Creating a
Producer with `test.mock.num.brokers` would start one too, but its topics auto-create with a fixed
partition count and CreateTopics fails against it, so the cluster is driven directly through the
library's `rd_kafka_mock_*` functions, where topics get exactly the partitions asked for.

Clients other than librdkafka connect to `bootstrap_servers` as to any broker; kafka-python needs
`api_version=(2, 3)` against it (its version probe does not recognise the mock).
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from ingest.errors import IngestError

_RD_KAFKA_CONSUMER = 1
_RESP_ERR_TOPIC_ALREADY_EXISTS = 36

# kafka-python's `api_version` for the mock cluster (its ApiVersions answer fools the probe).
MOCK_API_VERSION = (2, 3)


class BrokerError(IngestError):
    """The embedded broker could not be started or did not do what was asked."""


def _library_path() -> str:
    """The librdkafka shared library that ships inside the confluent-kafka wheel."""
    try:
        import confluent_kafka
    except ImportError as e:  # pragma: no cover - confluent-kafka is a dependency
        raise BrokerError("the embedded broker needs confluent-kafka (pip install confluent-kafka)") from e
    package_dir = os.path.dirname(os.path.abspath(confluent_kafka.__file__))
    candidates = sorted(glob.glob(os.path.join(package_dir, os.pardir, "confluent_kafka.libs", "librdkafka*.so*")))
    candidates += sorted(glob.glob(os.path.join(package_dir, ".dylibs", "librdkafka*.dylib")))
    if not candidates:
        raise BrokerError(
            f"librdkafka not found next to confluent-kafka ({package_dir}): the embedded broker needs the "
            "confluent-kafka wheel that bundles librdkafka (a source build linked to a system library "
            "does not ship the mock cluster)"
        )
    return os.path.normpath(candidates[0])


def _load_library() -> ctypes.CDLL:
    path = _library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise BrokerError(f"cannot load librdkafka from {path}: {e}") from e
    ptr, cstr, cint = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    signatures = {
        "rd_kafka_conf_new": (ptr, []),
        "rd_kafka_conf_set": (cint, [ptr, cstr, cstr, cstr, ctypes.c_size_t]),
        "rd_kafka_new": (ptr, [cint, ptr, cstr, ctypes.c_size_t]),
        "rd_kafka_destroy": (None, [ptr]),
        "rd_kafka_mock_cluster_new": (ptr, [ptr, cint]),
        "rd_kafka_mock_cluster_bootstraps": (cstr, [ptr]),
        "rd_kafka_mock_cluster_destroy": (None, [ptr]),
        "rd_kafka_mock_topic_create": (cint, [ptr, cstr, cint, cint]),
        "rd_kafka_mock_topic_delete": (cint, [ptr, cstr]),
        "rd_kafka_mock_partition_delete_records": (cint, [ptr, cstr, ctypes.c_int32, ctypes.c_int64]),
        "rd_kafka_err2str": (cstr, [cint]),
    }
    for name, (restype, argtypes) in signatures.items():
        try:
            fn = getattr(lib, name)
        except AttributeError as e:
            raise BrokerError(f"{path} has no {name}: this librdkafka build lacks the mock cluster") from e
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


@dataclass(frozen=True)
class Message:
    """One record to produce. Without a partition, the key picks it (librdkafka's default partitioner)."""

    value: bytes | None
    key: bytes | None = None
    partition: int | None = None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=tuple)
    timestamp_ms: int | None = None


class EmbeddedKafka:
    """A running mock Kafka cluster on loopback; use as a context manager or call `close()`."""

    def __init__(self, brokers: int = 3):
        if brokers < 1:
            raise BrokerError(f"an embedded cluster needs at least one broker, got {brokers}")
        self._lib = _load_library()
        self._handle: int | None = None
        self._cluster: int | None = None
        self._producer = None
        errstr = ctypes.create_string_buffer(512)
        conf = self._lib.rd_kafka_conf_new()
        # The handle only hosts the cluster; quiet its "no bootstrap.servers" notice.
        self._lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))
        handle = self._lib.rd_kafka_new(_RD_KAFKA_CONSUMER, conf, errstr, len(errstr))
        if not handle:
            raise BrokerError(f"librdkafka could not create a client handle: {errstr.value.decode(errors='replace')}")
        self._handle = handle
        cluster = self._lib.rd_kafka_mock_cluster_new(handle, brokers)
        if not cluster:
            self.close()
            raise BrokerError(f"librdkafka could not start a mock cluster of {brokers} brokers")
        self._cluster = cluster
        self.bootstrap_servers: str = self._lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()
        self.brokers = brokers

    def __enter__(self) -> EmbeddedKafka:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._cluster is None else self.bootstrap_servers
        return f"EmbeddedKafka({state})"

    def _require_open(self) -> int:
        if self._cluster is None:
            raise BrokerError("the embedded Kafka cluster is closed")
        return self._cluster

    def _error_text(self, code: int) -> str:
        return self._lib.rd_kafka_err2str(code).decode(errors="replace")

    def create_topic(self, name: str, partitions: int = 1, *, exist_ok: bool = False) -> None:
        """Create `name` with exactly `partitions` partitions (replication factor 1)."""
        cluster = self._require_open()
        if partitions < 1:
            raise BrokerError(f"topic {name!r} needs at least one partition, got {partitions}")
        code = self._lib.rd_kafka_mock_topic_create(cluster, name.encode(), partitions, 1)
        if code == _RESP_ERR_TOPIC_ALREADY_EXISTS and exist_ok:
            return
        if code != 0:
            raise BrokerError(f"cannot create topic {name!r}: {self._error_text(code)}")

    def delete_topic(self, name: str) -> None:
        """Delete a topic and its data, as an administrator would."""
        code = self._lib.rd_kafka_mock_topic_delete(self._require_open(), name.encode())
        if code != 0:
            raise BrokerError(f"cannot delete topic {name!r}: {self._error_text(code)}")

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Drop a partition's records below `before_offset`, as retention would."""
        code = self._lib.rd_kafka_mock_partition_delete_records(
            self._require_open(), topic.encode(), partition, before_offset
        )
        if code != 0:
            raise BrokerError(
                f"cannot delete records of {topic}-{partition} before {before_offset}: {self._error_text(code)}"
            )

    def _get_producer(self):
        if self._producer is None:
            from confluent_kafka import Producer

            self._producer = Producer(
                {
                    "bootstrap.servers": self.bootstrap_servers,
                    # Never create topics by producing: only create_topic decides partition counts.
                    "allow.auto.create.topics": False,
                    "linger.ms": 5,
                    "log_level": 3,
                }
            )
        return self._producer

    def produce(
        self, topic: str, records: Iterable[Message | tuple[bytes | None, bytes | None]], *, flush: bool = True
    ) -> int:
        """Send records (Messages or (key, value) pairs) to `topic`; returns how many were sent.

        With `flush` (the default) this returns once every record is acknowledged, and raises if
        any delivery failed, so a test can consume right after.
        """
        self._require_open()
        producer = self._get_producer()
        metadata = producer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise BrokerError(f"topic {topic!r} does not exist: create it with create_topic first")
        failures: list[str] = []

        def on_delivery(err, msg) -> None:
            if err is not None:
                failures.append(f"{msg.topic()}: {err.str()}")

        count = 0
        for record in records:
            message = record if isinstance(record, Message) else Message(key=record[0], value=record[1])
            kwargs: dict = {"value": message.value, "key": message.key, "on_delivery": on_delivery}
            if message.partition is not None:
                kwargs["partition"] = message.partition
            if message.headers:
                kwargs["headers"] = list(message.headers)
            if message.timestamp_ms is not None:
                kwargs["timestamp"] = message.timestamp_ms
            while True:
                try:
                    producer.produce(topic, **kwargs)
                    break
                except BufferError:  # local queue full: let deliveries drain, then retry
                    producer.poll(0.1)
            count += 1
        if flush:
            self.flush()
            if failures:
                raise BrokerError(f"{len(failures)} of {count} records to {topic!r} failed: {failures[0]}")
        return count

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until every produced record is acknowledged."""
        if self._producer is None:
            return
        remaining = self._producer.flush(timeout_s)
        if remaining:
            raise BrokerError(f"{remaining} records were still unacknowledged after {timeout_s}s")

    def close(self) -> None:
        """Stop the producer, then the cluster; calling it again does nothing."""
        if self._producer is not None:
            producer, self._producer = self._producer, None
            producer.flush(10)
            producer.close()
        if self._cluster is not None:
            cluster, self._cluster = self._cluster, None
            self._lib.rd_kafka_mock_cluster_destroy(cluster)
        if self._handle is not None:
            handle, self._handle = self._handle, None
            self._lib.rd_kafka_destroy(handle)
