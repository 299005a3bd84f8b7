"""Partition paths: Hudi's escaping and composition, the safety rule, and timestamp partitioning."""

from __future__ import annotations

import ntpath
import posixpath
import re
import zoneinfo
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hudi_invariants import spark_partition_values
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.catalog.settings import SyncSettings
from ingest.errors import BadRecordError, ConfigError
from ingest.hudi.keygen.joda_time import JodaPattern, joda_zone
from ingest.hudi.keygen.partition_path import (
    DEFAULT_PARTITION_PATH,
    escape_path_name,
    escape_path_names,
    java_parse_hex,
    java_split,
    misread_value_problems,
    partition_path_problem,
    partition_path_problems,
    partition_segments,
    unescape_path_name,
    validate_partition_path,
)
from ingest.hudi.keygen.timestamp_format import TimestampPartitionFormat

# -- escaping and composition ----------------------------------------------------------------------


def test_escape_path_name_escapes_hudis_characters_only():
    assert escape_path_name("a/b") == "a%2Fb"
    assert escape_path_name('"#%\'*/:=?\\\x7f{[]^') == "%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%5E"
    assert escape_path_name("\x00\x01\n\x1f") == "%00%01%0A%1F"
    # Left alone: space, dots, '<>|', non-ASCII (Java escapes only chars below 128).
    assert escape_path_name("a b.c<>|~é日😀") == "a b.c<>|~é日😀"
    assert escape_path_name("..") == ".."
    assert escape_path_name("") == DEFAULT_PARTITION_PATH


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=20))
def test_vectorized_escaping_equals_the_scalar_one(values):
    got = escape_path_names(pa.array(values, pa.string())).to_pylist()
    assert got == [None if v is None else v if v == "" else escape_path_name(v) for v in values]


def test_partition_segments_default_hive_style_and_encoding():
    values = pa.array(["san_francisco", None, "", "a/b"])
    assert partition_segments(values, "city", hive_style=False, urlencode=False).to_pylist() == [
        "san_francisco", DEFAULT_PARTITION_PATH, DEFAULT_PARTITION_PATH, "a/b"]
    assert partition_segments(values, "city", hive_style=True, urlencode=True).to_pylist() == [
        "city=san_francisco", "city=__HIVE_DEFAULT_PARTITION__", "city=__HIVE_DEFAULT_PARTITION__", "city=a%2Fb"]


def test_java_split_drops_trailing_empty_strings():
    assert java_split("a,b") == ["a", "b"]
    assert java_split("a,,b,,") == ["a", "", "b"]
    assert java_split(",a") == ["", "a"]
    assert java_split("") == [""]
    assert java_split(",,") == []
    assert java_split("a|b", r"\|") == ["a", "b"]


# -- safety ------------------------------------------------------------------------------------------

HOSTILE = [
    "..", ".", "../..", "../../etc/passwd", "/abs", "/", "", "a//b", "a/", "C:\\Windows", "C:", "c:x",
    "..\\..", "a\\..\\..\\b", ".hoodie", ".hidden", "x\x00y", "tab\there", "\x7f", "a/./b", "x" * 256,
    "é" * 128, "😀" * 64, "..%2F..", "%2E%2E", " ..", "\u2028",
]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize(("hive_style", "urlencode"), [(False, False), (True, False), (False, True), (True, True)])
def test_hostile_partition_values_are_refused_or_stay_inside(value, hive_style, urlencode):
    segment = partition_segments(pa.array([value], pa.string()), "p", hive_style=hive_style,
                                 urlencode=urlencode)[0].as_py()
    _assert_refused_or_inside(segment, 1)


def test_dot_names_survive_hudis_escaping_so_they_are_refused():
    for value in ("..", ".", ".hoodie"):
        path = partition_segments(pa.array([value]), "p", hive_style=False, urlencode=True)[0].as_py()
        assert path == value
        with pytest.raises(BadRecordError, match="starts with '.'"):
            validate_partition_path(path, 1)
    # Hive style puts the field name first, so the folder no longer starts with a dot.
    assert validate_partition_path("p=..", 1) == "p=.."


