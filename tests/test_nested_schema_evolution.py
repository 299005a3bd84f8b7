"""Fields inside nested records, lists and maps evolve as Hudi's writer lets them.

Where the incoming type is one `SchemaChangeUtils.shouldPromoteType` promotes to the table's, Hudi keeps
the table's, at any depth (`AvroSchemaEvolutionUtils.reconcileSchemaRequirements` walks nested fields):
the files keep the table's shape, and every reader reads them. Hudi's writer also takes an incoming
schema that `AvroSchemaCompatibility` finds able to read the table's data
(`HoodieSchemaUtils.deduceWriterSchema`), a check that recurses into records, arrays and maps: a nested
field added (nullable, null default), a nested int arriving as long. Older files keep their shape.
Hudi's readers read an added field as null in them; hudi-rs fails on older log blocks, so ingest adds
nested fields only with `write.nested_field_additions`. A nested type widened, Hudi's Spark reader
refuses in vectorized mode (`HoodieParquetFileFormatHelper`), so ingest refuses it.
"""

from __future__ import annotations

import hudi_invariants
import pyarrow as pa
import pytest

from ingest.errors import SchemaEvolutionError
from ingest.hudi.avro import schema as avro
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

hudi = pytest.importorskip("hudi")

HUDI = {
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
}


def options(path, index: str = "bucket", version: int = 6, nested_additions: bool = False) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="t", hudi={**HUDI, "hoodie.write.table.version": str(version)},
                        index=IndexOptions(type=IndexType(index), bucket_count=2), nested_field_additions=nested_additions)


def schema_of(*fields) -> dict:
    return avro.arrow_to_avro(pa.schema([("id", pa.string()), *fields]), "t")


def nested(schema: dict, *path: str):
    """The Avro type (nulls stripped) at a dotted path: record fields by name, `element`, `value`."""
    kind = schema
    for step in path:
        kind = kind[1] if isinstance(kind, list) else kind
        if step == "element":
            kind = kind["items"]
        elif step == "value":
            kind = kind["values"]
        else:
            kind = next(f["type"] for f in kind["fields"] if f["name"] == step)
    return kind[1] if isinstance(kind, list) else kind


OLD_META = pa.struct([("channel", pa.string()), ("priority", pa.int32()), ("score", pa.float64())])


def test_a_nested_field_added_is_appended_nullable_with_a_null_default():
    table = schema_of(("meta", OLD_META))
    incoming = schema_of(("meta", pa.struct([pa.field("source", pa.string(), nullable=False), ("channel", pa.string()),
                                             ("priority", pa.int32()), ("score", pa.float64())])))
    evolved = avro.evolve(table, incoming, nested_additions=True)
    fields = nested(evolved, "meta")["fields"]
    assert [f["name"] for f in fields] == ["channel", "priority", "score", "source"]  # the table's order kept
    assert fields[-1]["type"] == ["null", "string"] and fields[-1]["default"] is None  # older rows hold none
    assert [nested(evolved, "meta")[k] for k in ("name", "namespace")] == [nested(table, "meta")[k] for k in ("name", "namespace")]


def test_a_nested_type_widened_is_refused_and_a_narrower_one_keeps_the_tables_type():
    """Hudi's Spark reader: `if (enableVectorizedReader && shouldUseInternalSchema &&
    !typeChangeInfos.values().forall(_.getLeft.isInstanceOf[AtomicType])) throw new
    IllegalArgumentException("Nested types with type changes(implicit or explicit) cannot be read in
    vectorized mode. ...")`; a top-level int to long is an atomic change, and is taken."""
    table = schema_of(("meta", OLD_META), ("ints", pa.list_(pa.int32())))
    narrower = schema_of(("meta", pa.struct([("channel", pa.string()), ("priority", pa.int32()), ("score", pa.int32())])),
                         ("ints", pa.list_(pa.int32())))
    assert avro.evolve(table, narrower, nested_additions=True) == table  # score: promoted on write, as Hudi does
    table = {**table, "fields": table["fields"] + schema_of(("counts", pa.map_(pa.string(), pa.int32())))["fields"][1:]}
    for incoming in (schema_of(("meta", pa.struct([("priority", pa.int64())]))),
                     schema_of(("ints", pa.list_(pa.int64()))), schema_of(("counts", pa.map_(pa.string(), pa.int64())))):
        with pytest.raises(SchemaEvolutionError, match="widens from int to long .*cannot be read in vectorized mode"):
            avro.evolve(table, incoming, nested_additions=True)


