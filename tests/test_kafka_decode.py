"""Decoding Kafka values: typed records, tombstones, and every bad record kept as an error row."""

from __future__ import annotations

import io
import json
import struct
from datetime import date, datetime, timezone
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_fixtures import broker, topic_name  # noqa: F401  (broker is a fixture)

from ingest.errors import ConfigError
from ingest.kafka import json_values as json_reader
from ingest.kafka.broker import Message
from ingest.kafka.columns import INPUT_COLUMNS, TIMESTAMP_TYPE
from ingest.kafka.ddl import parse_ddl
from ingest.kafka.decode import decode_batch
from ingest.kafka.spec import decoder_spec
from ingest.spark.decode import decode
from ingest.spark.kafka_source import kafka_stream

ORDERS_DDL = (
    "order_id STRING NOT NULL, amount DECIMAL(10,2), qty INT, small TINYINT, price DOUBLE, ok BOOLEAN, "
    "updated_at TIMESTAMP, day DATE, blob BINARY, items ARRAY<STRUCT<sku:STRING NOT NULL,qty:INT>>"
)
KAFKA_TS = datetime(2024, 5, 1, tzinfo=timezone.utc)
INPUT_SCHEMA = pa.schema(
    [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
     ("offset", pa.int64()), ("timestamp", TIMESTAMP_TYPE)]
)


def kafka_rows(values, keys=None) -> pa.Table:
    """Kafka rows of topic `t`, partition 0, offsets 0..n-1."""
    keys = keys if keys is not None else [f"k{i}".encode() for i in range(len(values))]
    n = len(values)
    return pa.table(
        [keys, values, ["t"] * n, list([0] * n), list(range(n)), [KAFKA_TS] * n], schema=INPUT_SCHEMA
    )


def errors_by_offset(decoded) -> dict[int, str]:
    return dict(zip(decoded.errors.column("offset").to_pylist(), decoded.errors.column("error").to_pylist(), strict=True))


def test_ddl_reads_like_spark(spark):
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructType

    for ddl in (
        ORDERS_DDL,
        "`a b` BIGINT NOT NULL, m MAP<STRING, DOUBLE>, n TIMESTAMP_NTZ, "
        "s STRUCT<x: SMALLINT, y: TINYINT NOT NULL>, f FLOAT, d DECIMAL, l ARRAY<ARRAY<LONG>>",
    ):
        assert from_arrow_schema(parse_ddl(ddl)) == StructType.fromDDL(ddl)
    # Comments are accepted (and dropped); CHAR/VARCHAR are plain strings.
    assert parse_ddl("id INT COMMENT 'the id', v VARCHAR(10)") == pa.schema([("id", pa.int32()), ("v", pa.string())])
    for bad in ("a", "a INTEGR", "a INT,", "a DECIMAL(40,2)", "a ARRAY<INT", "a INT, a STRING"):
        with pytest.raises(ConfigError, match="schema"):
            parse_ddl(bad)


def test_json_values_decode_to_the_declared_types():
    spec = decoder_spec("json", schema=ORDERS_DDL, key_fields=["order_id"])
    value = {
        "order_id": "o-1",
        "amount": 12.5,
        "qty": 3,
        "small": -128,
        "price": 1e3,
        "ok": True,
        "updated_at": "2024-05-01T10:00:00.123456+02:00",
        "day": "2024-05-01",
        "blob": "aGk=",
        "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": None}],
        "not_declared": {"ignored": [1, "x"]},
    }
    pretty = json.dumps({"order_id": "o-2", "amount": "7.25"}, indent=2).encode()  # newlines inside
    decoded = decode_batch(kafka_rows([json.dumps(value).encode(), pretty]), spec)
    assert decoded.errors.num_rows == 0
    first, second = decoded.records.to_pylist()
    assert first["order_id"] == "o-1" and first["amount"] == Decimal("12.50") and first["qty"] == 3
    assert first["small"] == -128 and first["price"] == 1000.0 and first["ok"] is True
    assert first["updated_at"] == datetime(2024, 5, 1, 8, 0, 0, 123456, tzinfo=timezone.utc)
    assert first["day"] == date(2024, 5, 1) and first["blob"] == b"hi"
    assert first["items"] == [{"sku": "a", "qty": 1}, {"sku": "b", "qty": None}]
    assert (first["_kafka_topic"], first["_kafka_partition"], first["_kafka_offset"]) == ("t", 0, 0)
    assert first["_kafka_timestamp"] == KAFKA_TS and first["_ingest_is_tombstone"] is False
    assert (second["order_id"], second["amount"], second["qty"]) == ("o-2", Decimal("7.25"), None)
    assert decoded.records.schema.field("order_id").nullable is False


