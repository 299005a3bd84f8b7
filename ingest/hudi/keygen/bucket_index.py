"""Hudi's simple bucket index: which file group (bucket) a record key belongs to.

`BucketIdentifier.getBucketId` (Hudi 0.14/0.15) hashes the list of the key's hash-field values
with Java's `List.hashCode` (31 * h + `String.hashCode` over UTF-16 code units, int overflow),
masks the sign bit and takes it modulo the bucket count. A key without `:` is hashed as the single
value; a complex key `f1:v1,f2:v2` is cut by `KeyGenUtils.extractRecordKeysByFields` as 0.14/0.15
do it: split on `,` (Java split: trailing empty parts dropped), each part split at its first `:`,
parts without `:` kept whole, parts of other fields dropped, `__null__` read as null and
`__empty__` as "" (both hash to 0). That cut has quirks we keep on purpose, because a different
bucket would be a different file group: a value holding `,` contributes two list elements, and a
plain key holding `:` whose prefix is not a hash field (e.g. `2023-01-01 10:00:00`) yields an
empty list (hash 1). That is the cut at table version 6.

Hudi 1.x rewrote the cut (HUDI-8403), and tables of versions 8 and 9 are continued by 1.x writers, so
there keys are cut its way (`cut_1x`): a key without `,` or without `:` is hashed whole (a one-field
complex key `id:5` too), and a complex key is walked field by field, a value keeping the `,` and `:` it
holds (`KeyGenUtils.extractRecordKeysByFields`, 1.x); a key that yields no value is hashed whole.

The bucket lives in the file id: `%08d` of the bucket number replaces the first 8 characters of a
UUID, plus Hudi's `-0` suffix (`BucketIdentifier.newBucketFileIdPrefix`, `FSUtils.createNewFileId`).
Bucket settings are write configs, not table properties, in table version 6: every writer of the
table must be given the same ones (`bucket_index_write_config`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ingest.errors import ConfigError
from ingest.hudi.keygen.key_generator import EMPTY_PLACEHOLDER, NULL_PLACEHOLDER
from ingest.hudi.keygen.partition_path import java_split

INDEX_TYPE = "hoodie.index.type"
BUCKET_ENGINE = "hoodie.index.bucket.engine"
NUM_BUCKETS = "hoodie.bucket.index.num.buckets"
HASH_FIELD = "hoodie.bucket.index.hash.field"
MAX_BUCKETS = 10**8  # the bucket number must fit the 8 characters it replaces

_MASK32 = 0xFFFFFFFF
_CHUNK_BYTES = 1 << 20  # string bytes hashed per numpy pass, bounding temporary memory


# -- scalar reference ---------------------------------------------------------------------------------


def java_string_hash(text: str) -> int:
    """`String.hashCode`: signed 32-bit polynomial base 31 over the UTF-16 code units."""
    data = text.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | data[i + 1] << 8)) & _MASK32
    return h - (1 << 32) if h >= 1 << 31 else h


def java_list_hash(items: Sequence[str | None]) -> int:
    """`List.hashCode` of strings (null elements hash to 0), signed 32-bit."""
    h = 1
    for item in items:
        h = (31 * h + (0 if item is None else java_string_hash(item))) & _MASK32
    return h - (1 << 32) if h >= 1 << 31 else h


def hash_key_values(record_key: str, hash_fields: Sequence[str]) -> list[str | None]:
    """`BucketIdentifier.getHashKeys`: the values of the hash fields in a record key."""
    if ":" not in record_key:
        return [record_key]
    values: list[str | None] = []
    for part in java_split(record_key):
        pieces = part.split(":", 1)
        if len(pieces) == 1:
            values.append(pieces[0])
        elif not hash_fields or pieces[0] in hash_fields:
            value = pieces[1]
            values.append(None if value == NULL_PLACEHOLDER else "" if value == EMPTY_PLACEHOLDER else value)
    return values


def hash_key_values_1x(record_key: str, hash_fields: Sequence[str]) -> list[str | None]:
    """Hudi 1.x's `BucketIdentifier.getHashKeys`: `KeyGenUtils.extractRecordKeysByFields` as rewritten by
    HUDI-8403. A value runs to the last `,` before the next field's `:`, so it keeps its own `,` and `:`."""
    if "," not in record_key or ":" not in record_key:
        return [record_key]
    values: list[str | None] = []
    n, processed = len(record_key), 0

    def comma_before(colon: int) -> int:  # Java's `lastIndexOf(',', colon)`: -1 for a negative start
        return record_key.rfind(",", 0, colon + 1) if colon >= 0 else -1

    while processed < n:
        sep1 = record_key.find(":", processed)
        if sep1 < 0:
            break  # unreachable for Java, whose substring would throw
        field = record_key[processed:sep1]
        sep2 = record_key.find(":", sep1 + 1)
        if not hash_fields or list(hash_fields) == [""] or field in hash_fields:
            if sep2 < 0:
                value, processed = record_key[sep1 + 1:], n
            else:
                comma = comma_before(sep2)
                while comma < sep1 and sep2 > 0:  # a value holding `:`: skip to the next field's
                    sep2 = record_key.find(":", sep2 + 1)
                    comma = comma_before(sep2)
                if comma > 0:
                    value, processed = record_key[sep1 + 1:comma], comma + 1
                else:
                    value, processed = record_key[sep1 + 1:], n
            values.append(None if value == NULL_PLACEHOLDER else "" if value == EMPTY_PLACEHOLDER else value)
        elif sep2 < 0:
            processed = n
        else:
            comma = comma_before(sep2)
            while comma < sep1 and sep2 >= 0:  # Java loops on here; there is no field after this one
                sep2 = record_key.find(":", sep2 + 1)
                comma = comma_before(sep2)
            processed = n if comma < sep1 else comma + 1
    return values or [record_key]