def test_refusals_name_the_value_and_the_remedy():
    with pytest.raises(BadRecordError, match=r"'a/b'.*2 folder levels.*urlencode"):
        validate_partition_path("a/b", 1)
    with pytest.raises(BadRecordError, match=r"'C:x'.*':'"):
        validate_partition_path("C:x", 1)
    with pytest.raises(BadRecordError, match="bytes"):
        validate_partition_path("é" * 128, 1)
    with pytest.raises(BadRecordError, match="non-partitioned"):
        validate_partition_path("x", 0)
    assert validate_partition_path("", 0) == ""
    assert validate_partition_path("é" * 127 + "x", 1) == "é" * 127 + "x"
    assert validate_partition_path("year=2023/month=04", 2) == "year=2023/month=04"
    assert "Unicode" in partition_path_problem("a\ud800", 1)


def _assert_refused_or_inside(path: str | None, depth: int) -> None:
    if partition_path_problem(path, depth) is not None:
        with pytest.raises(BadRecordError):
            validate_partition_path(path, depth)
        return
    assert validate_partition_path(path, depth) == path
    for module, base in ((posixpath, "/data/table"), (ntpath, "C:\\data\\table")):
        joined = module.normpath(module.join(base, path))
        relative = module.relpath(joined, base)
        assert module.commonpath([base, joined]) == base, (module.__name__, path)
        parts = [] if relative == "." else relative.split(module.sep)
        assert len(parts) == depth, (module.__name__, path, parts)
        assert not any(p in (".", "..") or p.startswith(".") for p in parts)


_HOSTILE_PIECES = st.sampled_from(list("./\\:a_=é\x00\n\x7f ") + ["😀", "..", "../", "C:", ".hoodie"])
_HOSTILE_TEXT = st.lists(_HOSTILE_PIECES, max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(path=st.one_of(_HOSTILE_TEXT, st.text(max_size=300), st.sampled_from(HOSTILE)),
       depth=st.integers(0, 4))
def test_every_accepted_path_stays_inside_the_table_with_its_depth(path, depth):
    _assert_refused_or_inside(path, depth)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.one_of(st.none(), _HOSTILE_TEXT, st.text(max_size=260)), max_size=8),
       hive_style=st.booleans(), urlencode=st.booleans())
def test_composed_partition_paths_are_refused_or_safe(values, hive_style, urlencode):
    first = partition_segments(pa.array(values, pa.string()), "a", hive_style=hive_style, urlencode=urlencode)
    second = partition_segments(pa.array(list(reversed(values)), pa.string()), "b", hive_style=hive_style,
                                urlencode=urlencode)
    paths = pa.array([f"{x}/{y}" for x, y in zip(first.to_pylist(), second.to_pylist(), strict=True)], pa.string())
    problems = partition_path_problems(paths, 2)
    for row, path in enumerate(paths.to_pylist()):
        assert (row in problems) == (partition_path_problem(path, 2) is not None)
        _assert_refused_or_inside(path, 2)


def test_values_hudis_readers_would_misread_are_refused_unless_escaped():
    values = pa.array(["a=b", "x%41y", "%+F", DEFAULT_PARTITION_PATH, "ok", None, "50%", "%zz", "%4", "a+b",
                       "a%-0b", "%\u0664\u0661", "%\uff21\uff21"])
    problems = misread_value_problems(values, "p", hive_style=False, urlencode=False)
    assert sorted(problems) == [0, 1, 2, 3, 10, 11, 12]
    assert "'a=b' holds '='" in problems[0] and "doParsePartitionColumnValues" in problems[0]
    assert "reading 'xAy'" in problems[1] and "unescapePathName" in problems[1]
    assert "reading '\\x0f'" in problems[2]  # Java's Integer.parseInt("+F", 16) is 15
    assert "read it as null" in problems[3]
    assert "reading 'a\\x00b'" in problems[10] and "reading 'A'" in problems[11]  # "-0"; Arabic-Indic digits
    # Hive style: Spark splits `p=a=b` at its first '=', but Hudi's sync extractors refuse the folder.
    hive = misread_value_problems(values, "p", hive_style=True, urlencode=False)
    assert sorted(hive) == sorted(problems) and "HiveStylePartitionValueExtractor" in hive[0]
    # Hudi's escaping turns '=' and '%' into %3D and %25, which Spark decodes back.
    assert sorted(misread_value_problems(values, "p", hive_style=False, urlencode=True)) == [3]
    assert misread_value_problems(pa.chunked_array([values.slice(4, 6)]), "p", hive_style=False, urlencode=False) == {}