def test_lists_and_maps_of_records_take_fields_added_to_their_elements():
    element = pa.struct([("k", pa.string()), ("n", pa.int32())])
    table = schema_of(("items", pa.list_(element)), ("attrs", pa.map_(pa.string(), element)))
    wider = pa.struct([("k", pa.string()), ("n", pa.int32()), ("w", pa.float64())])
    evolved = avro.evolve(table, schema_of(("items", pa.list_(wider)), ("attrs", pa.map_(pa.string(), wider))),
                          nested_additions=True)
    for top, where in (("items", "element"), ("attrs", "value")):
        assert [f["name"] for f in nested(evolved, top, where)["fields"]] == ["k", "n", "w"]
        assert nested(evolved, top, where, "w") == "double"


def test_without_nested_additions_only_promotions_are_taken_and_the_rest_names_its_field():
    """By default the table's nested shape stays: hudi-rs reads every file (module docstring)."""
    table = schema_of(("meta", OLD_META))
    narrower = schema_of(("meta", pa.struct([("channel", pa.string()), ("priority", pa.int32()), ("score", pa.int32())])))
    assert avro.evolve(table, narrower) == table
    added = schema_of(("meta", pa.struct([("channel", pa.string()), ("source", pa.string())])))
    with pytest.raises(SchemaEvolutionError, match="field 'meta.source' is new in a nested record .*write.nested_field_additions"):
        avro.evolve(table, added)
    # A new top-level column and a top-level int widened to long need no setting.
    top = avro.evolve(schema_of(("n", pa.int32())), schema_of(("n", pa.int64()), ("extra", pa.string())))
    assert [f["name"] for f in top["fields"]] == ["id", "n", "extra"] and nested(top, "n") == "long"


def test_all_null_nested_fields_say_nothing_of_their_type():
    """A nested field whose values are all null arrives with Avro type "null": it matches any nullable
    field, is never added, and a record of nothing else is not added either (a later real type
    would otherwise be refused as a change from null)."""
    table = schema_of(("meta", pa.struct([("a", pa.int32())])))
    nulls = pa.struct([("a", pa.int32()), ("x", pa.null()), ("q", pa.struct([("w", pa.null())]))])
    assert avro.evolve(table, schema_of(("meta", nulls))) == table
    some = pa.struct([("a", pa.int32()), ("q", pa.struct([("w", pa.null()), ("y", pa.string())]))])
    added = nested(avro.evolve(table, schema_of(("meta", some)), nested_additions=True), "meta", "q")
    assert [f["name"] for f in added["fields"]] == ["y"]
    first = avro.without_null_fields(schema_of(("meta", nulls), ("n", pa.null())))
    assert [f["name"] for f in first["fields"]] == ["id", "meta"] and [f["name"] for f in nested(first, "meta")["fields"]] == ["a"]


def test_a_nested_field_missing_is_written_as_null_only_where_the_table_allows_null():
    table = schema_of(("meta", OLD_META))
    assert avro.evolve(table, schema_of(("meta", pa.struct([("channel", pa.string())])))) == table
    required = schema_of(("meta", pa.struct([pa.field("channel", pa.string(), nullable=False),
                                             ("priority", pa.int32())])))
    with pytest.raises(SchemaEvolutionError, match="field 'meta.channel' is missing from the data and is not nullable"):
        avro.evolve(required, schema_of(("meta", pa.struct([("priority", pa.int32())]))))


def test_other_nested_type_changes_are_refused_naming_the_field():
    table = schema_of(("meta", OLD_META), ("items", pa.list_(pa.struct([("n", pa.float32())]))))
    with pytest.raises(SchemaEvolutionError, match="field 'meta.priority' changes type") as info:
        avro.evolve(table, schema_of(("meta", pa.struct([("priority", pa.string())])),
                                     ("items", pa.list_(pa.struct([("n", pa.float64())])))))
    assert "field 'items.element.n' changes type" in str(info.value)
    with pytest.raises(SchemaEvolutionError, match="column 'meta' changes type"):
        avro.evolve(table, schema_of(("meta", pa.string())))


