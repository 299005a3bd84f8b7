"""Merging records of one key (`HoodieRecordMerger`, pre-combining by ordering value).
"""
