"""Which keys of a bucket-indexed table sit in a file group other than their bucket's.

Hudi's writers find a key's file group by its bucket alone (`HoodieSimpleBucketIndex`: the bucket
number in the first 8 characters of the file id, `BucketIdentifier.bucketIdFromFileId`), so a key held
elsewhere is one they never update: their next write of it adds a second live copy. The bucket is the
one the table's version hashes (`TableVersion.bucket_keys_cut_1x`): version-8 and 9 tables written by
ingest releases that hashed them as 0.14/0.15 hold keys with `:` in buckets Hudi 1.x does not look in.
The bucket settings are those ingest records in `hoodie.properties`; a table without them is not checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.hudi.avro import schema as avro
from ingest.hudi.keygen.bucket_index import (
    HASH_FIELD,
    INDEX_TYPE,
    NUM_BUCKETS,
    bucket_id_from_file_id,
    bucket_ids,
    hash_fields_from_config,
)
from ingest.hudi.table import snapshot
from ingest.hudi.table.table import HudiTable

EXAMPLES = 5


@dataclass(frozen=True)
class BucketPlacement:
    buckets: int
    keys: int                                  # live keys checked
    misplaced: int                             # of them, held outside their bucket's file group
    examples: tuple[tuple[str, int, int], ...]  # (key, bucket held in, bucket hashed to)


def check(table: HudiTable) -> BucketPlacement | None:
    """Every live key's file group against its bucket; None for a table that records no bucket index."""
    props = table.config.props
    if (props.get(INDEX_TYPE) or "").upper() != "BUCKET" or not props.get(NUM_BUCKETS):
        return None
    buckets = int(props[NUM_BUCKETS])
    hash_fields = hash_fields_from_config(props.get(HASH_FIELD) or ",".join(table.config.record_key_fields))
    ctx, slices = snapshot.context(table)
    keys = misplaced = 0
    examples: list[tuple[str, int, int]] = []
    for slice_ in slices:
        record_keys = snapshot.read_slice(ctx, slice_).column(avro.RECORD_KEY)
        if not len(record_keys):
            continue
        held = bucket_id_from_file_id(slice_.file_id)
        hashed = bucket_ids(record_keys.combine_chunks(), hash_fields, buckets, cut_1x=table.version.bucket_keys_cut_1x)
        wrong = (hashed != held).nonzero()[0]
        keys += len(record_keys)
        misplaced += len(wrong)
        for i in wrong[: EXAMPLES - len(examples)]:
            examples.append((record_keys[int(i)].as_py(), held, int(hashed[i])))
    return BucketPlacement(buckets, keys, misplaced, tuple(examples))


__all__ = ["BucketPlacement", "check"]
