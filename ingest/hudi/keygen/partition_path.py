"""Partition paths as Hudi 0.14/0.15 writes them, and the rule that keeps them inside the table.

Hudi builds a partition path from field values (`KeyGenUtils.getPartitionPath` /
`getRecordPartitionPath`): a null or empty value becomes `__HIVE_DEFAULT_PARTITION__`, with
`hoodie.datasource.write.partitionpath.urlencode` the value is escaped by
`PartitionPathEncodeUtils.escapePathName`, with hive style it is prefixed by `<field>=`, and the
parts are joined by `/`. `TimestampBasedKeyGenerator` instead formats a time with a Joda-Time
pattern (`TimestampBasedAvroKeyGenerator`, `HoodieDateTimeParser`); that formatting lives here too.

Safety policy. Hudi writes whatever string comes out, so a value can create extra folder levels
(`a/b`), climb (`..`), land in the table's own metadata (`.hoodie`) or name something a file system
refuses. Escaping does not save us: `escapePathName` leaves `.` alone, so `..` and `.hoodie`
survive it. Every path is therefore checked before use and refused, per record, unless it has
exactly the table's partition depth and every folder name is 1-255 UTF-8 bytes, does not start with
`.`, and holds no control character, `\\` or `:` (a Windows drive or separator; Hadoop's `Path`
reads `x:` as a URI scheme). With urlencode on, `/`, `\\`, `:` and control characters are escaped
by Hudi itself, so only dot-leading and over-long names remain refusable. Nothing is rewritten: a
refused record is reported, never written somewhere else.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.errors import BadRecordError, ConfigError

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
    values = values.cast(pa.large_string())
    buffers = values.buffers()
    if buffers[2] is None or len(values) == 0:
        return set()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[values.offset : values.offset + len(values) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    return {chr(b) for b in np.unique(data[_ESCAPED_BYTES[data]]).tolist()}


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


def validate_partition_path(path: str, expected_depth: int) -> str:
    """Last line of defence before a file is created under `path`: returns it or raises BadRecordError."""
    problem = partition_path_problem(path, expected_depth)
    if problem:
        raise BadRecordError(problem)
    return path


def partition_path_problems(paths: pa.Array, expected_depth: int) -> dict[int, str]:
    """Row -> problem for every refused path; a cheap vectorized screen picks the rows to check."""
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


# -- time zones as Hudi's Joda-Time code resolves them ----------------------------------------------

# Joda's DateTimeZone.forTimeZone maps these old three-letter Java ids before looking them up.
_JODA_OLD_IDS = {
    "GMT": "UTC", "MET": "CET", "ECT": "CET", "MIT": "Pacific/Apia", "HST": "Pacific/Honolulu",
    "AST": "America/Anchorage", "PST": "America/Los_Angeles", "MST": "America/Denver",
    "PNT": "America/Phoenix", "CST": "America/Chicago", "EST": "America/New_York",
    "IET": "America/Indiana/Indianapolis", "PRT": "America/Puerto_Rico", "CNT": "America/St_Johns",
    "AGT": "America/Argentina/Buenos_Aires", "BET": "America/Sao_Paulo", "ART": "Africa/Cairo",
    "CAT": "Africa/Harare", "EAT": "Africa/Addis_Ababa", "NET": "Asia/Yerevan", "PLT": "Asia/Karachi",
    "IST": "Asia/Kolkata", "BST": "Asia/Dhaka", "VST": "Asia/Ho_Chi_Minh", "CTT": "Asia/Shanghai",
    "JST": "Asia/Tokyo", "ACT": "Australia/Darwin", "AET": "Australia/Sydney",
    "SST": "Pacific/Guadalcanal", "NST": "Pacific/Auckland",
}
_CUSTOM_ID = re.compile(r"GMT([+-])(\d{1,2})(?::?(\d{2}))?")


@cache
def _known_zone_ids() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones() | {"UTC"})


def joda_zone(java_id: str, key: str) -> str:
    """The zone `DateTimeZone.forTimeZone(TimeZone.getTimeZone(id))` gives: `UTC`, `+HH:MM` or a tz name.

    Java silently turns an unknown id into GMT; we refuse it instead, naming the config key.
    """
    zone_id = java_id.strip()
    if zone_id in ("UTC", "GMT", "UT", "Z"):
        return "UTC"
    custom = _CUSTOM_ID.fullmatch(zone_id)
    if custom:
        sign, hours, minutes = custom.group(1), int(custom.group(2)), int(custom.group(3) or 0)
        if hours > 23 or minutes > 59:
            raise ConfigError(f"time zone offset out of range in {java_id!r}", key=key)
        return "UTC" if hours == minutes == 0 else f"{sign}{hours:02d}:{minutes:02d}"
    converted = _JODA_OLD_IDS.get(zone_id, zone_id)
    if converted in _known_zone_ids():
        return "UTC" if converted in ("Etc/UTC", "Etc/GMT", "GMT") else converted
    raise ConfigError(
        f"unknown time zone {java_id!r} (Java would silently use GMT); use a tz name such as "
        "'UTC' or 'Asia/Kolkata', or 'GMT+05:30'",
        key=key,
    )


def _fixed_offset_ms(zone: str) -> int | None:
    if zone == "UTC":
        return 0
    if zone[0] in "+-":
        sign = -1 if zone[0] == "-" else 1
        return sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60) * 1000
    return None


def _offset_zone(offset_ms: int) -> str:
    """Joda's `DateTimeZone.forOffsetMillis` id (minutes precision suffices for parsed offsets)."""
    if offset_ms == 0:
        return "UTC"
    sign = "-" if offset_ms < 0 else "+"
    minutes = abs(offset_ms) // 60000
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _local_to_instant(local_ms: int, zone: str) -> int:
    """Joda's `DateTimeParserBucket.computeMillis` for a zone: earlier offset in overlaps, gaps fail."""
    fixed = _fixed_offset_ms(zone)
    if fixed is not None:
        return local_ms - fixed
    tz = zoneinfo.ZoneInfo(zone)
    try:
        local = _EPOCH_NAIVE + timedelta(milliseconds=local_ms)
        instant = local.replace(tzinfo=tz, fold=0).astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(f"local time outside years 1..9999 cannot be placed in time zone {zone}") from None
    if instant.astimezone(tz).replace(tzinfo=None) != local:
        raise ValueError(f"local time {local.isoformat()} does not exist in {zone} (offset transition)")
    return (instant - _EPOCH) // timedelta(milliseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EPOCH_NAIVE = datetime(1970, 1, 1)