def test_a_nested_key_field_is_promoted_only_where_its_text_stays():
    """A record key made of `meta.k` (a double): an int 7 would be keyed `7` by us and `7.0` by Hudi."""
    table = schema_of(("meta", pa.struct([("k", pa.float64()), ("v", pa.float64())])))
    incoming = schema_of(("meta", pa.struct([("k", pa.int32()), ("v", pa.int32())])))
    assert avro.evolve(table, incoming, keyed_fields={"id"}) == table
    with pytest.raises(SchemaEvolutionError, match="field 'meta.k' changes type"):
        avro.evolve(table, incoming, keyed_fields={"meta.k"})


# -- through the writer, read back by us and hudi-rs --------------------------------------------------------


ELEMENT = pa.struct([("k", pa.string()), ("n", pa.int32())])


def first_rows() -> pa.Table:
    return pa.table({
        "id": ["a", "b"], "part": ["p", "p"], "ts": [1, 1],
        "meta": pa.array([{"channel": "web", "priority": 1, "score": 0.5},
                          {"channel": "app", "priority": 2, "score": 1.5}], OLD_META),
        "items": pa.array([[{"k": "x", "n": 1}], []], pa.list_(ELEMENT)),
    })


NEW_META = pa.struct([("channel", pa.string()), ("priority", pa.int32()), ("score", pa.int32()),
                      ("source", pa.string())])
NEW_ELEMENT = pa.struct([("k", pa.string()), ("n", pa.int32()), ("w", pa.float64())])


def later_rows(ids: list[str], parts: list[str], ts: int) -> pa.Table:
    n = len(ids)
    return pa.table({
        "id": ids, "part": parts, "ts": [ts] * n,
        "meta": pa.array([{"channel": "web", "priority": 9, "score": 7, "source": "kafka"}] * n, NEW_META),
        "items": pa.array([[{"k": "y", "n": 8, "w": 0.25}]] * n, pa.list_(NEW_ELEMENT)),
    })


OLD_A = {"meta": {"channel": "web", "priority": 1, "score": 0.5, "source": None},
         "items": [{"k": "x", "n": 1, "w": None}]}
OLD_B = {"meta": {"channel": "app", "priority": 2, "score": 1.5, "source": None}, "items": []}
NEW = {"meta": {"channel": "web", "priority": 9, "score": 7.0, "source": "kafka"},
       "items": [{"k": "y", "n": 8, "w": 0.25}]}


def _rows(records) -> dict:
    return {r["id"]: {"meta": r["meta"], "items": r["items"]} for r in records}


def _hudi_rs(path) -> dict:
    return _rows(r for b in hudi.HudiTableBuilder.from_base_uri(str(path)).build().read() for r in b.to_pylist())


def _ours(path) -> dict:
    return _rows(read_snapshot(HudiTable.open(str(path))).to_pylist())


NARROWER_META = pa.struct([("channel", pa.string()), ("priority", pa.int32()), ("score", pa.int32())])


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("index", ["bucket", "key"])
def test_narrower_nested_fields_are_written_in_the_tables_types(tmp_path, index, version):
    """Every log block's SCHEMA header and base file footer keeps the table's nested shape, so hudi-rs and
    we read the promoted values (an int 7 for a double is 7.0, as `rewritePrimaryTypeWithDiffSchemaType`)."""
    from test_type_promotion import _file_schemas

    path = tmp_path / "t"
    LocalWriter(options(path, index, version)).write(first_rows())
    before = avro.without_meta_fields(HudiTable.open(str(path)).schema())
    LocalWriter(options(path, index, version)).write(pa.table({
        "id": ["a", "c"], "part": ["p", "p"], "ts": [2, 2],
        "meta": pa.array([{"channel": "web", "priority": 3, "score": 7}] * 2, NARROWER_META),
        "items": pa.array([[{"k": "y", "n": 4}], None], pa.list_(ELEMENT)),
    }))
    assert avro.without_meta_fields(HudiTable.open(str(path)).schema()) == before
    promoted = {"channel": "web", "priority": 3, "score": 7.0}
    expected = {"a": {"meta": promoted, "items": [{"k": "y", "n": 4}]},
                "b": {"meta": {"channel": "app", "priority": 2, "score": 1.5}, "items": []},
                "c": {"meta": promoted, "items": None}}
    assert _ours(path) == _hudi_rs(path) == expected
    written = [avro.without_meta_fields(avro.parse(s)) for s in _file_schemas(path)]
    assert len(written) >= 2 and all(s == before for s in written), written
    assert hudi_invariants.check(path, bucket_index=index == "bucket")["schemas"] > 0


