"""Hudi log files (`HoodieLogFile`, `HoodieLogFormat`): block framing, data and delete blocks,
the reader and the writer.
"""