BAD_JSON = [
    (b"{not json", "invalid JSON"),
    (b"", "empty value"),
    (b"[1, 2]", "not a JSON object"),
    (b"null", "not a JSON object"),
    (b'{"order_id": "a"} {"order_id": "b"}', "more than one JSON value"),
    (b'{"order_id": "\xff"}', "not UTF-8"),
    (b'{"amount": 1}', "order_id is required but missing or null"),
    (b'{"order_id": null}', "order_id is required"),
    (b'{"order_id": 12}', "field order_id: expected string, got number"),
    (b'{"order_id": "a", "qty": "12"}', "field qty: expected number, got string"),
    (b'{"order_id": "a", "qty": 12.0}', "field qty"),
    (b'{"order_id": "a", "qty": 3000000000}', "field qty"),
    (b'{"order_id": "a", "small": 128}', "field small"),
    (b'{"order_id": "a", "amount": "abc"}', "field amount"),
    (b'{"order_id": "a", "amount": 1.234}', "field amount"),
    (b'{"order_id": "a", "price": "NaN"}', "field price"),
    (b'{"order_id": "a", "ok": 1}', "field ok: expected boolean, got number"),
    (b'{"order_id": "a", "updated_at": "yesterday"}', "field updated_at"),
    (b'{"order_id": "a", "updated_at": 1714550400}', "field updated_at: expected string, got number"),
    (b'{"order_id": "a", "day": "2024-02-30"}', "field day: '2024-02-30' is not a date"),
    (b'{"order_id": "a", "blob": "%%%"}', "field blob: not base64"),
    (b'{"order_id": "a", "items": [{"qty": 1}]}', "field items"),
    (b'{"order_id": "a", "items": [{"sku": "x", "qty": "1"}]}', "field items[].qty: expected number"),
    (b'{"order_id": "a", "order_id": "b"}', "field order_id appears twice"),
]


def test_every_kind_of_bad_json_is_an_error_row_with_its_offset(monkeypatch):
    spec = decoder_spec("json", schema=ORDERS_DDL, key_fields=["order_id"])
    values = [b'{"order_id": "good-0"}'] + [bad for bad, _ in BAD_JSON] + [b'{"order_id": "good-last"}']
    decoded = decode_batch(kafka_rows(values), spec)
    errors = errors_by_offset(decoded)
    for offset, (_, expected) in enumerate(BAD_JSON, start=1):
        assert expected in errors.get(offset, ""), (offset, BAD_JSON[offset - 1][0], errors.get(offset))
    assert decoded.records.column("order_id").to_pylist() == ["good-0", "good-last"]
    assert decoded.records.column("_kafka_offset").to_pylist() == [0, len(values) - 1]
    raw = decoded.errors.to_pylist()[0]
    # Cutting the batch into tiny chunks (as large batches are) changes nothing.
    monkeypatch.setattr(json_reader, "MAX_CHUNK_ROWS", 3)
    monkeypatch.setattr(json_reader, "MAX_CHUNK_BYTES", 64)
    again = decode_batch(kafka_rows(values), spec, seen_at=raw["error_seen_at"])
    assert again.records.equals(decoded.records) and again.errors.equals(decoded.errors)
    assert (raw["key"], raw["value"], raw["topic"], raw["partition"]) == (b"k1", BAD_JSON[0][0], "t", 0)
    assert raw["timestamp"] == KAFKA_TS and raw["error_seen_at"] is not None


