"""A table on storage (`HoodieTableMetaClient`): file names, the file-system view, markers,
partition metadata, the snapshot reader, the metadata table and the lock file.
"""
