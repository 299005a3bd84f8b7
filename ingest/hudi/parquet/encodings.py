"""Which columns of a base file are dictionary-encoded: where parquet-mr would keep a dictionary.

Hudi writes base files through parquet-mr with dictionaries enabled (`hoodie.parquet.dictionary.enabled`,
default true), but parquet-mr keeps a column's dictionary only where it pays: `FallbackValuesWriter`
asks `DictionaryValuesWriter.isCompressionSatisfying(rawSize, encodedSize)`, that is
`encodedSize + dictionaryByteSize < rawSize`, when the first page is written, and otherwise writes the
column plain. Record keys, sequence numbers and other unique values therefore go plain in Hudi's files.
pyarrow keeps every dictionary until it outgrows its page, which makes such columns larger and their
encoding about twice as slow, so the same question is asked here of each leaf column's first values.
Booleans and fixed-length byte arrays (decimals, Avro `fixed`) never get one: parquet-mr's
`DefaultV1ValuesWriterFactory` writes them plain ("dictionary encoding was not enabled in PARQUET 1.0").
Leaves inside lists and maps keep pyarrow's dictionary.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

SAMPLE_VALUES = 4096  # parquet-mr decides on its first page; a prefix answers the same for all but rare data


def dictionary_columns(table: pa.Table, sample: int = SAMPLE_VALUES,
                       known: Mapping[str, bool] | None = None) -> list[str]:
    """The leaf column paths (as pyarrow names them) whose dictionary pays on their first `sample` rows;
    `known` answers for the leaves it names (a merged file keeps the choice of the file it rewrites)."""
    return [path for path, keep in dictionary_choice(table, sample, known).items() if keep]


def dictionary_choice(table: pa.Table, sample: int = SAMPLE_VALUES,
                      known: Mapping[str, bool] | None = None) -> dict[str, bool]:
    """Every leaf column path with whether it gets a dictionary (`dictionary_columns`), in the form
    `known` takes: files written from one batch can share the answer of the first."""
    choice: dict[str, bool] = {}
    known = known or {}
    for field, column in zip(table.schema, table.columns, strict=True):
        head = column.slice(0, sample)
        values = head.combine_chunks() if head.num_chunks != 1 else head.chunk(0)
        _collect(field.name, field.type, values, choice, known)
    return choice


def settled_by(num_rows: int) -> bool:
    """Whether a choice made on `num_rows` rows fills the sample, so that a file starting with them (a
    merge's rewrite) or holding rows of the same batch can take it instead of sampling again."""
    return num_rows >= SAMPLE_VALUES


def _collect(path: str, dtype: pa.DataType, values: pa.Array | None, out: dict[str, bool],
             known: Mapping[str, bool]) -> None:
    if pa.types.is_struct(dtype):
        for i, child in enumerate(dtype):
            _collect(f"{path}.{child.name}", child.type, values.field(i) if values is not None else None, out, known)
    elif pa.types.is_map(dtype):
        _collect(f"{path}.key_value.key", dtype.key_type, None, out, known)
        _collect(f"{path}.key_value.value", dtype.item_type, None, out, known)
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype):
        _collect(f"{path}.list.element", dtype.value_type, None, out, known)
    elif pa.types.is_boolean(dtype) or pa.types.is_null(dtype) or _fixed_len_byte_array(dtype):
        out[path] = False
    elif path in known:
        out[path] = known[path]
    else:
        out[path] = values is None or pa.types.is_dictionary(dtype) or _pays(values)


def _fixed_len_byte_array(dtype: pa.DataType) -> bool:
    """Decimals and fixed Avro values, which parquet's v1 writer never dictionary-encodes."""
    return pa.types.is_fixed_size_binary(dtype) or pa.types.is_decimal(dtype)


def _pays(values: pa.Array) -> bool:
    """`encodedSize + dictionaryByteSize < rawSize` for these values, sized as parquet-mr sizes them:
    plain binary is 4 bytes of length plus the bytes, ids are bit-packed at the width of the largest."""
    values = values.drop_null()
    n = len(values)
    if n == 0:
        return True
    distinct = pc.unique(values)
    d = len(distinct)
    dtype = values.type
    if pa.types.is_binary(dtype) or pa.types.is_string(dtype) or pa.types.is_large_binary(dtype) \
            or pa.types.is_large_string(dtype):
        raw = 4 * n + pc.sum(pc.binary_length(values)).as_py()
        dictionary = 4 * d + (pc.sum(pc.binary_length(distinct)).as_py() or 0)
    else:
        try:
            width = max(1, dtype.byte_width)
        except ValueError:  # no fixed width and no binary: keep pyarrow's choice
            return True
        raw, dictionary = width * n, width * d
    encoded = 1 + (n * (d - 1).bit_length() + 7) // 8
    return encoded + dictionary < raw
