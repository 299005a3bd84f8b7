"""JSON message values read strictly against the declared schema, vectorized (see `ingest.kafka.decode`
for the typing rules): a chunk of messages per `pyarrow.json` call, a bad message read alone."""

from __future__ import annotations

import base64
import binascii
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ingest.kafka.outcome import Outcome, aligned, loose, rows_where

# -- JSON ---------------------------------------------------------------------------------------


def _json_read_type(dtype: pa.DataType) -> pa.DataType:
    """What pyarrow.json reads for a declared type: dates and base64 binaries arrive as strings,
    and every field may be null (pyarrow would reject a NOT NULL field under a null parent;
    `_finish` checks NOT NULL where it applies)."""
    if pa.types.is_date(dtype) or pa.types.is_binary(dtype) or pa.types.is_fixed_size_binary(dtype):
        return pa.string()
    if pa.types.is_float32(dtype):  # read wide, so a number beyond FLOAT's range is seen, not made infinite
        return pa.float64()
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(_json_read_type(f.type)).with_nullable(True) for f in dtype])
    if pa.types.is_list(dtype):
        return pa.list_(dtype.value_field.with_type(_json_read_type(dtype.value_type)).with_nullable(True))
    return dtype


def _needs_finish(dtype: pa.DataType, nullable: bool) -> bool:
    if not nullable or _json_read_type(dtype) != dtype:
        return True  # (a nested NOT NULL field also makes the read type differ)
    if pa.types.is_struct(dtype):
        return any(_needs_finish(f.type, f.nullable) for f in dtype)
    if pa.types.is_list(dtype):
        return _needs_finish(dtype.value_type, dtype.value_field.nullable)
    return False


def _convert_strings(arr: pa.Array, dtype: pa.DataType, path: str) -> tuple[pa.Array, dict[int, str]]:
    """Dates ("YYYY-MM-DD") and base64 binaries from the strings JSON carries them in."""
    errors: dict[int, str] = {}
    if pa.types.is_date(dtype):
        try:
            return pc.cast(arr, dtype), errors
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            out = []
            for i, text in enumerate(arr.to_pylist()):
                try:
                    out.append(None if text is None else pc.cast(pa.array([text]), dtype)[0].as_py())
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    errors[i] = f"field {path}: {text!r} is not a date (YYYY-MM-DD)"
                    out.append(None)
            return pa.array(out, dtype), errors
    out_bytes: list[bytes | None] = []
    for i, text in enumerate(arr.to_pylist()):
        if text is None:
            out_bytes.append(None)
            continue
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            errors[i] = f"field {path}: not base64"
            out_bytes.append(None)
            continue
        if pa.types.is_fixed_size_binary(dtype) and len(raw) != dtype.byte_width:
            errors[i] = f"field {path}: {len(raw)} bytes where {dtype.byte_width} are declared"
            out_bytes.append(None)
            continue
        out_bytes.append(raw)
    return pa.array(out_bytes, dtype), errors


def _finish(arr: pa.Array, dtype: pa.DataType, nullable: bool, path: str) -> tuple[pa.Array, dict[int, str]]:
    """Bring a read column to its declared type and check what pyarrow.json does not: NOT NULL,
    FLOAT's range, dates, base64. Returns the column and errors by row."""
    errors: dict[int, str] = {}
    if pa.types.is_struct(dtype):
        children = []
        for i, child_field in enumerate(dtype):
            child = pc.struct_field(arr, [i])
            if arr.null_count:  # struct_field ignores the parent's nulls; apply them
                child = pc.if_else(arr.is_valid(), child, pa.nulls(len(arr), child.type))
            done, child_errors = _finish(child, child_field.type, child_field.nullable, f"{path}.{child_field.name}")
            for row, message in child_errors.items():
                if arr[row].is_valid:
                    errors.setdefault(row, message)
            children.append(done)
        arr = pa.StructArray.from_arrays(children, fields=list(dtype), mask=arr.is_null())
    elif pa.types.is_list(dtype):
        flat = arr.flatten()
        done, child_errors = _finish(flat, dtype.value_type, dtype.value_field.nullable, f"{path}[]")
        if child_errors:
            parents = pc.list_parent_indices(arr).to_numpy()
            for row, message in child_errors.items():
                errors.setdefault(int(parents[row]), message)
        lengths = pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False)
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
        arr = pa.ListArray.from_arrays(offsets, done, type=dtype, mask=arr.is_null())
    elif pa.types.is_float32(dtype):
        narrow = pc.cast(arr, dtype, safe=False)
        for row in rows_where(pc.and_(pc.is_finite(arr), pc.invert(pc.is_finite(narrow)))):
            errors[int(row)] = f"field {path}: {arr[int(row)].as_py()} is beyond the range of FLOAT"
        arr = narrow
    elif arr.type != dtype:
        arr, errors = _convert_strings(arr, dtype, path)
    if not nullable:
        for row in rows_where(arr.is_null()):
            errors.setdefault(int(row), f"field {path} is required but missing or null")
    return arr, errors


