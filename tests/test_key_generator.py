"""Record keys and partition paths as Hudi 0.14/0.15 computes them, value rendering, config resolution."""

from __future__ import annotations

import struct
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.errors import ConfigError
from ingest.hudi import java_numbers
from ingest.hudi.config.properties import loads
from ingest.hudi.java_numbers import java_big_decimal_to_string, java_double_to_string, java_float_to_string
from ingest.hudi.keygen.key_generator import (
    KeyGeneratorSpec,
    KeyGeneratorType,
    compute_keys,
    java_local_date_to_string,
    java_strings,
    java_timestamp_to_string,
)
from ingest.hudi.keygen.partition_path import escape_path_name, partition_path_problem, unescape_path_name

RK, PP = "hoodie.datasource.write.recordkey.field", "hoodie.datasource.write.partitionpath.field"
CLASS, TYPE = "hoodie.datasource.write.keygenerator.class", "hoodie.datasource.write.keygenerator.type"
HIVE, ENCODE = "hoodie.datasource.write.hive_style_partitioning", "hoodie.datasource.write.partitionpath.urlencode"
CONSISTENT = "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled"
TS = "hoodie.keygen.timebased."

# -- Java's Double.toString / Float.toString -------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    (1.0, "1.0"), (0.1, "0.1"), (-1.5, "-1.5"), (100.0, "100.0"), (0.3, "0.3"), (1 / 3, "0.3333333333333333"),
    (2 / 3, "0.6666666666666666"), (1e7, "1.0E7"), (9999999.0, "9999999.0"), (9999999.999, "9999999.999"),
    (0.001, "0.001"), (0.0009, "9.0E-4"), (1e-5, "1.0E-5"), (1e10, "1.0E10"), (123456789.0, "1.23456789E8"),
    (2.0**53, "9.007199254740992E15"), (1e21, "1.0E21"), (1e23, "1.0E23"), (12345.6789e-10, "1.23456789E-6"),
    (5e-324, "4.9E-324"),  # Double.MIN_VALUE: Java picks the closest of the 1-2 digit decimals
    (1.7976931348623157e308, "1.7976931348623157E308"), (2.2250738585072014e-308, "2.2250738585072014E-308"),
    (float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity"), (0.0, "0.0"), (-0.0, "-0.0"),
])
def test_double_to_string(value, expected):
    assert java_double_to_string(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (0.1, "0.1"), (1.1, "1.1"), (0.3, "0.3"), (3.14159, "3.14159"), (100.0, "100.0"), (1e10, "1.0E10"),
    (16777216.0, "1.6777216E7"), (3.4028234663852886e38, "3.4028235E38"),  # Float.MAX_VALUE
    (1.401298464324817e-45, "1.4E-45"),  # Float.MIN_VALUE
    # Float.MIN_NORMAL: JDK 19+ prints the shortest decimal; JDK <= 18 printed "1.17549435E-38".
    (1.1754943508222875e-38, "1.1754944E-38"),
    (1e-3, "0.001"), (9.999999e6, "9999999.0"), (-2.5, "-2.5"), (float("nan"), "NaN"), (-0.0, "-0.0"),
])
def test_float_to_string(value, expected):
    assert java_float_to_string(float(np.float32(value))) == expected


def _layout_ok(text: str, value: float) -> bool:
    """Java's layout: plain for 1e-3 <= |d| < 1e7, computerized scientific otherwise."""
    magnitude = abs(float(text))
    plain = magnitude == 0 or 1e-3 <= magnitude < 1e7
    mantissa = text.split("E")[0]
    return ("E" not in text) == plain and "." in mantissa and not mantissa.lstrip("-").startswith(".")


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_to_string_round_trips_shortest_and_matches_the_exact_algorithm(value):
    text = java_double_to_string(value)
    assert float(text) == value and _layout_ok(text, value)
    if value != 0:
        bits = struct.unpack(">Q", struct.pack(">d", abs(value)))[0]
        exp_bits, fraction = bits >> 52, bits & ((1 << 52) - 1)
        significand, exponent = (fraction, -1074) if exp_bits == 0 else (fraction | 1 << 52, exp_bits - 1075)
        digits, power = java_numbers._shortest_decimal(significand, exponent, fraction == 0 and exp_bits > 1)
        assert float(f"{digits}e{power}") == abs(value)
        # The repr-based fast path and the exact search agree on the digits.
        mantissa = text.lstrip("-").split("E")[0].replace(".", "").lstrip("0").rstrip("0")
        assert mantissa == str(digits)


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float_to_string_round_trips_and_matches_numpys_shortest_digits(value):
    text = java_float_to_string(value)
    assert np.float32(float(text)) == np.float32(value) and _layout_ok(text, value)
    if value != 0:
        shortest = np.format_float_scientific(np.float32(abs(value)), unique=True, trim="-")
        numpy_digits = shortest.split("e")[0].replace(".", "")
        ours = text.lstrip("-").split("E")[0].replace(".", "").lstrip("0").rstrip("0")
        if len(numpy_digits) > 1:  # for one digit Java may take a closer two-digit decimal
            assert ours == numpy_digits


