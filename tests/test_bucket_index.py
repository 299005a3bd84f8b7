"""Hudi's bucket index: Java hashes, Hudi's complex-key cut, vectorized vs scalar, file ids, configs."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.errors import ConfigError
from ingest.hudi.keygen import bucket_index
from ingest.hudi.keygen.bucket_index import (
    bucket_id,
    bucket_id_from_file_id,
    bucket_id_str,
    bucket_ids,
    bucket_index_write_config,
    hash_fields_from_config,
    hash_key_values,
    hash_key_values_1x,
    java_list_hash,
    java_string_hash,
    java_string_hashes,
    new_bucket_file_id,
)

# String.hashCode values worked out by hand: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 units, int32.
KNOWN_HASHES = {
    "": 0,
    "a": 97,
    "Aa": 65 * 31 + 97,  # 2112, the classic collision with "BB"
    "BB": 66 * 31 + 66,
    "hello": 99162322,
    "é": 0xE9,
    "日本": 0x65E5 * 31 + 0x672C,  # 835047
    "😀": 0xD83D * 31 + 0xDE00,  # a surrogate pair: two UTF-16 units, 1772899
    "polygenelubricants": -(2**31),  # overflows to Integer.MIN_VALUE
}


@pytest.mark.parametrize(("text", "expected"), KNOWN_HASHES.items())
def test_string_hash_matches_java(text, expected):
    assert java_string_hash(text) == expected


def test_vectorized_string_hashes_match_known_values():
    texts = list(KNOWN_HASHES)
    got = java_string_hashes(pa.array(texts + [None])).view(np.int32)
    assert got.tolist() == list(KNOWN_HASHES.values()) + [0]


def test_list_hash_matches_java():
    assert java_list_hash([]) == 1
    assert java_list_hash([None]) == 31
    assert java_list_hash(["a"]) == 31 + 97
    assert java_list_hash(["a", ""]) == (31 + 97) * 31
    assert java_list_hash(["polygenelubricants", "a"]) == ((31 - 2**31) * 31 + 97 + 2**31) % 2**32 - 2**31


def test_bucket_id_of_a_plain_key_hashes_the_singleton_list():
    # (List.hashCode([key]) & Integer.MAX_VALUE) % numBuckets
    assert bucket_id("hello", ["uuid"], 1000) == (31 + 99162322) % 1000
    assert bucket_id("polygenelubricants", ["uuid"], 7) == ((31 - 2**31) & 0x7FFFFFFF) % 7


def test_complex_keys_are_cut_as_hudi_0_14_cuts_them():
    assert hash_key_values("id:1,name:Alice", ["id"]) == ["1"]
    assert hash_key_values("id:1,name:Alice", ["name", "id"]) == ["1", "Alice"]
    assert hash_key_values("id:__null__,name:__empty__", ["id", "name"]) == [None, ""]
    # A comma inside a value makes a part without ':', which Hudi keeps whole.
    assert hash_key_values("a:x,y", ["a"]) == ["x", "y"]
    # Only the first ':' of a part separates field and value.
    assert hash_key_values("a:10:00", ["a"]) == ["10:00"]
    # A plain key holding ':' is cut too; its prefix is no hash field, so nothing is left.
    assert hash_key_values("2023-01-01 10:00:00", ["ts"]) == []
    assert bucket_id("2023-01-01 10:00:00", ["ts"], 16) == 1
    # Java's split drops trailing empty parts.
    assert hash_key_values("a:1,,", ["a"]) == ["1"]
    assert hash_key_values("a:1,,b:2", ["a", "b", ""]) == ["1", "", "2"]


def test_complex_keys_are_cut_as_hudi_1x_cuts_them():
    """`KeyGenUtils.extractRecordKeysByFields` as HUDI-8403 rewrote it for 1.x (tables of versions 8 and 9),
    with the cases of its `TestBucketIdentifier`/`TestKeyGenUtils`."""
    # Keys without `,` or without `:` are one value: timestamps, and one-field complex keys.
    assert hash_key_values_1x("2024-10-24 10:11:11.234", ["ts"]) == ["2024-10-24 10:11:11.234"]
    assert hash_key_values_1x("id:5", ["id"]) == ["id:5"]
    assert hash_key_values_1x("plain", ["id"]) == ["plain"]
    # A value runs to the last `,` before the next field's `:`.
    assert hash_key_values_1x("f1:abc,f2:bcd,efg", ["f1", "f2"]) == ["abc", "bcd,efg"]
    assert hash_key_values_1x("id:a,b,name:x", ["id", "name"]) == ["a,b", "x"]
    assert hash_key_values_1x("col1:val1,col2:2014-10-22 13:50:42,col3:val3", []) == [
        "val1", "2014-10-22 13:50:42", "val3"]
    assert hash_key_values_1x("id:1,name:Alice", ["name"]) == ["Alice"]
    assert hash_key_values_1x("id:__null__,name:__empty__", ["id", "name"]) == [None, ""]
    # No value kept: the key whole.
    assert hash_key_values_1x("x:1,y:2", ["z"]) == ["x:1,y:2"]
    # The buckets differ from 0.14/0.15's wherever the values do.
    assert bucket_id("order:1", ["uuid"], 8) == 1 and bucket_id("order:1", ["uuid"], 8, cut_1x=True) == 4
    assert bucket_id("id:1,b:2", ["id", "b"], 8, cut_1x=True) == bucket_id("id:1,b:2", ["id", "b"], 8)


def test_hash_fields_are_read_like_hudi():
    assert hash_fields_from_config("id,name") == ("id", "name")
    assert hash_fields_from_config("id, name") == ("id", " name")  # not trimmed by Hudi either
    assert hash_fields_from_config("id,") == ("id",)


# -- vectorized vs scalar --------------------------------------------------------------------------

_FIELD = st.sampled_from(["a", "b", "id", "", "é"])
_VALUE = st.one_of(
    st.text(alphabet=st.sampled_from(list("xy,:é日😀 _")), max_size=8),
    st.sampled_from(["__null__", "__empty__", ""]),
    st.text(max_size=6),
)
_COMPLEX_KEY = st.lists(st.tuples(_FIELD, _VALUE), min_size=1, max_size=4).map(
    lambda parts: ",".join(f"{f}:{v}" for f, v in parts)
)
_KEY = st.one_of(st.text(max_size=20), _COMPLEX_KEY, st.text(alphabet=st.sampled_from(list(",:a")), max_size=6))
_HASH_FIELDS = st.one_of(st.just(()), st.lists(_FIELD, min_size=1, max_size=3).map(tuple))


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(_KEY, max_size=25), hash_fields=_HASH_FIELDS, buckets=st.integers(1, 10_000),
       cut_1x=st.booleans())
def test_vectorized_bucket_ids_equal_the_scalar_reference(keys, hash_fields, buckets, cut_1x):
    expected = [bucket_id(k, hash_fields, buckets, cut_1x=cut_1x) for k in keys]
    assert bucket_ids(pa.array(keys, pa.string()), hash_fields, buckets, cut_1x=cut_1x).tolist() == expected
    with tiny_chunks():
        assert bucket_ids(pa.array(keys, pa.string()), hash_fields, buckets, cut_1x=cut_1x).tolist() == expected


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(_KEY, min_size=1, max_size=12), start=st.integers(0, 5), hash_fields=_HASH_FIELDS,
       cut_1x=st.booleans())
def test_vectorized_bucket_ids_on_sliced_large_and_chunked_arrays(keys, start, hash_fields, cut_1x):
    expected = [bucket_id(k, hash_fields, 97, cut_1x=cut_1x) for k in keys[start:]]
    array = pa.array(keys, pa.string()).slice(start)
    assert bucket_ids(array, hash_fields, 97, cut_1x=cut_1x).tolist() == expected
    assert bucket_ids(array.cast(pa.large_string()), hash_fields, 97, cut_1x=cut_1x).tolist() == expected
    chunked = pa.chunked_array([pa.array(keys[start:][:2], pa.string()), pa.array(keys[start:][2:], pa.string())])
    assert bucket_ids(chunked, hash_fields, 97, cut_1x=cut_1x).tolist() == expected


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), st.text(max_size=30)), max_size=30))
def test_vectorized_string_hashes_equal_the_scalar_reference(texts):
    expected = [0 if t is None else java_string_hash(t) for t in texts]
    assert java_string_hashes(pa.array(texts, pa.string())).view(np.int32).tolist() == expected
    with tiny_chunks():
        assert java_string_hashes(pa.array(texts, pa.string())).view(np.int32).tolist() == expected


@contextmanager
def tiny_chunks():
    """Hash in 16-byte chunks, so that strings straddle chunk boundaries and some exceed a chunk."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bucket_index, "_CHUNK_BYTES", 16)
        yield


