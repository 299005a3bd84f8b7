"""Hudi base files: parquet laid out as Hudi's Avro write path (parquet-avro 1.13) leaves it.

Readers lean on three parts of a base file beyond its rows: the footer key/values Hudi's
`HoodieAvroWriteSupport` adds (the Avro writer schema, the min/max record key and the record-key
bloom filter that the bloom index and key-range pruning read), and a parquet schema in
parquet-avro's shape, which Hudi's own Avro readers (compaction, merges) project with. pyarrow
writes the rows and the key/values; the few places where its schema differs from parquet-avro's are
then rewritten in the footer (a Thrift structure), which leaves the data pages untouched (without
lists, only the root element is re-encoded: `footer.rename_root`):

* the root group is named after the Avro record's full name (pyarrow writes `schema`);
* lists use parquet-avro's default 2-level layout, `repeated <element> array` (Hudi does not set
  `parquet.avro.write-old-list-structure`, whose default is true), for every list whose elements
  hold no null. pyarrow writes the 3-level `list`/`element` layout; with a required element its
  repetition and definition levels are those of the 2-level one, so only the schema changes.
  A list that does hold null elements keeps the 3-level layout: Hudi with defaults fails to write
  such data at all, and this is what it writes with `write-old-list-structure=false`.

Differences that remain, none of which readers act on: `created_by` names parquet-cpp (readers
use it to work around bugs of the writer named there, so it must stay truthful); FileMetaData
`version` is 1 as parquet-mr's, but statistics and the page index are pyarrow's encoding of the same
facts; and the data pages' byte layout (page boundaries, compression) is pyarrow's, with a
dictionary only for the columns where parquet-mr would keep one (`encodings`).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ingest.errors import BadRecordError, IngestError, SchemaEvolutionError
from ingest.hudi.avro.promotion import rebased
from ingest.hudi.avro.schema import META_FIELDS, RECORD_KEY, AvroSchema, avro_to_arrow, parse, to_json
from ingest.hudi.parquet import bloom_filter as bloom
from ingest.hudi.parquet.encodings import dictionary_columns
from ingest.hudi.parquet.footer import rename_root, rewrite_footer
from ingest.storage import Storage

AVRO_SCHEMA_KEY = "parquet.avro.schema"
WRITER_MODEL_KEY = "writer.model.name"
MIN_RECORD_KEY = "hoodie_min_record_key"
MAX_RECORD_KEY = "hoodie_max_record_key"
BLOOM_FILTER_KEY = "org.apache.hudi.bloomfilter"
OLD_BLOOM_FILTER_KEY = "com.uber.hoodie.bloomfilter"  # read-only: files of pre-Apache Hudi
BLOOM_TYPE_CODE_KEY = "hoodie_bloom_filter_type_code"

_MAGIC = b"PAR1"


@dataclass(frozen=True)
class BaseFileOptions:
    """How base files are written; defaults are Hudi's except the codec.

    `compression` defaults to snappy, not Hudi's `hoodie.parquet.compression.codec=gzip`: snappy
    writes several times faster and every Hudi reader decodes it. Sizes follow
    `hoodie.parquet.block.size` (row group, 120 MiB) and `hoodie.parquet.page.size` (1 MiB).
    The bloom settings are `hoodie.bloom.index.filter.type`, `hoodie.index.bloom.num_entries`,
    `hoodie.index.bloom.fpp` and `hoodie.bloom.index.filter.dynamic.max.entries`.
    """

    compression: str = "snappy"
    compression_level: int | None = None
    row_group_bytes: int = 120 * 1024 * 1024
    page_bytes: int = 1024 * 1024
    dictionary: bool = True
    old_list_structure: bool = True  # parquet.avro.write-old-list-structure
    bloom_type_code: str = bloom.DEFAULT_TYPE_CODE
    bloom_num_entries: int = bloom.DEFAULT_NUM_ENTRIES
    bloom_fpp: float = bloom.DEFAULT_FPP
    bloom_max_entries: int = bloom.DEFAULT_DYNAMIC_MAX_ENTRIES


@dataclass(frozen=True)
class BaseFileStats:
    """What the commit metadata's write stat needs to know about a written base file."""

    path: str
    record_count: int
    file_size: int
    min_record_key: str | None
    max_record_key: str | None
    total_uncompressed_size: int


