"""Avro as Hudi uses it: schema conversion (`AvroSchemaConverter`), name rules (`HoodieAvroUtils`),
the binary encoder of data blocks, and the container files of timeline plans and metadata.
"""
