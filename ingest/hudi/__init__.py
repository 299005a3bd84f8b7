"""The Apache Hudi table format (table versions 6, 8 and 9, Merge-On-Read), in plain Python.

Nothing under this package imports Spark: it is the on-disk format, its reader and its writer
primitives, usable from executors, the driver, and command-line tools alike.
"""