@dataclass(frozen=True)
class BaseFileFooter:
    """A base file's parquet footer: row count, Arrow schema, and Hudi's key/values."""

    num_rows: int
    arrow_schema: pa.Schema
    metadata: Mapping[str, str] = field(repr=False)
    # leaf column path -> whether its first row group has a dictionary (what its writer chose)
    dictionary_leaves: Mapping[str, bool] = field(default_factory=dict, repr=False)

    @property
    def avro_schema(self) -> AvroSchema | None:
        """The writer schema (with meta fields); absent in files of Hudi's Spark row writer."""
        text = self.metadata.get(AVRO_SCHEMA_KEY)
        return parse(text) if text is not None else None

    @property
    def min_record_key(self) -> str | None:
        return self.metadata.get(MIN_RECORD_KEY)

    @property
    def max_record_key(self) -> str | None:
        return self.metadata.get(MAX_RECORD_KEY)

    @property
    def bloom_filter_type_code(self) -> str | None:
        return self.metadata.get(BLOOM_TYPE_CODE_KEY)

    def bloom_filter(self) -> bloom.BloomFilter | None:
        """The record-key filter, read as Hudi's `readBloomFilterFromMetadata` reads it."""
        text = self.metadata.get(BLOOM_FILTER_KEY, self.metadata.get(OLD_BLOOM_FILTER_KEY))
        if text is None:
            return None
        return bloom.parse_bloom_filter(text, self.bloom_filter_type_code)


# -- writing ------------------------------------------------------------------------------------


def write_base_file(storage: Storage, path: str, table: pa.Table, writer_schema: AvroSchema,
                    options: BaseFileOptions | None = None, *, overwrite: bool = False) -> BaseFileStats:
    """Write `table` (meta fields first) as the base file `path`; returns its stats.

    The file is created only if absent (like Hudi's `ParquetFileWriter.Mode.CREATE`), unless
    `overwrite` is set; either way readers never see a partial file.
    """
    data, stats = encode_base_file(table, writer_schema, options, path=path)
    if overwrite:
        storage.write(path, data)
    elif not storage.create(path, data):
        raise FileExistsError(f"base file {storage.url(path)} already exists")
    return stats


def encode_base_file(table: pa.Table, writer_schema: AvroSchema, options: BaseFileOptions | None = None,
                     *, path: str = "", bloom_filter: bloom.BloomFilter | None = None,
                     dictionary_leaves: Mapping[str, bool] | None = None) -> tuple[bytes, BaseFileStats]:
    """The bytes of a base file holding `table`, and its stats (`path` is only echoed in them).

    `bloom_filter`: the filter of exactly `table`'s keys when the caller has it (`merged_bloom_filter`).
    `dictionary_leaves`: the dictionary choice of a file whose rows start this one's (a merge's old
    file, `BaseFileFooter.dictionary_leaves`), kept for the columns it names.
    """
    options = options or BaseFileOptions()
    names = [f["name"] for f in writer_schema["fields"]]
    if tuple(names[: len(META_FIELDS)]) != META_FIELDS or tuple(table.column_names[: len(META_FIELDS)]) != META_FIELDS:
        raise ValueError(f"base file {path}: the schema and the table must start with the meta fields {META_FIELDS}")
    table = _conform_to_writer_schema(table, writer_schema, path, options.old_list_structure)

    keys = table.column(RECORD_KEY)
    _check_record_keys(keys, path)
    filt = bloom_filter
    if filt is None:
        filt = new_bloom_filter(options)
        filt.add_all(keys)
    min_key, max_key = _java_min_max(keys)

    # parquet-avro's keys come first, then HoodieBloomFilterWriteSupport's in the order of its
    # HashMap (type code only for dynamic filters, no min/max without records): the fixtures' order.
    key_values = []
    if filt.type_code == bloom.DYNAMIC_V0:
        key_values.append((BLOOM_TYPE_CODE_KEY, filt.type_code))
    key_values.append((BLOOM_FILTER_KEY, filt.to_string()))
    if min_key is not None and max_key is not None:
        key_values += [(MIN_RECORD_KEY, min_key), (MAX_RECORD_KEY, max_key)]
    data, meta = _encode_avro_parquet(table, writer_schema, options, key_values, dictionary_leaves)
    uncompressed = sum(
        meta.row_group(i).column(j).total_uncompressed_size
        for i in range(meta.num_row_groups)
        for j in range(meta.num_columns)
    )
    return data, BaseFileStats(path, table.num_rows, len(data), min_key, max_key, uncompressed)


