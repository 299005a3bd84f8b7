"""Partition paths as Hudi 0.14/0.15 writes them, and the rule that keeps them inside the table.

Hudi builds a partition path from field values (`KeyGenUtils.getPartitionPath` /
`getRecordPartitionPath`): a null or empty value becomes `__HIVE_DEFAULT_PARTITION__`, with
`hoodie.datasource.write.partitionpath.urlencode` the value is escaped by
`PartitionPathEncodeUtils.escapePathName`, with hive style it is prefixed by `<field>=`, and the
parts are joined by `/`. `TimestampBasedKeyGenerator` instead formats a time with a Joda-Time
pattern: `timestamp_format.py` (its settings) and `joda_time.py` (the pattern engine).

Safety policy. Hudi writes whatever string comes out, so a value can create extra folder levels
(`a/b`), climb (`..`), land in the table's own metadata (`.hoodie`) or name something a file system
refuses. Escaping does not save us: `escapePathName` leaves `.` alone, so `..` and `.hoodie`
survive it. Every path is therefore checked before use and refused, per record, unless it has
exactly the table's partition depth and every folder name is 1-255 UTF-8 bytes, does not start with
`.`, and holds no control character, `\\` or `:` (a Windows drive or separator; Hadoop's `Path`
reads `x:` as a URI scheme). With urlencode on, `/`, `\\`, `:` and control characters are escaped
by Hudi itself, so only dot-leading and over-long names remain refusable. Nothing is rewritten: a
refused record is reported, never written somewhere else.

Without urlencode a value is also refused where Hudi's readers would take it for another: Spark's
reader keeps a folder name holding `=` as `<name>=<value>` and reads what follows the `=`
(`SparkHoodieTableFileIndex.doParsePartitionColumnValues`), Hudi's sync tools refuse such a path
(`HiveStylePartitionValueExtractor`, `MultiPartKeysValueExtractor`), and Spark decodes `%XX` in a value
(`ExternalCatalogUtils.unescapePathName`). A value spelled `__HIVE_DEFAULT_PARTITION__` reads as null
with or without urlencode.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import BadRecordError

DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"
MAX_SEGMENT_BYTES = 255
URLENCODE_KEY = "hoodie.datasource.write.partitionpath.urlencode"

# PartitionPathEncodeUtils.charToEscape: ASCII control characters and these punctuation marks.
_ESCAPED = frozenset([chr(c) for c in range(0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))
_UNSAFE_RE2 = r"(^|/)\.|[\x00-\x1f\x7f\\:]|^/|//|/$"


def java_split(text: str, regex: str = ",") -> list[str]:
    """Java's `String.split(regex)`: trailing empty strings are dropped (so `"a,"` gives `["a"]`)."""
    parts = re.split(regex, text) if text else [""]
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if parts == [""] and text:
        return []
    return parts


# -- escaping and composition ----------------------------------------------------------------------


def escape_path_name(value: str) -> str:
    """`PartitionPathEncodeUtils.escapePathName`: `%XX` for each escaped UTF-16 unit below 128."""
    if not value:
        return DEFAULT_PARTITION_PATH
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def escape_path_names(values: pa.Array) -> pa.Array:
    """`escape_path_name` over a string array: one replace pass per escapable character present."""
    present = _escapable_present(values)
    if not present:
        return values
    for char in sorted(present, key=lambda c: c != "%"):  # '%' first, so escapes are not escaped again
        values = pc.replace_substring(values, char, f"%{ord(char):02X}")
    return values


_ESCAPED_BYTES = np.zeros(256, dtype=bool)
_ESCAPED_BYTES[[ord(c) for c in _ESCAPED]] = True


def _escapable_present(values: pa.Array) -> set[str]:
    """The escapable characters occurring anywhere in a string array (a scan of its UTF-8 bytes;
    they are all ASCII, which never occurs inside a multi-byte character)."""
    data = _utf8_bytes(values)
    return {chr(b) for b in np.unique(data[_ESCAPED_BYTES[data]]).tolist()}


def _utf8_bytes(values: pa.Array) -> np.ndarray:
    """The UTF-8 bytes of a string array's values, one after the other, without a copy."""
    values = values.cast(pa.large_string())
    buffers = values.buffers()
    if buffers[2] is None or len(values) == 0:
        return np.zeros(0, dtype=np.uint8)
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[values.offset : values.offset + len(values) + 1]
    return np.frombuffer(buffers[2], dtype=np.uint8)[offsets[0] : offsets[-1]]