def test_nested_not_null_applies_only_under_present_parents():
    spec = decoder_spec(
        "json",
        schema="id INT, s STRUCT<a: STRUCT<b: INT NOT NULL, d: DATE>, c: ARRAY<STRUCT<x: FLOAT NOT NULL>>>, "
        "l ARRAY<ARRAY<DATE>>",
        key_fields=["id"],
    )
    values = [
        b'{"id": 1, "s": null}',
        b'{"id": 2, "s": {"a": null, "c": [null, {"x": 1.5}]}, "l": [["2024-01-01", null], null, []]}',
        b'{"id": 3, "s": {"a": {"b": null}}}',
        b'{"id": 4, "s": {"c": [{"x": null}]}}',
        b'{"id": 5, "l": [["2024-01-32"]]}',
        b'{"id": 6, "s": {"c": [{"x": 1e39}]}}',
        b'{"id": 7, "s": {"a": {"b": 1, "d": "May 1st"}}}',
    ]
    decoded = decode_batch(kafka_rows(values), spec)
    assert decoded.records.select(["id", "s", "l"]).to_pylist() == [
        {"id": 1, "s": None, "l": None},
        {"id": 2, "s": {"a": None, "c": [None, {"x": 1.5}]}, "l": [[date(2024, 1, 1), None], None, []]},
    ]
    assert errors_by_offset(decoded) == {
        2: "field s.a.b is required but missing or null",
        3: "field s.c[].x is required but missing or null",
        4: "field l[][]: '2024-01-32' is not a date (YYYY-MM-DD)",
        5: "field s.c[].x: 1e+39 is beyond the range of FLOAT",
        6: "field s.a.d: 'May 1st' is not a date (YYYY-MM-DD)",
    }


def test_tombstones_are_delete_markers_keyed_from_the_kafka_key():
    spec = decoder_spec("json", schema="id INT NOT NULL, name STRING", key_fields=["id"])
    values = [b'{"id": 1, "name": "a"}', None, None, None]
    keys = [b"1", b"42", b"forty-two", None]
    decoded = decode_batch(kafka_rows(values, keys), spec)
    assert decoded.records.select(["id", "name", "_ingest_is_tombstone"]).to_pylist() == [
        {"id": 1, "name": "a", "_ingest_is_tombstone": False},
        {"id": 42, "name": None, "_ingest_is_tombstone": True},
    ]
    errors = errors_by_offset(decoded)
    assert "'forty-two' is not an integer" in errors[2]
    assert "Kafka key is null" in errors[3]

    composite = decoder_spec(
        "json", schema="region STRING, id BIGINT, name STRING", key_fields=["region", "id"], key_format="json"
    )
    decoded = decode_batch(
        kafka_rows([None, None], [b'{"region": "eu", "id": 7}', b'{"region": "eu"}']), composite
    )
    assert decoded.records.select(["region", "id", "_ingest_is_tombstone"]).to_pylist() == [
        {"region": "eu", "id": 7, "_ingest_is_tombstone": True}
    ]
    assert "Kafka key: field id is required" in errors_by_offset(decoded)[1]

    keyless = decoder_spec("json", schema="name STRING")
    assert "declares no key fields" in errors_by_offset(decode_batch(kafka_rows([None]), keyless))[0]


def test_record_key_from_the_kafka_key():
    spec = decoder_spec("json", schema="name STRING", key_fields=["key"], key_source="kafka_key")
    assert spec.schema.names == ["name", "key"]
    decoded = decode_batch(kafka_rows([b'{"name": "a", "key": "ignored"}', b'{"name": "b"}'], [b"k-a", None]), spec)
    assert decoded.records.select(["name", "key"]).to_pylist() == [{"name": "a", "key": "k-a"}]
    assert "Kafka key is null" in errors_by_offset(decoded)[1]


ORDER_AVRO = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "order_id", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "updated_at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
ORDER_AVRO_V2 = {**ORDER_AVRO, "fields": ORDER_AVRO["fields"] + [{"name": "channel", "type": ["null", "string"], "default": None}]}


