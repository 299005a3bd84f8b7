"""Confluent Schema Registry over HTTP: confluent_avro values decoded with the writer schema of their
schema id, the table's schema from the subject's latest version, as HoodieStreamer does it.

The registry is tests/schema_registry_server.py on loopback; producers serialize with confluent_kafka's
AvroSerializer against it and produce to the embedded broker.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from kafka_fixtures import broker, consume_all, topic_name  # noqa: F401  (broker is a fixture)
from schema_registry_server import SchemaRegistryServer

from ingest.config.loader import load_config
from ingest.errors import ConfigError
from ingest.kafka import registry
from ingest.kafka.columns import TIMESTAMP_TYPE
from ingest.kafka.decode import decode_batch
from ingest.kafka.registry import RegistrySettings, RegistryUnavailable, SubjectVersion, subject_urls
from ingest.kafka.spec import decoder_spec, refreshed

USERS = {"ingest": "s3cr3t-pw"}
V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "part", "type": "string"},
    {"name": "ts", "type": "long"},
]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "note", "type": ["null", "string"], "default": None}]}


@pytest.fixture
def server():
    with SchemaRegistryServer(users=USERS) as running:
        yield running


def serializer(server: SchemaRegistryServer, schema: dict) -> AvroSerializer:
    return AvroSerializer(SchemaRegistryClient({"url": server.url("ingest")}), json.dumps(schema))


def produce_value(ser: AvroSerializer, topic: str, record: dict) -> bytes:
    return ser(record, SerializationContext(topic, MessageField.VALUE))


def kafka_rows(values: list[bytes], topic: str = "orders") -> pa.Table:
    n = len(values)
    return pa.table({"key": pa.array([None] * n, pa.binary()), "value": values, "topic": [topic] * n,
                     "partition": pa.array([0] * n, pa.int32()), "offset": pa.array(range(n), pa.int64()),
                     "timestamp": pa.array([None] * n, TIMESTAMP_TYPE)})


def settings(server: SchemaRegistryServer, subject: str, user: str | None = "ingest") -> RegistrySettings:
    where = SubjectVersion.parse(f"{server.url(user)}/subjects/{subject}/versions/latest", registry.URL_KEY)
    return RegistrySettings(source=where, target=where, timeout_seconds=5)


# -- decoding against the registry ---------------------------------------------------------------------


def test_writer_schemas_come_from_the_registry_once_per_process_and_unknown_ids_are_bad_records(server):
    """org.apache.hudi.utilities.deser.KafkaAvroSchemaDeserializer.deserialize: the writer schema is the
    one the registry holds for the message's schema id, the reader schema the provider's source schema
    (SchemaRegistryProvider.getSourceSchema); Confluent's deserializer caches schemas by id."""
    topic = "orders"
    v1 = produce_value(serializer(server, V1), topic, {"id": "a", "part": "p", "ts": 1})
    v2 = produce_value(serializer(server, V2), topic, {"id": "b", "part": "p", "ts": 2, "note": "hello"})
    unknown = b"\x00\x00\x00\x00\x63" + v1[5:]            # schema id 99: never registered
    spec = decoder_spec("confluent-avro", registry=settings(server, f"{topic}-value"), key_fields=["id"])
    assert spec.schema.names == ["id", "part", "ts", "note"], "the latest version (v2) is the reader schema"

    decoded = decode_batch(kafka_rows([v1, v2, unknown]), spec)
    assert [(r["id"], r["note"]) for r in decoded.records.to_pylist()] == [("a", None), ("b", "hello")]
    assert decoded.errors.column("offset").to_pylist() == [2]
    assert decoded.errors.column("error").to_pylist() == [
        f"schema id 99 is not registered in the schema registry at http://127.0.0.1:{server.port}"]

    # A later batch's spec, unpickled in the executor, with its own client: the cache is by registry and id.
    again = pickle.loads(pickle.dumps(dataclasses.replace(spec, registry=dataclasses.replace(spec.registry,
                                                                                           timeout_seconds=6))))
    decode_batch(kafka_rows([v1, v2]), again)
    assert server.requests["GET /schemas/ids/1"] == 1 and server.requests["GET /schemas/ids/2"] == 1, \
        "each id is asked for once per process"


