"""Rendering values and rows for people (text tables) and for programs (JSON lines).

One rendering per type, whichever command prints it (`read`, `demo`, `inspect`), written so that
Hudi's own JSON reader (`MercifulJsonConverter`) takes it back for the column's Avro type: maps as
JSON objects (an empty map is `{}`, never `[]`), decimals as their digits in a string (the scale
kept), timestamps ISO 8601 with `Z` when they are instants (timestamp-micros) and without a zone when
they are local (local-timestamp-micros), dates and times ISO, bytes base64. A text table shows the
same text, without the quotes around a top-level string.

Arrow hands maps over as lists of pairs, so tables are rendered by their Arrow types (`plain_rows`);
values with no schema (decoded log records) by their Python types (`json_safe`).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

import pyarrow as pa


def _time(value: dt.date | dt.time) -> str:
    """ISO 8601; an instant (a datetime with a zone) in UTC with `Z`."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat() + "Z"
    return value.isoformat()


def json_safe(value: Any) -> Any:
    """A value as plain JSON by its Python type (see the module docstring for each rendering)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.time)):
        return _time(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return str(value)


def _typed(value: Any, type_: pa.DataType) -> Any:
    """`json_safe` guided by the Arrow type, so maps (lists of pairs in Python) stay objects."""
    if value is None:
        return None
    if pa.types.is_map(type_):
        return {str(json_safe(k)): _typed(v, type_.item_type) for k, v in value}
    if pa.types.is_struct(type_):
        return {f.name: _typed(value.get(f.name), f.type) for f in type_}
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return [_typed(v, type_.value_type) for v in value]
    if pa.types.is_dictionary(type_):
        return _typed(value, type_.value_type)
    return json_safe(value)


def plain_rows(table: pa.Table) -> Iterator[dict[str, Any]]:
    """Each row of an Arrow table as a dict of plain JSON values, rendered by column type."""
    types = [(f.name, f.type) for f in table.schema]
    for batch in table.to_batches():
        for record in batch.to_pylist():
            yield {name: _typed(record[name], type_) for name, type_ in types}


def json_line(obj: Any) -> str:
    return json.dumps(json_safe(obj), ensure_ascii=False, separators=(",", ":"))


def cell_text(value: Any) -> str:
    """A value as a text table shows it: its JSON rendering, a top-level string without quotes."""
    value = json_safe(value)
    if value is None:
        return "null"
    return value if isinstance(value, str) else json_line(value)


def _cell(value: Any, width: int) -> str:
    text = cell_text(value).replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= width else text[: width - 1] + "…"


def text_table(out: TextIO, columns: Sequence[str], rows: Iterable[Sequence[Any]], max_width: int = 40) -> None:
    """A plain aligned table, cells clipped to `max_width` characters."""
    cells = [[_cell(v, max_width) for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in cells:
        widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    out.write(line.rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for row in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")


def table_text(out: TextIO, table: pa.Table, max_width: int = 40) -> None:
    """An Arrow table as a text table, each cell rendered by its column's type."""
    names = table.column_names
    text_table(out, names, ([r[n] for n in names] for r in plain_rows(table)), max_width=max_width)
