"""Joda-Time, as Hudi's `TimestampBasedAvroKeyGenerator` uses it: patterns and time zones.

Hudi formats and parses partition times with Joda-Time's `DateTimeFormat.forPattern` and resolves
zones with `DateTimeZone.forTimeZone`/`forID`. This module is a vectorised engine for the pattern
letters Hudi's key generator can meet (printing over Arrow arrays, parsing per value), with Joda's
rules for field widths, two-digit years, zone ids and offsets, so partition paths match Hudi's.
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

from ingest.errors import ConfigError

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

    Java silently turns an unknown id into GMT; we refuse it instead, naming the config key. So too an id
    with spaces around it, which Hudi passes to `TimeZone.getTimeZone` as it is (`HoodieDateTimeParser`).
    """
    zone_id = java_id.strip()
    if zone_id and zone_id != java_id:
        raise ConfigError(f"time zone {java_id!r} has spaces around it: Java's TimeZone.getTimeZone takes it for an "
                          "unknown id, and Hudi's writers then use GMT; write it without them", key=key)
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


def offset_zone(offset_ms: int) -> str:
    """Joda's `DateTimeZone.forOffsetMillis` id (minutes precision suffices for parsed offsets)."""
    if offset_ms == 0:
        return "UTC"
    sign = "-" if offset_ms < 0 else "+"
    minutes = abs(offset_ms) // 60000
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def local_to_instant(local_ms: int, zone: str) -> int:
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
    def literals(self) -> str:
        """The pattern's quoted text, all of it: what every printed value holds besides its fields."""
        return "".join(t.text for t in self.tokens)

    @property
    def depth(self) -> int:
        """Folder levels the printed text spans (its literal `/` plus one)."""
        return 1 + self.literals.count("/")

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


def local_millis(fields: Mapping[str, int | str]) -> int:
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