# -- other Java renderings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("unscaled", "scale", "expected"), [
    (1234567890, 5, "12345.67890"), (1, 5, "0.00001"), (1, 6, "0.000001"), (1, 7, "1E-7"), (12, 8, "1.2E-7"),
    (0, 2, "0.00"), (0, 10, "0E-10"), (-5, 3, "-0.005"), (123, -2, "1.23E+4"), (1234567, 7, "0.1234567"),
    (42, 0, "42"), (-42, 0, "-42"),
])
def test_big_decimal_to_string(unscaled, scale, expected):
    assert java_big_decimal_to_string(unscaled, scale) == expected


def test_local_date_to_string():
    assert java_local_date_to_string(0) == "1970-01-01"
    assert java_local_date_to_string(19448) == "2023-04-01"
    assert java_local_date_to_string(2932896) == "9999-12-31"
    assert java_local_date_to_string(2932897) == "+10000-01-01"
    assert java_local_date_to_string(-719528) == "0000-01-01"
    assert java_local_date_to_string(-719529) == "-0001-12-31"
    assert java_local_date_to_string(-1_000_000) == "-0768-02-04"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-3_000_000, 3_000_000)), max_size=20))
def test_dates_vectorized_equal_scalar_and_pythons(days):
    strings, errors = java_strings(pa.array(days, pa.date32()), "d", consistent_logical_timestamp=False, jvm_zone="UTC")
    assert not errors
    assert strings.to_pylist() == [None if d is None else java_local_date_to_string(d) for d in days]
    for d in days:
        if d is not None and -719162 <= d <= 2932896:
            assert java_local_date_to_string(d) == (date(1970, 1, 1) + timedelta(days=d)).isoformat()