def test_a_registry_that_does_not_answer_fails_the_decode_naming_the_url_without_credentials(server):
    """SchemaRegistryProvider.fetchSchemaFromRegistry: credentials written in the URL
    (`https://user:pass@host`) are sent as a basic Authorization header; a failed fetch is an error
    (HoodieSchemaFetchException), never a record set aside."""
    value = produce_value(serializer(server, V1), "orders", {"id": "a", "part": "p", "ts": 1})
    spec = decoder_spec("confluent-avro", registry=settings(server, "orders-value"), key_fields=["id"])

    anonymous = RegistrySettings(source=settings(server, "orders-value", None).source,
                                 target=settings(server, "orders-value", None).target, timeout_seconds=5)
    with pytest.raises(RegistryUnavailable, match=rf"http://127.0.0.1:{server.port}/subjects/orders-value/"
                                                  r"versions/latest did not answer: .*Unauthorized"):
        decoder_spec("confluent-avro", registry=anonymous, key_fields=["id"])

    registry._WRITER_SCHEMAS.clear()  # a fresh process: nothing cached yet
    server.stop()
    with pytest.raises(RegistryUnavailable) as failure:
        decode_batch(kafka_rows([value]), spec)
    message = str(failure.value)
    assert f"schema registry http://127.0.0.1:{server.port}/schemas/ids/1 did not answer" in message
    assert USERS["ingest"] not in message and USERS["ingest"] not in repr(spec)
    with pytest.raises(RegistryUnavailable, match="/subjects/orders-value/versions/latest did not answer"):
        refreshed(spec)