_PARSE_CHANGED = re.compile(r"Column\(([^)]*)\) changed from (\w+) to (\w+)")
_PARSE_TWICE = re.compile(r"Column\(([^)]*)\) was specified twice")


def _field_path(pointer: str) -> str:
    return pointer.strip("/").replace("/[]", "[]").replace("/", ".") or "(top level)"


def _json_message(error: Exception) -> str:
    text = str(error).split("\n")[0]
    text = re.sub(r" in row \d+$", "", text)
    if m := _PARSE_CHANGED.search(text):
        return f"field {_field_path(m.group(1))}: expected {m.group(2)}, got {m.group(3)}"
    if m := _PARSE_TWICE.search(text):
        return f"field {_field_path(m.group(1))} appears twice"
    if text.startswith("JSON parse error: "):
        return "invalid JSON: " + text[len("JSON parse error: ") :].rstrip(".")
    return text


def _read_buffer(data: pa.Buffer | bytes, schema: pa.Schema, *, newlines: bool) -> pa.Table:
    # One block for the whole buffer, so a parse error's "in row N" counts from its start.
    size = data.size if isinstance(data, pa.Buffer) else len(data)
    return pa_json.read_json(
        pa.BufferReader(data),
        read_options=pa_json.ReadOptions(use_threads=False, block_size=size + 2),
        parse_options=pa_json.ParseOptions(
            explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=newlines
        ),
    )


_JSON_FAILURES = (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError)
_IN_ROW = re.compile(r" in row (\d+)$")
MAX_CHUNK_ROWS = 16_384
MAX_CHUNK_BYTES = 32 << 20


def _explain(value: bytes, schema: pa.Schema, error: Exception) -> str:
    """The error of one message, naming the field when pyarrow's message does not."""
    message = _json_message(error)
    if message.startswith("field ") or message.startswith("invalid JSON"):
        return message
    for f in schema:
        try:
            _read_buffer(value, pa.schema([f]), newlines=True)
        except _JSON_FAILURES as e:
            return f"field {f.name}: {_json_message(e)}"
    return message


def _joined(values: pa.Array) -> tuple[pa.Buffer, np.ndarray]:
    """The values one per line, without copying them through Python, and where each line starts."""
    lines = pc.binary_join_element_wise(values, pa.scalar(b"\n"), pa.scalar(b""))
    buffers = lines.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[lines.offset : lines.offset + len(lines) + 1]
    return buffers[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0])), (offsets - offsets[0]).astype(np.int64)


def _read_alone(value: pa.Scalar, schema: pa.Schema) -> pa.Table | str:
    """One message by itself (newlines allowed inside): its single row, or what is wrong with it."""
    try:
        table = _read_buffer(value.as_buffer(), schema, newlines=True)
    except _JSON_FAILURES as e:
        return _explain(value.as_py(), schema, e)
    return table if table.num_rows == 1 else "more than one JSON value in the message"


