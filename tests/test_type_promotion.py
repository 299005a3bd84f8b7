"""A column arriving narrower than the table's is written in the table's type, as Hudi's writer does.

Hudi's Spark writer keeps the table's type where `SchemaChangeUtils.shouldPromoteType` allows the
incoming one to be promoted (`AvroSchemaEvolutionUtils.reconcileSchemaRequirements`), and rewrites each
value with `HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType`; the table's schema stays as it was.
A wider incoming type, or one Hudi cannot rewrite, is refused before anything is written.
"""

from __future__ import annotations

import hudi_invariants
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.errors import SchemaEvolutionError
from ingest.hudi.avro import schema as avro
from ingest.hudi.avro.promotion import promote
from ingest.hudi.log.log_block import HeaderKey
from ingest.hudi.log.log_reader import iter_log_blocks
from ingest.hudi.parquet.base_file import AVRO_SCHEMA_KEY
from ingest.hudi.table.snapshot import read_snapshot
from ingest.hudi.table.table import HudiTable
from ingest.storage import Storage
from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions

hudi = pytest.importorskip("hudi")

HUDI = {
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
}


def options(path, index: str, version: int) -> WriteOptions:
    return WriteOptions(table_path=str(path), table_name="t",
                        hudi={**HUDI, "hoodie.write.table.version": str(version)},
                        index=IndexOptions(type=IndexType(index), bucket_count=2))


# The table's columns, and the narrower types a later batch brings for them.
TABLE = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", pa.int64()), ("l", pa.int64()),
                   ("f", pa.float32()), ("d", pa.float64()), ("d_from_int", pa.float64()), ("s_from_long", pa.string()),
                   ("s_from_double", pa.string()), ("b", pa.binary())])
NARROWER = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", pa.int32()), ("l", pa.int32()),
                      ("f", pa.int64()), ("d", pa.int64()), ("d_from_int", pa.int32()), ("s_from_long", pa.int64()),
                      ("s_from_double", pa.float64()), ("b", pa.string())])


def test_promotions_follow_hudis_rewrite_of_each_value():
    """`rewritePrimaryTypeWithDiffSchemaType`: numbers to string by Java's `toString`, a long to the
    nearest float or double, a string to its UTF-8 bytes."""
    assert promote(pa.array([1.0, 1e-5, 123456789.0, None, 1.0], pa.float64()), pa.string()).to_pylist() == [
        "1.0", "1.0E-5", "1.23456789E8", None, "1.0"]
    chunked = pa.chunked_array([pa.array([0.1, 1e10]), pa.array([-0.0, float("nan"), float("-inf")])])
    assert promote(chunked, pa.string()).to_pylist() == ["0.1", "1.0E10", "-0.0", "NaN", "-Infinity"]
    assert promote(pa.array([-5, None], pa.int32()), pa.string()).to_pylist() == ["-5", None]
    assert promote(pa.array([2**53 + 1], pa.int64()), pa.float64()).to_pylist() == [2.0**53]  # nearest, even
    assert promote(pa.array([2**24 + 1], pa.int64()), pa.float32()).to_pylist() == [2.0**24]
    assert promote(pa.array(["é"]), pa.binary()).to_pylist() == ["é".encode()]


def test_evolution_keeps_the_tables_type_for_promotable_columns_and_refuses_the_rest():
    table = avro.arrow_to_avro(TABLE, "t")
    assert avro.evolve(table, avro.arrow_to_avro(NARROWER, "t")) == table
    refused = [
        (pa.float32(), pa.float64()),  # Hudi goes through Float.toString, whose digits depend on its Java
        (pa.float32(), pa.string()),
        (pa.bool_(), pa.string()),
        (pa.binary(), pa.string()),  # Hudi 0.15 writes String.valueOf(ByteBuffer)
        (pa.float64(), pa.int64()),
        (pa.date32(), pa.string()),
    ]
    for incoming, table_type in refused:
        schemas = [pa.schema([("id", pa.string()), ("x", t)]) for t in (table_type, incoming)]
        with pytest.raises(SchemaEvolutionError, match="column 'x' changes type"):
            avro.evolve(avro.arrow_to_avro(schemas[0], "t"), avro.arrow_to_avro(schemas[1], "t"))