_READER_PIECES = st.sampled_from(list("=%+-04Fz_a/\u0661\uff21") + ["%41", "%+1", "%-0", "%2", "😀",
                                                                   DEFAULT_PARTITION_PATH])


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.lists(_READER_PIECES, max_size=5).map("".join), min_size=1, max_size=2),
       hive_style=st.booleans(), urlencode=st.booleans())
def test_every_accepted_value_reads_back_as_itself_in_hudis_readers(values, hive_style, urlencode):
    """What `compute_keys` accepts, Spark's Hudi reader (`SparkHoodieTableFileIndex
    .doParsePartitionColumnValues`) and Hudi's sync (the extractor it infers) read back as the value."""
    fields = [f"f{i}" for i in range(len(values))]
    segments = [partition_segments(pa.array([v], pa.string()), f, hive_style=hive_style, urlencode=urlencode)[0].as_py()
                for v, f in zip(values, fields, strict=True)]
    path = "/".join(segments)
    refused = partition_path_problem(path, len(fields)) or any(
        misread_value_problems(pa.array([v], pa.string()), f, hive_style=hive_style, urlencode=urlencode)
        for v, f in zip(values, fields, strict=True))
    if refused:
        return
    expected = [v or None for v in values]
    assert spark_partition_values(path, fields) == expected
    if not urlencode:
        extractor = SyncSettings.from_hudi({"hoodie.datasource.write.partitionpath.field": ",".join(fields),
                                            "hoodie.datasource.write.hive_style_partitioning": str(hive_style)}).extractor
        assert [None if v == DEFAULT_PARTITION_PATH else v for v in extractor.values(path)] == expected


_UNESCAPE_CASES = ["a%-0b", "%\u0664\u0661", "%\uff14\uff11", "%\uff21\uff21", "%+F", "%-1", "%41", "%4", "50%",
                   "%%41", "%2541", "%😀", "%4😀", "%\U0001d7ce0", "x%2", "%2Fa%3D", "%g1", "%-", "%+", "%1-"]


def test_unescape_path_name_is_sparks(spark):
    """`unescape_path_name` follows Spark 3's `ExternalCatalogUtils.unescapePathName`, built on Java's
    `Integer.parseInt(_, 16)`; both checked against this JVM. Where the JVM's Spark decodes, so do we (Spark
    4 decodes ASCII hex digits only), and without a sign or non-ASCII digit after a `%` we agree exactly."""
    jvm = spark._jvm
    rng = np.random.default_rng(7)
    alphabet = list("%+-0189aAfFgG") + ["\u0661", "\uff21", "\uff46", "😀", "\U0001d7ce"]
    cases = _UNESCAPE_CASES + ["".join(rng.choice(alphabet, size=int(n))) for n in rng.integers(1, 8, size=300)]
    for two in {case[i:i + 2] for case in cases for i in range(len(case))} | {"+", "-", "-0", "+0", "--"}:
        try:
            expected = jvm.java.lang.Integer.parseInt(two, 16)
        except Exception:  # noqa: BLE001 - py4j surfaces Java's NumberFormatException
            expected = None
        assert java_parse_hex(two) == expected, two
    for case in cases:
        ours, sparks = unescape_path_name(case), jvm.org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils.unescapePathName(case)
        assert ours != case or sparks == case, case
        if not re.search(r"%[^%0-9A-Fa-f]|%.[^0-9A-Fa-f]", case):
            assert ours == sparks, case


