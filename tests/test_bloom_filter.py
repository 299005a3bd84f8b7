"""Hudi's bloom filters: bit-for-bit equal to the footers Hudi wrote, to Hadoop's own classes, and to a
plain per-key transcription of the Java code (the numpy version must not drift from it)."""

from __future__ import annotations

import base64
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.errors import IngestError, UnsupportedTable
from ingest.hudi.parquet import bloom_filter as bf

# -- a straightforward transcription of Hadoop's MurmurHash / HashFunction / filters -----------

U32 = 0xFFFFFFFF


def _to_int32(x: int) -> int:
    x &= U32
    return x - (1 << 32) if x & 0x80000000 else x


def _sign_extend(byte: int) -> int:
    """Java's `(int) someByte` as a 32-bit pattern."""
    return (byte - 256 if byte >= 128 else byte) & U32


def java_murmur(data: bytes, seed: int) -> int:
    """`MurmurHash.hash(data, length, seed)` one byte and one statement at a time; returns a Java int."""
    m = 0x5BD1E995
    length = len(data)
    h = (seed ^ length) & U32
    for i in range(length >> 2):
        i4 = i << 2
        k = _sign_extend(data[i4 + 3])
        k = (k << 8) & U32
        k |= data[i4 + 2]
        k = (k << 8) & U32
        k |= data[i4 + 1]
        k = (k << 8) & U32
        k |= data[i4 + 0]
        k = (k * m) & U32
        k ^= k >> 24
        k = (k * m) & U32
        h = (h * m) & U32
        h ^= k
    left = length - ((length >> 2) << 2)
    if left:
        if left >= 3:
            h ^= (_sign_extend(data[length - 3]) << 16) & U32
        if left >= 2:
            h ^= (_sign_extend(data[length - 2]) << 8) & U32
        if left >= 1:
            h ^= _sign_extend(data[length - 1])
        h = (h * m) & U32
    h ^= h >> 13
    h = (h * m) & U32
    h ^= h >> 15
    return _to_int32(h)


def java_positions(key: str, nb_hash: int, max_value: int) -> list[int]:
    """`HashFunction.hash(new Key(key.getBytes(UTF_8)))`."""
    data = key.encode("utf-8")
    result = []
    initval = 0
    for _ in range(nb_hash):
        initval = java_murmur(data, initval)
        remainder = abs(initval) % max_value  # Java's % keeps the dividend's sign; abs() drops it
        result.append(abs(-remainder if initval < 0 else remainder))
    return result


