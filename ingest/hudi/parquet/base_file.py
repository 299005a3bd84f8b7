"""Hudi base files: parquet laid out as Hudi's Avro write path (parquet-avro 1.13) leaves it.

Readers lean on three parts of a base file beyond its rows: the footer key/values Hudi's
`HoodieAvroWriteSupport` adds (the Avro writer schema, the min/max record key and the record-key
bloom filter that the bloom index and key-range pruning read), and a parquet schema in
parquet-avro's shape, which Hudi's own Avro readers (compaction, merges) project with. pyarrow
writes the rows; the few places where its schema differs from parquet-avro's are then rewritten in
the footer (a Thrift structure), which leaves the data pages untouched:

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
facts; and the data pages' byte layout (encodings, page boundaries, compression) is pyarrow's.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ingest.errors import BadRecordError, IngestError, SchemaEvolutionError
from ingest.hudi.avro.schema import META_FIELDS, RECORD_KEY, AvroSchema, avro_to_arrow, parse, to_json
from ingest.hudi.parquet import bloom_filter as bloom
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
                     *, path: str = "", bloom_filter: bloom.BloomFilter | None = None) -> tuple[bytes, BaseFileStats]:
    """The bytes of a base file holding `table`, and its stats (`path` is only echoed in them).

    `bloom_filter`: the filter of exactly `table`'s keys when the caller has it (`merged_bloom_filter`).
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
    data = encode_avro_parquet(table, writer_schema, options, key_values)

    meta = pq.read_metadata(pa.BufferReader(data))
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
    sink = io.BytesIO()
    rows_per_group = _rows_per_group(table, options.row_group_bytes)
    with pq.ParquetWriter(
        sink,
        table.schema,
        version="1.0",  # parquet-mr's default writer: format version 1, v1 data pages
        data_page_version="1.0",
        compression=options.compression,
        compression_level=options.compression_level,
        use_dictionary=options.dictionary,
        data_page_size=options.page_bytes,
        dictionary_pagesize_limit=options.page_bytes,
        write_statistics=True,
        write_page_index=True,  # parquet-mr 1.13 writes column and offset indexes
        store_schema=False,  # no ARROW:schema key: the footer holds Hudi's keys only
    ) as writer:
        writer.write_table(table, row_group_size=rows_per_group)
    key_values = [(AVRO_SCHEMA_KEY, to_json(writer_schema)), (WRITER_MODEL_KEY, "avro"), *extra_key_values]
    return _rewrite_footer(sink.getvalue(), _full_name(writer_schema), key_values, options.old_list_structure)


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
    if not pc.any(pc.match_substring_regex(keys, "[\ue000-\U0010ffff]")).as_py():
        bounds = pc.min_max(keys)
        return bounds["min"].as_py(), bounds["max"].as_py()
    values = keys.to_pylist()

    def java_order(s: str) -> bytes:
        return s.encode("utf-16-be", "surrogatepass")

    return min(values, key=java_order), max(values, key=java_order)


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
    """The key/value entries of the maps really present (Arrow's list flattening has no map kernel)."""
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
    meta = pq.read_metadata(pa.BufferReader(_MAGIC + footer + tail[-8:]))
    key_values = {k.decode("utf-8"): v.decode("utf-8") for k, v in (meta.metadata or {}).items()}
    return BaseFileFooter(meta.num_rows, meta.schema.to_arrow_schema(), key_values)


def read_base_file(storage: Storage, path: str, columns: Sequence[str] | None = None,
                   schema: pa.Schema | None = None) -> pa.Table:
    """The rows of a base file as Arrow.

    Without `schema`, columns get the Arrow types of the file's Avro writer schema (so lists read
    back as `element` lists whatever their parquet layout). With `schema` (the table's current
    schema, for evolution), the result has exactly its columns, in its order and types: columns
    and nested fields an older file lacks come back as nulls. `columns` selects by name.
    """
    with storage.open(path) as f:
        parquet = pq.ParquetFile(f)
        file_schema = parquet.schema_arrow
        if schema is None:
            avro_text = (parquet.metadata.metadata or {}).get(AVRO_SCHEMA_KEY.encode())
            schema = avro_to_arrow(parse(avro_text.decode("utf-8"))) if avro_text else file_schema
        wanted = [f for f in schema if columns is None or f.name in columns]
        if columns is not None:
            unknown = [c for c in columns if schema.get_field_index(c) < 0]
            if unknown:
                raise SchemaEvolutionError(f"{storage.url(path)}: no column(s) {unknown} in the schema")
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
        keys = _conform_array(array.keys, target.key_type)
        items = _conform_array(array.items, target.item_type)
        mask = array.is_null() if array.null_count else None
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=mask)
    if pa.types.is_list(target) and pa.types.is_list(array.type):
        values = _conform_array(array.values, target.value_type)
        mask = array.is_null() if array.null_count else None
        return pa.ListArray.from_arrays(array.offsets, values, type=target, mask=mask)
    return array.cast(target)