def test_vectorized_screen_agrees_with_the_scalar_check():
    paths = pa.array(["a/b", "a", "./b", "a/..", "x" * 300 + "/b", "a/b\\c", None, "a/b/c", "/b", "a/"])
    problems = partition_path_problems(paths, 2)
    assert sorted(problems) == [row for row, p in enumerate(paths.to_pylist()) if partition_path_problem(p, 2)]
    assert sorted(problems) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert partition_path_problems(pa.array(["", "x"]), 0) == {1: partition_path_problem("x", 0)}
    repeated = pa.chunked_array([paths, paths.take(pa.array([9, 0, 6, 2]))])  # each path checked once
    assert partition_path_problems(repeated, 2) == {
        **problems, **{10 + i: problems[r] for i, r in enumerate([9, 0, 6, 2]) if r in problems}}


# -- time zones ----------------------------------------------------------------------------------------


def test_joda_zone_resolution():
    assert joda_zone("UTC", "k") == "UTC"
    assert joda_zone("GMT", "k") == "UTC"
    assert joda_zone("GMT+5", "k") == "+05:00"
    assert joda_zone("GMT-0530", "k") == "-05:30"
    assert joda_zone("GMT+05:30", "k") == "+05:30"
    assert joda_zone("GMT+00:00", "k") == "UTC"
    assert joda_zone("Asia/Kolkata", "k") == "Asia/Kolkata"
    # Joda maps the old three-letter ids to regions (EST observes daylight time there).
    assert joda_zone("EST", "k") == "America/New_York"
    assert joda_zone("IST", "k") == "Asia/Kolkata"
    with pytest.raises(ConfigError, match=r"some\.key.*Nowhere/Land"):
        joda_zone("Nowhere/Land", "some.key")
    # `HoodieDateTimeParser.getInputDateTimeZone` checks `trim().isEmpty()` but resolves the id untrimmed:
    # `TimeZone.getTimeZone(" Asia/Kolkata")` is an unknown id, GMT to Hudi's writers.
    with pytest.raises(ConfigError, match=r"some\.key: time zone ' Asia/Kolkata' has spaces around it"):
        joda_zone(" Asia/Kolkata", "some.key")


# -- Joda patterns --------------------------------------------------------------------------------------


def _print(pattern: str, when: datetime, zone: str = "UTC") -> str:
    millis = (when - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
    text, bad = JodaPattern.compile(pattern, "k").print_millis(np.array([millis]), zone)
    assert not bad.any()
    return text[0].as_py()


WHEN = datetime(2023, 4, 1, 15, 4, 5, 123000, tzinfo=timezone.utc)  # a Saturday


@pytest.mark.parametrize(("pattern", "expected"), [
    ("yyyy/MM/dd/HH", "2023/04/01/15"),
    ("yyyy-MM-dd HH:mm:ss.SSS", "2023-04-01 15:04:05.123"),
    ("yyyyMMdd", "20230401"),
    ("yy M d H m s", "23 4 1 15 4 5"),
    ("S SS SSSS", "1 12 1230"),
    ("hh a KK kk", "03 PM 03 15"),
    ("EEE EEEE e D", "Sat Saturday 6 91"),
    ("MMM MMMM", "Apr April"),
    ("G C Y", "AD 20 2023"),
    ("xxxx-ww", "2023-13"),
    ("Z ZZ ZZZ", "+0000 +00:00 UTC"),
    ("'year='yyyy'/month='MM", "year=2023/month=04"),
    ("yyyy''MM'o''clock'", "2023'04o'clock"),
    ("dd.MM.yyyy", "01.04.2023"),
])
def test_joda_printing(pattern, expected):
    assert _print(pattern, WHEN) == expected


def test_joda_printing_in_zones():
    assert _print("yyyy-MM-dd HH:mm Z ZZ ZZZ", WHEN, "Asia/Kolkata") == "2023-04-01 20:34 +0530 +05:30 Asia/Kolkata"
    assert _print("HH:mm ZZ", WHEN, "-03:30") == "11:34 -03:30"
    # Daylight time after 2037 (Arrow's zone data alone stops there; Joda keeps the rule).
    assert _print("yyyy-MM-dd HH ZZ", datetime(2040, 7, 1, 12, tzinfo=timezone.utc), "America/New_York") == \
        "2040-07-01 08 -04:00"
    # Local mean time offsets print truncated to minutes.
    assert _print("ZZ", datetime(1800, 1, 1, tzinfo=timezone.utc), "America/New_York") == "-04:56"


@settings(max_examples=100, deadline=None)
@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 12, 31)),
       st.sampled_from(["UTC", "Asia/Kolkata", "America/New_York", "Europe/London", "Australia/Lord_Howe"]))