def avro_bytes(schema: dict, record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def framed(schema_id: int, payload: bytes, magic: int = 0) -> bytes:
    return bytes([magic]) + struct.pack(">I", schema_id) + payload


def order(i: int) -> dict:
    return {
        "order_id": f"o-{i}",
        "amount": Decimal("1.25") * i,
        "updated_at": datetime(2024, 5, 1, 12, i, tzinfo=timezone.utc),
        "note": None if i % 2 else f"n{i}",
        "tags": ["x"] * i,
    }


@pytest.fixture
def schema_files(tmp_path):
    v1, v2 = tmp_path / "order-v1.avsc", tmp_path / "order-v2.avsc"
    v1.write_text(json.dumps(ORDER_AVRO))
    v2.write_text(json.dumps(ORDER_AVRO_V2))
    return v1, v2


def test_plain_avro_values(schema_files):
    v1, _ = schema_files
    spec = decoder_spec("avro", schema_file=v1, key_fields=["order_id"])
    good = avro_bytes(ORDER_AVRO, order(2))
    decoded = decode_batch(kafka_rows([avro_bytes(ORDER_AVRO, order(1)), good[:-3], good + b"\x00", b"\xff" * 7, good]), spec)
    records = decoded.records.to_pylist()
    assert [r["_kafka_offset"] for r in records] == [0, 4]
    assert records[0]["amount"] == Decimal("1.25") and records[0]["note"] is None and records[0]["tags"] == ["x"]
    assert records[1]["updated_at"] == datetime(2024, 5, 1, 12, 2, tzinfo=timezone.utc) and records[1]["note"] == "n2"
    errors = errors_by_offset(decoded)
    assert set(errors) == {1, 2, 3}
    assert "bytes left after the Avro record" in errors[2]
    assert all("not Avro" in message for message in errors.values())


def test_confluent_framed_avro(schema_files):
    v1, v2 = schema_files
    plain = decoder_spec("confluent-avro", schema_file=v1, key_fields=["order_id"])
    payload = avro_bytes(ORDER_AVRO, order(3))
    decoded = decode_batch(kafka_rows([framed(99, payload), framed(99, payload, magic=1), b"\x00\x00"]), plain)
    assert decoded.records.column("order_id").to_pylist() == ["o-3"]
    errors = errors_by_offset(decoded)
    assert "magic byte 1" in errors[1] and "too short" in errors[2]

    # Schema ids pick the writer schema; records are resolved to the spec's (newer) schema.
    by_id = decoder_spec("confluent-avro", schema_file=v2, schema_files_by_id={1: v1, 2: v2}, key_fields=["order_id"])
    v2_record = {**order(4), "channel": "web"}
    decoded = decode_batch(
        kafka_rows([framed(1, payload), framed(2, avro_bytes(ORDER_AVRO_V2, v2_record)), framed(3, payload)]), by_id
    )
    assert decoded.records.select(["order_id", "channel"]).to_pylist() == [
        {"order_id": "o-3", "channel": None},
        {"order_id": "o-4", "channel": "web"},
    ]
    assert "unknown schema id 3" in errors_by_offset(decoded)[2]


def test_spec_mistakes_are_config_errors(schema_files):
    v1, _ = schema_files
    with pytest.raises(ConfigError, match="key fields"):
        decoder_spec("json", schema="a INT", key_fields=["b"])
    with pytest.raises(ConfigError, match="Avro schema file"):
        decoder_spec("avro", schema="a INT")
    with pytest.raises(ConfigError, match="MAP"):
        decoder_spec("json", schema="m MAP<STRING, INT>")
    with pytest.raises(ConfigError, match="key_format=json"):
        decoder_spec("json", schema="a INT, b INT", key_fields=["a", "b"])
    with pytest.raises(ConfigError, match="format"):
        decoder_spec("xml", schema_file=v1)
    with pytest.raises(ConfigError, match="cannot read"):
        decoder_spec("avro", schema_file=v1.parent / "missing.avsc")
    broken = v1.parent / "broken.avsc"
    broken.write_text('{"type": "record", "name": "x", "fields": [{"name": "a", "type": "nope"}]}')
    with pytest.raises(ConfigError, match="not a usable Avro record schema"):
        decoder_spec("avro", schema_file=broken)


# -- properties ---------------------------------------------------------------------------------

PROPERTY_DDL = (
    "id BIGINT NOT NULL, name STRING, amount DECIMAL(6,2), at TIMESTAMP, tags ARRAY<STRING>, n DOUBLE, "
    "s ARRAY<STRUCT<a: INT NOT NULL, d: DATE, b: BINARY>>"
)
json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6)
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
plausible = st.fixed_dictionaries(
    {"id": st.integers(-(2**64), 2**64) | json_values},
    optional={
        "name": st.text(max_size=5) | json_values,
        "amount": st.decimals(-10000, 10000, places=3, allow_nan=False).map(float) | json_values,
        "at": st.sampled_from(["2024-05-01", "2024-05-01T10:00:00Z", "2024-13-01", "x"]) | json_values,
        "tags": st.lists(st.text(max_size=3) | st.none(), max_size=3) | json_values,
        "n": st.floats() | json_values,
        "s": st.lists(
            st.none()
            | st.fixed_dictionaries(
                {},
                optional={
                    "a": st.integers(-5, 5) | json_values,
                    "d": st.sampled_from(["2024-01-01", "2024-02-30"]) | json_values,
                    "b": st.sampled_from(["aGk=", "%"]) | json_values,
                },
            ),
            max_size=3,
        )
        | json_values,
    },
)
messages = st.one_of(
    st.none(),
    st.binary(max_size=30),
    json_values.map(lambda v: json.dumps(v).encode()),
    plausible.map(lambda v: json.dumps(v).encode()),
    plausible.map(lambda v: json.dumps(v, indent=1).encode()),
)
keys = st.none() | st.binary(max_size=6) | st.integers(-5, 5).map(lambda i: str(i).encode())


