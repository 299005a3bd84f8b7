"""`ingest demo`: a whole pipeline on one machine, with nothing to install or run beforehand.

An embedded Kafka-protocol broker (librdkafka's mock cluster) gets a 3-partition `orders` topic and
a short story of order events: new orders, updates (one of them twice in a row), two deletes sent as
tombstones, an update that arrives late (older than what the table holds, so it changes nothing),
and one malformed message. The stream then reads it all (available-now, a few messages per batch,
so there are several commits and a compaction) into a table under the demo folder, configured by
`conf/demo.yaml`, and the caller shows the table and the quarantine. With `sync`, an embedded Hive
Metastore (`ingest.catalog.embedded_metastore`) is started in the folder, the stream syncs the table
to it after every commit, and what it holds is returned for showing.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ingest.config.loader import load_config
from ingest.config.pipeline import PipelineConfig
from ingest.errors import IngestError
from ingest.kafka.broker import MOCK_API_VERSION, EmbeddedKafka, Message

log = logging.getLogger(__name__)

TOPIC = "orders"
PARTITIONS = 3
MESSAGES_PER_BATCH = 6
START = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
CONFIG_FILE = Path(__file__).resolve().parents[2] / "conf" / "demo.yaml"

# Used when ingest is installed without its repository's conf/ folder; the same settings as
# conf/demo.yaml (a test checks they resolve alike).
BUILTIN_CONFIG = """\
table: {path: /tmp/ingest-demo/lake/orders, name: orders}
hudi:
  hoodie.datasource.write.recordkey.field: order_id
  hoodie.datasource.write.partitionpath.field: region
  hoodie.datasource.write.precombine.field: updated_at
  hoodie.datasource.write.hive_style_partitioning: true
  hoodie.index.type: BUCKET
  hoodie.bucket.index.num.buckets: 2
  hoodie.compact.inline: true
  hoodie.compact.inline.max.delta.commits: 3
source:
  kafka:
    bootstrap_servers: ${DEMO_BOOTSTRAP_SERVERS:-localhost:9092}
    topics: [orders]
    starting_offsets: earliest
  format: json
  schema: >-
    order_id STRING NOT NULL, region STRING NOT NULL, amount DECIMAL(12,2), updated_at TIMESTAMP NOT NULL
stream:
  checkpoint: /tmp/ingest-demo/checkpoints/orders
  trigger: 5 seconds
quarantine:
  path: /tmp/ingest-demo/quarantine/orders
spark:
  master: local[2]
  conf:
    spark.sql.shuffle.partitions: 2
"""


def _order(order_id: str, region: str, amount: str, minutes: int) -> Message:
    value = {"order_id": order_id, "region": region, "amount": amount,
             "updated_at": (START + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")}
    return Message(key=order_id.encode(), value=json.dumps(value).encode())


def _tombstone(order_id: str) -> Message:
    return Message(key=order_id.encode(), value=None)


def events() -> list[tuple[Message, str]]:
    """The demo's messages, in the order they are sent, each with what it shows."""
    out = [(_order(f"o-{1000 + i}", region, amount, i), "a new order")
           for i, (region, amount) in enumerate([
               ("emea", "120.00"), ("amer", "75.50"), ("apac", "210.00"), ("emea", "18.99"),
               ("amer", "640.00"), ("apac", "33.10"), ("emea", "99.00"), ("amer", "12.00"),
               ("apac", "450.25"), ("emea", "5.00"),
           ], start=1)]
    out += [
        (_order("o-1001", "emea", "135.00", 20), "an update: the amount changed"),
        (_order("o-1005", "amer", "600.00", 21), "an update"),
        (_order("o-1005", "amer", "590.00", 22), "another update right after (the later one wins)"),
        (_tombstone("o-1003"), "a delete: a tombstone (null value) for the key"),
        (_order("o-1011", "apac", "77.70", 23), "a new order"),
        (Message(key=b"o-1012", value=b'{"order_id": "o-1012", "region": "emea", "amount": 3'),
         "a malformed message: truncated JSON"),
        (_order("o-1009", "apac", "460.00", 24), "an update"),
        (_tombstone("o-1008"), "a delete"),
        (_order("o-1001", "emea", "128.00", 15), "a late update: older than the table's version, so ignored"),
        (_order("o-1012", "emea", "31.00", 25), "a new order (its first attempt was malformed)"),
    ]
    return out