# -- the footer rewrite (Thrift compact protocol) ------------------------------------------------
#
# FileMetaData is kept as generic Thrift fields [field id, type, value] so every field pyarrow wrote
# survives untouched; only the schema names/levels, column paths and key/values are changed.

_T_TRUE, _T_FALSE, _T_BYTE, _T_I16, _T_I32, _T_I64, _T_DOUBLE, _T_BINARY, _T_LIST, _T_SET, _T_MAP, _T_STRUCT = range(1, 13)

# parquet.thrift field ids
_FMD_SCHEMA, _FMD_ROW_GROUPS, _FMD_KEY_VALUES = 2, 4, 5
_SE_REPETITION, _SE_NAME, _SE_NUM_CHILDREN, _SE_CONVERTED, _SE_LOGICAL = 3, 4, 5, 6, 10
_RG_COLUMNS, _CC_META, _CMD_PATH = 1, 3, 3
_REQUIRED, _REPEATED = 0, 2
_CONVERTED_LIST, _LOGICAL_LIST = 3, 3


class _ThriftReader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def _byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def _varint(self) -> int:
        shift = result = 0
        while True:
            b = self._byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def _zigzag(self) -> int:
        n = self._varint()
        return (n >> 1) ^ -(n & 1)

    def read_struct(self) -> list[list[Any]]:
        fields: list[list[Any]] = []
        last = 0
        while True:
            header = self._byte()
            if header == 0:
                return fields
            ttype, delta = header & 0x0F, header >> 4
            fid = last + delta if delta else self._zigzag()
            last = fid
            if ttype in (_T_TRUE, _T_FALSE):
                fields.append([fid, _T_TRUE, ttype == _T_TRUE])
            else:
                fields.append([fid, ttype, self._value(ttype)])

    def _value(self, ttype: int) -> Any:
        if ttype in (_T_TRUE, _T_FALSE):  # inside a collection: one byte
            return self._byte() == _T_TRUE
        if ttype == _T_BYTE:
            return self._byte()
        if ttype in (_T_I16, _T_I32, _T_I64):
            return self._zigzag()
        if ttype == _T_DOUBLE:
            self.pos += 8
            return self.data[self.pos - 8 : self.pos]
        if ttype == _T_BINARY:
            n = self._varint()
            self.pos += n
            return self.data[self.pos - n : self.pos]
        if ttype in (_T_LIST, _T_SET):
            header = self._byte()
            size, elem = header >> 4, header & 0x0F
            if size == 15:
                size = self._varint()
            return (elem, [self._value(elem) for _ in range(size)])
        if ttype == _T_MAP:
            size = self._varint()
            if not size:
                return (0, 0, [])
            kv = self._byte()
            return (kv >> 4, kv & 0x0F, [(self._value(kv >> 4), self._value(kv & 0x0F)) for _ in range(size)])
        if ttype == _T_STRUCT:
            return self.read_struct()
        raise IngestError(f"parquet footer holds an unknown Thrift type {ttype}")


def _varint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) if n >= 0 else ((-n) << 1) - 1)


def _write_struct(out: bytearray, fields: list[list[Any]]) -> None:
    last = 0
    for fid, ttype, value in fields:
        wire = (_T_TRUE if value else _T_FALSE) if ttype == _T_TRUE else ttype
        if 0 < fid - last <= 15:
            out.append(((fid - last) << 4) | wire)
        else:
            out.append(wire)
            _zigzag(out, fid)
        last = fid
        if ttype != _T_TRUE:
            _write_value(out, ttype, value)
    out.append(0)


def _write_value(out: bytearray, ttype: int, value: Any) -> None:
    if ttype in (_T_TRUE, _T_FALSE):
        out.append(_T_TRUE if value else _T_FALSE)
    elif ttype == _T_BYTE:
        out.append(value & 0xFF)
    elif ttype in (_T_I16, _T_I32, _T_I64):
        _zigzag(out, value)
    elif ttype == _T_DOUBLE:
        out += value
    elif ttype == _T_BINARY:
        _varint(out, len(value))
        out += value
    elif ttype in (_T_LIST, _T_SET):
        elem, items = value
        if len(items) < 15:
            out.append((len(items) << 4) | elem)
        else:
            out.append(0xF0 | elem)
            _varint(out, len(items))
        for item in items:
            _write_value(out, elem, item)
    elif ttype == _T_MAP:
        ktype, vtype, entries = value
        _varint(out, len(entries))
        if entries:
            out.append((ktype << 4) | vtype)
            for k, v in entries:
                _write_value(out, ktype, k)
                _write_value(out, vtype, v)
    elif ttype == _T_STRUCT:
        _write_struct(out, value)
    else:
        raise IngestError(f"cannot encode Thrift type {ttype}")


