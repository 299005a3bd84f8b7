"""The content of data blocks: AVRO_DATA (read and write), CDC_DATA and PARQUET_DATA (read).

AVRO_DATA content, version 3 (`HoodieAvroDataBlock.serializeRecords`)::

    int32 version (3), int32 record count, then per record: int32 length + Avro binary datum

The datum has no container, sync marker or checksum, so decoding is strict to make up for it:
every declared length must be consumed exactly by its datum and the records must end exactly at
the end of the content. A mutated length or count is then caught; what strictness cannot catch is
a byte changed inside one record's value that leaves the datum well formed (say, one character of
a string): that record decodes to a different value, as it would in Hudi's own reader.

CDC_DATA content is framed the same way (`HoodieCDCDataBlock` extends the Avro block).
PARQUET_DATA content is a whole parquet file, with no prefix (`HoodieParquetDataBlock`).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
from fastavro.read import SchemaResolutionError

from ingest import parquet_bytes
from ingest.errors import BadRecordError, LogFormatError, SchemaEvolutionError, UnsupportedTable
from ingest.hudi.avro.schema import AvroSchema, to_json
from ingest.hudi.log.log_block import BlockType, HeaderKey, LogBlock, Metadata

DATA_BLOCK_VERSION = 3  # HoodieLogBlock.version
# Content versions 1 and 2 framed records the same way (HoodieAvroDataBlockVersion always has a count).
_READABLE_VERSIONS = (1, 2, 3)
_MAX_INT32 = 2**31 - 1


# -- schemas ------------------------------------------------------------------------------------


def schema_text(schema: AvroSchema | str) -> str:
    """The JSON text of a schema given as a dict or as text."""
    return schema if isinstance(schema, str) else to_json(schema)


def _check_unique_field_names(node: Any) -> None:
    # Avro forbids a field name twice in a record; fastavro accepts it and would merge the values.
    if isinstance(node, list):
        for item in node:
            _check_unique_field_names(item)
    elif isinstance(node, dict):
        fields = node.get("fields")
        if node.get("type") == "record" and isinstance(fields, list):
            names = [f.get("name") for f in fields if isinstance(f, dict)]
            if len(names) != len(set(names)):
                raise ValueError(f"record {node.get('name')!r} names a field twice")
        for value in node.values():
            if isinstance(value, (dict, list)):
                _check_unique_field_names(value)


@lru_cache(maxsize=64)
def parsed_schema(text: str) -> Any:
    """A schema's JSON text parsed for fastavro; raises LogFormatError if it is no Avro schema."""
    try:
        raw = json.loads(text)
        _check_unique_field_names(raw)
        return fastavro.parse_schema(raw)
    except Exception as e:  # fastavro reports bad schemas with assorted exception types
        raise LogFormatError(f"invalid Avro schema in log block header: {e}") from e


# -- AVRO_DATA encoding ---------------------------------------------------------------------------


def encode_avro_buffer(buffer: bytes | bytearray | memoryview, offsets: Sequence[int] | np.ndarray) -> bytes:
    """AVRO_DATA content from records already encoded back to back in `buffer`.

    `offsets` has one entry more than there are records: record i is
    `buffer[offsets[i]:offsets[i + 1]]`. The framing is built with numpy, without a Python loop
    per record, so a vectorized encoder can feed large batches.
    """
    offs = np.asarray(offsets, dtype=np.int64)
    if offs.ndim != 1 or offs.size < 1:
        raise ValueError("offsets must be a 1-d array with one entry more than there are records")
    src = np.frombuffer(memoryview(buffer).cast("B"), dtype=np.uint8)
    lengths = np.diff(offs)
    if offs[0] < 0 or offs[-1] > src.size or (lengths < 0).any():
        raise ValueError("offsets must be non-decreasing and inside the buffer")
    if lengths.size and int(lengths.max()) > _MAX_INT32:
        raise ValueError("an Avro record longer than 2 GiB cannot be framed")
    count = int(lengths.size)
    payload = src[int(offs[0]) : int(offs[-1])]
    out = np.empty(8 + 4 * count + payload.size, dtype=np.uint8)
    out[:8] = np.frombuffer(struct.pack(">ii", DATA_BLOCK_VERSION, count), dtype=np.uint8)
    if count:
        body = out[8:]
        # Record i's length prefix starts after i earlier prefixes and the payload bytes before it.
        prefix_at = (offs[:-1] - offs[0]) + 4 * np.arange(count, dtype=np.int64)
        is_payload = np.ones(body.size, dtype=bool)
        prefix_idx = (prefix_at[:, None] + np.arange(4, dtype=np.int64)).ravel()
        is_payload[prefix_idx] = False
        body[prefix_idx] = lengths.astype(">i4").view(np.uint8)
        body[is_payload] = payload
    return out.tobytes()


def encode_avro_payloads(payloads: Sequence[bytes]) -> bytes:
    """AVRO_DATA content from a list of already-encoded Avro datums."""
    parts = [struct.pack(">ii", DATA_BLOCK_VERSION, len(payloads))]
    for p in payloads:
        if len(p) > _MAX_INT32:
            raise ValueError("an Avro record longer than 2 GiB cannot be framed")
        parts.append(struct.pack(">i", len(p)))
        parts.append(bytes(p))
    return b"".join(parts)


def encode_avro_records(records: Iterable[Mapping[str, Any]], schema: AvroSchema | str) -> bytes:
    """AVRO_DATA content: each record encoded with `schema` (the writer schema of the header)."""
    parsed = parsed_schema(schema_text(schema))
    out = io.BytesIO()
    offsets = [0]
    for i, record in enumerate(records):
        try:
            fastavro.schemaless_writer(out, parsed, record)
        except Exception as e:  # fastavro signals misfit values with several exception types
            raise BadRecordError(f"record {i} does not fit the log block schema: {e}") from e
        offsets.append(out.tell())
    return encode_avro_buffer(out.getbuffer(), offsets)


