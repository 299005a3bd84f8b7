"""Routing records to file groups: the bucket index and the persisted record-key index."""