@dataclass(frozen=True)
class RegisteredTable:
    """A table as the demo's metastore holds it."""

    name: str
    columns: int
    partitions: tuple[str, ...]         # as `field=value/...`


@dataclass(frozen=True)
class DemoRun:
    folder: Path
    config: PipelineConfig
    messages: int
    bootstrap_servers: str
    metastore_uri: str | None = None
    registered: tuple[RegisteredTable, ...] = ()


def sync_overrides(uri: str) -> list[str]:
    return ["hudi.hoodie.datasource.meta.sync.enable=true", f"hudi.hoodie.datasource.hive_sync.metastore.uris={uri}"]


def registered_tables(uri: str, config: PipelineConfig) -> tuple[RegisteredTable, ...]:
    from ingest.catalog.hms import HiveMetastore

    settings = config.catalog
    client = HiveMetastore(uri)
    try:
        out = []
        for name in client.table_names(settings.database):
            table = client.get_table(settings.database, name)
            specs = sorted("/".join(f"{f}={v}" for f, v in zip(settings.partition_fields, values, strict=True))
                           for values in client.partitions(settings.database, name))
            out.append(RegisteredTable(name, len(table.columns), tuple(specs)))
        return tuple(out)
    finally:
        client.close()


def config_text() -> tuple[str, str]:
    """The demo configuration (text, and where it came from)."""
    if CONFIG_FILE.is_file():
        return CONFIG_FILE.read_text(), str(CONFIG_FILE)
    return BUILTIN_CONFIG, "the built-in copy of conf/demo.yaml"


def demo_overrides(folder: Path, messages_per_batch: int = MESSAGES_PER_BATCH) -> list[str]:
    """What the demo changes in conf/demo.yaml: paths under its folder, and a short available-now run."""
    return [
        f"table.path={folder / 'lake' / 'orders'}",
        f"stream.checkpoint={folder / 'checkpoints' / 'orders'}",
        f"quarantine.path={folder / 'quarantine' / 'orders'}",
        "stream.trigger=available_now",
        f"source.kafka.max_offsets_per_trigger={messages_per_batch}",
        # kafka-python cannot probe the embedded broker's version: tell it.
        f"source.kafka.options.api.version={'.'.join(map(str, MOCK_API_VERSION))}",
    ]


def prepare_folder(folder: str | os.PathLike[str] | None) -> Path:
    if folder is None:
        return Path(tempfile.mkdtemp(prefix="ingest-demo-"))
    path = Path(folder).resolve()
    if path.exists() and any(path.iterdir()):
        raise IngestError(f"{path} is not empty: the demo writes a new table, checkpoint and quarantine there "
                          "(give an empty or new folder)")
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_demo(folder: str | os.PathLike[str] | None = None, sync: bool = False) -> DemoRun:
    """Start the broker, send the events, stream them into a table under `folder` (a new temp folder
    by default); returns where everything is. With `sync`, through an embedded Hive Metastore too."""
    where = prepare_folder(folder)
    if not sync:
        return _stream_demo(where, [])
    from ingest.catalog.embedded_metastore import start_metastore

    log.info("starting an embedded Hive Metastore in %s", where / "metastore")
    with start_metastore(where / "metastore") as metastore:
        log.info("embedded Hive Metastore at %s", metastore.uri)
        run = _stream_demo(where, sync_overrides(metastore.uri))
        return dataclasses.replace(run, metastore_uri=metastore.uri,
                                   registered=registered_tables(metastore.uri, run.config))


def _stream_demo(where: Path, extra: list[str]) -> DemoRun:
    from ingest.pipeline.stream import stream

    text, origin = config_text()
    config_path = where / "demo.yaml"
    config_path.write_text(text)
    with EmbeddedKafka(brokers=1) as broker:
        broker.create_topic(TOPIC, PARTITIONS)
        sent = broker.produce(TOPIC, [m for m, _ in events()])
        log.info("embedded Kafka at %s: sent %d messages to %s (%d partitions)", broker.bootstrap_servers, sent,
                 TOPIC, PARTITIONS)
        env = {**os.environ, "DEMO_BOOTSTRAP_SERVERS": broker.bootstrap_servers}
        config = load_config(config_path, demo_overrides(where) + extra, env=env)
        log.info("streaming with %s into %s", origin, config.table.path)
        stream(config, available_now=True)
        return DemoRun(where, config, sent, broker.bootstrap_servers)