@pytest.mark.parametrize("index", ["bucket", "key"])
def test_list_records_missing_a_field_and_all_null_fields_are_written_in_every_file_group(tmp_path, index):
    """A later batch's list records lack a field (written as null), some of its lists are null, and its
    struct holds a field that is all null: every file group takes its share (each a slice of the
    task's rows), and we and hudi-rs read them."""
    path = tmp_path / "t"
    LocalWriter(options(path, index)).write(later_rows(["a"], ["p"], 1))
    old_element = pa.struct([("k", pa.string()), ("n", pa.int32())])
    meta = pa.struct([("channel", pa.string()), ("priority", pa.int32()), ("x", pa.null())])
    LocalWriter(options(path, index)).write(pa.table({
        "id": ["b", "c", "d", "e"], "part": ["q", "r", "r", "s"], "ts": [2] * 4,
        "meta": pa.array([{"channel": "app", "priority": i, "x": None} for i in range(4)], meta),
        "items": pa.array([[{"k": "u", "n": 1}], None, [{"k": "v", "n": 2}], None], pa.list_(old_element)),
    }))
    expected = {"a": NEW} | {
        key: {"meta": {"channel": "app", "priority": i, "score": None, "source": None}, "items": items}
        for i, (key, items) in enumerate(zip("bcde", ([{"k": "u", "n": 1, "w": None}], None,
                                                      [{"k": "v", "n": 2, "w": None}], None), strict=True))}
    assert _ours(path) == _hudi_rs(path) == expected
    assert [f["name"] for f in nested(HudiTable.open(str(path)).schema(), "meta")["fields"]] == [
        "channel", "priority", "score", "source"]


def test_a_nested_change_is_refused_before_anything_is_written(tmp_path):
    path = tmp_path / "t"
    LocalWriter(options(path)).write(first_rows())

    def files() -> set:  # all but the lease every write takes (`ingest.write.lock`)
        return {p for p in path.rglob("*") if p.is_file() and "lock" not in p.parts}

    before = files()
    with pytest.raises(SchemaEvolutionError, match="field 'meta.source' is new in a nested record"):
        LocalWriter(options(path)).write(later_rows(["a"], ["p"], 2))
    assert files() == before
    assert _ours(path) == _hudi_rs(path) == {
        "a": {"meta": {"channel": "web", "priority": 1, "score": 0.5}, "items": [{"k": "x", "n": 1}]},
        "b": {"meta": {"channel": "app", "priority": 2, "score": 1.5}, "items": []}}


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("index", ["bucket", "key"])
def test_nested_fields_added_read_back_from_every_file(tmp_path, index, version):
    """With `write.nested_field_additions`: a nested record and the records of a list gain a field (and a
    narrower nested value comes along). Older base files and log blocks keep their shape; we read every
    row in the new shape (the new fields null in older rows) before and after a compaction, hudi-rs once
    the compaction rewrote the older log blocks."""
    from service_tables import run_allowed_services

    path = tmp_path / "t"
    LocalWriter(options(path, index, version, nested_additions=True)).write(first_rows())
    # An update of a (a log over the old base file, or a merge), a new key in p and one in a new partition.
    LocalWriter(options(path, index, version, nested_additions=True)).write(later_rows(["a", "c", "d"], ["p", "p", "r"], 2))
    schema = HudiTable.open(str(path)).schema()
    assert nested(schema, "meta", "priority") == "int" and nested(schema, "meta", "score") == "double"
    assert [f["name"] for f in nested(schema, "items", "element")["fields"]] == ["k", "n", "w"]
    assert [f["name"] for f in nested(schema, "meta")["fields"]] == ["channel", "priority", "score", "source"]
    expected = {"a": NEW, "b": OLD_B, "c": NEW, "d": NEW}
    assert _ours(path) == expected
    run = run_allowed_services(HudiTable.open(str(path)), **{"hoodie.compact.inline.max.delta.commits": "1"})
    # The bucket index's rows are all in logs; the key index merged its small file with the new keys.
    assert bool(run.compacted) == (index == "bucket")
    assert _ours(path) == _hudi_rs(path) == expected
    # A batch in the old shape still goes in: its missing nested fields are written as null.
    LocalWriter(options(path, index, version, nested_additions=True)).write(first_rows().slice(1))
    assert _ours(path) == _hudi_rs(path) == expected
    assert hudi_invariants.check(path, bucket_index=index == "bucket")["schemas"] > 0


