"""Java `.properties` files, read and written as `java.util.Properties` does.

`hoodie.properties` is stored by `Properties.store(OutputStream, comment)`: ISO-8859-1 text, every
character outside printable ASCII as `\\uXXXX`, and `=`, `:`, `#`, `!` and backslashes escaped in keys
and values (`saveConvert`). The header comment follows `writeComments` instead: only characters above
U+00FF and line breaks are touched, so Hudi's `Properties saved on 2025-03-31T03:06:42Z` keeps its
colons. Java readers (Hudi, Trino, Hive) parse it with `Properties.load`, so both directions follow that code
exactly; a value we cannot round-trip would silently change a table's settings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone

_SPECIAL = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def _escape(text: str, *, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == " ":
            out.append("\\ " if is_key or i == 0 else " ")
        elif ch in _SPECIAL:
            out.append(_SPECIAL[ch])
        elif ch in "=:#!\\":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            # Java escapes UTF-16 code units, so characters beyond the BMP become surrogate pairs.
            data = ch.encode("utf-16-be")
            for j in range(0, len(data), 2):
                out.append(f"\\u{data[j]:02X}{data[j + 1]:02X}")
        else:
            out.append(ch)
    return "".join(out)


def _comment(text: str) -> str:
    """`Properties.writeComments`: `#`, then the text with only chars above U+00FF escaped and each
    line break starting a new comment line (no extra `#` when the next line already starts one)."""
    out = ["#"]
    i = 0
    while i < len(text):
        ch = text[i]
        if ord(ch) > 0xFF:
            data = ch.encode("utf-16-be")
            out.extend(f"\\u{data[j]:02X}{data[j + 1]:02X}" for j in range(0, len(data), 2))
        elif ch in "\r\n":
            out.append("\n")
            if ch == "\r" and text[i + 1 : i + 2] == "\n":
                i += 1
            if i == len(text) - 1 or text[i + 1] not in "#!":
                out.append("#")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def dumps(props: Mapping[str, str], comment: str | None = None, *, now: datetime | None = None) -> str:
    """Serialize like `Properties.store`: comment line, date line, then `key=value` lines."""
    now = now or datetime.now(timezone.utc)
    lines = []
    if comment is not None:
        lines.append(_comment(comment))
    lines.append("#" + now.strftime("%a %b %d %H:%M:%S UTC %Y"))
    for key, value in props.items():
        lines.append(f"{_escape(key, is_key=True)}={_escape(value, is_key=False)}")
    return "\n".join(lines) + "\n"


def _logical_lines(text: str) -> Iterable[str]:
    """Join continuation lines (odd number of trailing backslashes) and drop comments and blanks."""
    pending = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending is None else raw.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _unescape(text: str) -> str:
    out = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= n:
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        i += 2
    # Re-pair UTF-16 surrogates that arrived as separate \\u escapes.
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


def loads(text: str) -> dict[str, str]:
    """Parse like `Properties.load`, keeping the order in which keys appear."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        i = 0
        n = len(line)
        while i < n:
            ch = line[i]
            if ch == "\\":
                i += 2
                continue
            if ch in "=: \t\f":
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        props[_unescape(key)] = _unescape(rest)
    return props


def decode_bytes(data: bytes) -> str:
    """`Properties.load(InputStream)` reads ISO-8859-1."""
    return data.decode("latin-1")


def encode_text(text: str) -> bytes:
    return text.encode("latin-1")