def partition_segments(values: pa.Array, field: str, *, hive_style: bool, urlencode: bool) -> pa.Array:
    """One partition level from the field's Java strings (`KeyGenUtils.getPartitionPath`)."""
    missing = pc.or_(pc.is_null(values), pc.equal(pc.binary_length(values), 0))
    missing = pc.fill_null(missing, True)
    present = escape_path_names(values) if urlencode else values
    segments = pc.if_else(missing, pa.scalar(DEFAULT_PARTITION_PATH), present)
    if hive_style:
        segments = pc.binary_join_element_wise(pa.scalar(f"{field}="), segments, "")
    return segments


def join_segments(levels: Sequence[pa.Array], length: int) -> pa.Array:
    """Levels joined by `/`; no levels gives the empty path of a non-partitioned table."""
    if not levels:
        return pa.array([""] * length, pa.string())
    if len(levels) == 1:
        return levels[0]
    return pc.binary_join_element_wise(*levels, "/")


# -- safety -----------------------------------------------------------------------------------------


def partition_path_problem(path: str | None, expected_depth: int) -> str | None:
    """Why `path` may not be used under a table whose partitions are `expected_depth` deep, or None."""
    if path is None:
        return "partition path is missing"
    if expected_depth == 0:
        return None if path == "" else f"partition path {path!r} given for a non-partitioned table"
    segments = path.split("/")
    if len(segments) != expected_depth:
        return (
            f"partition path {path!r} has {len(segments)} folder levels where the table has "
            f"{expected_depth}: a partition value holds '/' ({URLENCODE_KEY}=true escapes it)"
        )
    for segment in segments:
        problem = _segment_problem(segment)
        if problem:
            return f"partition path {path!r} refused: {problem}"
    return None


def _segment_problem(segment: str) -> str | None:
    if segment == "":
        return "empty folder name (a value starting or ending with '/', or an absolute path)"
    if segment.startswith("."):
        return f"folder name {segment!r} starts with '.' ('.', '..' climb; dot names are hidden or Hudi's own)"
    bad = [c for c in segment if ord(c) < 0x20 or c in "\x7f\\:"]
    if bad:
        return (
            f"folder name {segment!r} holds {bad[0]!r} (control characters, '\\\\' and ':' are refused; "
            f"{URLENCODE_KEY}=true escapes them)"
        )
    try:
        size = len(segment.encode("utf-8"))
    except UnicodeEncodeError:
        return f"folder name {segment!r} is not valid Unicode"
    if size > MAX_SEGMENT_BYTES:
        return f"folder name {segment[:40]!r}... is {size} bytes; file systems allow {MAX_SEGMENT_BYTES}"
    return None