def test_joda_printing_matches_zoneinfo(naive, zone):
    when = naive.replace(tzinfo=timezone.utc)
    local = when.astimezone(zoneinfo.ZoneInfo(zone))
    offset_seconds = int(local.utcoffset().total_seconds())
    sign, minutes = "-" if offset_seconds < 0 else "+", abs(offset_seconds) // 60
    expected = local.strftime("%Y-%m-%d %H:%M:%S.") + f"{local.microsecond // 1000:03d} " + \
        f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    assert _print("yyyy-MM-dd HH:mm:ss.SSS ZZ", when, zone) == expected


@pytest.mark.parametrize("pattern", ["yyyy-MM-dd z", "yyyy-MM-dd q", ""])
def test_unsupported_or_empty_patterns_are_config_errors(pattern):
    with pytest.raises(ConfigError, match="fmt.key"):
        JodaPattern.compile(pattern, "fmt.key")


def test_input_formats_refuse_fields_we_cannot_parse():
    with pytest.raises(ConfigError, match="'E'"):
        JodaPattern.compile("EEE yyyy", "k", for_parsing=True)


# -- TimestampBasedKeyGenerator ------------------------------------------------------------------------

PREFIX = "hoodie.keygen.timebased."


def _format(config: dict[str, str], values: pa.Array, *, consistent: bool = False, jvm: str = "UTC"):
    fmt = TimestampPartitionFormat.from_config({PREFIX + k: v for k, v in config.items()}, jvm)
    text, errors = fmt.format(values, "ts", consistent)
    return text.to_pylist(), errors


def test_date_string_as_in_hudis_own_fixture():
    # hudi-rs test table v6_timebasedkeygen_nonhivestyle, written by Hudi: these paths are on disk.
    config = {"timestamp.type": "DATE_STRING", "input.dateformat": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
              "output.dateformat": "yyyy/MM/dd/HH"}
    values = pa.array(["2023-04-01T12:01:00.123Z", "2023-04-02T12:01:00.123Z", "2023-04-04T13:01:00.123Z"])
    assert _format(config, values) == (["2023/04/01/12", "2023/04/02/12", "2023/04/04/13"], {})


def test_date_string_zones():
    base = {"timestamp.type": "DATE_STRING", "input.dateformat": "yyyy-MM-dd HH:mmZ", "output.dateformat": "yyyy-MM-dd HH"}
    value = pa.array(["2023-04-01 23:30+0530", "2023-04-01 23:30"])
    # No zones configured: the parsed offset is the value's zone, the JVM zone for unzoned text.
    text, errors = _format(base, value)
    assert text[0] == "2023-04-01 23" and list(errors) == [1]
    unzoned = {**base, "input.dateformat": "yyyy-MM-dd HH:mmZ,yyyy-MM-dd HH:mm"}
    assert _format(unzoned, value, jvm="Asia/Tokyo")[0] == ["2023-04-01 23", "2023-04-01 23"]
    assert _format({**unzoned, "output.timezone": "UTC"}, value, jvm="Asia/Tokyo")[0] == ["2023-04-01 18", "2023-04-01 14"]
    # An input zone places unzoned text; the output follows it unless an output zone is set.
    assert _format({**unzoned, "input.timezone": "GMT+2"}, value)[0] == ["2023-04-01 20", "2023-04-01 23"]
    assert _format({**unzoned, "input.timezone": "GMT+2", "output.timezone": "UTC"}, value)[0] == \
        ["2023-04-01 18", "2023-04-01 21"]
    # The deprecated single zone sets both.
    assert _format({**unzoned, "timezone": "GMT+2"}, value)[0] == ["2023-04-01 20", "2023-04-01 23"]