def data_block_header(instant_time: str, schema: AvroSchema | str) -> Metadata:
    """The header Hudi writes on data blocks: the instant and the full writer schema."""
    return ((HeaderKey.INSTANT_TIME, instant_time), (HeaderKey.SCHEMA, schema_text(schema)))


def avro_data_block(instant_time: str, schema: AvroSchema | str, content: bytes) -> LogBlock:
    """An AVRO_DATA block of `content` from `encode_avro_records` / `_payloads` / `_buffer`."""
    return LogBlock(BlockType.AVRO_DATA, data_block_header(instant_time, schema), content)


# -- decoding -------------------------------------------------------------------------------------


def avro_record_count(content: bytes) -> int:
    """The record count an AVRO_DATA content declares (without decoding the records)."""
    if len(content) < 8:
        raise LogFormatError(f"AVRO_DATA content of {len(content)} bytes has no version and count")
    version, count = struct.unpack_from(">ii", content, 0)
    if version not in _READABLE_VERSIONS:
        raise LogFormatError(f"AVRO_DATA content version {version} is not one Hudi writes")
    if count < 0 or 8 + 4 * count > len(content):
        raise LogFormatError(f"AVRO_DATA content declares {count} records in {len(content)} bytes")
    return count


def decode_avro_content(
    content: bytes,
    writer_schema: AvroSchema | str,
    reader_schema: AvroSchema | str | None = None,
) -> list[dict[str, Any]]:
    """The records of an AVRO_DATA (or CDC_DATA) content, read with `reader_schema` if given.

    Raises LogFormatError when the bytes do not decode exactly, SchemaEvolutionError when the
    reader schema cannot read the writer's.
    """
    writer = parsed_schema(schema_text(writer_schema))
    reader = parsed_schema(schema_text(reader_schema)) if reader_schema is not None else None
    count = avro_record_count(content)
    view = memoryview(content)
    pos, end = 8, len(content)
    records: list[dict[str, Any]] = []
    for i in range(count):
        if pos + 4 > end:
            raise LogFormatError(f"AVRO_DATA record {i} of {count}: length runs past the content")
        (length,) = struct.unpack_from(">i", content, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise LogFormatError(f"AVRO_DATA record {i} of {count}: length {length} runs past the content")
        datum = io.BytesIO(view[pos : pos + length])
        try:
            record = fastavro.schemaless_reader(datum, writer, reader)
        except SchemaResolutionError as e:
            raise SchemaEvolutionError(f"the reader schema cannot read this block's records: {e}") from e
        except Exception as e:  # a malformed datum fails in fastavro with assorted exception types
            raise LogFormatError(f"AVRO_DATA record {i} of {count} does not decode: {e!r}") from e
        if datum.tell() != length:
            raise LogFormatError(
                f"AVRO_DATA record {i} of {count}: datum is {datum.tell()} bytes, its length says {length}"
            )
        records.append(record)
        pos += length
    if pos != end:
        raise LogFormatError(f"AVRO_DATA content has {end - pos} bytes after its {count} records")
    return records


def decode_parquet_content(content: bytes) -> pa.Table:
    """The rows of a PARQUET_DATA content (a whole parquet file)."""
    try:
        return parquet_bytes.read_table(content)
    except Exception as e:  # pyarrow reports damaged files with several exception types
        raise LogFormatError(f"PARQUET_DATA content is no readable parquet file: {e}") from e


_FLOATING = ("float", "double")


def _project(records: list[dict[str, Any]], reader_schema: AvroSchema | str) -> list[dict[str, Any]]:
    """The reader's top-level fields of each record, absent ones at their default; an int or long value
    of a field the reader reads as float or double becomes the nearest one, as Avro's resolution gives."""
    schema = json.loads(reader_schema) if isinstance(reader_schema, str) else reader_schema
    fields = [(f["name"], f.get("default")) for f in schema["fields"]]
    floating = {f["name"] for f in schema["fields"] if _is_floating(f["type"])}
    return [{name: _as_float(r.get(name, default)) if name in floating else r.get(name, default)
             for name, default in fields} for r in records]


def _is_floating(avro_type: Any) -> bool:
    branches = avro_type if isinstance(avro_type, list) else [avro_type]
    return any(b in _FLOATING for b in branches)


def _as_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def decode_data_block(block: LogBlock, reader_schema: AvroSchema | str | None = None) -> list[dict[str, Any]]:
    """The records of an AVRO_DATA, CDC_DATA or PARQUET_DATA block (HFILE_DATA: UnsupportedTable).

    For PARQUET_DATA a reader schema selects and orders the top-level columns (absent ones take
    their default); nested evolution is not applied there.
    """
    if block.block_type in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        schema = block.schema
        if schema is None:
            raise LogFormatError(f"{block.block_type.name} block at offset {block.offset} has no SCHEMA header")
        return decode_avro_content(block.content, schema, reader_schema)
    if block.block_type == BlockType.PARQUET_DATA:
        records = decode_parquet_content(block.content).to_pylist()
        return _project(records, reader_schema) if reader_schema is not None else records
    if block.block_type == BlockType.HFILE_DATA:
        raise UnsupportedTable("HFILE_DATA log blocks (metadata table) are not decoded by this library")
    raise ValueError(f"{block.block_type.name} is not a data block this library decodes")