def encode_avro_parquet(table: pa.Table, writer_schema: AvroSchema, options: BaseFileOptions,
                        extra_key_values: Sequence[tuple[str, str]] = ()) -> bytes:
    """A parquet file of `table` as parquet-avro writes one for `writer_schema` (Hudi's
    `HoodieAvroParquetWriter`): its keys (`parquet.avro.schema`, `writer.model.name`), then `extra_key_values`."""
    return _encode_avro_parquet(table, writer_schema, options, extra_key_values)[0]


def _encode_avro_parquet(table: pa.Table, writer_schema: AvroSchema, options: BaseFileOptions,
                         extra_key_values: Sequence[tuple[str, str]] = (),
                         dictionary_leaves: Mapping[str, bool] | None = None) -> tuple[bytes, pq.FileMetaData]:
    """`encode_avro_parquet`, and the file's metadata as the writer left it (sizes, row groups)."""
    key_values = [(AVRO_SCHEMA_KEY, to_json(writer_schema)), (WRITER_MODEL_KEY, "avro"), *extra_key_values]
    if len({k for k, _ in key_values}) != len(key_values):
        raise ValueError(f"footer keys repeat: {[k for k, _ in key_values]}")
    sink = pa.BufferOutputStream()
    rows_per_group = _rows_per_group(table, options.row_group_bytes)
    with pq.ParquetWriter(
        sink,
        table.schema,
        version="1.0",  # parquet-mr's default writer: format version 1, v1 data pages
        data_page_version="1.0",
        compression=options.compression,
        compression_level=options.compression_level,
        use_dictionary=dictionary_columns(table, known=dictionary_leaves) if options.dictionary else False,
        data_page_size=options.page_bytes,
        dictionary_pagesize_limit=options.page_bytes,
        write_statistics=True,
        write_page_index=True,  # parquet-mr 1.13 writes column and offset indexes
        store_schema=False,  # no ARROW:schema key: the footer holds Hudi's keys only
    ) as writer:
        writer.write_table(table, row_group_size=rows_per_group)
        writer.add_key_value_metadata(dict(key_values))  # written in this order, as the rewrite would
    data, meta = sink.getvalue(), writer.writer.metadata
    if options.old_list_structure and any(_holds_list(f.type) for f in table.schema):
        return rewrite_footer(data.to_pybytes(), _full_name(writer_schema), key_values, options.old_list_structure), meta
    return rename_root(data, _full_name(writer_schema)), meta


def _holds_list(dtype: pa.DataType) -> bool:
    """Whether a list is anywhere in `dtype` (its parquet layout may then need parquet-avro's 2 levels)."""
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype):
        return True
    if pa.types.is_map(dtype):
        return _holds_list(dtype.key_type) or _holds_list(dtype.item_type)
    return pa.types.is_struct(dtype) and any(_holds_list(f.type) for f in dtype)


def new_bloom_filter(options: BaseFileOptions) -> bloom.BloomFilter:
    return bloom.create_bloom_filter(options.bloom_type_code, options.bloom_num_entries, options.bloom_fpp,
                                     options.bloom_max_entries)


def merged_bloom_filter(old: BaseFileFooter, options: BaseFileOptions, added: pa.Array) -> bloom.BloomFilter | None:
    """The filter of a merged file that keeps every key of `old` and adds the keys `added`, from `old`'s
    filter (Hudi's merge builds it afresh from every key it writes: hashing only the added keys gives
    the same bits wherever `bloom.extended` can tell); None where it cannot."""
    held = old.bloom_filter()
    if held is None:
        return None
    return bloom.extended(held, old.num_rows, new_bloom_filter(options), added)


def _full_name(schema: AvroSchema) -> str:
    namespace = schema.get("namespace")
    return f"{namespace}.{schema['name']}" if namespace else schema["name"]