class PlainDynamicFilter:
    """`InternalDynamicBloomFilter` key by key (bits kept as Python sets)."""

    def __init__(self, vector_size: int, nb_hash: int, nr: int, max_nr: int):
        self.vector_size, self.nb_hash, self.nr, self.max_nr = vector_size, nb_hash, nr, max_nr
        self.current = 0
        self.reached_max = False
        self.cur_index = 0
        self.matrix: list[set[int]] = [set()]

    def _active(self):
        if self.reached_max:
            row = self.matrix[self.cur_index % len(self.matrix)]
            self.cur_index += 1
            return row
        if self.current >= self.nr and len(self.matrix) * self.nr < self.max_nr:
            return None
        if self.current >= self.nr and len(self.matrix) * self.nr >= self.max_nr:
            self.reached_max = True
            return self.matrix[0]
        return self.matrix[-1]

    def add(self, key: str) -> None:
        row = self._active()
        if row is None:
            self.matrix.append(set())
            row = self.matrix[-1]
            self.current = 0
        row.update(java_positions(key, self.nb_hash, self.vector_size))
        self.current += 1

    def _vector(self, bits: set[int]) -> bytes:
        out = bytearray((self.vector_size + 7) // 8)
        for i in range(self.vector_size):
            if i in bits:
                out[i // 8] |= 1 << (i % 8)
        return bytes(out)

    def serialize(self) -> bytes:
        header = struct.pack(">iibi", -1, self.nb_hash, 1, self.vector_size)
        out = header + struct.pack(">iii", self.nr, self.current, len(self.matrix))
        for bits in self.matrix:
            out += header + self._vector(bits)
        return out


# -- sizing ---------------------------------------------------------------------------------------


def test_defaults_size_the_filter_as_hudi_does():
    assert (bf.DEFAULT_NUM_ENTRIES, bf.DEFAULT_FPP, bf.DEFAULT_DYNAMIC_MAX_ENTRIES) == (60000, 1e-9, 100000)
    assert bf.DEFAULT_TYPE_CODE == "DYNAMIC_V0"
    assert bf.bit_size(60000, 0.000000001) == 2587966
    assert bf.num_hashes(2587966, 60000) == 30
    filt = bf.create_bloom_filter()
    assert isinstance(filt, bf.DynamicBloomFilter)
    assert (filt.vector_size, filt.num_hashes, filt.num_entries, filt.max_entries) == (2587966, 30, 60000, 100000)
    simple = bf.create_bloom_filter("simple", num_entries=1000, fpp=0.01)
    assert isinstance(simple, bf.SimpleBloomFilter)
    assert (simple.vector_size, simple.num_hashes) == (bf.bit_size(1000, 0.01), bf.num_hashes(bf.bit_size(1000, 0.01), 1000))


# -- hashing against the plain transcription -----------------------------------------------------

key_text = st.text(min_size=1, max_size=41)  # every tail length, multi-byte and 4-byte UTF-8


@settings(max_examples=40, deadline=None)
@given(st.lists(key_text, min_size=1, max_size=30), st.integers(1, 12), st.integers(1, 5_000_000))
def test_vectorized_hash_equals_plain_java_transcription(keys, rounds, vector_size):
    expected = [java_positions(k, rounds, vector_size) for k in keys]
    assert bf.hash_positions(keys, rounds, vector_size).tolist() == expected


def test_hash_covers_signed_tail_bytes_and_negative_hashes():
    # Tail bytes >= 0x80 are sign-extended by Java; many keys give negative ints before abs().
    keys = ["é", "aé", "ü€", "\U0001f600", "x" * 7 + "ÿ", "k" * 36, "ä" * 3]
    expected = [java_positions(k, 30, 2587966) for k in keys]
    assert bf.hash_positions(keys, 30, 2587966).tolist() == expected
    assert bf.hash_positions(pa.array(keys, pa.large_string()), 30, 2587966).tolist() == expected
    assert bf.hash_positions(pa.chunked_array([keys[:3], keys[3:]]), 30, 2587966).tolist() == expected
    assert bf.hash_positions(pa.array(["zz"] + keys).slice(1), 30, 2587966).tolist() == expected
    assert any(java_murmur(k.encode(), 0) < 0 for k in keys)


# -- filters against the plain transcription ------------------------------------------------------


def _keys(n: int, prefix: str = "key") -> list[str]:
    return [f"{prefix}-{i:06d}-ü" if i % 3 else f"{prefix}-{i}" for i in range(n)]


def test_no_keys_add_nothing_and_find_nothing():
    """An empty base file (a compacted slice whose records were all deleted) still gets a filter."""
    for empty in ([], pa.array([], pa.string())):
        assert bf.hash_positions(empty, 30, 2587966).shape == (0, 30)
        for ours in (bf.DynamicBloomFilter.create(), bf.SimpleBloomFilter.create()):
            before = ours.serialize()
            ours.add_all(empty)
            assert ours.serialize() == before
            assert ours.might_contain_all(empty).tolist() == []


def test_dynamic_filter_grows_then_round_robins_like_hudi():
    # 50 keys per row, bound 120: rows 0..2 fill (3 * 50 >= 120), then keys go to row 0, 0, 1, 2, 0...
    ours = bf.DynamicBloomFilter.create(num_entries=50, fpp=0.05, max_entries=120)
    plain = PlainDynamicFilter(ours.vector_size, ours.num_hashes, 50, 120)
    keys = _keys(400)
    for batch in (keys[:10], keys[10:149], keys[149:151], keys[151:]):  # state carries across calls
        ours.add_all(batch)
        for k in batch:
            plain.add(k)
        assert ours.serialize() == plain.serialize()
    assert ours.num_rows == 3
    assert ours.might_contain_all(keys).all()
    parsed = bf.parse_bloom_filter(ours.to_string(), "DYNAMIC_V0")
    assert parsed.serialize() == ours.serialize()
    assert parsed.might_contain_all(keys).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(key_text, min_size=1, max_size=60), st.integers(1, 9), st.integers(2, 12), st.integers(1, 40),
       st.integers(1, 3))
def test_filter_equals_plain_transcription_across_chunks_and_rows(keys, chunk, num_entries, max_entries, calls):
    # Chunks of a few keys, rows that change inside a chunk (growing, then round-robin), keys of every
    # length in one chunk, and both ways of setting bits (few keys into the packed row, many through
    # an unpacked copy): the Java transcription, one key at a time, is the reference.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bf, "_CHUNK", chunk)
        ours = bf.DynamicBloomFilter.create(num_entries=num_entries, fpp=0.1, max_entries=max_entries)
        plain = PlainDynamicFilter(ours.vector_size, ours.num_hashes, num_entries, max_entries)
        step = -(-len(keys) // calls)
        for start in range(0, len(keys), step):
            ours.add_all(keys[start:start + step])
            for k in keys[start:start + step]:
                plain.add(k)
        assert ours.serialize() == plain.serialize()
        assert ours.might_contain_all(keys).all()
        others = [k + "#" for k in keys]
        expected = [any(set(java_positions(k, ours.num_hashes, ours.vector_size)) <= row for row in plain.matrix)
                    for k in others]
        assert ours.might_contain_all(others).tolist() == expected


def test_parsed_dynamic_filter_keeps_growing_as_hudi_does_after_readfields():
    # Hudi's readFields leaves maxNr at 0, so a full parsed filter never adds rows.
    ours = bf.DynamicBloomFilter.create(num_entries=20, fpp=0.05, max_entries=1000)
    ours.add_all(_keys(30))
    parsed = bf.parse_bloom_filter(ours.to_string(), "DYNAMIC_V0")
    plain = PlainDynamicFilter(ours.vector_size, ours.num_hashes, 20, 0)
    plain.matrix = [set(np.nonzero(np.unpackbits(row, bitorder="little"))[0].tolist()) for row in parsed._rows]
    plain.current = parsed.current_count
    more = _keys(45, "more")
    parsed.add_all(more)
    for k in more:
        plain.add(k)
    assert parsed.serialize() == plain.serialize()
    assert parsed.num_rows == 2


def test_simple_filter_equals_plain_transcription():
    ours = bf.SimpleBloomFilter.create(num_entries=100, fpp=0.01)
    keys = _keys(150)
    ours.add_all(keys)
    bits = set()
    for k in keys:
        bits.update(java_positions(k, ours.num_hashes, ours.vector_size))
    vector = bytearray((ours.vector_size + 7) // 8)
    for i in bits:
        vector[i // 8] |= 1 << (i % 8)
    assert ours.serialize() == struct.pack(">iibi", -1, ours.num_hashes, 1, ours.vector_size) + bytes(vector)
    parsed = bf.parse_bloom_filter(ours.to_string())  # no type code: SIMPLE, as Hudi reads it
    assert isinstance(parsed, bf.SimpleBloomFilter)
    assert parsed.to_string() == ours.to_string()
    assert parsed.might_contain_all(keys).all()
    assert ours.might_contain(keys[0]) and not bf.SimpleBloomFilter.create(100, 0.01).might_contain(keys[0])


def test_more_keys_than_num_entries_with_hudi_defaults():
    keys = pa.array([f"{i:08x}-{(i * 7919) % 100003:05d}-record" for i in range(130_000)])
    filt = bf.create_bloom_filter()
    filt.add_all(keys.slice(0, 70_000))
    filt.add_all(keys.slice(70_000))
    assert filt.num_rows == 2  # 2 * 60000 >= 100000: no third row, the rest goes round-robin
    assert filt.current_count == 130_000 - 60_000
    header = filt.serialize()[:25]
    assert struct.unpack(">iibiiii", header) == (-1, 30, 1, 2587966, 60000, 70000, 2)
    assert filt.might_contain_all(keys).all()
    parsed = bf.parse_bloom_filter(filt.to_string(), "DYNAMIC_V0")
    assert parsed.to_string() == filt.to_string()
    assert parsed.might_contain_all(keys).all()
    absent = parsed.might_contain_all([f"absent-{i}" for i in range(5000)])
    assert absent.sum() < 50


# -- against Hudi's footers and Hadoop's classes -------------------------------------------------


def _fixture_base_files(fixture_tables) -> list:
    files = sorted(p for table in fixture_tables.values() for p in table.glob("*/*.parquet"))
    assert files, "the fixture tables hold no base files"
    return files


def test_serialization_equals_every_fixture_footer(fixture_tables):
    for path in _fixture_base_files(fixture_tables):
        footer = pq.read_metadata(path).metadata
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)
        expected = footer[b"org.apache.hudi.bloomfilter"].decode()
        type_code = footer[b"hoodie_bloom_filter_type_code"].decode()
        filt = bf.create_bloom_filter(type_code)
        filt.add_all(keys)
        assert filt.to_string() == expected, path.name
        parsed = bf.parse_bloom_filter(expected, type_code)
        assert parsed.to_string() == expected
        assert parsed.might_contain_all(keys).all()
        assert not parsed.might_contain("not-a-key-of-this-file")


def _java_serialize(jvm, jfilter) -> bytes:
    out = jvm.java.io.ByteArrayOutputStream()
    jfilter.write(jvm.java.io.DataOutputStream(out))
    return bytes(out.toByteArray())


def test_equals_hadoops_own_bloom_filters(spark):
    jvm = spark.sparkContext._jvm
    bloom = jvm.org.apache.hadoop.util.bloom
    keys = _keys(260) + ["é", "\U0001f600x", "ÿÿÿ"]

    simple = bf.SimpleBloomFilter.create(num_entries=200, fpp=0.001)
    jsimple = bloom.BloomFilter(simple.vector_size, simple.num_hashes, 1)
    # Below Hudi's bound the dynamic filter is Hadoop's DynamicBloomFilter: 3 rows of 100 keys.
    dynamic = bf.DynamicBloomFilter.create(num_entries=100, fpp=0.001, max_entries=1_000_000)
    jdynamic = bloom.DynamicBloomFilter(dynamic.vector_size, dynamic.num_hashes, 1, 100)
    for k in keys:
        jkey = bloom.Key(bytearray(k.encode("utf-8")))
        jsimple.add(jkey)
        jdynamic.add(jkey)
    simple.add_all(keys)
    dynamic.add_all(keys)
    assert simple.serialize() == _java_serialize(jvm, jsimple)
    assert dynamic.num_rows == 3
    assert dynamic.serialize() == _java_serialize(jvm, jdynamic)


# -- rejected input -------------------------------------------------------------------------------


def test_rejects_what_hudi_rejects():
    filt = bf.create_bloom_filter()
    with pytest.raises(ValueError, match="empty"):
        filt.add("")
    with pytest.raises(ValueError, match="null"):
        filt.add_all(pa.array(["a", None]))
    with pytest.raises(UnsupportedTable, match="type code"):
        bf.create_bloom_filter("BLOCKED")
    with pytest.raises(UnsupportedTable, match="type code"):
        bf.parse_bloom_filter("AAAA", "OTHER")
    text = filt.to_string()
    with pytest.raises(IngestError, match="truncated"):
        bf.parse_bloom_filter(base64.b64encode(base64.b64decode(text)[:-3]).decode(), "DYNAMIC_V0")
    with pytest.raises(IngestError, match="base64"):
        bf.parse_bloom_filter("not base64!", "DYNAMIC_V0")
    jenkins = base64.b64encode(struct.pack(">ii", 5, 64) + b"\0" * 8).decode()
    with pytest.raises(UnsupportedTable, match="Jenkins"):
        bf.parse_bloom_filter(jenkins, "SIMPLE")
    assert filt.current_count == 0  # a rejected batch changes nothing