def bucket_id(record_key: str, hash_fields: Sequence[str], num_buckets: int, *, cut_1x: bool = False) -> int:
    """`BucketIdentifier.getBucketId(recordKey, indexKeyFields, numBuckets)` for one key."""
    _check_buckets(num_buckets)
    values = (hash_key_values_1x if cut_1x else hash_key_values)(record_key, hash_fields)
    return (java_list_hash(values) & 0x7FFFFFFF) % num_buckets


def hash_fields_from_config(value: str) -> tuple[str, ...]:
    """The hash fields as Hudi reads `hoodie.bucket.index.hash.field`: a raw Java split on commas."""
    return tuple(java_split(value))


# -- vectorized -----------------------------------------------------------------------------------------


_INV31 = pow(31, -1, 1 << 32)  # 31 is odd, so it has an inverse modulo 2**32
_powers_cache: dict[str, np.ndarray] = {}


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(31**k, 31**-k) mod 2**32 for k < n, as uint32; grown on demand and kept."""
    have = _powers_cache.get("up")
    if have is None or len(have) < n:
        size = max(n, _CHUNK_BYTES + 1)
        up, down = np.empty(size, dtype=np.uint32), np.empty(size, dtype=np.uint32)
        up[0] = down[0] = 1
        up[1:] = np.cumprod(np.full(size - 1, 31, dtype=np.uint32), dtype=np.uint32)
        down[1:] = np.cumprod(np.full(size - 1, _INV31, dtype=np.uint32), dtype=np.uint32)
        _powers_cache.update(up=up, down=down)
    return _powers_cache["up"], _powers_cache["down"]


def _poly31(units: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per run of `lengths` consecutive units: sum of unit * 31**(position from the run's end) mod 2**32."""
    ends = np.cumsum(lengths, dtype=np.int64)
    return _runs_poly31(units, ends - lengths, ends)


