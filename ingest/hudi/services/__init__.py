"""Table services (`HoodieTable.compact/clean/archive/rollback`): compaction, cleaning, archival
and rollback.
"""