def test_date_string_errors_are_per_record():
    config = {"timestamp.type": "DATE_STRING", "input.dateformat": "yyyy-MM-dd", "output.dateformat": "yyyy/MM"}
    text, errors = _format(config, pa.array(["2023-04-01", "2023-02-30", "garbage", "2023-4-1x"]))
    assert text[0] == "2023/04"
    assert set(errors) == {1, 2, 3}
    assert "dayOfMonth" in errors[1] and "'garbage'" in errors[2]


def test_date_string_null_is_epoch_plus_one_millisecond():
    config = {"timestamp.type": "DATE_STRING", "input.dateformat": "yyyy-MM-dd HH:mm:ss.SSS",
              "output.dateformat": "yyyy-MM-dd HH:mm:ss.SSS", "timezone": "UTC"}
    assert _format(config, pa.array([None], pa.string())) == (["1970-01-01 00:00:00.001"], {})


def test_date_string_in_a_daylight_gap_is_refused():
    config = {"timestamp.type": "DATE_STRING", "input.dateformat": "yyyy-MM-dd HH:mm",
              "output.dateformat": "yyyy-MM-dd", "input.timezone": "America/New_York"}
    text, errors = _format(config, pa.array(["2023-03-12 02:30", "2023-11-05 01:30"]))
    assert list(errors) == [0] and text[1] == "2023-11-05"


def test_multiple_input_formats_and_a_custom_delimiter():
    config = {"timestamp.type": "MIXED", "input.dateformat": "yyyyMMdd|yyyy-MM-dd'T'HH", "output.dateformat": "yyyy/MM/dd",
              "input.dateformat.list.delimiter.regex": r"\|", "timezone": "UTC"}
    assert _format(config, pa.array(["20230401", "2023-04-02T05"])) == (["2023/04/01", "2023/04/02"], {})


def test_numeric_timestamp_types():
    out = "yyyy-MM-dd HH:mm:ss"
    seconds = pa.array([1680350460, None, -1], pa.int64())
    assert _format({"timestamp.type": "UNIX_TIMESTAMP", "output.dateformat": out}, seconds)[0] == [
        "2023-04-01 12:01:00", "1970-01-01 00:00:01", "1969-12-31 23:59:59"]
    assert _format({"timestamp.type": "EPOCHMILLISECONDS", "output.dateformat": out},
                   pa.array([1680350460123], pa.int64()))[0] == ["2023-04-01 12:01:00"]
    assert _format({"timestamp.type": "EPOCHMICROSECONDS", "output.dateformat": out},
                   pa.array([1680350460123456, -1], pa.int64()))[0] == ["2023-04-01 12:01:00", "1970-01-01 00:00:00"]
    assert _format({"timestamp.type": "SCALAR", "timestamp.scalar.time.unit": "days", "output.dateformat": "yyyy-MM-dd"},
                   pa.array([19448], pa.int32()))[0] == ["2023-04-01"]
    # Doubles are truncated like Java's (long) cast; decimals like BigDecimal.longValue().
    assert _format({"timestamp.type": "UNIX_TIMESTAMP", "output.dateformat": out},
                   pa.array([1680350460.9, float("nan")]))[0] == ["2023-04-01 12:01:00", "1970-01-01 00:00:00"]
    assert _format({"timestamp.type": "UNIX_TIMESTAMP", "output.dateformat": out},
                   pa.array([Decimal("1680350460.99")], pa.decimal128(12, 2)))[0] == ["2023-04-01 12:01:00"]
    # A date is its epoch day read in the configured unit (Hudi's behaviour, seconds here).
    assert _format({"timestamp.type": "UNIX_TIMESTAMP", "output.dateformat": out},
                   pa.array([19448], pa.date32()))[0] == ["1970-01-01 05:24:08"]