def _runs_poly31(units: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The same over runs [start, end) of `units`, computed as 31**(end-1) * (P[end] - P[start])
    with P the prefix sums of unit_j * 31**-j: one multiply and one cumulative sum per unit, all in
    wrapping uint32 arithmetic."""
    up, down = _powers(units.size + 1)
    prefix = np.zeros(units.size + 1, dtype=np.uint32)
    np.cumsum(units * down[: units.size], dtype=np.uint32, out=prefix[1:])
    return up[np.maximum(ends - 1, 0)] * (prefix[ends] - prefix[starts])


def _utf16_positions(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """UTF-16 code units of UTF-8 bytes, plus (lead byte positions, unit index of each lead) to map
    byte positions at character boundaries to unit positions."""
    leads = np.flatnonzero((chunk & 0xC0) != 0x80)
    padded = np.concatenate([chunk, np.zeros(3, dtype=np.uint8)]).astype(np.uint32)
    b0, b1, b2, b3 = (padded[leads + i] for i in range(4))
    code = np.where(b0 < 0x80, b0,
           np.where(b0 < 0xE0, ((b0 & 0x1F) << 6) | (b1 & 0x3F),
           np.where(b0 < 0xF0, ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F),
                    ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F))))
    pair = code >= 0x10000
    first = np.concatenate([[0], np.cumsum(1 + pair.astype(np.int64))])
    units = np.empty(int(first[-1]), dtype=np.uint32)
    supplementary = code - 0x10000
    units[first[:-1]] = np.where(pair, 0xD800 + (supplementary >> 10), code)
    units[first[:-1][pair] + 1] = 0xDC00 + (supplementary[pair] & 0x3FF)
    return units, leads, first


def _segment_hashes(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """`String.hashCode` (uint32) of UTF-8 byte ranges [start, end) of `data`, sorted and disjoint."""
    n = len(starts)
    out = np.zeros(n, dtype=np.uint32)
    a = 0
    while a < n:
        base = int(starts[a])
        b = min(max(int(np.searchsorted(ends, base + _CHUNK_BYTES, side="right")), a + 1), n)
        chunk = data[base : int(ends[b - 1])]
        s, e = starts[a:b] - base, ends[a:b] - base
        if chunk.size and int(chunk.max()) >= 0x80:
            chunk, leads, first = _utf16_positions(chunk)
            s, e = first[np.searchsorted(leads, s)], first[np.searchsorted(leads, e)]
        out[a:b] = _runs_poly31(chunk, s, e)
        a = b
    return out


def _string_buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes, n+1 byte offsets into them) of a string array, without copying the bytes."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise TypeError(f"expected strings, got {values.type}")
    offset_type = np.int64 if pa.types.is_large_string(values.type) else np.int32
    buffers = values.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[values.offset : values.offset + len(values) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    return data, offsets.astype(np.int64)


def java_string_hashes(values: pa.Array) -> np.ndarray:
    """`String.hashCode` of every string as uint32 (nulls hash to 0, as in `List.hashCode`)."""
    data, offsets = _string_buffers(values)
    out = _segment_hashes(data, offsets[:-1], offsets[1:])
    if values.null_count:
        out[values.is_null().to_numpy(zero_copy_only=False)] = 0
    return out


def _list_hashes(element_hashes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """`List.hashCode` per list from its elements' hashes: 31**m + sum e_i * 31**(m-1-i)."""
    up, _ = _powers(int(counts.max()) + 1 if counts.size else 1)
    return up[counts] + _poly31(element_hashes, counts)


def _bytes_equal(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, text: bytes) -> np.ndarray:
    """Whether each byte range [start, end) of `data` equals `text` (bytes compared only where lengths match)."""
    equal = (ends - starts) == len(text)
    candidates = np.flatnonzero(equal)
    same = np.ones(len(candidates), dtype=bool)
    for i, byte in enumerate(text):
        same &= data[starts[candidates] + i] == byte
    equal[candidates] = same
    return equal


def bucket_ids(record_keys: pa.Array, hash_fields: Sequence[str], num_buckets: int, *,
               cut_1x: bool = False) -> np.ndarray:
    """`bucket_id` of every key of a string array (int32), vectorized; keys must not be null.

    Works on the Arrow buffers directly: separators are found by byte scans (`,` and `:` are ASCII,
    so they never occur inside a multi-byte character) and every value is hashed in place. With
    `cut_1x`, complex keys whose every part holds exactly one `:` (where both cuts agree) are cut
    here too; the others go through `hash_key_values_1x` one by one.
    """
    _check_buckets(num_buckets)
    if record_keys.null_count:
        raise ValueError("record keys must not be null")
    data, offsets = _string_buffers(record_keys)
    starts, ends = offsets[:-1], offsets[1:]
    used = data[int(offsets[0]) : int(offsets[-1])]
    colons = np.flatnonzero(used == 0x3A) + int(offsets[0])
    hashes = np.empty(len(starts), dtype=np.uint32)
    first_colon = np.searchsorted(colons, starts)
    complex_rows = first_colon < len(colons)
    complex_rows[complex_rows] = colons[first_colon[complex_rows]] < ends[complex_rows]
    commas = np.flatnonzero(used == 0x2C) + int(offsets[0]) if complex_rows.any() else colons[:0]
    if cut_1x and complex_rows.any():
        has_comma = np.searchsorted(commas, ends) > np.searchsorted(commas, starts)
        complex_rows &= has_comma  # a key without `,` is hashed whole by 1.x
        if list(hash_fields) == [""]:
            hash_fields = ()  # 1.x reads one empty field name as none given
    plain = ~complex_rows
    if plain.any():
        hashes[plain] = _segment_hashes(data, starts[plain], ends[plain]) + np.uint32(31)
    if complex_rows.any():
        rows = np.flatnonzero(complex_rows)
        cut, regular = _complex_key_hashes(data, starts[rows], ends[rows], colons, commas, hash_fields,
                                           with_regular=cut_1x)
        hashes[rows] = cut
        if regular is not None and not regular.all():
            odd = rows[~regular]
            keys = record_keys.take(pa.array(odd)).to_pylist()
            hashes[odd] = [java_list_hash(hash_key_values_1x(k, hash_fields)) & _MASK32 for k in keys]
    return ((hashes & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)).astype(np.int32)


def _complex_key_hashes(data: np.ndarray, key_starts: np.ndarray, key_ends: np.ndarray, colons: np.ndarray,
                        commas: np.ndarray, hash_fields: Sequence[str],
                        with_regular: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """`List.hashCode` of the hash values of complex keys (byte ranges), as `hash_key_values` cuts them;
    and (`with_regular`) which keys are regular: every part holds exactly one `:` and some value is
    kept, the keys Hudi 1.x's cut reads the same way."""
    n = len(key_starts)
    owner = np.searchsorted(key_starts, commas, side="right") - 1
    inside = owner >= 0
    inside[inside] = commas[inside] < key_ends[owner[inside]]
    commas = commas[inside]
    # Parts of key i sit at indices [i + commas before its start, i + commas before its end].
    first_part = np.arange(n) + np.searchsorted(commas, key_starts)
    last_part = np.arange(n) + np.searchsorted(commas, key_ends)
    total = n + len(commas)
    is_first, is_last = np.zeros(total, dtype=bool), np.zeros(total, dtype=bool)
    is_first[first_part], is_last[last_part] = True, True
    part_start, part_end = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    part_start[is_first], part_start[~is_first] = key_starts, commas + 1
    part_end[is_last], part_end[~is_last] = key_ends, commas
    part_owner = np.repeat(np.arange(n), last_part - first_part + 1)
    # Java's split drops each key's trailing empty parts.
    nonempty = part_end > part_start
    if nonempty.all():
        keep = np.ones(total, dtype=bool)
    else:
        index = np.arange(total)
        last_nonempty = np.maximum.reduceat(np.where(nonempty, index, -1), first_part)
        keep = index <= last_nonempty[part_owner]
    # Each part splits at its first ':'; parts of other fields are dropped, parts without ':' kept.
    k = np.minimum(np.searchsorted(colons, part_start), max(len(colons) - 1, 0))
    has_colon = (colons[k] >= part_start) & (colons[k] < part_end) if len(colons) else np.zeros(total, dtype=bool)
    colon = np.where(has_colon, colons[k], part_end) if len(colons) else part_end
    if hash_fields:
        wanted = np.zeros(total, dtype=bool)
        for field in set(hash_fields):
            wanted |= _bytes_equal(data, part_start, colon, field.encode("utf-8"))
        keep &= ~has_colon | wanted
    value_start = np.where(has_colon, colon + 1, part_start)
    kept = np.flatnonzero(keep)
    starts, ends = value_start[kept], part_end[kept]
    element_hashes = _segment_hashes(data, starts, ends)
    placeholder = _bytes_equal(data, starts, ends, NULL_PLACEHOLDER.encode()) | _bytes_equal(
        data, starts, ends, EMPTY_PLACEHOLDER.encode())
    element_hashes[placeholder & has_colon[kept]] = 0
    counts = np.bincount(part_owner[kept], minlength=n).astype(np.int64)
    regular = None
    if with_regular:
        part_colons = np.searchsorted(colons, part_end) - np.searchsorted(colons, part_start)
        regular = (np.bincount(part_owner[part_colons != 1], minlength=n) == 0) & (counts > 0)
    return _list_hashes(element_hashes, counts), regular


def _check_buckets(num_buckets: int) -> None:
    if not 0 < num_buckets <= MAX_BUCKETS:
        raise ConfigError(f"bucket count must be between 1 and {MAX_BUCKETS}, got {num_buckets}", key=NUM_BUCKETS)


# -- file ids ---------------------------------------------------------------------------------------------

_BUCKET_FILE_ID = re.compile(r"[0-9]{8}")


def bucket_id_str(bucket: int) -> str:
    """`BucketIdentifier.bucketIdStr`: `%08d`."""
    if not 0 <= bucket < MAX_BUCKETS:
        raise ValueError(f"bucket {bucket} does not fit 8 digits")
    return f"{bucket:08d}"


def new_bucket_file_id(bucket: int, uuid_text: str | None = None) -> str:
    """File id of a new file group for `bucket`: its `%08d` over a UUID's first 8 characters, then `-0`."""
    text = uuid_text or str(uuid.uuid4())
    if len(text) < 8:
        raise ValueError(f"{text!r} is too short to carry a bucket number")
    return bucket_id_str(bucket) + text[8:] + "-0"


def bucket_id_from_file_id(file_id: str) -> int:
    """`BucketIdentifier.bucketIdFromFileId`: the number in the first 8 characters."""
    if not _BUCKET_FILE_ID.match(file_id):
        raise ValueError(f"file id {file_id!r} does not start with an 8-digit bucket number")
    return int(file_id[:8])


def bucket_index_write_config(num_buckets: int, record_key_field: str, hash_field: str | None = None) -> dict[str, str]:
    """The write configs Hudi's writers need to continue a simple-bucket-indexed table.

    Checked as `HoodieIndexConfig` checks them: hash fields default to the record key fields and
    must be a subset of them (compared as raw comma splits, as Hudi does).
    """
    _check_buckets(num_buckets)
    hash_field = record_key_field if hash_field is None or hash_field == "" else hash_field
    if not set(java_split(hash_field)) <= set(java_split(record_key_field)):
        raise ConfigError(f"bucket hash fields {hash_field!r} must be a subset of the record key fields "
                          f"{record_key_field!r}", key=HASH_FIELD)
    return {
        INDEX_TYPE: "BUCKET",
        BUCKET_ENGINE: "SIMPLE",
        NUM_BUCKETS: str(num_buckets),
        HASH_FIELD: hash_field,
    }
