"""Dictionary encoding in base files, as parquet-mr (Hudi's writer) chooses it (`ingest.hudi.parquet.encodings`)."""

from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.hudi.avro import schema as S
from ingest.hudi.parquet.base_file import BaseFileOptions, encode_base_file
from ingest.hudi.parquet.encodings import dictionary_columns


def _dictionary_leaves(metadata: pq.FileMetaData) -> set[str]:
    row_group = metadata.row_group(0)
    return {row_group.column(i).path_in_schema for i in range(metadata.num_columns)
            if row_group.column(i).has_dictionary_page}


def test_the_columns_hudi_dictionary_encodes_are_the_ones_chosen_here(fixture_tables):
    """parquet-mr keeps a dictionary only where `DictionaryValuesWriter.isCompressionSatisfying` holds
    on the first page (`FallbackValuesWriter`), and never for booleans or fixed-length byte arrays
    (`DefaultV1ValuesWriterFactory`): on every base file Hudi wrote at versions 6, 8 and 9, the leaves
    with a dictionary page are exactly those `dictionary_columns` picks from the file's rows."""
    checked = 0
    for table in fixture_tables.values():
        for path in sorted(table.rglob("*.parquet")):
            if ".hoodie" in path.parts:
                continue
            metadata = pq.read_metadata(path)
            if metadata.num_rows == 0:
                continue
            assert set(dictionary_columns(pq.read_table(path))) == _dictionary_leaves(metadata), path
            checked += 1
    assert checked >= 30, f"only {checked} Hudi-written base files"


def test_unique_values_go_plain_repeated_ones_keep_their_dictionary():
    """The base file's pages follow the choice: keys and other unique values plain, a repeated string,
    number and struct leaf dictionary-encoded, booleans and decimals plain whatever they hold."""
    n = 5000
    user = {
        "id": [f"order-{i:06d}" for i in range(n)],
        "region": [("eu", "us", "apac")[i % 3] for i in range(n)],
        "store": pa.array([i % 40 for i in range(n)], pa.int64()),
        "price": [i * 0.37 for i in range(n)],
        "flag": [i % 2 == 0 for i in range(n)],
        "fee": pa.array([Decimal("1.50")] * n, pa.decimal128(10, 2)),
        "meta": [{"channel": "web", "seq": i} for i in range(n)],
    }
    meta = {name: pa.array(["x"] * n) for name in S.META_FIELDS} | {S.RECORD_KEY: pa.array(user["id"])}
    data = pa.table({**meta, **user})
    writer_schema = S.with_meta_fields(S.arrow_to_avro(pa.table(user).schema, "orders"))
    encoded, _ = encode_base_file(data, writer_schema, BaseFileOptions())
    leaves = _dictionary_leaves(pq.read_metadata(pa.BufferReader(encoded)))
    assert leaves == set(dictionary_columns(data))
    assert {"region", "store", "meta.channel", *S.META_FIELDS} - {S.RECORD_KEY} <= leaves
    assert not leaves & {S.RECORD_KEY, "id", "price", "flag", "fee", "meta.seq"}
    assert pq.read_table(pa.BufferReader(encoded)).select(data.column_names).to_pylist() == data.to_pylist()


def test_a_merge_keeps_the_dictionary_choice_of_the_file_it_rewrites(fixture_tables):
    """A merged file's rows start with the old file's (`HoodieMergeHandle` writes the old records in
    their order), so parquet-mr's first page, and its choice, are the old file's: the footer carries
    that choice per leaf, and `known` answers for the leaves it names, the rest are decided afresh."""
    from ingest.hudi.parquet.base_file import read_base_file_and_footer
    from ingest.storage import Storage

    table = fixture_tables["v6_trips_8i1u"]
    path = next(p for p in sorted(table.rglob("*.parquet")) if ".hoodie" not in p.parts)
    rows, footer = read_base_file_and_footer(Storage(str(path.parent)), path.name)
    assert footer.dictionary_leaves == {c: c in _dictionary_leaves(pq.read_metadata(path))
                                        for c in pq.read_metadata(path).schema.names}
    unique = pa.table({"id": [f"k{i}" for i in range(100)], "region": ["eu"] * 100})
    assert dictionary_columns(unique) == ["region"]
    assert dictionary_columns(unique, known={"id": True, "region": False}) == ["id"]
    assert dictionary_columns(unique, known={"other": True}) == ["region"]