def test_a_string_longer_than_a_chunk_hashes_correctly():
    long_text = "é😀x" * 200_000  # ~1.8 MB of UTF-8, larger than one hashing chunk
    got = java_string_hashes(pa.array(["a", long_text, "b"])).view(np.int32).tolist()
    assert got == [97, java_string_hash(long_text), 98]


def test_null_record_keys_are_refused():
    with pytest.raises(ValueError, match="null"):
        bucket_ids(pa.array(["a", None]), ["id"], 4)


@pytest.mark.parametrize("buckets", [0, -1, 10**8 + 1])
def test_bucket_count_must_be_positive_and_fit_eight_digits(buckets):
    with pytest.raises(ConfigError, match="hoodie.bucket.index.num.buckets"):
        bucket_id("a", ["id"], buckets)


# -- file ids and configs --------------------------------------------------------------------------


def test_new_bucket_file_id_replaces_the_first_eight_characters():
    file_id = new_bucket_file_id(3, "d0304c53-6fd2-4b7a-a9d6-5ff632f79224")
    assert file_id == "00000003-6fd2-4b7a-a9d6-5ff632f79224-0"
    assert bucket_id_from_file_id(file_id) == 3
    random_id = new_bucket_file_id(12345)
    assert random_id.startswith("00012345-") and random_id.endswith("-0") and len(random_id) == 38
    assert new_bucket_file_id(1) != new_bucket_file_id(1)


