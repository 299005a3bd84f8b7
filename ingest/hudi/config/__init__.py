"""Table configuration: `hoodie.properties` and its backup protocol (`HoodieTableConfig`), table
versions (`HoodieTableVersion`), and the table-service settings.
"""