def test_timestamp_to_string():
    when = datetime(2023, 4, 1, 12, 1, tzinfo=timezone.utc)
    millis = (when - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
    assert java_timestamp_to_string(millis, "UTC") == "2023-04-01 12:01:00.0"
    assert java_timestamp_to_string(millis + 123, "UTC") == "2023-04-01 12:01:00.123"
    assert java_timestamp_to_string(millis + 100, "UTC") == "2023-04-01 12:01:00.1"
    assert java_timestamp_to_string(millis, "Asia/Kolkata") == "2023-04-01 17:31:00.0"
    assert java_timestamp_to_string(-1, "UTC") == "1969-12-31 23:59:59.999"
    # java.util.Date switches to the Julian calendar before 1582-10-15.
    assert java_timestamp_to_string(-12219292800000, "UTC") == "1582-10-15 00:00:00.0"
    assert java_timestamp_to_string(-12219292800001, "UTC") == "1582-10-04 23:59:59.999"
    with pytest.raises(ValueError, match="before year 1"):
        java_timestamp_to_string(-62200000000000, "UTC")


def test_java_strings_of_each_type():
    def render(array, consistent=False):
        strings, errors = java_strings(array, "f", consistent_logical_timestamp=consistent, jvm_zone="UTC")
        assert not errors
        return strings.to_pylist()

    assert render(pa.array([1, None, -7], pa.int8())) == ["1", None, "-7"]
    assert render(pa.array([2**63 - 1], pa.int64())) == ["9223372036854775807"]
    assert render(pa.array([True, False])) == ["true", "false"]
    assert render(pa.array([1.0, 0.1, None])) == ["1.0", "0.1", None]
    assert render(pa.array([1.0, 0.1], pa.float32())) == ["1.0", "0.1"]
    assert render(pa.array([Decimal("12345.67890"), Decimal("0.00000")], pa.decimal128(10, 5))) == ["12345.67890", "0.00000"]
    assert render(pa.array([b"\x00\xffab", None])) == ["00ff6162", None]
    assert render(pa.array(["x", ""]).dictionary_encode()) == ["x", ""]
    micros = pa.array([1680350460000000, None], pa.timestamp("us", tz="UTC"))
    assert render(micros) == ["1680350460000000", None]  # Hudi's Avro path: the raw epoch number
    assert render(micros, consistent=True) == ["2023-04-01 12:01:00.0", None]
    assert render(pa.array([1680350460000], pa.timestamp("ms", tz="UTC")), consistent=True) == ["2023-04-01 12:01:00.0"]
    assert render(pa.array([1680350460000000], pa.timestamp("us")), consistent=True) == ["1680350460000000"]
    assert render(pa.nulls(2)) == [None, None]


@pytest.mark.parametrize("dtype", [pa.struct([("a", pa.int32())]), pa.list_(pa.int32()), pa.timestamp("ns", tz="UTC"),
                                   pa.time64("us"), pa.uint64()])
def test_unkeyable_types_are_config_errors(dtype):
    with pytest.raises(ConfigError, match="'f'"):
        java_strings(pa.nulls(1, dtype), "f", consistent_logical_timestamp=False, jvm_zone="UTC")


# -- configuration ----------------------------------------------------------------------------------------


def spec(**config: str) -> KeyGeneratorSpec:
    names = {"rk": RK, "pp": PP, "cls": CLASS, "type": TYPE, "hive": HIVE, "encode": ENCODE, "consistent": CONSISTENT}
    return KeyGeneratorSpec.from_config({names.get(k, k): v for k, v in config.items()})


def test_inference_as_hudi_0_14_does_it():
    assert spec(rk="uuid", pp="city").kind is KeyGeneratorType.SIMPLE
    assert spec(rk="id,name", pp="city").kind is KeyGeneratorType.COMPLEX
    assert spec(rk="id", pp="a,b").kind is KeyGeneratorType.COMPLEX
    assert spec(rk="id").kind is KeyGeneratorType.NON_PARTITION
    assert spec(rk="id", pp="").kind is KeyGeneratorType.NON_PARTITION
    assert spec(rk="id", pp="city").class_name == "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert spec(rk="id").class_name == "org.apache.hudi.keygen.NonpartitionedKeyGenerator"


def test_class_then_type_then_inference():
    avro = spec(rk="id", pp="city", cls="org.apache.hudi.keygen.ComplexAvroKeyGenerator")
    assert avro.kind is KeyGeneratorType.COMPLEX
    assert avro.table_properties()["hoodie.table.keygenerator.class"] == "org.apache.hudi.keygen.ComplexAvroKeyGenerator"
    typed = spec(rk="id", pp="city", type="complex")
    assert typed.class_name == "org.apache.hudi.keygen.ComplexKeyGenerator"
    custom = spec(rk="id", pp="a:SIMPLE, b:timestamp", type="CUSTOM",
                  **{TS + "timestamp.type": "EPOCHMILLISECONDS", TS + "output.dateformat": "yyyy/MM"})
    assert [(f.name, f.timestamp) for f in custom.partition_fields] == [("a", False), ("b", True)]
    # Names without blanks: `HoodieTableConfig.getPartitionFields` splits on commas without trimming, so
    # Spark would look for a column " b". From table version 8 with their types
    # (`SparkKeyGenUtils.getPartitionColumnsForKeyGenerator`, types above version 6).
    assert custom.table_properties()["hoodie.table.partition.fields"] == "a,b"
    assert custom.table_properties(typed_partition_fields=True)["hoodie.table.partition.fields"] == \
        "a:SIMPLE,b:TIMESTAMP"
    assert typed.table_properties(typed_partition_fields=True)["hoodie.table.partition.fields"] == "city"
    assert spec(rk="id", pp="city, day", type="complex").table_properties()["hoodie.table.partition.fields"] == \
        "city,day"
    assert custom.partition_depth == 3


def test_table_properties_as_hudis_spark_writer_records_them():
    timestamp = spec(rk="id", pp="ts_str", cls="org.apache.hudi.keygen.TimestampBasedKeyGenerator", hive="false",
                     **{TS + "timestamp.type": "DATE_STRING", TS + "input.dateformat": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
                        TS + "output.dateformat": "yyyy/MM/dd/HH"})
    # As in the hoodie.properties of hudi-rs's v6_timebasedkeygen_nonhivestyle (written by Hudi).
    assert timestamp.table_properties() == {
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        "hoodie.table.recordkey.fields": "id",
        "hoodie.table.partition.fields": "ts_str",
        "hoodie.datasource.write.hive_style_partitioning": "false",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH",
    }
    assert timestamp.partition_depth == 4
    assert spec(rk="id").table_properties()["hoodie.table.partition.fields"] == ""


@pytest.mark.parametrize(("config", "key"), [
    ({}, RK),
    ({"rk": " , "}, RK),
    ({"rk": "id", "pp": "city", "cls": "org.example.MyKeyGenerator"}, CLASS),
    ({"rk": "id", "pp": "city", "type": "GLOBAL_DELETE"}, TYPE),
    ({"rk": "id,name", "pp": "city", "cls": "org.apache.hudi.keygen.SimpleKeyGenerator"}, RK),
    ({"rk": "id", "pp": "a,b", "type": "SIMPLE"}, PP),
    ({"rk": "id", "type": "TIMESTAMP"}, PP),
    ({"rk": "id", "pp": "city", "cls": "org.apache.hudi.keygen.SimpleKeyGenerator", "type": "COMPLEX"}, CLASS),
    ({"rk": "id", "pp": "city:SIMPLE"}, PP),
    ({"rk": "id", "pp": "city", "type": "NON_PARTITION"}, PP),
    ({"rk": "id", "pp": "city:HOURLY", "type": "CUSTOM"}, PP),
    ({"rk": "id", "pp": "city", "hive": "yes"}, HIVE),
    ({"rk": "id", "type": "COMPLEX"}, PP),
    ({"rk": "id", "pp": "ts", "type": "TIMESTAMP", TS + "timestamp.type": "EPOCHMILLISECONDS",
      TS + "output.dateformat": "yyyy/ZZZ"}, TS + "output.dateformat"),
])
def test_invalid_configs_name_the_key(config, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        spec(**config)


# -- computing keys -------------------------------------------------------------------------------------


def test_keys_of_hudi_rs_complex_table():
    # v6_complexkeygen_hivestyle (hudi-rs test data, written by Hudi's Spark writer): primaryKey id,name;
    # PARTITIONED BY (byteField, shortField); these are the meta values Hudi stored.
    batch = pa.RecordBatch.from_pydict({
        "id": pa.array([1, 2, 4], pa.int32()), "name": ["Alice", "Bob", "Diana"],
        "byteField": pa.array([10, 20, 30], pa.int8()), "shortField": pa.array([300, 100, 100], pa.int16())})
    keys = compute_keys(batch, spec(rk="id,name", pp="byteField,shortField", hive="true"))
    assert keys.record_keys.to_pylist() == ["id:1,name:Alice", "id:2,name:Bob", "id:4,name:Diana"]
    assert keys.partition_paths.to_pylist() == [
        "byteField=10/shortField=300", "byteField=20/shortField=100", "byteField=30/shortField=100"]
    assert keys.errors.null_count == 3


def test_keys_of_hudi_rs_timestamp_and_nonpartitioned_tables():
    batch = pa.RecordBatch.from_pydict({"id": pa.array([1, 4], pa.int32()),
                                        "ts_str": ["2023-04-01T12:01:00.123Z", "2023-04-04T13:01:00.123Z"]})
    timestamp = spec(rk="id", pp="ts_str", cls="org.apache.hudi.keygen.TimestampBasedKeyGenerator",
                     **{TS + "timestamp.type": "DATE_STRING", TS + "input.dateformat": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
                        TS + "output.dateformat": "yyyy/MM/dd/HH"})
    keys = compute_keys(batch, timestamp)
    assert keys.record_keys.to_pylist() == ["1", "4"]
    assert keys.partition_paths.to_pylist() == ["2023/04/01/12", "2023/04/04/13"]
    flat = compute_keys(batch, spec(rk="id", cls="org.apache.hudi.keygen.NonpartitionedKeyGenerator"))
    assert flat.record_keys.to_pylist() == ["1", "4"] and flat.partition_paths.to_pylist() == ["", ""]


def test_keys_of_the_hudi_written_fixture_tables(fixture_tables):
    checked = 0
    for name, table in fixture_tables.items():
        props = loads((table / ".hoodie" / "hoodie.properties").read_text(encoding="latin-1"))
        if props["hoodie.table.version"] != "6":
            continue
        config = {RK: props["hoodie.table.recordkey.fields"], PP: props["hoodie.table.partition.fields"],
                  CLASS: props["hoodie.table.keygenerator.class"], HIVE: props[HIVE], ENCODE: props[ENCODE]}
        key_spec = KeyGeneratorSpec.from_config(config)
        recorded = {k: props[k] for k in key_spec.table_properties()}
        assert key_spec.table_properties() == recorded, name
        for base_file in sorted(table.rglob("*.parquet")):
            data = pq.read_table(base_file)
            keys = compute_keys(data.combine_chunks().to_batches()[0], key_spec)
            assert keys.record_keys.to_pylist() == data.column("_hoodie_record_key").to_pylist(), base_file
            assert keys.partition_paths.to_pylist() == data.column("_hoodie_partition_path").to_pylist(), base_file
            assert {base_file.parent.name} == set(keys.partition_paths.to_pylist())
            checked += data.num_rows
    assert checked > 0


def _timestamp_spec(output: str, **config: str) -> KeyGeneratorSpec:
    return spec(rk="id", pp="ts", cls="org.apache.hudi.keygen.TimestampBasedKeyGenerator",
                **{TS + "timestamp.type": "EPOCHMILLISECONDS", TS + "output.dateformat": output,
                   TS + "output.timezone": "UTC"}, **config)


@pytest.mark.parametrize(("output", "hive", "why"), [
    ("'d='yyyyMMdd", "false", "doParsePartitionColumnValues"),
    ("yyyy'=x'", "true", "HiveStylePartitionValueExtractor"),
    ("yyyy'%'MM", "false", "unescapePathName"),
])
def test_output_formats_whose_folders_hudis_readers_misread_are_config_errors(output, hive, why):
    # A quoted literal is in every folder. Hudi 0.14/0.15's SparkHoodieTableFileIndex parses a
    # TimestampBasedKeyGenerator's one-folder paths as any other (typed as strings by
    # `_partitionSchemaFromProperties`, then `doParsePartitionColumnValues`): 'name=value' split, '%XX'
    # unescaped.
    with pytest.raises(ConfigError, match=TS.replace(".", r"\.") + "output.dateformat") as refused:
        _timestamp_spec(output, hive=hive)
    assert why in str(refused.value) and ENCODE in str(refused.value)
    escaped = _timestamp_spec(output, hive=hive, encode="true")
    keys = compute_keys(pa.RecordBatch.from_pydict({"id": [1], "ts": [1680350460123]}), escaped)
    assert keys.errors.null_count == 1 and "%" in keys.partition_paths[0].as_py()


@pytest.mark.parametrize("output", ["'d='yyyy/MM", "yyyy/'%'MM"])
def test_deeper_timestamp_paths_are_read_whole_so_their_literals_are_kept(output):
    # `doParsePartitionColumnValues`: a path of more folders than partition columns, for one column, is
    # the value as it stands (a leading 'name=' of hive style cut off): nothing split, nothing decoded.
    keys = compute_keys(pa.RecordBatch.from_pydict({"id": [1], "ts": [1680350460123]}), _timestamp_spec(output))
    assert keys.errors.null_count == 1
    assert keys.partition_paths.to_pylist() == [output.replace("'", "").replace("yyyy", "2023").replace("MM", "04")]
    # Hive style: `HiveStylePartitionValueExtractor` splits the whole path on '=' and wants two parts.
    hive = compute_keys(pa.RecordBatch.from_pydict({"id": [1], "ts": [1680350460123]}),
                        _timestamp_spec("yyyy/'%'MM", hive="true"))
    assert hive.partition_paths.to_pylist() == ["ts=2023/%04"]
    with pytest.raises(ConfigError, match="HiveStylePartitionValueExtractor"):
        _timestamp_spec("yyyy/'h='MM", hive="true")


def test_timestamp_folders_misread_only_at_some_times_are_refused_per_record():
    # '%Dec' decodes ('De' is hex); '%Jan' and '%Apr' do not.
    batch = pa.RecordBatch.from_pydict({"id": [1, 2, 3], "ts": [1680350460123, 1702000000000, None]})
    keys = compute_keys(batch, _timestamp_spec("yyyy'%'MMM"))
    assert keys.partition_paths.to_pylist() == ["2023%Apr", None, "1970%Jan"]
    assert "'2023%Dec' holds '%' escapes" in keys.errors[1].as_py() and "unescapePathName" in keys.errors[1].as_py()
    assert keys.errors.null_count == 2
    escaped = compute_keys(batch, _timestamp_spec("yyyy'%'MMM", encode="true"))
    assert escaped.partition_paths.to_pylist() == ["2023%25Apr", "2023%25Dec", "1970%25Jan"]


def test_simple_key_null_or_empty_is_a_record_error():
    batch = pa.RecordBatch.from_pydict({"uuid": ["a", None, "", "b"], "city": ["x", "y", "z", None]})
    keys = compute_keys(batch, spec(rk="uuid", pp="city", hive="true"))
    assert keys.record_keys.to_pylist() == ["a", None, None, "b"]
    assert keys.partition_paths.to_pylist() == ["city=x", None, None, "city=__HIVE_DEFAULT_PARTITION__"]
    assert keys.errors.to_pylist() == [
        None,
        'recordKey value: "null" for field: "uuid" cannot be null or empty.',
        'recordKey value: "" for field: "uuid" cannot be null or empty.',
        None,
    ]


def test_complex_keys_use_placeholders_and_fail_only_when_all_parts_are_missing():
    batch = pa.RecordBatch.from_pydict({"a": ["1", None, "", None], "b": [None, "2", "", None], "p": ["x", "", None, "y"]})
    keys = compute_keys(batch, spec(rk="a,b", pp="p"))
    assert keys.record_keys.to_pylist() == ["a:1,b:__null__", "a:__null__,b:2", None, None]
    assert keys.partition_paths.to_pylist() == ["x", "__HIVE_DEFAULT_PARTITION__", None, None]
    assert "cannot be entirely null or empty" in keys.errors[2].as_py()
    assert '"a:__null__,b:__null__"' in keys.errors[3].as_py()


def test_single_field_complex_keys_follow_the_encode_setting():
    batch = pa.RecordBatch.from_pydict({"id": [7], "a": ["x"], "b": ["y"]})
    assert compute_keys(batch, spec(rk="id", pp="a,b")).record_keys.to_pylist() == ["id:7"]
    legacy = spec(rk="id", pp="a,b", **{"hoodie.write.complex.keygen.new.encoding": "true"})
    assert compute_keys(batch, legacy).record_keys.to_pylist() == ["7"]
    # Non-partitioned keys with several fields are complex keys (the Avro path's placeholders).
    both = compute_keys(pa.RecordBatch.from_pydict({"a": ["1"], "b": [None]}), spec(rk="a,b"))
    assert both.record_keys.to_pylist() == ["a:1,b:__null__"] and both.partition_paths.to_pylist() == [""]


def test_nested_fields_and_null_parents():
    inner = pa.StructArray.from_arrays([pa.array(["k1", "k2", "k3"]), pa.array(["p", None, "q"])], names=["id", "day"],
                                       mask=pa.array([False, False, True]))
    batch = pa.RecordBatch.from_arrays([pa.StructArray.from_arrays([inner], names=["b"])], names=["a"])
    keys = compute_keys(batch, spec(rk="a.b.id", pp="a.b.day", hive="true"))
    assert keys.record_keys.to_pylist() == ["k1", "k2", None]
    assert keys.partition_paths.to_pylist() == ["a.b.day=p", "a.b.day=__HIVE_DEFAULT_PARTITION__", None]
    assert "a.b.id" in keys.errors[2].as_py()
    with pytest.raises(ConfigError, match="'a.b.nope'"):
        compute_keys(batch, spec(rk="a.b.nope", pp="a.b.day"))
    with pytest.raises(ConfigError, match="'missing'"):
        compute_keys(batch, spec(rk="missing", pp="a.b.day"))


def test_unsafe_partition_values_are_record_errors_not_folders():
    batch = pa.RecordBatch.from_pydict({"id": ["1", "2", "3", "4", "5"], "p": ["ok", "../../etc", "a/b", ".hoodie", "é" * 200]})
    plain = compute_keys(batch, spec(rk="id", pp="p"))
    assert plain.partition_paths.to_pylist() == ["ok", None, None, None, None]
    assert plain.record_keys.to_pylist() == ["1", None, None, None, None]
    assert all(e is not None for e in plain.errors.to_pylist()[1:])
    encoded = compute_keys(batch, spec(rk="id", pp="p", encode="true"))
    # Escaping turns '/' into %2F but leaves the leading dots, so those folders are still refused.
    assert encoded.partition_paths.to_pylist() == ["ok", None, "a%2Fb", None, None]
    hive = compute_keys(batch, spec(rk="id", pp="p", encode="true", hive="true"))
    assert hive.partition_paths.to_pylist()[:4] == ["p=ok", "p=..%2F..%2Fetc", "p=a%2Fb", "p=.hoodie"]


def test_timestamp_keys_and_partitions_follow_the_consistency_flag():
    micros = pa.array([1680350460123456], pa.timestamp("us", tz="UTC"))
    batch = pa.RecordBatch.from_pydict({"ts": micros, "day": micros})
    raw = compute_keys(batch, spec(rk="ts", pp="day"))
    assert raw.record_keys.to_pylist() == ["1680350460123456"] and raw.partition_paths.to_pylist() == ["1680350460123456"]
    consistent = compute_keys(batch, spec(rk="ts", pp="day", consistent="true", encode="true"))
    assert consistent.record_keys.to_pylist() == ["2023-04-01 12:01:00.123"]
    assert consistent.partition_paths.to_pylist() == ["2023-04-01 12%3A01%3A00.123"]


def test_timestamp_partition_with_hive_style_and_encoding():
    batch = pa.RecordBatch.from_pydict({"id": ["1", "2"], "ts": pa.array([1680350460123, None], pa.int64())})
    config = dict(rk="id", pp="ts", type="TIMESTAMP", hive="true",
                  **{TS + "timestamp.type": "EPOCHMILLISECONDS", TS + "output.dateformat": "yyyy/MM/dd"})
    keys = compute_keys(batch, spec(**config))
    assert keys.partition_paths.to_pylist() == ["ts=2023/04/01", "ts=1970/01/01"]
    encoded = compute_keys(batch, spec(**config, encode="true"))
    assert encoded.partition_paths.to_pylist() == ["ts=2023%2F04%2F01", "ts=1970%2F01%2F01"]
    assert spec(**config, encode="true").partition_depth == 1


def test_custom_key_generator_combines_simple_and_timestamp_levels():
    batch = pa.RecordBatch.from_pydict({"id": [1, 2], "name": ["a", "b"], "region": ["eu", None],
                                        "ts": pa.array([1680350460, 0], pa.int64())})
    custom = spec(rk="id,name", pp="region:simple,ts:TIMESTAMP", type="CUSTOM", hive="true",
                  **{TS + "timestamp.type": "UNIX_TIMESTAMP", TS + "output.dateformat": "yyyyMMdd"})
    keys = compute_keys(batch, custom)
    assert keys.record_keys.to_pylist() == ["id:1,name:a", "id:2,name:b"]
    assert keys.partition_paths.to_pylist() == ["region=eu/ts=20230401", "region=__HIVE_DEFAULT_PARTITION__/ts=19700101"]
    single = spec(rk="id", pp="", type="CUSTOM")
    assert compute_keys(batch, single).record_keys.to_pylist() == ["1", "2"]
    assert compute_keys(batch, single).partition_paths.to_pylist() == ["", ""]
    # CustomAvroKeyGenerator counts the raw entries: a blank second one makes the key complex.
    assert compute_keys(batch, spec(rk="id, ", pp="", type="CUSTOM")).record_keys.to_pylist() == ["id:1", "id:2"]


def test_unparseable_timestamps_are_record_errors():
    batch = pa.RecordBatch.from_pydict({"id": ["1", "2"], "ts": ["2023-04-01", "yesterday"]})
    keys = compute_keys(batch, spec(rk="id", pp="ts", type="TIMESTAMP",
                                    **{TS + "timestamp.type": "DATE_STRING", TS + "input.dateformat": "yyyy-MM-dd",
                                       TS + "output.dateformat": "yyyy/MM/dd", TS + "timezone": "UTC"}))
    assert keys.partition_paths.to_pylist() == ["2023/04/01", None]
    assert "'yesterday'" in keys.errors[1].as_py() and "'ts'" in keys.errors[1].as_py()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=6)), st.one_of(st.none(), st.integers(-5, 5)),
                          st.one_of(st.none(), st.text(max_size=6))), min_size=1, max_size=12),
       st.booleans(), st.booleans())
