"""Merging records of one key (`HoodieRecordMerger`, pre-combining by ordering value), and the order
a merge writes a base file's records in (`HoodieMergeHandle`).
"""
