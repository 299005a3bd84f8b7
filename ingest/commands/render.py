"""Rendering values and rows for people (text tables) and for programs (JSON lines)."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, TextIO


def json_safe(value: Any) -> Any:
    """A value as plain JSON: bytes base64, decimals as strings, dates and times ISO."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # pyarrow gives maps as lists of (key, value) pairs.
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): json_safe(v) for k, v in value}
        return [json_safe(v) for v in value]
    return str(value)


def json_line(obj: Any) -> str:
    return json.dumps(json_safe(obj), ensure_ascii=False, separators=(",", ":"))


def _cell(value: Any, width: int) -> str:
    text = "null" if value is None else (value if isinstance(value, str) else json.dumps(json_safe(value), ensure_ascii=False))
    text = text.replace("\n", "\\n").replace("\t", "\\t")
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