# -- Joda-Time patterns ------------------------------------------------------------------------------

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# Joda's DateTimeFormat.isNumericToken: a following numeric field limits how many digits a year reads.
_NUMERIC_LETTERS = frozenset("cCxyYdhHmsSeDFwWkK")
_PRINTABLE = frozenset("GCYxwyeEDMdaKhHkmsSZ")
_PARSEABLE = frozenset("yYMdaKhHkmsSZ")
_MAX_DIGITS = {"M": 2, "d": 2, "H": 2, "k": 2, "K": 2, "h": 2, "m": 2, "s": 2}


@dataclass(frozen=True)
class _Token:
    letter: str  # "" for literal text
    count: int = 0
    text: str = ""
    max_digits: int = 0  # how many digits parsing may read (years; `_MAX_DIGITS` otherwise)
    lenient: bool = True  # two-digit years: accept a full year unless a number follows


def _is_numeric(token: str) -> bool:
    return bool(token) and (token[0] in _NUMERIC_LETTERS or (token[0] == "M" and len(token) <= 2))


def _split_pattern(pattern: str) -> list[str]:
    """Joda's `DateTimeFormat.parseToken`: letter runs, and quoted/unquoted literal text (prefixed `'`)."""
    tokens = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c.isascii() and c.isalpha():
            j = i
            while j + 1 < n and pattern[j + 1] == c:
                j += 1
            tokens.append(pattern[i : j + 1])
            i = j + 1
            continue
        buf, in_literal = ["'"], False
        while i < n:
            c = pattern[i]
            if c == "'":
                if i + 1 < n and pattern[i + 1] == "'":
                    i += 1
                    buf.append("'")
                else:
                    in_literal = not in_literal
            elif not in_literal and c.isascii() and c.isalpha():
                break
            else:
                buf.append(c)
            i += 1
        tokens.append("".join(buf))
    return tokens