@pytest.mark.parametrize(("incoming", "table_type", "taken"), [
    (pa.int32(), pa.float64(), False),  # keyed `7` as it arrives, `7.0` by Hudi after promotion
    (pa.int64(), pa.float32(), False),
    (pa.string(), pa.binary(), False),
    (pa.int32(), pa.int64(), True),
    (pa.int64(), pa.string(), True),
    (pa.float64(), pa.string(), True),  # Double.toString either way
])
def test_a_key_or_partition_field_is_promoted_only_where_its_text_stays(incoming, table_type, taken):
    """Hudi makes keys and partition paths from the promoted record (`HoodieCreateRecordUtils`: the key
    generator runs on the rewritten Avro record); ingest makes them from the values as they arrive."""
    schemas = [avro.arrow_to_avro(pa.schema([("id", t), ("v", pa.string())]), "t") for t in (table_type, incoming)]
    assert avro.evolve(*schemas) == schemas[0]
    if taken:
        assert avro.evolve(*schemas, keyed_fields={"id"}) == schemas[0]
    else:
        with pytest.raises(SchemaEvolutionError, match="column 'id' changes type"):
            avro.evolve(*schemas, keyed_fields={"id"})


def rows(schema: pa.Schema, ids: list[str], ts: int, value: int) -> pa.Table:
    data = {"id": ids, "part": ["p"] * len(ids), "ts": [ts] * len(ids), "l": [value] * len(ids),
            "f": [value] * len(ids), "d": [value] * len(ids), "d_from_int": [value] * len(ids),
            "s_from_long": [value] * len(ids), "s_from_double": [0.1] * len(ids), "b": ["é"] * len(ids)}
    if pa.types.is_binary(schema.field("b").type):
        data["b"] = [v.encode() for v in data["b"]]
    if pa.types.is_string(schema.field("s_from_long").type):
        data["s_from_long"] = [str(v) for v in data["s_from_long"]]
        data["s_from_double"] = [str(v) for v in data["s_from_double"]]
    return pa.table(data, schema=schema)


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("index", ["bucket", "key"])
def test_a_batch_of_narrower_types_is_written_in_the_tables_types(tmp_path, index, version):
    """The table's schema stays; every log block's SCHEMA header and base file footer carries the table's
    types (as `HoodieAppendHandle` puts its write schema there); we and hudi-rs read the promoted values."""
    path = tmp_path / "t"
    LocalWriter(options(path, index, version)).write(rows(TABLE, ["a", "b"], 1, 1))
    table = HudiTable.open(str(path))
    before = avro.without_meta_fields(table.schema())
    # An update of a and an insert of c, both narrower.
    LocalWriter(options(path, index, version)).write(rows(NARROWER, ["a", "c"], 2, 7))
    table = HudiTable.open(str(path))
    assert avro.without_meta_fields(table.schema()) == before

    expected = {
        "a": (2, 7, 7.0, 7.0, 7.0, "7", "0.1", "é".encode()),
        "b": (1, 1, 1.0, 1.0, 1.0, "1", "0.1", "é".encode()),
        "c": (2, 7, 7.0, 7.0, 7.0, "7", "0.1", "é".encode()),
    }
    columns = ["ts", "l", "f", "d", "d_from_int", "s_from_long", "s_from_double", "b"]

    def keyed(records: list[dict]) -> dict:
        return {r["id"]: tuple(r[c] for c in columns) for r in records}

    assert keyed(read_snapshot(table).to_pylist()) == expected
    hudi_rs = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    assert keyed([r for b in hudi_rs.read() for r in b.to_pylist()]) == expected

    written = [avro.without_meta_fields(avro.parse(s)) for s in _file_schemas(path)]
    assert len(written) >= 2 and all(s == before for s in written), written


def _file_schemas(path) -> list[str]:
    """The Avro schema of every log block (SCHEMA header) and base file (footer) in the table."""
    storage = Storage(str(path))
    out = []
    for file in path.rglob("*"):
        rel = str(file.relative_to(path))
        if ".hoodie" in file.relative_to(path).parts or not file.is_file():
            continue
        if ".log." in file.name:
            out += [b.get(HeaderKey.SCHEMA) for b in iter_log_blocks(storage, rel) if b.get(HeaderKey.SCHEMA)]
        elif file.suffix == ".parquet":
            out.append(pq.read_metadata(file).metadata[AVRO_SCHEMA_KEY.encode()].decode())
    return out


def test_the_spark_sink_promotes_in_its_executors(spark, tmp_path):
    """A DataFrame whose columns Spark typed narrower than the table's (an `IntegerType` for a long
    column, a `LongType` for a double one) is written by the executors in the table's types."""
    from ingest.spark.sink import HudiSink

    path = tmp_path / "t"
    with HudiSink(options(path, "key", 6), spark=spark) as sink:
        sink(spark.createDataFrame(rows(TABLE, ["a", "b"], 1, 1)), 0)
        before = HudiTable.open(str(path)).schema()
        sink(spark.createDataFrame(rows(NARROWER, ["a", "c"], 2, 7)), 1)
    table = HudiTable.open(str(path))
    got = {r["id"]: (r["l"], r["d"], r["s_from_double"]) for r in read_snapshot(table).to_pylist()}
    assert got == {"a": (7, 7.0, "0.1"), "b": (1, 1.0, "0.1"), "c": (7, 7.0, "0.1")}
    assert table.schema() == before