def test_a_registry_over_tls_is_trusted_through_the_configured_ca(tmp_path):
    """SchemaRegistryProvider.setUpSSLStores: with trust material configured, the registry's
    certificate is checked against it (Hudi takes Java key stores; here the PEM CA of
    source.schema_registry.ssl_ca_location); without it, a self-signed registry is refused."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificate")
    cert, key = tmp_path / "registry.pem", tmp_path / "registry.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    with SchemaRegistryServer(users=USERS, tls=(str(cert), str(key))) as server:
        server.register("orders-value", json.dumps(V1))
        where = settings(server, "orders-value").source
        trusted = RegistrySettings(source=where, target=where, ssl_ca_location=str(cert), timeout_seconds=5)
        assert decoder_spec("confluent-avro", registry=trusted, key_fields=["id"]).schema.names == ["id", "part", "ts"]
        with pytest.raises(RegistryUnavailable, match=r"https://127.0.0.1:\d+/subjects/orders-value/versions/latest "
                                                      r"did not answer: .*CERTIFICATE_VERIFY_FAILED"):
            decoder_spec("confluent-avro", registry=RegistrySettings(source=where, target=where, timeout_seconds=5),
                         key_fields=["id"])


def test_subject_urls_from_a_base_url_and_suffixes():
    """HoodieMultiTableStreamer.populateSourceRegistryProp / populateTargetRegistryProp: without
    registry.url (targetUrl), the URL is baseUrl + topic + urlSuffix, else + sourceUrlSuffix
    (targetUrlSuffix); SchemaRegistryProvider: the target URL defaults to the source URL."""
    base = "http://r:8081/subjects/"
    assert subject_urls(None, None, base, ("orders",), ("-value/versions/latest", None, None)) == (
        f"{base}orders-value/versions/latest", f"{base}orders-value/versions/latest")
    assert subject_urls(None, None, base, ("orders",), (None, "-value/versions/latest", "-t/versions/2")) == (
        f"{base}orders-value/versions/latest", f"{base}orders-t/versions/2")
    assert subject_urls("http://r/subjects/a/versions/1", None, None, (), (None, None, None)) == (
        "http://r/subjects/a/versions/1", "http://r/subjects/a/versions/1")
    assert subject_urls(None, None, None, ("orders",), (None, None, None)) is None
    with pytest.raises(ConfigError, match="exactly one topic"):
        subject_urls(None, None, base, ("a", "b"), ("-value/versions/latest", None, None))
    with pytest.raises(ConfigError, match="not a schema registry subject version URL"):
        SubjectVersion.parse("http://u:pw@r:8081/orders", registry.URL_KEY)


def test_the_configuration_reads_hudis_registry_keys_and_never_shows_the_credentials(server, tmp_path):
    """HoodieSchemaProviderConfig: SCHEMA_REGISTRY_BASE_URL + topic + SCHEMA_REGISTRY_URL_SUFFIX
    (HoodieMultiTableStreamer.populateSourceRegistryProp) when SRC_SCHEMA_REGISTRY_URL is unset;
    SchemaRegistryProvider.Config: TLS key material has a password that is a secret."""
    serializer(server, V1)({"id": "a", "part": "p", "ts": 1}, SerializationContext("orders", MessageField.VALUE))
    path = write_config(tmp_path, "127.0.0.1:9", "orders", url=None)
    raw = yaml.safe_load(path.read_text())
    raw["hudi"]["hoodie.streamer.schemaprovider.registry.baseUrl"] = f"{server.url('ingest')}/subjects/"
    raw["hudi"]["hoodie.streamer.schemaprovider.registry.urlSuffix"] = "-value/versions/latest"
    path.write_text(yaml.safe_dump(raw))
    config = load_config(path, check_table=False)
    spec = config.source.decoder
    assert spec.registry.source.shown == f"http://127.0.0.1:{server.port}/subjects/orders-value/versions/latest"
    assert spec.registry.target == spec.registry.source and spec.registry.timeout_seconds == 5
    assert spec.schema.names == ["id", "part", "ts"]
    shown = json.dumps(config.redacted(), default=str) + repr(config)
    assert USERS["ingest"] not in shown and "<redacted>" in shown

    with pytest.raises(ConfigError, match=r"source.schema_registry.ssl_key_password: needs "
                                          r"source.schema_registry.ssl_certificate_location"):
        load_config(path, ["source.schema_registry.ssl_key_password=pw"], check_table=False)
    with pytest.raises(ConfigError, match=r"source.schema_file: contradicts the schema registry"):
        load_config(path, ["source.schema_file=orders.avsc"], check_table=False)


# -- the stream -----------------------------------------------------------------------------------------


def write_config(folder: Path, bootstrap: str, topic: str, url: str | None) -> Path:
    config = {
        "table": {"path": str(folder / "table"), "name": "orders"},
        "hudi": {
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 1,
            **({"hoodie.deltastreamer.schemaprovider.registry.url": url} if url else {}),
        },
        "source": {
            "kafka": {"bootstrap_servers": bootstrap, "topics": [topic], "starting_offsets": "earliest",
                      "options": {"api.version": "2.3"}},
            "format": "confluent_avro",
            "schema_registry": {"timeout_seconds": 5},
        },
        "stream": {"checkpoint": str(folder / "checkpoint"), "trigger": "1 second"},
        "quarantine": {"path": str(folder / "quarantine")},
        "spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": 2}},
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def table_rows(table: Path) -> list[dict]:
    from ingest.hudi.table.snapshot import read_snapshot
    from ingest.hudi.table.table import HudiTable

    return sorted(read_snapshot(HudiTable.open(str(table))).to_pylist(), key=lambda r: r["id"])


@pytest.mark.slow
def test_a_stream_follows_the_subject_quarantines_unknown_ids_and_waits_out_a_registry_outage(
        spark, broker, server, tmp_path):  # noqa: F811
    """SchemaRegistryProvider.refresh (called each StreamSync.syncOnce): the source and target schemas
    are fetched again every round, so a version adding a nullable field becomes a new table column
    (old rows read null); getSourceSchema throws HoodieSchemaFetchException when the registry does not
    answer, failing the round without writing (the Kafka offsets are read again on restart)."""
    import hudi

    from ingest.hudi.table.table import HudiTable
    from ingest.hudi.timeline.instant import Action
    from ingest.pipeline.stream import stream
    from ingest.storage import Storage
    from ingest.write import quarantine

    topic = topic_name("orders")
    broker.create_topic(topic, 1)
    v1, v2 = serializer(server, V1), serializer(server, V2)
    broker.produce(topic, [(b"a", produce_value(v1, topic, {"id": "a", "part": "p", "ts": 1})),
                           (b"b", produce_value(v1, topic, {"id": "b", "part": "p", "ts": 2}))])
    url = f"{server.url('ingest')}/subjects/{topic}-value/versions/latest"
    config = load_config(write_config(tmp_path, broker.bootstrap_servers, topic, url))
    assert USERS["ingest"] not in json.dumps(config.redacted(), default=str)
    table = tmp_path / "table"

    stream(config, available_now=True, spark=spark)
    assert [(r["id"], r["ts"]) for r in table_rows(table)] == [("a", 1), ("b", 2)]

    # v2 adds a nullable field; one message carries an id the registry never gave out.
    unknown = b"\x00\x00\x00\x00\x63" + produce_value(v1, topic, {"id": "x", "part": "p", "ts": 9})[5:]
    broker.produce(topic, [(b"c", produce_value(v2, topic, {"id": "c", "part": "p", "ts": 3, "note": "new"})),
                           (b"x", unknown)])
    stream(config, available_now=True, spark=spark)
    rows = table_rows(table)
    assert [(r["id"], r["note"]) for r in rows] == [("a", None), ("b", None), ("c", "new")]
    read = sorted((r["id"], r["note"]) for batch in hudi.HudiTableBuilder.from_base_uri(str(table)).build().read()
                  for r in batch.to_pylist())
    assert read == [("a", None), ("b", None), ("c", "new")], "hudi-rs reads the new column, null in old rows"
    bad = quarantine.read_all(Storage(str(tmp_path / "quarantine"))).to_pylist()
    assert [(r["_kafka_partition"], r["_kafka_offset"]) for r in bad] == [(0, 3)]
    assert bad[0]["_ingest_error"].startswith("schema id 99 is not registered in the schema registry at ")

    # The registry goes down: the batch fails naming it, nothing is committed or set aside.
    commits = len(HudiTable.open(str(table)).timeline().completed(Action.DELTA_COMMIT))
    broker.produce(topic, [(b"d", produce_value(v2, topic, {"id": "d", "part": "p", "ts": 4, "note": "late"})),
                           (b"a", produce_value(v2, topic, {"id": "a", "part": "p", "ts": 5, "note": "upd"}))])
    server.stop()
    with pytest.raises(RegistryUnavailable, match=rf"schema registry http://127.0.0.1:{server.port}/subjects/"):
        stream(config, available_now=True, spark=spark)
    assert len(HudiTable.open(str(table)).timeline().completed(Action.DELTA_COMMIT)) == commits
    assert len(quarantine.read_all(Storage(str(tmp_path / "quarantine")))) == 1

    # Back up: the restarted stream reads those messages once.
    server.start()
    stream(config, available_now=True, spark=spark)
    rows = table_rows(table)
    assert [(r["id"], r["ts"], r["note"]) for r in rows] == [
        ("a", 5, "upd"), ("b", 2, None), ("c", 3, "new"), ("d", 4, "late")]
    assert len(consume_all(broker.bootstrap_servers, topic, 1)[0]) == 6
    assert len(HudiTable.open(str(table)).timeline().completed(Action.DELTA_COMMIT)) == commits + 1