@dataclass(frozen=True)
class JodaPattern:
    """A Joda-Time `DateTimeFormat` pattern, printed over arrays and parsed per string.

    Supported letters: printing `G C Y x w y e E D M d a K h H k m s S Z`, parsing `y Y M d a K h H
    k m s S Z`; `z` (zone names) and week/day fields in input formats are refused. Text is English.
    """

    pattern: str
    tokens: tuple[_Token, ...]

    @classmethod
    def compile(cls, pattern: str, key: str, *, for_parsing: bool = False) -> JodaPattern:
        if not pattern:
            raise ConfigError("empty date format", key=key)
        raw = _split_pattern(pattern)
        allowed = _PARSEABLE if for_parsing else _PRINTABLE
        tokens = []
        for index, token in enumerate(raw):
            if token[0] == "'":
                tokens.append(_Token("", text=token[1:]))
                continue
            letter, count = token[0], len(token)
            if letter not in allowed:
                use = "input" if for_parsing else "output"
                raise ConfigError(f"pattern letter {letter!r} of {pattern!r} is not supported in {use} formats", key=key)
            next_numeric = index + 1 < len(raw) and _is_numeric(raw[index + 1])
            if letter in "yYx":
                max_digits = count if next_numeric else 9
            else:
                max_digits = count if letter == "S" else _MAX_DIGITS.get(letter, 0)
            tokens.append(_Token(letter, count, max_digits=max_digits, lenient=not next_numeric))
        return cls(pattern, tuple(tokens))

    @property
    def depth(self) -> int:
        """Folder levels the printed text spans (its literal `/` plus one)."""
        return 1 + sum(t.text.count("/") for t in self.tokens)

    @property
    def prints_zone_id(self) -> bool:
        return any(t.letter == "Z" and t.count >= 3 for t in self.tokens)

    # -- printing --

    def print_millis(self, millis: np.ndarray, zone: str) -> tuple[pa.Array, np.ndarray]:
        """`DateTime(millis, zone).toString(pattern)` per instant, and the rows that cannot be placed."""
        millis = np.asarray(millis, dtype=np.int64)
        offsets, bad = zone_offsets(millis, zone)
        fields = _Fields(np.where(bad, 0, millis + offsets), offsets, zone)
        pieces = [pa.scalar(t.text) if not t.letter else _print_token(t, fields) for t in self.tokens]
        if len(pieces) == 1:
            pieces.append(pa.scalar(""))
        text = pc.binary_join_element_wise(*pieces, "")
        if isinstance(text, pa.Scalar):
            text = pa.array([text.as_py()] * len(millis), pa.string())
        return (pc.if_else(pa.array(bad), pa.scalar(None, pa.string()), text) if bad.any() else text), bad

    # -- parsing --

    def parse_prefix(self, text: str) -> tuple[int, dict[str, int | str]]:
        """Parse greedily from the start; returns (characters consumed, fields) or (-1, {})."""
        fields: dict[str, int | str] = {}
        pos = 0
        for token in self.tokens:
            pos = _parse_token(token, text, pos, fields)
            if pos < 0:
                return -1, {}
        return pos, fields


# Arrow's zone rules stop at the tz database's last explicit transition (2037); Joda and zoneinfo
# extend them by the recurring rule, so later instants take their offsets from zoneinfo.
_ARROW_ZONE_LIMIT_MS = 2114380800000  # 2037-01-01T00:00:00Z
_ZONEINFO_LIMIT_MS = 253402300799999 - 86_400_000  # a day short of the end of year 9999


def zone_offsets(millis: np.ndarray, zone: str) -> tuple[np.ndarray, np.ndarray]:
    """UTC offsets (ms) of the instants in `zone`, and a mask of instants the zone cannot place."""
    fixed = _fixed_offset_ms(zone)
    if fixed is not None:
        return np.full(len(millis), fixed, dtype=np.int64), np.zeros(len(millis), dtype=bool)
    early = millis < _ARROW_ZONE_LIMIT_MS
    offsets = np.zeros(len(millis), dtype=np.int64)
    if early.any():
        ts = pa.array(millis[early], pa.timestamp("ms", tz=zone))
        offsets[early] = pc.local_timestamp(ts).cast(pa.int64()).to_numpy() - millis[early]
    bad = ~early & (millis > _ZONEINFO_LIMIT_MS)
    late = np.flatnonzero(~early & ~bad)
    if late.size:
        tz = zoneinfo.ZoneInfo(zone)
        for row in late.tolist():
            instant = _EPOCH + timedelta(milliseconds=int(millis[row]))
            offsets[row] = int(instant.astimezone(tz).utcoffset().total_seconds() * 1000)
    return offsets, bad


class _Fields:
    """Calendar fields of local times (instant + offset), computed once per field on demand."""

    def __init__(self, local: np.ndarray, offsets: np.ndarray, zone: str):
        self.ts = pa.array(local, pa.timestamp("ms"))
        self.offsets, self.zone, self.length = offsets, zone, len(local)
        self._cache: dict[str, np.ndarray] = {}

    def get(self, name: str) -> np.ndarray:
        if name == "offset":
            return self.offsets
        if name not in self._cache:
            value = getattr(pc, name)(self.ts).to_numpy(zero_copy_only=False)
            self._cache[name] = np.asarray(value, dtype=np.int64)
        return self._cache[name]