def _rows_per_group(table: pa.Table, row_group_bytes: int) -> int:
    """Rows per row group so a group holds about `row_group_bytes` of in-memory (uncompressed) data."""
    if table.num_rows == 0 or table.nbytes == 0:
        return max(1, table.num_rows)
    return max(1, min(table.num_rows, row_group_bytes * table.num_rows // table.nbytes))


def _check_record_keys(keys: pa.ChunkedArray, path: str) -> None:
    if keys.null_count:
        row = pc.index(pc.is_null(keys), True).as_py()
        raise BadRecordError(f"base file {path}: row {row} has a null {RECORD_KEY}")
    if len(keys) and pc.any(pc.equal(pc.binary_length(keys), 0)).as_py():
        row = pc.index(pc.equal(pc.binary_length(keys), 0), True).as_py()
        raise BadRecordError(f"base file {path}: row {row} has an empty {RECORD_KEY}")


def _java_min_max(keys: pa.ChunkedArray) -> tuple[str | None, str | None]:
    """Smallest and largest key by Java's `String.compareTo` (UTF-16 code units).

    Byte order of UTF-8 (Arrow's) agrees with it unless a key holds a character at or above
    U+E000, where supplementary characters (surrogates in UTF-16) sort lower in Java.
    """
    if len(keys) == 0:
        return None, None
    if not _may_hold_high_chars(keys):
        bounds = pc.min_max(keys)
        return bounds["min"].as_py(), bounds["max"].as_py()
    values = keys.to_pylist()

    def java_order(s: str) -> bytes:
        return s.encode("utf-16-be", "surrogatepass")

    return min(values, key=java_order), max(values, key=java_order)


def _may_hold_high_chars(keys: pa.ChunkedArray) -> bool:
    """Whether a key may hold a character at or above U+E000: its UTF-8 lead byte is 0xEE or more.
    A scan of the keys' bytes (the whole data buffer of each chunk, a superset of its keys)."""
    for chunk in keys.chunks:
        data = chunk.buffers()[2]
        if data is not None and data.size and np.frombuffer(data, dtype=np.uint8).max() >= 0xEE:
            return True
    return False


def _conform_to_writer_schema(table: pa.Table, writer_schema: AvroSchema, path: str,
                              old_list_structure: bool) -> pa.Table:
    """The table with exactly the writer schema's columns, in its order and with its Arrow types.

    Columns the data lacks are written as null when the schema allows it. When lists are written
    in the 2-level layout, a list whose elements hold no null is typed with required elements.
    """
    target = avro_to_arrow(writer_schema)
    extra = [n for n in table.column_names if target.get_field_index(n) < 0]
    for source_field in table.schema:
        if target.get_field_index(source_field.name) >= 0:
            extra += _unknown_fields(source_field.type, target.field(source_field.name).type, source_field.name)
    if extra:
        raise SchemaEvolutionError(f"base file {path}: {extra} are not in the writer schema (their data would be lost)")
    columns = []
    fields = []
    for target_field in target:
        if target_field.name in table.column_names:
            column = table.column(target_field.name)
            try:
                column = _conform(column, target_field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise BadRecordError(f"base file {path}: column '{target_field.name}' does not fit "
                                     f"{target_field.type}: {e}") from e
        elif target_field.nullable:
            column = pa.chunked_array([pa.nulls(table.num_rows, target_field.type)], target_field.type)
        else:
            raise SchemaEvolutionError(f"base file {path}: column '{target_field.name}' is missing and not nullable")
        chunks = column.chunks
        _check_required(target_field, chunks, path, target_field.name)
        dtype = _with_required_elements(target_field.type, chunks) if old_list_structure else target_field.type
        if dtype != target_field.type:
            column = pa.chunked_array([c.cast(dtype) for c in chunks], dtype)
        columns.append(column)
        fields.append(target_field.with_type(dtype))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _unknown_fields(source: pa.DataType, target: pa.DataType, where: str) -> list[str]:
    """Nested fields of the data that the target type has no place for."""
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        out = []
        for child in source:
            index = target.get_field_index(child.name)
            if index < 0:
                out.append(f"{where}.{child.name}")
            else:
                out += _unknown_fields(child.type, target.field(index).type, f"{where}.{child.name}")
        return out
    if pa.types.is_map(source) and pa.types.is_map(target):
        return _unknown_fields(source.item_type, target.item_type, f"{where}.value")
    source_list = pa.types.is_list(source) or pa.types.is_large_list(source) or pa.types.is_fixed_size_list(source)
    if source_list and pa.types.is_list(target):
        return _unknown_fields(source.value_type, target.value_type, f"{where}.element")
    return []


def _has_nested(dtype: pa.DataType) -> bool:
    return pa.types.is_list(dtype) or pa.types.is_map(dtype) or pa.types.is_struct(dtype)


def _real_children(arrays: Sequence[pa.Array], dtype: pa.DataType) -> list[tuple[pa.Field, list[pa.Array]]]:
    """Each child field of a nested type with the child values that are really written.

    Values under a null struct, or outside a list's offsets, are not part of the data.
    """
    if pa.types.is_struct(dtype):
        out = []
        for i, child in enumerate(dtype):
            values = []
            for a in arrays:
                own = a.field(i)
                values.append(own.filter(a.is_valid()) if a.null_count else own)
            out.append((child, values))
        return out
    if pa.types.is_map(dtype):
        entries = [_map_entries(a) for a in arrays]
        return [(dtype.key_field, [e.field(0) for e in entries]), (dtype.item_field, [e.field(1) for e in entries])]
    if pa.types.is_list(dtype):
        return [(dtype.value_field, [a.flatten() for a in arrays])]
    return []


def _map_entries(array: pa.MapArray) -> pa.StructArray:
    """The key/value entries of the maps really present (Arrow's list flattening has no map kernel).
    A slice is copied first: `ListArray.from_arrays` takes no null mask with sliced offsets."""
    if array.offset:
        array = pa.concat_arrays([array])
    entries = pa.StructArray.from_arrays([array.keys, array.items], names=["key", "value"])
    mask = array.is_null() if array.null_count else None
    return pa.ListArray.from_arrays(array.offsets, entries, mask=mask).flatten()


def _check_required(fld: pa.Field, arrays: Sequence[pa.Array], path: str, where: str) -> None:
    """Refuse nulls where the Avro schema has no null branch, naming the place."""
    if not fld.nullable and any(a.null_count for a in arrays):
        raise BadRecordError(f"base file {path}: '{where}' holds a null but the writer schema does not allow null there")
    if _has_nested(fld.type):
        for child, values in _real_children(arrays, fld.type):
            _check_required(child, values, path, f"{where}.{child.name}")


def _with_required_elements(dtype: pa.DataType, arrays: Sequence[pa.Array]) -> pa.DataType:
    """`dtype` with list elements made required wherever the data holds no null element."""
    if not _has_nested(dtype):
        return dtype
    children = _real_children(arrays, dtype)
    if pa.types.is_struct(dtype):
        return pa.struct([child.with_type(_with_required_elements(child.type, values)) for child, values in children])
    if pa.types.is_map(dtype):
        (key_field, _), (item_field, items) = children
        return pa.map_(key_field, item_field.with_type(_with_required_elements(item_field.type, items)))
    ((element, values),) = children
    element = element.with_type(_with_required_elements(element.type, values))
    if element.nullable and not any(v.null_count for v in values):
        element = element.with_nullable(False)
    return pa.list_(element)


# -- reading ------------------------------------------------------------------------------------


def read_footer(storage: Storage, path: str) -> BaseFileFooter:
    """The footer alone: at most two range reads (the tail, then the rest of the footer), no row data."""
    size = storage.size(path)
    if size < 12:
        raise IngestError(f"{storage.url(path)} is too small to be a parquet file ({size} bytes)")
    tail_start = max(0, size - 64 * 1024)
    tail = storage.read_range(path, tail_start, size)
    if tail[-4:] != _MAGIC:
        raise IngestError(f"{storage.url(path)} is not a parquet file (no PAR1 at its end)")
    (footer_len,) = struct.unpack("<I", tail[-8:-4])
    footer_start = size - 8 - footer_len
    if footer_start < 4:
        raise IngestError(f"{storage.url(path)} has a footer longer than the file")
    if footer_start >= tail_start:
        footer = tail[footer_start - tail_start : -8]
    else:
        footer = storage.read_range(path, footer_start, size - 8)
    return _footer(pq.read_metadata(pa.BufferReader(_MAGIC + footer + tail[-8:])))


def _footer(meta: pq.FileMetaData) -> BaseFileFooter:
    key_values = {k.decode("utf-8"): v.decode("utf-8") for k, v in (meta.metadata or {}).items()}
    leaves = {}
    if meta.num_row_groups:
        group = meta.row_group(0)
        leaves = {group.column(i).path_in_schema: group.column(i).has_dictionary_page for i in range(meta.num_columns)}
    return BaseFileFooter(meta.num_rows, meta.schema.to_arrow_schema(), key_values, leaves)


def read_base_file(storage: Storage, path: str, columns: Sequence[str] | None = None,
                   schema: pa.Schema | None = None) -> pa.Table:
    """The rows of a base file as Arrow.

    Without `schema`, columns get the Arrow types of the file's Avro writer schema (so lists read
    back as `element` lists whatever their parquet layout). With `schema` (the table's current
    schema, for evolution), the result has exactly its columns, in its order and types: columns
    and nested fields an older file lacks come back as nulls. `columns` selects by name.
    """
    with storage.open(path) as f:
        return _rows(pq.ParquetFile(f), storage.url(path), columns, schema)


def read_base_file_and_footer(storage: Storage, path: str, columns: Sequence[str] | None = None,
                              schema: pa.Schema | None = None) -> tuple[pa.Table, BaseFileFooter]:
    """`read_base_file` and `read_footer` from one read of the whole file, for a caller that needs
    every row anyway (a merge): parsed from memory, not through many small reads of a file object."""
    parquet = pq.ParquetFile(pa.BufferReader(storage.read(path)))
    return _rows(parquet, storage.url(path), columns, schema), _footer(parquet.metadata)


def _rows(parquet: pq.ParquetFile, url: str, columns: Sequence[str] | None, schema: pa.Schema | None) -> pa.Table:
    file_schema = parquet.schema_arrow
    if schema is None:
        avro_text = (parquet.metadata.metadata or {}).get(AVRO_SCHEMA_KEY.encode())
        schema = avro_to_arrow(parse(avro_text.decode("utf-8"))) if avro_text else file_schema
    wanted = [f for f in schema if columns is None or f.name in columns]
    if columns is not None:
        unknown = [c for c in columns if schema.get_field_index(c) < 0]
        if unknown:
            raise SchemaEvolutionError(f"{url}: no column(s) {unknown} in the schema")
    present = [f.name for f in wanted if file_schema.get_field_index(f.name) >= 0]
    data = parquet.read(columns=present, use_threads=False)
    out = []
    for target in wanted:
        if target.name in present:
            out.append(_conform(data.column(target.name), target.type))
        else:
            out.append(pa.chunked_array([pa.nulls(data.num_rows, target.type)], target.type))
    return pa.Table.from_arrays(out, schema=pa.schema(wanted))


def _conform(column: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if column.type == target:
        return column
    return pa.chunked_array([_conform_array(c, target) for c in column.chunks], target)


def _conform_array(array: pa.Array, target: pa.DataType) -> pa.Array:
    """Cast, matching struct fields by name (missing ones null) and recursing into lists and maps."""
    if array.type == target:
        return array
    if pa.types.is_struct(target) and pa.types.is_struct(array.type):
        children = []
        for child in target:
            index = array.type.get_field_index(child.name)
            if index >= 0:
                children.append(_conform_array(array.field(index), child.type))
            else:
                children.append(pa.nulls(len(array), child.type))
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target) and pa.types.is_map(array.type):
        offsets, keys = rebased(array, array.keys)
        _, items = rebased(array, array.items)
        keys, items = _conform_array(keys, target.key_type), _conform_array(items, target.item_type)
        mask = array.is_null() if array.null_count else None
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    if pa.types.is_list(target) and pa.types.is_list(array.type):
        offsets, values = rebased(array, array.values)
        values = _conform_array(values, target.value_type)
        mask = array.is_null() if array.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    # A column a writer widened from int or long to float or double: the older files' values round to the
    # nearest, as the readers' casts round them (Spark's `Cast`, Avro's resolution in log blocks).
    return array.cast(target, safe=not (pa.types.is_integer(array.type) and pa.types.is_floating(target)))