def test_compute_keys_matches_a_row_by_row_model(rows, hive_style, urlencode):
    batch = pa.RecordBatch.from_pydict({"a": pa.array([r[0] for r in rows], pa.string()),
                                        "b": pa.array([r[1] for r in rows], pa.int64()),
                                        "p": pa.array([r[2] for r in rows], pa.string())})
    keys = compute_keys(batch, spec(rk="a,b", pp="p,b", hive=str(hive_style), encode=str(urlencode)))
    for row, (a, b, p) in enumerate(rows):
        b_text = None if b is None else str(b)
        parts = [(f, "__null__" if v is None else "__empty__" if v == "" else v) for f, v in (("a", a), ("b", b_text))]
        expected_key = ",".join(f"{f}:{v}" for f, v in parts)
        levels = []
        for field, value in (("p", p), ("b", b_text)):
            text = "__HIVE_DEFAULT_PARTITION__" if not value else escape_path_name(value) if urlencode else value
            levels.append(f"{field}={text}" if hive_style else text)
        expected_path = "/".join(levels)
        # A value Spark's Hudi reader would read as another (`misread_value_problems`): one holding '=' or a
        # '%' escape it decodes (the null folder's name is longer than the values drawn here).
        misread = not urlencode and bool(p) and ("=" in p or unescape_path_name(p) != p)
        if (a in (None, "")) and b is None:
            assert keys.errors[row].as_py().startswith("recordKey values")
        elif partition_path_problem(expected_path, 2) or misread:
            assert keys.errors[row].as_py() is not None and keys.partition_paths[row].as_py() is None
        else:
            assert keys.record_keys[row].as_py() == expected_key
            assert keys.partition_paths[row].as_py() == expected_path
            assert keys.errors[row].as_py() is None