def misread_value_problems(values: pa.Array, field: str, *, hive_style: bool, urlencode: bool,
                           parsed: bool = True) -> dict[int, str]:
    """Row -> why Hudi's readers would read a partition field's value (its Java string, before escaping)
    as another; a byte search picks the rows to look at (such values are rare).

    `parsed=False` for a value Spark's Hudi reader takes whole, as a string (a path deeper than its
    partition columns): only Hudi's sync tools still split a hive-style folder on its `=`."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    suspect = pc.equal(values, pa.scalar(DEFAULT_PARTITION_PATH))
    if not urlencode and _holds_any(values, b"=%"):
        suspect = pc.or_(suspect, pc.match_substring_regex(values, "[=%]"))
    rows = np.flatnonzero(pc.fill_null(suspect, False).to_numpy(zero_copy_only=False)).tolist()
    out = {}
    for row in rows:
        problem = _misread(values[row].as_py(), hive_style, urlencode, parsed)
        if problem:
            out[row] = f"partition path field {field!r}: {problem}"
    return out


def _holds_any(values: pa.Array, chars: bytes) -> bool:
    """Whether any value holds one of these ASCII characters (a byte search, cheaper than a regex)."""
    data = _utf8_bytes(values).tobytes()
    return any(bytes([c]) in data for c in chars)


def _misread(value: str, hive_style: bool, urlencode: bool, parsed: bool) -> str | None:
    if not parsed and not hive_style:
        return None
    if value == DEFAULT_PARTITION_PATH and parsed:
        return (f"value {value!r} is the folder name of null values, and Spark's readers read it as null "
                "(PartitioningUtils.castPartValueToDesiredType)")
    if urlencode:
        return None
    if "=" in value:
        why = ("Hudi's sync tools refuse the folder (HiveStylePartitionValueExtractor, "
               "MultiPartKeysValueExtractor)" if hive_style else
               "Spark's Hudi reader reads what follows it as the value "
               "(SparkHoodieTableFileIndex.doParsePartitionColumnValues)")
        return f"value {value!r} holds '=': {why}; {URLENCODE_KEY}=true escapes it"
    if not parsed:
        return None
    decoded = unescape_path_name(value)
    if decoded != value:
        return (f"value {value!r} holds '%' escapes Spark's readers decode "
                f"(ExternalCatalogUtils.unescapePathName), reading {decoded!r}; {URLENCODE_KEY}=true escapes '%'")
    return None


def unescape_path_name(text: str) -> str:
    """Spark 3's `ExternalCatalogUtils.unescapePathName`, which Spark's readers apply to string partition
    values: each `%` with two more UTF-16 units after it that `Integer.parseInt(_, 16)` takes as a
    number of at least 0 becomes that character (a sign and non-ASCII digits included; Spark 4 decodes
    ASCII hex digits only, a subset)."""
    out = []
    i = 0
    while i < len(text):
        code = java_parse_hex(text[i + 1:i + 3]) if text[i] == "%" and _utf16_units(text[i + 1:i + 3]) == 2 else None
        if code is not None and code >= 0:
            out.append(chr(code))
            i += 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _utf16_units(text: str) -> int:
    return sum(2 if ord(c) > 0xFFFF else 1 for c in text)


def java_parse_hex(text: str) -> int | None:
    """`Integer.parseInt(text, 16)` for short strings, None where it throws."""
    sign, digits = (text[0], text[1:]) if text[:1] in ("+", "-") else ("", text)
    if not digits:
        return None
    value = 0
    for c in digits:
        digit = _java_digit16(c)
        if digit < 0:
            return None
        value = value * 16 + digit
    return -value if sign == "-" else value


def _java_digit16(c: str) -> int:
    """`Character.digit(c, 16)` of a UTF-16 unit: decimal digits of any script, and Latin letters a-f, ASCII
    or fullwidth (a character beyond the BMP is two surrogate units, neither a digit)."""
    if ord(c) > 0xFFFF:
        return -1
    if c.isdecimal():
        return unicodedata.decimal(c)
    for first in ("a", "A", "\uff41", "\uff21"):
        if 0 <= ord(c) - ord(first) < 6:
            return 10 + ord(c) - ord(first)
    return -1


def validate_partition_path(path: str, expected_depth: int) -> str:
    """Last line of defence before a file is created under `path`: returns it or raises BadRecordError."""
    problem = partition_path_problem(path, expected_depth)
    if problem:
        raise BadRecordError(problem)
    return path


def partition_path_problems(paths: pa.Array | pa.ChunkedArray, expected_depth: int) -> dict[int, str]:
    """Row -> problem for every refused path, each distinct path checked once (a batch holds few)."""
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks()
    encoded = paths.dictionary_encode()
    problems = _distinct_problems(encoded.dictionary, expected_depth)
    codes = encoded.indices
    missing = np.flatnonzero(codes.is_null().to_numpy(zero_copy_only=False)).tolist() if codes.null_count else []
    out = dict.fromkeys(missing, partition_path_problem(None, expected_depth))
    if problems:
        refused = np.flatnonzero(np.isin(codes.fill_null(-1).to_numpy(zero_copy_only=False), list(problems)))
        out.update({row: problems[code] for row, code in zip(
            refused.tolist(), codes.take(pa.array(refused)).to_pylist(), strict=True)})
    return dict(sorted(out.items()))


def _distinct_problems(paths: pa.Array, expected_depth: int) -> dict[int, str]:
    """Index -> problem for every refused path; a cheap vectorized screen picks the paths to check."""
    if expected_depth == 0:
        suspect = pc.not_equal(paths, pa.scalar(""))
    else:
        suspect = pc.or_(
            pc.not_equal(pc.count_substring(paths, "/"), expected_depth - 1),
            pc.or_(
                pc.match_substring_regex(paths, _UNSAFE_RE2),
                pc.greater(pc.binary_length(paths), MAX_SEGMENT_BYTES),
            ),
        )
    suspect = pc.fill_null(suspect, True)
    rows = np.flatnonzero(suspect.to_numpy(zero_copy_only=False))
    problems = {}
    for row in rows.tolist():
        problem = partition_path_problem(paths[row].as_py(), expected_depth)
        if problem:
            problems[row] = problem
    return problems