def _chunks(rows: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """`rows` cut into runs small enough to parse as one block each."""
    if not len(rows):
        return []
    by_bytes = np.cumsum(lengths[rows] + 1) // MAX_CHUNK_BYTES
    run = by_bytes * (len(rows) + 1) + np.arange(len(rows)) // MAX_CHUNK_ROWS
    return np.split(rows, np.flatnonzero(np.diff(run)) + 1)


def read_json(values: pa.Array, schema: pa.Schema) -> Outcome:
    """Decode non-null binary `values` (JSON objects) to `schema`; one outcome row per value.

    Messages are parsed a chunk at a time. A parse error names its row: that message is confirmed
    bad by reading it alone, and the rows around it are parsed again. Errors found only after
    parsing (a number out of range, a bad timestamp) carry no row, so such a chunk is halved
    until the culprit stands alone. Good data costs one parse; each bad message about one more.
    """
    n = len(values)
    read_schema = pa.schema([f.with_type(_json_read_type(f.type)).with_nullable(True) for f in schema])
    errors: dict[int, str] = {}
    try:
        texts = pc.cast(values, pa.string())
    except pa.ArrowInvalid:
        texts_list = []
        for i, raw in enumerate(values.to_pylist()):
            try:
                texts_list.append(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                errors[i] = f"not UTF-8: {e.reason} at byte {e.start}"
                texts_list.append("")
        texts = pa.array(texts_list, pa.string())
    trimmed = pc.utf8_ltrim(texts, characters=" \t\r\n")
    for row in rows_where(pc.invert(pc.starts_with(trimmed, "{"))):
        row = int(row)
        if row not in errors:
            errors[row] = "empty value" if not trimmed[row].as_py().strip() else "not a JSON object"
    multiline = rows_where(pc.match_substring_regex(texts, "[\r\n]"))
    good = np.setdiff1d(np.arange(n), np.fromiter(errors.keys(), dtype=np.int64, count=len(errors)))
    single = np.intersect1d(good, multiline)
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False) if n else np.zeros(0, dtype=np.int64)
    pieces: list[tuple[np.ndarray, pa.Table]] = []
    for i in single:
        alone = _read_alone(values[int(i)], read_schema)
        if isinstance(alone, str):
            errors[int(i)] = alone
        else:
            pieces.append((np.array([i]), alone))
    for rows in _chunks(np.setdiff1d(good, single), lengths):
        buffer, starts = _joined(values.take(pa.array(rows)))
        ranges = [(0, len(rows))]
        while ranges:
            a, b = ranges.pop()
            if b - a == 1:
                alone = _read_alone(values[int(rows[a])], read_schema)
                if isinstance(alone, str):
                    errors[int(rows[a])] = alone
                else:
                    pieces.append((rows[a:b], alone))
                continue
            bad_row = None
            try:
                data = buffer.slice(int(starts[a]), int(starts[b] - starts[a]))
                table = _read_buffer(data, read_schema, newlines=False)
                if table.num_rows == b - a:
                    pieces.append((rows[a:b], table))
                    continue
            except _JSON_FAILURES as e:
                found = _IN_ROW.search(str(e).split("\n")[0])
                bad_row = a + int(found.group(1)) if found else None
            if bad_row is not None and bad_row < b:
                alone = _read_alone(values[int(rows[bad_row])], read_schema)
                if isinstance(alone, str):
                    errors[int(rows[bad_row])] = alone
                    ranges += [r for r in ((bad_row + 1, b), (a, bad_row)) if r[1] > r[0]]
                    continue
            middle = (a + b) // 2
            ranges += [(middle, b), (a, middle)]
    table = aligned(pieces, n, read_schema)
    columns = []
    for f in schema:
        column = table.column(f.name).combine_chunks()
        if _needs_finish(f.type, f.nullable):
            column, column_errors = _finish(column, f.type, f.nullable, f.name)
            for row, message in column_errors.items():
                # Rows that failed to parse are null everywhere: their first error is the cause.
                errors.setdefault(row, message)
        columns.append(column)
    return Outcome(pa.Table.from_arrays(columns, schema=loose(schema)), errors)
