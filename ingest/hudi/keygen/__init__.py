"""Record keys, partition paths and buckets (`KeyGenerator`, `TimestampBasedAvroKeyGenerator`,
`BucketIdentifier`).
"""