def _outcome_of(decoded, offset):
    errors = errors_by_offset(decoded)
    if offset in errors:
        return ("error", errors[offset])
    rows = [r for r in decoded.records.to_pylist() if r["_kafka_offset"] == offset]
    return ("record", rows[0])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(st.tuples(keys, messages), min_size=1, max_size=25))
def test_random_json_never_crashes_and_every_row_lands_once(batch):
    spec = decoder_spec("json", schema=PROPERTY_DDL, key_fields=["id"])
    table = kafka_rows([v for _, v in batch], [k for k, _ in batch])
    decoded = decode_batch(table, spec)
    offsets = decoded.records.column("_kafka_offset").to_pylist() + decoded.errors.column("offset").to_pylist()
    assert sorted(offsets) == list(range(len(batch)))
    # A message's outcome does not depend on its neighbours (the vectorized read splits and retries).
    for offset in range(len(batch)):
        alone = decode_batch(table.slice(offset, 1), spec)
        assert _outcome_of(decoded, offset) == _outcome_of(alone, offset)


@settings(max_examples=100, deadline=None)
@given(batch=st.lists(st.none() | st.binary(max_size=40), min_size=1, max_size=20), fmt=st.sampled_from(["avro", "confluent-avro"]))
def test_random_bytes_as_avro_never_crash(tmp_path_factory, batch, fmt):
    path = tmp_path_factory.getbasetemp() / "order.avsc"
    path.write_text(json.dumps(ORDER_AVRO))
    spec = decoder_spec(fmt, schema_file=path, key_fields=["order_id"])
    decoded = decode_batch(kafka_rows(batch), spec)
    offsets = decoded.records.column("_kafka_offset").to_pylist() + decoded.errors.column("offset").to_pylist()
    assert sorted(offsets) == list(range(len(batch)))


# -- Spark, from the broker ---------------------------------------------------------------------


