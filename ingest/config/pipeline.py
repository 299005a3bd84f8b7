"""The resolved pipeline configuration: typed, immutable, and safe to print.

`ingest.config.loader.load_config` builds a `PipelineConfig` once everything is checked; jobs only
read it: `write` is the writer's `WriteOptions`, `source.kafka.spark_options()` what `kafka_stream`
takes, `source.decoder` the Kafka value decoder, `services` the Hudi keys compaction, cleaning and
archival take. Secret values stay usable where they are needed but print as `<redacted>`: in
`repr`, in `redacted()` (what jobs record in commit metadata) and in `validate-config` output.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import pyarrow as pa

from ingest.catalog.settings import SyncSettings
from ingest.config.keys import HUDI, REDACTED, Secret, is_secret, lookup, to_text
from ingest.kafka.spec import DecoderSpec
from ingest.write.options import WriteOptions


class Settings(Mapping[str, Any]):
    """A read-only mapping that pickles (executors receive configs) and never prints secrets."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any] | None = None):
        self._items = dict(items or {})

    def __getitem__(self, name: str) -> Any:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __reduce__(self):
        return (Settings, (self._items,))

    def __repr__(self) -> str:
        shown = {name: REDACTED if is_secret(str(name)) else value for name, value in self._items.items()}
        return f"Settings({shown!r})"


@dataclass(frozen=True)
class TableSettings:
    path: str
    name: str
    database: str = "default"
    storage_options: Settings = field(default_factory=Settings)


@dataclass(frozen=True)
class KafkaInput:
    """A Kafka stream; `client_options` are Kafka client properties without the `kafka.` prefix."""

    bootstrap_servers: tuple[str, ...]
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    starting_offsets: str | None = None  # None: not given; latest, or where Hudi's streamer stopped
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    implementation: str = "auto"
    client_options: Settings = field(default_factory=Settings)

    def spark_options(self) -> dict[str, str]:
        """The options `ingest.spark.kafka_source.kafka_stream` (and Spark's connector) take."""
        options = {"kafka.bootstrap.servers": ",".join(self.bootstrap_servers)}
        if self.topic_pattern is not None:
            options["subscribePattern"] = self.topic_pattern
        else:
            options["subscribe"] = ",".join(self.topics)
        options["startingOffsets"] = self.starting_offsets or "latest"
        if self.max_offsets_per_trigger is not None:
            options["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        options["failOnDataLoss"] = to_text(self.fail_on_data_loss)
        options.update({f"kafka.{name}": value for name, value in self.client_options.items()})
        return options


@dataclass(frozen=True)
class FileInput:
    """A backfill's input files; `schema` is None when the files carry theirs (parquet, orc, avro)."""

    path: str
    format: str = "parquet"
    schema: pa.Schema | None = None
    options: Settings = field(default_factory=Settings)
    max_files_per_trigger: int | None = None

    def spark_options(self) -> dict[str, str]:
        options = dict(self.options)
        if self.max_files_per_trigger is not None:
            options["maxFilesPerTrigger"] = str(self.max_files_per_trigger)
        return options


@dataclass(frozen=True)
class SourceConfig:
    """Exactly one of `kafka` (with its `decoder`) or `files`."""

    kafka: KafkaInput | None = None
    decoder: DecoderSpec | None = None
    files: FileInput | None = None


@dataclass(frozen=True)
class Trigger:
    """`interval` in Spark's processingTime form (`30 seconds`), or None to read what is there and stop."""

    interval: str | None = None

    @property
    def available_now(self) -> bool:
        return self.interval is None

    def spark_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `DataStreamWriter.trigger`."""
        return {"availableNow": True} if self.interval is None else {"processingTime": self.interval}


class OnError(str, Enum):
    QUARANTINE = "quarantine"
    FAIL = "fail"


@dataclass(frozen=True)
class StreamSettings:
    checkpoint: str | None
    trigger: Trigger
    on_error: OnError


@dataclass(frozen=True)
class QuarantineSettings:
    path: str | None = None


@dataclass(frozen=True)
class MetricsSettings:
    """`hoodie.metrics.*`: per-commit metrics as Hudi's HoodieMetrics reports them."""

    on: bool = False
    reporter_type: str = "PROMETHEUS"
    prometheus_port: int = 9090
    prefix: str | None = None           # None: the table name, as Hudi infers it


@dataclass(frozen=True)
class SparkSettings:
    app_name: str
    master: str | None = None
    conf: Settings = field(default_factory=Settings)


def _plain(name: str, value: Any) -> Any:
    """A value as YAML/JSON shows it, secrets replaced (by name, or because they were marked)."""
    if isinstance(value, Secret) or (is_secret(name) and not isinstance(value, Mapping)):
        return REDACTED
    if isinstance(value, Mapping):
        return {entry: _plain(f"{name}.{entry}", item) for entry, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(name, item) for item in value]
    return value


@dataclass(frozen=True, repr=False)
class PipelineConfig:
    """A checked pipeline configuration. `settings` holds every resolved key by full name."""

    origin: str
    table: TableSettings
    hudi: Settings
    write: WriteOptions
    source: SourceConfig
    quarantine: QuarantineSettings
    stream: StreamSettings
    services: Settings
    spark: SparkSettings
    settings: Settings
    warnings: tuple[str, ...] = ()
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    catalog: SyncSettings | None = None

    def redacted(self) -> dict[str, Any]:
        """Every resolved setting, nested as in the file, secrets as `<redacted>`; JSON-ready."""
        out: dict[str, Any] = {}
        for name, value in self.settings.items():
            key = lookup(name)
            path = key.path if key else (HUDI, name[len(HUDI) + 1 :])
            node = out
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = _plain(name, value)
        return out

    def __repr__(self) -> str:
        return f"PipelineConfig({self.origin!r}, {self.redacted()!r})"