def test_the_spark_sink_writes_a_nested_field_a_later_batch_adds(spark, tmp_path):
    """Through Spark: the executors write the second batch's new nested field; the first rows read it as null."""
    from ingest.spark.sink import HudiSink

    path = tmp_path / "t"
    with HudiSink(options(path, "key", nested_additions=True), spark=spark) as sink:
        sink(spark.createDataFrame(first_rows()), 0)
        sink(spark.createDataFrame(later_rows(["c"], ["p"], 2)), 1)
    assert _ours(path) == {"a": OLD_A, "b": OLD_B, "c": NEW}


def test_sparks_parquet_reader_reads_an_added_nested_field_as_null_in_older_base_files(spark, tmp_path):
    """Hudi's Spark reader reads base files through Spark's parquet reader, with the table's schema as
    the requested one; with nested columns read vectorized (Spark 4's default), an older file's
    missing nested field comes back null, and the newer file's value as written."""
    from pyspark.sql.pandas.types import from_arrow_schema

    path = tmp_path / "t"
    LocalWriter(options(path, "key", nested_additions=True)).write(first_rows())
    LocalWriter(options(path, "key", nested_additions=True)).write(later_rows(["d"], ["r"], 2))
    files = sorted(str(p) for p in path.rglob("*.parquet") if ".hoodie" not in p.parts)
    assert len(files) == 2
    schema = avro.avro_to_arrow(avro.without_meta_fields(HudiTable.open(str(path)).schema()))
    assert spark.conf.get("spark.sql.parquet.enableNestedColumnVectorizedReader") == "true"
    rows = spark.read.schema(from_arrow_schema(schema)).parquet(*files).select("id", "meta", "items").collect()
    got = {r["id"]: {"meta": r["meta"].asDict(), "items": [e.asDict() for e in r["items"]]} for r in rows}
    assert got == {"a": OLD_A, "b": OLD_B, "d": NEW}


def test_javas_avro_reads_every_older_block_with_the_evolved_schema(spark, tmp_path):
    """Hudi's log reader resolves each block's SCHEMA header (writer) against the table's schema (reader)
    with Avro's `GenericDatumReader`, and its writer checks an evolution with `AvroSchemaCompatibility`, a
    fork of Avro's `SchemaCompatibility.checkReaderWriterCompatibility`: this JVM's Avro must find the
    table's schema after a nested addition and a promotion able to read every block written before."""
    from test_type_promotion import _file_schemas

    path = tmp_path / "t"
    LocalWriter(options(path, nested_additions=True)).write(first_rows())
    LocalWriter(options(path, nested_additions=True)).write(later_rows(["a", "c"], ["p", "p"], 2))
    avro_jvm = spark._jvm.org.apache.avro
    reader = avro_jvm.Schema.Parser().parse(avro.to_json(HudiTable.open(str(path)).schema()))
    writers = set(_file_schemas(path))
    assert len(writers) == 2, writers  # the first batch's blocks and the second's
    for text in writers:
        writer = avro_jvm.Schema.Parser().parse(text)
        result = avro_jvm.SchemaCompatibility.checkReaderWriterCompatibility(reader, writer)
        assert result.getType().toString() == "COMPATIBLE", result.getDescription()