def test_the_writer_refuses_to_promote_a_partition_field_whose_text_would_change(tmp_path):
    """Through the writer: `part` is a double column, and an int arriving for it would make partition
    `7` where Hudi makes `7.0`; refused before anything is written, naming the column."""
    path = tmp_path / "t"
    first = pa.table({"id": ["a"], "part": [7.0], "ts": [1]})
    LocalWriter(options(path, "bucket", 6)).write(first)
    before = HudiTable.open(str(path)).timeline().instants
    with pytest.raises(SchemaEvolutionError, match="column 'part' changes type"):
        LocalWriter(options(path, "bucket", 6)).write(pa.table({"id": ["b"], "part": pa.array([7], pa.int32()),
                                                                "ts": [2]}))
    assert HudiTable.open(str(path)).timeline().instants == before
    assert [r["_hoodie_partition_path"] for r in read_snapshot(HudiTable.open(str(path))).to_pylist()] == ["7.0"]


# -- an int column arriving as long: the table's column becomes long ------------------------------------


def _int_rows(ids: list[str], parts: list[str], ts: int, v: list[int], wide: bool) -> pa.Table:
    kind = pa.int64() if wide else pa.int32()
    return pa.table({"id": ids, "part": parts, "ts": pa.array([ts] * len(ids), kind), "v": pa.array(v, kind)})


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("index", ["bucket", "key"])
def test_an_int_column_arriving_as_long_becomes_long_and_every_reader_widens_the_old_files(tmp_path, index, version):
    """Hudi's writer takes the wider type for the table (`HoodieSchemaUtils.deduceWriterSchema`, allowed by
    `AvroSchemaCompatibility`: a long reader reads an int writer). The older base files (parquet INT32)
    and log blocks (Avro int) stay; we and hudi-rs read them widened, through a small file merged with
    new keys, a log over an int base file, a compaction and a later batch; the ordering field `ts`
    widened too, the key index still keeps stale versions out."""
    from service_tables import run_allowed_services

    path = tmp_path / "t"
    LocalWriter(options(path, index, version)).write(_int_rows(["a", "b"], ["p", "p"], 5, [1, 2], wide=False))
    narrow = HudiTable.open(str(path)).schema()
    # An update of a, a new key in p (a small file merged with it, or a log) and one in a new partition.
    LocalWriter(options(path, index, version)).write(
        _int_rows(["a", "c", "d"], ["p", "p", "r"], 6, [2**40, 3, 4], wide=True))
    table = HudiTable.open(str(path))
    types = {f["name"]: f["type"] for f in table.schema()["fields"]}
    assert types["v"] == types["ts"] == ["null", "long"], types
    assert {f["name"]: f for f in narrow["fields"]}["v"]["type"] == ["null", "int"]
    # A stale version (ordering 4 < 6) of a changes nothing, a fresh one of b does.
    LocalWriter(options(path, index, version)).write(_int_rows(["a", "b"], ["p", "p"], 4, [0, 20], wide=True))
    LocalWriter(options(path, index, version)).write(_int_rows(["b"], ["p"], 7, [21], wide=True))
    expected = {"a": 2**40, "b": 21, "c": 3, "d": 4}

    def hudi_rs() -> dict:
        batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
        assert {str(b.schema.field("v").type) for b in batches} == {"int64"}
        return {r["id"]: r["v"] for b in batches for r in b.to_pylist()}

    def ours() -> dict:
        return {r["id"]: r["v"] for r in read_snapshot(HudiTable.open(str(path))).to_pylist()}

    assert ours() == hudi_rs() == expected
    run = run_allowed_services(HudiTable.open(str(path)), **{"hoodie.compact.inline.max.delta.commits": "1"})
    assert run.compacted, "a compaction merged the int base files and logs with the long ones"
    assert ours() == hudi_rs() == expected
    counts = hudi_invariants.check(path, bucket_index=index == "bucket")
    assert counts["schemas"] > 0 and counts["partition_values"] == len(expected)


def test_other_wider_types_stay_refused():
    """Only int to long widens the table's column: the readers part on the other pairs (module docstring
    of `ingest.hudi.avro.promotion`)."""
    for table_type, incoming in [(pa.float32(), pa.float64()), (pa.int32(), pa.float64()), (pa.int64(), pa.string()),
                                 (pa.int32(), pa.string()), (pa.float64(), pa.string())]:
        schemas = [avro.arrow_to_avro(pa.schema([("id", pa.string()), ("x", t)]), "t") for t in (table_type, incoming)]
        with pytest.raises(SchemaEvolutionError, match="column 'x' changes type"):
            avro.evolve(*schemas)