def test_decode_in_spark_from_a_kafka_stream(spark, broker, tmp_path):  # noqa: F811
    topic = topic_name("decode")
    broker.create_topic(topic, 2)
    good = [{"order_id": f"o-{i}", "amount": i + 0.5, "qty": i} for i in range(6)]
    broker.produce(
        topic,
        [Message(json.dumps(v).encode(), key=v["order_id"].encode(), partition=i % 2) for i, v in enumerate(good)]
        + [
            Message(b'{"order_id": "bad", "qty": "three"}', key=b"bad", partition=0),
            Message(b"\x00garbage", key=b"junk", partition=1),
            Message(None, key=b"o-1", partition=1),
        ],
    )
    spec = decoder_spec("json", schema=ORDERS_DDL, key_fields=["order_id"])
    collected: dict[str, list] = {"records": [], "errors": []}

    def write(df, batch_id):
        with decode(df, spec) as (records, errors):
            collected["records"] += [r.asDict() for r in records.collect()]
            collected["errors"] += [r.asDict() for r in errors.collect()]

    options = {
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "kafka.api.version": "2.3",
        "subscribe": topic,
        "startingOffsets": "earliest",
    }
    query = (
        kafka_stream(spark, options)
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    records, errors = collected["records"], collected["errors"]
    assert len(records) + len(errors) == 9
    assert sorted(r["order_id"] for r in records if not r["_ingest_is_tombstone"]) == [f"o-{i}" for i in range(6)]
    tombstones = [r for r in records if r["_ingest_is_tombstone"]]
    assert [(t["order_id"], t["_kafka_partition"], t["_kafka_offset"], t["amount"]) for t in tombstones] == [
        ("o-1", 1, 4, None)
    ]
    by_offset = {(e["partition"], e["offset"]): e for e in errors}
    assert set(by_offset) == {(0, 3), (1, 3)}
    assert "field qty: expected number, got string" in by_offset[(0, 3)]["error"]
    assert "not a JSON object" in by_offset[(1, 3)]["error"]
    assert bytes(by_offset[(1, 3)]["value"]) == b"\x00garbage" and bytes(by_offset[(1, 3)]["key"]) == b"junk"
    assert all(e["topic"] == topic and e["error_seen_at"] is not None for e in errors)
    o2 = next(r for r in records if r["order_id"] == "o-2")
    assert (o2["amount"], o2["qty"], o2["_kafka_topic"]) == (Decimal("2.50"), 2, topic)
    assert set(INPUT_COLUMNS) <= set(errors[0])


# -- Hudi's delete marker and non-finite doubles, through a real table -------------------------------

MARKER_SCHEMA = "uuid STRING NOT NULL, city STRING, ts BIGINT, fare DOUBLE"


def _write(path, messages):
    from service_tables import options_for

    from ingest.write.batch import LocalWriter

    spec = decoder_spec("json", schema=MARKER_SCHEMA, key_fields=("uuid",))
    decoded = decode_batch(kafka_rows([json.dumps(m, allow_nan=True).encode() for m in messages]), spec)
    if decoded.records.num_rows:
        LocalWriter(options_for(path)).write(decoded.records)
    return decoded


def test_hoodie_is_deleted_deletes_even_when_the_schema_does_not_declare_it(tmp_path):
    """BaseAvroPayload.isDeleteRecord: a record whose `_hoodie_is_deleted` is Boolean true is a delete.
    ingest reads the marker from a JSON message whether or not the declared schema names it (never an
    upsert), and a marker that is not a boolean is a bad record naming the field."""
    from service_tables import hudi_rs_rows

    table = tmp_path / "trips"
    first = _write(table, [{"uuid": u, "city": "chennai", "ts": 1, "fare": 1.0} for u in ("a", "b", "c")])
    assert first.errors.num_rows == 0 and first.records.column("_ingest_is_deleted").to_pylist() == [False] * 3
    second = _write(table, [
        {"uuid": "a", "city": "chennai", "ts": 2, "fare": 2.0, "_hoodie_is_deleted": True},
        {"uuid": "b", "city": "chennai", "ts": 2, "fare": 2.0, "_hoodie_is_deleted": "yes"},
        {"uuid": "c", "city": "chennai", "ts": 2, "fare": 2.0, "_hoodie_is_deleted": False},
    ])
    assert "_hoodie_is_deleted" not in second.records.column_names  # not added to the table's columns
    errors = errors_by_offset(second)
    assert list(errors) == [1] and "_hoodie_is_deleted" in errors[1] and "boolean" in errors[1]
    assert sorted(hudi_rs_rows(table)) == [("b", "chennai", 1, 1.0), ("c", "chennai", 2, 2.0)]


def test_nan_and_infinities_are_written_where_the_type_allows(tmp_path):
    """Avro's double and parquet's DOUBLE are IEEE 754 (Java reads them with Double.longBitsToDouble),
    so NaN and infinities are values Hudi reads; JSON's bare NaN/Infinity/-Infinity (Jackson's
    ALLOW_NON_NUMERIC_NUMBERS) are accepted in a plain DOUBLE column, refused in the ordering field."""
    from service_tables import hudi_rs_rows

    table = tmp_path / "trips"
    decoded = _write(table, [
        {"uuid": "n", "city": "chennai", "ts": 1, "fare": float("nan")},
        {"uuid": "p", "city": "chennai", "ts": 1, "fare": float("inf")},
        {"uuid": "m", "city": "chennai", "ts": 1, "fare": float("-inf")},
    ])
    assert decoded.errors.num_rows == 0
    fares = {u: f for u, _, _, f in hudi_rs_rows(table)}
    assert fares["p"] == float("inf") and fares["m"] == float("-inf") and fares["n"] != fares["n"]

    spec = decoder_spec("json", schema="uuid STRING NOT NULL, small FLOAT, quoted DOUBLE", key_fields=("uuid",))
    decoded = decode_batch(kafka_rows([b'{"uuid": "x", "small": 1e39}', b'{"uuid": "y", "quoted": "NaN"}',
                                       b'{"uuid": "z", "small": -Infinity}']), spec)
    errors = errors_by_offset(decoded)
    assert "beyond the range of FLOAT" in errors[0] and "quoted" in errors[1] and 2 not in errors
    assert decoded.records.column("small").to_pylist() == [float("-inf")]


def test_nan_ordering_and_key_values_are_refused():
    """DefaultHoodieRecordPayload compares ordering values with Comparable.compareTo, and Java's
    Double.compareTo ranks NaN above every number: a NaN ordering value would always win in Hudi's
    merge while Python comparisons say it loses, so ordering (and record key) fields refuse it."""
    from ingest.hudi.keygen.key_generator import KeyGeneratorSpec
    from ingest.write.records import prepare

    spec = KeyGeneratorSpec.from_config({"hoodie.datasource.write.recordkey.field": "uuid"})
    table = pa.table({"uuid": ["a", "b", "c"], "score": [1.0, float("nan"), float("inf")]})
    prepared = prepare(table, spec, ordering_field="score")
    assert prepared.records.column("uuid").to_pylist() == ["a"]
    assert prepared.errors.column("_ingest_error").to_pylist() == [
        "ordering field 'score' is nan: not a finite number (NaN and infinities are refused here)",
        "ordering field 'score' is inf: not a finite number (NaN and infinities are refused here)"]


def test_hoodie_is_deleted_in_a_confluent_writer_schema_the_declared_one_lacks(schema_files, tmp_path):
    """BaseAvroPayload.isDeleteRecord reads `_hoodie_is_deleted` from the record as written: a writer
    schema (by Confluent id) carrying the marker deletes, though the declared schema does not name it."""
    v1, _ = schema_files
    marked_schema = {**ORDER_AVRO, "fields": [*ORDER_AVRO["fields"],
                                              {"name": "_hoodie_is_deleted", "type": ["null", "boolean"],
                                               "default": None}]}
    marked_file = tmp_path / "order-marked.avsc"
    marked_file.write_text(json.dumps(marked_schema))
    spec = decoder_spec("confluent-avro", schema_file=v1, schema_files_by_id={1: v1, 7: marked_file},
                        key_fields=["order_id"])
    decoded = decode_batch(kafka_rows([
        framed(1, avro_bytes(ORDER_AVRO, order(1))),
        framed(7, avro_bytes(marked_schema, {**order(2), "_hoodie_is_deleted": True})),
        framed(7, avro_bytes(marked_schema, {**order(3), "_hoodie_is_deleted": None})),
    ]), spec)
    assert decoded.errors.num_rows == 0
    assert decoded.records.select(["order_id", "_ingest_is_deleted"]).to_pylist() == [
        {"order_id": "o-1", "_ingest_is_deleted": False},
        {"order_id": "o-2", "_ingest_is_deleted": True},
        {"order_id": "o-3", "_ingest_is_deleted": False},
    ]
    assert "_hoodie_is_deleted" not in decoded.records.column_names


def test_nan_and_infinities_in_base_files_read_back_as_written(tmp_path):
    """Parquet's DOUBLE is IEEE 754 little-endian, as Java's parquet reader takes it (HoodieParquetReader):
    NaN and infinities written to base files (write.insert_mode base) read back unchanged."""
    import dataclasses

    import pyarrow.parquet as pq
    from service_tables import hudi_rs_rows, options_for

    from ingest.write.batch import LocalWriter
    from ingest.write.file_group_writer import InsertMode

    spec = decoder_spec("json", schema=MARKER_SCHEMA, key_fields=("uuid",))
    decoded = decode_batch(kafka_rows([b'{"uuid": "n", "city": "chennai", "ts": 1, "fare": NaN}',
                                       b'{"uuid": "p", "city": "chennai", "ts": 1, "fare": Infinity}',
                                       b'{"uuid": "m", "city": "chennai", "ts": 1, "fare": -Infinity}']), spec)
    table = tmp_path / "trips"
    LocalWriter(dataclasses.replace(options_for(table), insert_mode=InsertMode.BASE)).write(decoded.records)
    base_files = [f for f in table.rglob("*.parquet") if ".hoodie" not in f.relative_to(table).parts]
    assert base_files and not [f for f in table.rglob("*.log.*") if ".hoodie" not in f.relative_to(table).parts]
    written = {r["uuid"]: r["fare"] for f in base_files for r in pq.read_table(f).to_pylist()}
    read = {u: f for u, _, _, f in hudi_rs_rows(table)}
    for fares in (written, read):
        assert fares["p"] == float("inf") and fares["m"] == float("-inf") and fares["n"] != fares["n"]