def test_bucket_numbers_round_trip_and_bad_file_ids_are_refused():
    for bucket in (0, 7, 255, 99_999_999):
        assert bucket_id_from_file_id(new_bucket_file_id(bucket)) == bucket
    assert bucket_id_str(42) == "00000042"
    for bad in ("d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0", "-0000001-xx", "0000012"):
        with pytest.raises(ValueError):
            bucket_id_from_file_id(bad)
    with pytest.raises(ValueError):
        bucket_id_str(10**8)


def test_write_config_defaults_the_hash_field_to_the_record_key():
    assert bucket_index_write_config(16, "id,name") == {
        "hoodie.index.type": "BUCKET",
        "hoodie.index.bucket.engine": "SIMPLE",
        "hoodie.bucket.index.num.buckets": "16",
        "hoodie.bucket.index.hash.field": "id,name",
    }
    assert bucket_index_write_config(8, "id,name", "name")["hoodie.bucket.index.hash.field"] == "name"


def test_write_config_hash_fields_must_be_record_key_fields():
    with pytest.raises(ConfigError, match="hoodie.bucket.index.hash.field"):
        bucket_index_write_config(8, "id,name", "city")
    with pytest.raises(ConfigError, match="hoodie.bucket.index.num.buckets"):
        bucket_index_write_config(0, "id")