def _get(fields: list[list[Any]], fid: int) -> Any:
    for f in fields:
        if f[0] == fid:
            return f[2]
    return None


def _put(fields: list[list[Any]], fid: int, ttype: int, value: Any) -> list[list[Any]]:
    """A copy of `fields` with field `fid` set, kept in field id order."""
    out = [list(f) for f in fields if f[0] != fid] + [[fid, ttype, value]]
    return sorted(out, key=lambda f: f[0])


@dataclass
class _Node:
    element: list[list[Any]]
    children: list[_Node]

    @property
    def name(self) -> str:
        return _get(self.element, _SE_NAME).decode("utf-8")

    @property
    def repetition(self) -> int | None:
        return _get(self.element, _SE_REPETITION)

    def is_list(self) -> bool:
        logical = _get(self.element, _SE_LOGICAL)
        return _get(self.element, _SE_CONVERTED) == _CONVERTED_LIST or (
            logical is not None and _get(logical, _LOGICAL_LIST) is not None
        )

    def flatten(self) -> list[list[list[Any]]]:
        element = _put(self.element, _SE_NUM_CHILDREN, _T_I32, len(self.children)) if self.children else self.element
        return [element] + [e for child in self.children for e in child.flatten()]

    def leaf_paths(self, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        if not self.children:
            return [prefix]
        return [p for child in self.children for p in child.leaf_paths(prefix + (child.name,))]


def _schema_tree(elements: list[list[list[Any]]]) -> _Node:
    position = 0

    def build() -> _Node:
        nonlocal position
        element = elements[position]
        position += 1
        count = _get(element, _SE_NUM_CHILDREN) or 0
        return _Node(element, [build() for _ in range(count)])

    root = build()
    if position != len(elements):
        raise IngestError("parquet footer schema has elements outside its tree")
    return root


def _to_two_level(node: _Node) -> _Node:
    """parquet-avro's old list layout for every 3-level list with a required element."""
    children = [_to_two_level(c) for c in node.children]
    if node.is_list() and len(children) == 1:
        repeated = children[0]
        if (repeated.repetition == _REPEATED and repeated.name == "list" and len(repeated.children) == 1
                and repeated.children[0].repetition == _REQUIRED and repeated.children[0].name == "element"):
            element = repeated.children[0]
            merged = _put(element.element, _SE_REPETITION, _T_I32, _REPEATED)
            merged = _put(merged, _SE_NAME, _T_BINARY, b"array")
            children = [_Node(merged, element.children)]
    return _Node(node.element, children)


def _rewrite_footer(data: bytes, root_name: str, key_values: list[tuple[str, str]], two_level_lists: bool) -> bytes:
    """The file with its FileMetaData changed as the module docstring says; data pages untouched."""
    (footer_len,) = struct.unpack("<I", data[-8:-4])
    footer_start = len(data) - 8 - footer_len
    meta = _ThriftReader(data[footer_start:-8]).read_struct()

    elem_type, elements = _get(meta, _FMD_SCHEMA)
    tree = _schema_tree(elements)
    old_paths = tree.leaf_paths()
    if two_level_lists:
        tree = _to_two_level(tree)
    tree.element = _put(tree.element, _SE_NAME, _T_BINARY, root_name.encode("utf-8"))
    new_paths = tree.leaf_paths()
    meta = _put(meta, _FMD_SCHEMA, _T_LIST, (elem_type, tree.flatten()))

    _, row_groups = _get(meta, _FMD_ROW_GROUPS)
    for row_group in row_groups:
        _, columns = _get(row_group, _RG_COLUMNS)
        if len(columns) != len(new_paths):
            raise IngestError("parquet footer has a row group whose columns do not match its schema")
        for i, chunk in enumerate(columns):
            column_meta = _get(chunk, _CC_META)
            _, path = _get(column_meta, _CMD_PATH)
            if tuple(p.decode("utf-8") for p in path) != old_paths[i]:
                raise IngestError(f"parquet footer column {i} has path {path}, expected {old_paths[i]}")
            column_meta[:] = _put(column_meta, _CMD_PATH, _T_LIST, (_T_BINARY, [p.encode("utf-8") for p in new_paths[i]]))

    entries = [[[1, _T_BINARY, k.encode("utf-8")], [2, _T_BINARY, v.encode("utf-8")]] for k, v in key_values]
    meta = _put(meta, _FMD_KEY_VALUES, _T_LIST, (_T_STRUCT, entries))

    out = bytearray(data[:footer_start])
    _write_struct(out, meta)
    out += struct.pack("<I", len(out) - footer_start)
    out += _MAGIC
    return bytes(out)