def _digits(values: np.ndarray, width: int) -> pa.Array:
    """Joda's padded integer printing: zero-padded to `width`, a leading '-' for negatives."""
    text = pc.utf8_lpad(pa.array(np.abs(values)).cast(pa.string()), width=width, padding="0")
    if (values < 0).any():
        text = pc.if_else(pa.array(values < 0), pc.binary_join_element_wise("-", text, ""), text)
    return text


def _names(index: np.ndarray, names: Sequence[str]) -> pa.Array:
    return pa.array(names, pa.string()).take(pa.array(index))


def _print_token(token: _Token, f: _Fields) -> pa.Array:
    letter, count = token.letter, token.count
    if letter in "yY" and count == 2:
        return _digits(np.abs(f.get("year")) % 100, 2)
    if letter == "y":
        return _digits(f.get("year"), count)
    year_of_era = np.where(f.get("year") > 0, f.get("year"), 1 - f.get("year"))
    if letter == "Y":
        return _digits(year_of_era, count)
    if letter == "C":
        return _digits(year_of_era // 100, count)
    if letter == "G":
        return _names((f.get("year") <= 0).astype(np.int64), ("AD", "BC"))
    if letter == "x":
        weekyear = f.get("iso_year")
        return _digits(np.abs(weekyear) % 100, 2) if count == 2 else _digits(weekyear, count)
    if letter == "w":
        return _digits(f.get("iso_week"), count)
    if letter == "e":
        return _digits(f.get("day_of_week") + 1, count)
    if letter == "E":
        return _names(f.get("day_of_week"), _DAYS if count >= 4 else tuple(d[:3] for d in _DAYS))
    if letter == "D":
        return _digits(f.get("day_of_year"), count)
    if letter == "M":
        if count >= 3:
            return _names(f.get("month") - 1, _MONTHS if count >= 4 else tuple(m[:3] for m in _MONTHS))
        return _digits(f.get("month"), count)
    if letter == "d":
        return _digits(f.get("day"), count)
    hour = f.get("hour")
    if letter == "a":
        return _names((hour >= 12).astype(np.int64), ("AM", "PM"))
    if letter in "HkKh":
        value = {"H": hour, "k": np.where(hour == 0, 24, hour), "K": hour % 12,
                 "h": np.where(hour % 12 == 0, 12, hour % 12)}[letter]
        return _digits(value, count)
    if letter == "m":
        return _digits(f.get("minute"), count)
    if letter == "s":
        return _digits(f.get("second"), count)
    if letter == "S":
        millis = pc.utf8_lpad(pa.array(f.get("millisecond")).cast(pa.string()), width=3, padding="0")
        if count <= 3:
            return pc.utf8_slice_codeunits(millis, 0, count)
        return pc.utf8_rpad(millis, width=count, padding="0")
    # Z: offset as +HHMM (Z), +HH:MM (ZZ), or the zone id (ZZZ); Joda prints zero as +0000.
    if count >= 3:
        return pa.array([f.zone] * f.length, pa.string())
    offset = f.get("offset")
    sign = np.where(offset < 0, "-", "+")
    minutes = np.abs(offset) // 60000  # Joda truncates the seconds of old local-mean-time offsets
    hh = pc.utf8_lpad(pa.array(minutes // 60).cast(pa.string()), width=2, padding="0")
    mm = pc.utf8_lpad(pa.array(minutes % 60).cast(pa.string()), width=2, padding="0")
    return pc.binary_join_element_wise(pa.array(sign), hh, ":" if count == 2 else "", mm, "")


def _read_number(text: str, pos: int, max_digits: int, signed: bool) -> tuple[int, int | None]:
    end = pos
    if signed and end < len(text) and text[end] in "+-":
        end += 1
    digits_end = end
    while digits_end < len(text) and digits_end - end < max_digits and text[digits_end].isascii() and text[digits_end].isdigit():
        digits_end += 1
    if digits_end == end:
        return pos, None
    return digits_end, int(text[pos:digits_end])


def _read_text(text: str, pos: int, choices: Mapping[str, int]) -> tuple[int, int | None]:
    """Longest case-insensitive match among the choices (Joda's TextField parsing)."""
    best = None
    for name, value in choices.items():
        if text[pos : pos + len(name)].lower() == name.lower() and (best is None or len(name) > len(best[0])):
            best = (name, value)
    if best is None:
        return pos, None
    return pos + len(best[0]), best[1]


_MONTH_CHOICES = {**{m: i + 1 for i, m in enumerate(_MONTHS)}, **{m[:3]: i + 1 for i, m in enumerate(_MONTHS)}}
_FIELD_OF = {"M": "month", "d": "day", "H": "hour", "k": "clockhour", "K": "hour_of_halfday",
             "h": "clockhour_of_halfday", "m": "minute", "s": "second"}


def _parse_token(token: _Token, text: str, pos: int, fields: dict[str, int | str]) -> int:
    letter = token.letter
    if not letter:
        literal = token.text
        return pos + len(literal) if text[pos : pos + len(literal)].lower() == literal.lower() else -1
    if letter in "yY" and token.count == 2:
        return _parse_two_digit_year(token, text, pos, fields)
    if letter in "yY":
        end, value = _read_number(text, pos, token.max_digits, signed=letter == "y")
        if value is None:
            return -1
        fields["year"] = value  # a year of era (Y) is taken as AD: no era can be parsed
        return end
    if letter == "M" and token.count >= 3:
        end, value = _read_text(text, pos, _MONTH_CHOICES)
    elif letter == "a":
        end, value = _read_text(text, pos, {"AM": 0, "PM": 1})
        if value is not None:
            fields["halfday"] = value
        return end if value is not None else -1
    elif letter == "S":
        end, _ = _read_number(text, pos, token.max_digits, signed=False)
        if end == pos:
            return -1
        fields["millisecond"] = int((text[pos:end] + "000")[:3])
        return end
    elif letter == "Z":
        return _parse_zone(token, text, pos, fields)
    else:
        end, value = _read_number(text, pos, token.max_digits, signed=False)
    if value is None:
        return -1
    fields[_FIELD_OF[letter]] = value
    return end


def _parse_two_digit_year(token: _Token, text: str, pos: int, fields: dict[str, int | str]) -> int:
    """Joda's TwoDigitYear: pivot 30 years before now (as `DateTimeFormat` builds it)."""
    end, value = _read_number(text, pos, 9 if token.lenient else 2, signed=token.lenient)
    if value is None:
        return -1
    if token.lenient and (end - pos != 2 or text[pos] in "+-"):
        fields["year"] = value
        return end
    if end - pos != 2:
        return -1
    low = datetime.now(timezone.utc).year - 30 - 50
    t = low % 100 if low >= 0 else 99 + ((low + 1) % 100)
    fields["year"] = value + low + (100 if value < t else 0) - t
    return end


def _parse_zone(token: _Token, text: str, pos: int, fields: dict[str, int | str]) -> int:
    if token.count >= 3:
        candidates = [z for z in _known_zone_ids() if text.startswith(z, pos)]
        if not candidates:
            return -1
        zone = max(candidates, key=len)
        fields["zone"] = "UTC" if zone == "UTC" else zone
        return pos + len(zone)
    if text[pos : pos + 1] in ("Z", "z"):
        fields["offset"] = 0
        return pos + 1
    if text[pos : pos + 1] not in ("+", "-"):
        return -1
    sign = -1 if text[pos] == "-" else 1
    hh = text[pos + 1 : pos + 3]
    if len(hh) < 2 or not hh.isdigit() or not hh.isascii() or int(hh) > 23:
        return -1
    end, minutes = pos + 3, 0
    if end < len(text) and (text[end] == ":" or (text[end].isascii() and text[end].isdigit())):
        start = end + 1 if text[end] == ":" else end
        mm = text[start : start + 2]
        if not (len(mm) == 2 and mm.isascii() and mm.isdigit() and int(mm) <= 59):
            return -1
        minutes, end = int(mm), start + 2
    fields["offset"] = sign * (int(hh) * 3600 + minutes * 60) * 1000
    return end


def _days_from_civil(year: int, month: int, day: int) -> int:
    y = year - (month <= 2)
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _local_millis(fields: Mapping[str, int | str]) -> int:
    """Joda's bucket: unparsed fields default to 1970-01-01T00:00:00.000; values are range-checked."""
    year, month, day = int(fields.get("year", 1970)), int(fields.get("month", 1)), int(fields.get("day", 1))
    if not 1 <= month <= 12:
        raise ValueError(f"Value {month} for monthOfYear must be in the range [1,12]")
    if not 1 <= day <= _days_in_month(year, month):
        raise ValueError(f"Value {day} for dayOfMonth must be in the range [1,{_days_in_month(year, month)}]")
    if "hour" in fields:
        hour = int(fields["hour"])
        _check(hour, 0, 23, "hourOfDay")
    elif "clockhour" in fields:
        hour = int(fields["clockhour"])
        _check(hour, 1, 24, "clockhourOfDay")
        hour %= 24
    else:
        if "hour_of_halfday" in fields:
            in_half = int(fields["hour_of_halfday"])
            _check(in_half, 0, 11, "hourOfHalfday")
        else:
            in_half = int(fields.get("clockhour_of_halfday", 12))
            _check(in_half, 1, 12, "clockhourOfHalfday")
            in_half %= 12
        hour = 12 * int(fields.get("halfday", 0)) + in_half
    minute, second = int(fields.get("minute", 0)), int(fields.get("second", 0))
    _check(minute, 0, 59, "minuteOfHour")
    _check(second, 0, 59, "secondOfMinute")
    day_ms = ((hour * 60 + minute) * 60 + second) * 1000 + int(fields.get("millisecond", 0))
    return _days_from_civil(year, month, day) * 86_400_000 + day_ms


def _check(value: int, low: int, high: int, name: str) -> None:
    if not low <= value <= high:
        raise ValueError(f"Value {value} for {name} must be in the range [{low},{high}]")


# -- TimestampBasedKeyGenerator ----------------------------------------------------------------------

TIMESTAMP_TYPES = ("UNIX_TIMESTAMP", "DATE_STRING", "MIXED", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS", "SCALAR")
TIME_UNITS = {"NANOSECONDS": -1_000_000, "MICROSECONDS": -1000, "MILLISECONDS": 1, "SECONDS": 1000,
              "MINUTES": 60_000, "HOURS": 3_600_000, "DAYS": 86_400_000}
_PREFIX, _OLD_PREFIX = "hoodie.keygen.timebased.", "hoodie.deltastreamer.keygen.timebased."
TIMESTAMP_TYPE_KEY = _PREFIX + "timestamp.type"
OUTPUT_FORMAT_KEY = _PREFIX + "output.dateformat"
INPUT_FORMAT_KEY = _PREFIX + "input.dateformat"
DELIMITER_KEY = _PREFIX + "input.dateformat.list.delimiter.regex"
TIMEZONE_KEY = _PREFIX + "timezone"
INPUT_TIMEZONE_KEY = _PREFIX + "input.timezone"
OUTPUT_TIMEZONE_KEY = _PREFIX + "output.timezone"
TIME_UNIT_KEY = _PREFIX + "timestamp.scalar.time.unit"
PARSER_CLASS_KEY = "hoodie.keygen.datetime.parser.class"
_PARSER_OLD_KEY = "hoodie.deltastreamer.keygen.datetime.parser.class"
DEFAULT_PARSER_CLASS = "org.apache.hudi.keygen.parser.HoodieDateTimeParser"
# HoodieTableConfig.PERSISTED_CONFIG_LIST: what Hudi copies into hoodie.properties (with alternatives).
PERSISTED_TIMESTAMP_KEYS = tuple(
    k
    for suffix in ("timestamp.scalar.time.unit", "input.dateformat.list.delimiter.regex", "input.dateformat",
                   "input.timezone", "output.dateformat", "output.timezone", "timezone")
    for k in (_PREFIX + suffix, _OLD_PREFIX + suffix)
) + (PARSER_CLASS_KEY, _PARSER_OLD_KEY)


def _lookup(config: Mapping[str, str], key: str) -> str | None:
    """`ConfigUtils.getRawValueWithAltKeys`: the key, else its deprecated `hoodie.deltastreamer.` twin."""
    if key in config:
        return config[key]
    if key == PARSER_CLASS_KEY:
        return config.get(_PARSER_OLD_KEY)
    return config.get(_OLD_PREFIX + key[len(_PREFIX) :]) if key.startswith(_PREFIX) else None


def _millis_from_units(values: np.ndarray, unit_factor: int) -> np.ndarray:
    """`TimeUnit.MILLISECONDS.convert`: finer units truncate toward zero, coarser ones saturate."""
    values = values.astype(np.int64)
    if unit_factor < 0:
        divisor = -unit_factor
        return np.sign(values) * (np.abs(values) // divisor)
    if unit_factor == 1:
        return values
    limit = np.iinfo(np.int64).max // unit_factor
    out = values * unit_factor
    out = np.where(values > limit, np.iinfo(np.int64).max, out)
    return np.where(values < -limit, np.iinfo(np.int64).min, out)


def _java_long_from_float(values: np.ndarray) -> np.ndarray:
    """Java's `(long) double`: NaN is 0, out-of-range saturates, otherwise truncation."""
    values = values.astype(np.float64)
    out = np.zeros(len(values), dtype=np.int64)
    finite = np.isfinite(values) & (np.abs(values) < 2.0**63)
    out[finite] = np.trunc(values[finite]).astype(np.int64)
    out[(values >= 2.0**63)] = np.iinfo(np.int64).max
    out[(values <= -(2.0**63))] = np.iinfo(np.int64).min
    return out


@dataclass(frozen=True)
class TimestampPartitionFormat:
    """Hudi's `TimestampBasedAvroKeyGenerator.getPartitionPath`, before escaping and hive style."""

    timestamp_type: str
    unit_factor: int  # TIME_UNITS value for numeric input; 0 for DATE_STRING / MIXED
    output: JodaPattern
    inputs: tuple[JodaPattern, ...]
    input_zone: str | None
    output_zone: str | None
    jvm_zone: str

    @classmethod
    def from_config(cls, config: Mapping[str, str], jvm_timezone: str = "UTC") -> TimestampPartitionFormat:
        timestamp_type = _lookup(config, TIMESTAMP_TYPE_KEY)
        if timestamp_type is None or timestamp_type not in TIMESTAMP_TYPES:
            raise ConfigError(f"{timestamp_type!r} is not one of {', '.join(TIMESTAMP_TYPES)}", key=TIMESTAMP_TYPE_KEY)
        parser = _lookup(config, PARSER_CLASS_KEY)
        if parser not in (None, DEFAULT_PARSER_CLASS):
            raise ConfigError(f"only {DEFAULT_PARSER_CLASS} is supported", key=PARSER_CLASS_KEY)
        output_format = _lookup(config, OUTPUT_FORMAT_KEY)
        if output_format is None:
            raise ConfigError("required by the timestamp key generator", key=OUTPUT_FORMAT_KEY)
        output = JodaPattern.compile(output_format, OUTPUT_FORMAT_KEY)
        if timestamp_type in ("DATE_STRING", "MIXED"):
            unit_factor = 0
            formats = _lookup(config, INPUT_FORMAT_KEY) or ""
            delimiter = (_lookup(config, DELIMITER_KEY) or ",").strip() or ","
            patterns = [p.strip() for p in java_split(formats, delimiter)] if formats else []
            if not patterns:
                raise ConfigError(f"required when the timestamp type is {timestamp_type}", key=INPUT_FORMAT_KEY)
            inputs = tuple(JodaPattern.compile(p, INPUT_FORMAT_KEY, for_parsing=True) for p in patterns)
        else:
            unit = {"UNIX_TIMESTAMP": "SECONDS", "EPOCHMILLISECONDS": "MILLISECONDS",
                    "EPOCHMICROSECONDS": "MICROSECONDS"}.get(timestamp_type)
            unit = unit or (_lookup(config, TIME_UNIT_KEY) or "SECONDS").upper()
            if unit not in TIME_UNITS:
                raise ConfigError(f"{unit!r} is not one of {', '.join(TIME_UNITS)}", key=TIME_UNIT_KEY)
            unit_factor, inputs = TIME_UNITS[unit], ()
        # HoodieDateTimeParser: the deprecated single zone wins; absent zones mean the JVM default.
        both = _lookup(config, TIMEZONE_KEY)
        zones = []
        for key in (INPUT_TIMEZONE_KEY, OUTPUT_TIMEZONE_KEY):
            value, named = (both, TIMEZONE_KEY) if both is not None else (_lookup(config, key), key)
            zones.append(joda_zone(value, named) if value and value.strip() else None)
        return cls(timestamp_type, unit_factor, output, inputs, zones[0], zones[1],
                   joda_zone(jvm_timezone, "JVM default time zone"))

    def depth(self, urlencode: bool) -> int:
        return 1 if urlencode else self.output.depth

    def format(self, values: pa.Array, field: str, consistent_logical_timestamp: bool) -> tuple[pa.Array, dict[int, str]]:
        """Formatted partition values (no escaping, no `field=`) and row -> error for unparseable rows."""
        dtype = values.type
        if self.unit_factor == 0:
            if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_null(dtype)):
                raise ConfigError(
                    f"partition field {field!r} has type {dtype}; timestamp type {self.timestamp_type} needs strings",
                    key=TIMESTAMP_TYPE_KEY,
                )
            return self._format_strings(values.cast(pa.string()))
        millis = self._instants(values, field, consistent_logical_timestamp)
        return self._print(millis, [self.output_zone or self.jvm_zone] * len(millis))

    def _instants(self, values: pa.Array, field: str, consistent: bool) -> np.ndarray:
        """Epoch milliseconds as Hudi derives them from each Avro value type; null means 1 unit."""
        dtype = values.type
        default = _millis_from_units(np.array([1]), self.unit_factor)[0]
        if pa.types.is_timestamp(dtype):
            if not consistent or dtype.tz is None or dtype.unit not in ("ms", "us"):
                raise ConfigError(
                    f"partition field {field!r} has type {dtype}: Hudi would read the raw number as "
                    f"{self.timestamp_type} (or fail); set hoodie.datasource.write.keygenerator."
                    "consistent.logical.timestamp.enabled=true to partition by a timestamp column",
                    key=TIMESTAMP_TYPE_KEY,
                )
            raw = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
            millis = np.sign(raw) * (np.abs(raw) // 1000) if dtype.unit == "us" else raw
            return np.where(values.is_null().to_numpy(zero_copy_only=False), default, millis)
        if pa.types.is_integer(dtype) and dtype != pa.uint64():
            raw = pc.fill_null(values.cast(pa.int64()), 1).to_numpy(zero_copy_only=False)
        elif pa.types.is_floating(dtype):
            raw = _java_long_from_float(pc.fill_null(values.cast(pa.float64()), 1.0).to_numpy(zero_copy_only=False))
        elif pa.types.is_decimal(dtype):
            # BigDecimal.longValue(): truncate, then keep the low 64 bits.
            raw = np.array([1 if v is None else ((int(v) + 2**63) % 2**64) - 2**63 for v in values.to_pylist()],
                           dtype=np.int64)
        elif pa.types.is_date32(dtype):
            raw = pc.fill_null(values.cast(pa.int32()).cast(pa.int64()), 1).to_numpy(zero_copy_only=False)
        elif pa.types.is_null(dtype):
            raw = np.ones(len(values), dtype=np.int64)
        else:
            raise ConfigError(
                f"partition field {field!r} has type {dtype}, which the timestamp key generator cannot read",
                key=TIMESTAMP_TYPE_KEY,
            )
        return _millis_from_units(raw, self.unit_factor)

    def _format_strings(self, values: pa.Array) -> tuple[pa.Array, dict[int, str]]:
        errors: dict[int, str] = {}
        millis = np.zeros(len(values), dtype=np.int64)
        zones = [self.jvm_zone] * len(values)
        default = None
        for row, text in enumerate(values.to_pylist()):
            if text is None:
                default = default or self._default_string()
                text = default
            try:
                millis[row], zones[row] = self.parse(text)
            except ValueError as e:
                errors[row] = f"Unable to parse input partition field: {text!r}: {e}"
        strings, print_errors = self._print(millis, zones)
        return strings, {**print_errors, **errors}

    def _default_string(self) -> str:
        """`getDefaultPartitionVal`: epoch + 1 ms printed with the first input format."""
        zone = self.input_zone or self.output_zone or "UTC"
        text, _ = self.inputs[0].print_millis(np.array([1]), zone)
        return text[0].as_py()

    def parse(self, text: str) -> tuple[int, str]:
        """(epoch ms, zone to print in) for a DATE_STRING value, as `HoodieDateTimeParser` reads it.

        Patterns are tried in order and the first that consumes the whole text wins (Joda's
        MatchingParser); fields are then range-checked. Without an input zone the parsed offset (or
        the JVM zone) becomes the value's zone, which is also the output zone if none is configured.
        """
        for pattern in self.inputs:
            consumed, fields = pattern.parse_prefix(text)
            if consumed == len(text):
                break
        else:
            raise ValueError(f"matches none of the input formats {[p.pattern for p in self.inputs]}")
        local = _local_millis(fields)
        parsed_zone = str(fields["zone"]) if "zone" in fields else None
        if "offset" in fields:
            instant = local - int(fields["offset"])
            value_zone = _offset_zone(int(fields["offset"]))
        else:
            value_zone = parsed_zone or self.input_zone or self.jvm_zone
            instant = _local_to_instant(local, value_zone)
        return instant, self.output_zone or self.input_zone or value_zone

    def _print(self, millis: np.ndarray, zones: Sequence[str]) -> tuple[pa.Array, dict[int, str]]:
        """Print each instant in its zone; rows sharing a zone are printed together."""
        distinct = sorted(set(zones))
        if len(distinct) <= 1:
            zone = distinct[0] if distinct else self.jvm_zone
            text, bad = self.output.print_millis(millis, zone)
            return text, self._range_errors(np.flatnonzero(bad), zone)
        codes = np.array([distinct.index(z) for z in zones]) if len(distinct) < 8 else \
            np.searchsorted(np.array(distinct, dtype=object), np.array(zones, dtype=object))
        out = np.empty(len(millis), dtype=object)
        errors: dict[int, str] = {}
        for code, zone in enumerate(distinct):
            rows = np.flatnonzero(codes == code)
            text, bad = self.output.print_millis(millis[rows], zone)
            out[rows] = text.to_numpy(zero_copy_only=False)
            errors.update(self._range_errors(rows[bad], zone))
        return pa.array(out, pa.string()), errors

    @staticmethod
    def _range_errors(rows: np.ndarray, zone: str) -> dict[int, str]:
        return {int(r): f"timestamp beyond year 9999 cannot be placed in time zone {zone}" for r in rows.tolist()}