def test_output_zone_and_jvm_default_for_numbers():
    config = {"timestamp.type": "EPOCHMILLISECONDS", "output.dateformat": "yyyy-MM-dd HH"}
    values = pa.array([1680350460123], pa.int64())
    assert _format(config, values, jvm="Asia/Kolkata")[0] == ["2023-04-01 17"]
    assert _format({**config, "output.timezone": "UTC"}, values, jvm="Asia/Kolkata")[0] == ["2023-04-01 12"]


def test_timestamp_columns_need_consistent_logical_timestamps():
    config = {"timestamp.type": "EPOCHMILLISECONDS", "output.dateformat": "yyyy-MM-dd HH"}
    micros = pa.array([1680350460123456, None], pa.timestamp("us", tz="UTC"))
    with pytest.raises(ConfigError, match="consistent.logical.timestamp"):
        _format(config, micros)
    assert _format(config, micros, consistent=True)[0] == ["2023-04-01 12", "1970-01-01 00"]


def test_wrong_value_types_are_config_errors():
    with pytest.raises(ConfigError, match="needs strings"):
        _format({"timestamp.type": "DATE_STRING", "input.dateformat": "yyyy", "output.dateformat": "yyyy"},
                pa.array([1]))
    with pytest.raises(ConfigError, match="cannot read"):
        _format({"timestamp.type": "UNIX_TIMESTAMP", "output.dateformat": "yyyy"}, pa.array(["2023"]))


@pytest.mark.parametrize(("config", "key"), [
    ({"timestamp.type": "WEEKLY", "output.dateformat": "yyyy"}, "timestamp.type"),
    ({"timestamp.type": "UNIX_TIMESTAMP"}, "output.dateformat"),
    ({"timestamp.type": "DATE_STRING", "output.dateformat": "yyyy"}, "input.dateformat"),
    ({"timestamp.type": "SCALAR", "timestamp.scalar.time.unit": "fortnights", "output.dateformat": "yyyy"},
     "timestamp.scalar.time.unit"),
    ({"timestamp.type": "UNIX_TIMESTAMP", "output.dateformat": "yyyy", "output.timezone": "Mars/Olympus"},
     "output.timezone"),
])
def test_bad_timestamp_configs_name_the_key(config, key):
    with pytest.raises(ConfigError, match=PREFIX.replace(".", r"\.") + key.replace(".", r"\.")):
        TimestampPartitionFormat.from_config({PREFIX + k: v for k, v in config.items()})


def test_deprecated_deltastreamer_keys_are_read():
    old = "hoodie.deltastreamer.keygen.timebased."
    fmt = TimestampPartitionFormat.from_config({old + "timestamp.type": "EPOCHMILLISECONDS",
                                                old + "output.dateformat": "yyyy/MM", old + "output.timezone": "UTC"})
    assert fmt.output.pattern == "yyyy/MM" and fmt.output_zone == "UTC" and fmt.depth(False) == 2
    assert fmt.depth(True) == 1


@settings(max_examples=100, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
       st.sampled_from(["yyyy-MM-dd'T'HH:mm:ss.SSSZ", "yyyy-MM-dd HH:mm:ss.SSS ZZ", "yyyyMMddHHmmssSSSZ"]),
       st.sampled_from(["UTC", "+05:30", "-11:00"]))
def test_printing_then_parsing_gives_the_same_instant(naive, pattern, zone):
    millis = (naive.replace(tzinfo=timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
    fmt = TimestampPartitionFormat.from_config({PREFIX + "timestamp.type": "DATE_STRING",
                                                PREFIX + "input.dateformat": pattern,
                                                PREFIX + "output.dateformat": pattern})
    text, _ = fmt.output.print_millis(np.array([millis]), zone)
    assert fmt.parse(text[0].as_py()) == (millis, zone)
