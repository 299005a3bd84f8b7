"""Catalog sync: register a table and its partitions in a Hive Metastore or AWS Glue, as Hudi's sync tools do.

`settings` reads Hudi's sync keys, `schema` turns the table's Avro schema into catalog columns,
`registration` decides what is registered (the model, free of any client), `hms` and `glue` apply it
through their clients, and `sync` runs one sync from the table's timeline.
"""