@pytest.mark.parametrize(("kind", "value", "refused"), [
    # JDK 17 against JDK 19+ (JDK-4511638): 2.0E23 is 1.9999999999999998E23 and 8.41E21 is
    # 8.409999999999999E21 under Java 17; the float 7.0E10 is 7.0000001E10, 1.7461756E9 is 1.74617562E9.
    # Every value printed in computerized notation that is not whole is refused, differing or not.
    (pa.float64(), 2e23, True), (pa.float64(), 8.41e21, True), (pa.float32(), 7e10, True),
    (pa.float32(), 1746175616.0, True), (pa.float64(), 1.5e-7, True), (pa.float64(), 12345678.5, True),
    # The same text under both: whole numbers the significand holds, and the plain range [1e-3, 1e7).
    (pa.float64(), 1.7e12, False), (pa.float64(), 2.0**53 - 1, False), (pa.float32(), 16777215.0, False),
    (pa.float64(), 0.001, False), (pa.float64(), 9999999.999, False), (pa.float64(), 0.1, False),
    (pa.float32(), 3.14159, False), (pa.float64(), 0.0, False),
])
def test_a_floating_key_value_whose_text_depends_on_the_jvm_is_a_record_error(kind, value, refused):
    """`HoodieAvroUtils.getNestedFieldValAsString` makes a float or double key of `Float.toString` /
    `Double.toString`, whose digits changed in JDK 19 for values printed in computerized notation.
    Hudi 0.14/0.15 and 1.0 run on Spark 3 with Java 8 to 17, Hudi 1.1/1.2 on Java 17 or 21: a value
    whose text differs would be another record, partition or bucket to one of them. Such a value fails
    its record, naming the field; the others key as Java prints them."""
    batch = pa.RecordBatch.from_pydict({"id": pa.array([value], kind), "p": pa.array([value], kind)})
    for keyed in (spec(rk="id", pp="p"), spec(rk="p", pp="id")):
        keys = compute_keys(batch, keyed)
        error = keys.errors[0].as_py()
        if refused:
            assert error is not None and "prints in other digits under Java 8-17 than under Java 19+" in error
        else:
            assert error is None and keys.record_keys[0].as_py() == (
                java_double_to_string(value) if kind == pa.float64() else java_float_to_string(value))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(), st.integers(-2**60, 2**60).map(float),
                          st.floats(min_value=-1e9, max_value=1e9)), max_size=20), st.booleans())
def test_the_vectorised_jvm_dependence_check_is_the_documented_rule(values, double):
    """`_jdk_dependent_rows` (Arrow kernels, every batch) picks exactly the rows `jdk_dependent_text` says."""
    from ingest.hudi.java_numbers import jdk_dependent_text
    from ingest.hudi.keygen.key_generator import _jdk_dependent_rows

    if not double:
        values = [None if v is None else float(np.float32(v)) if abs(v) < 3.4e38 else None for v in values]
    array = pa.array(values, pa.float64() if double else pa.float32())
    expected = [row for row, v in enumerate(array.to_pylist()) if v is not None and jdk_dependent_text(v, double=double)]
    assert _jdk_dependent_rows(array, double) == expected


def test_double_and_date_keys_render_like_java():
    batch = pa.RecordBatch.from_pydict({"x": pa.array([1e10, 0.1]), "d": pa.array([19448, 2932897], pa.date32())})
    keys = compute_keys(batch, spec(rk="x,d", pp="d"))
    assert keys.record_keys.to_pylist() == ["x:1.0E10,d:2023-04-01", "x:0.1,d:+10000-01-01"]
    assert keys.partition_paths.to_pylist() == ["2023-04-01", "+10000-01-01"]
