"""AWS Glue's Data Catalog through boto3, written to as Hudi's `AWSGlueCatalogSyncClient` writes to it.

The same tables and partitions as the Hive Metastore gets (`ingest.catalog.registration`), through
Glue's API: `CreateTable` with `EXTERNAL_TABLE`, `UpdateTable` (`SkipArchive` as
`hoodie.datasource.meta.sync.glue.skip_table_archive` says), `BatchCreatePartition` and
`BatchUpdatePartition` in requests of at most 100 partitions, `BatchDeletePartition` of at most 25.
Locations are written `s3://` where the table's URL says `s3a://` (`s3aToS3`). A new table also
gets `hudi.metadata-listing-enabled` (Athena's switch for listing files through Hudi's metadata
table; `FALSE`, since ingest writes no metadata table), between `EXTERNAL` and the other table
properties, as `AWSGlueCatalogSyncClient.createTable` puts it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ingest.catalog.registration import PartitionDefinition, TableDefinition
from ingest.catalog.settings import SyncSettings
from ingest.catalog.sync import CatalogTable, comparable_columns, temp_table_name
from ingest.errors import IngestError

EXTRA = "ingest[glue]"
MAX_PARTITIONS_PER_REQUEST = 100
MAX_DELETE_PARTITIONS_PER_REQUEST = 25
METADATA_LISTING = "hudi.metadata-listing-enabled"
# AWSGlueCatalogSyncClient.createDatabase: "Automatically created by " + this.getClass().getName()
GLUE_DATABASE_DESCRIPTION = "Automatically created by org.apache.hudi.aws.sync.AWSGlueCatalogSyncClient"


def s3a_to_s3(url: str) -> str:
    return "s3://" + url[len("s3a://"):] if url.startswith("s3a://") else url


def _retyped(before: Sequence[tuple[str, str]], after: Sequence[tuple[str, str]]) -> bool:
    """Whether a column kept in `after` has another type (`SchemaDifference.getUpdateColumnTypes`)."""
    old = dict(comparable_columns(before))
    return any(old.get(name, kind) != kind for name, kind in comparable_columns(after))


def _chunks(items: Sequence, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def require_boto3():
    try:
        import boto3
    except ImportError as e:
        raise IngestError(f"syncing to AWS Glue needs the {EXTRA} extra: pip install '{EXTRA}'") from e
    return boto3


class GlueCatalog:
    def __init__(self, settings: SyncSettings):
        boto3 = require_boto3()
        self.glue = boto3.client("glue", region_name=settings.glue_region, endpoint_url=settings.glue_endpoint,
                                 **dict(settings.aws_credentials))
        self.skip_archive = settings.glue_skip_table_archive
        self.catalog = {"CatalogId": settings.glue_catalog_id} if settings.glue_catalog_id else {}
        where = settings.glue_endpoint or self.glue.meta.region_name
        self.description = f"AWS Glue ({where})"
        self._errors = self.glue.exceptions

    def close(self) -> None:
        self.glue.close()

    def database_exists(self, database: str) -> bool:
        try:
            self.glue.get_database(Name=database, **self.catalog)
            return True
        except self._errors.EntityNotFoundException:
            return False

    def create_database(self, database: str) -> None:
        self.glue.create_database(DatabaseInput={"Name": database, "Description": GLUE_DATABASE_DESCRIPTION},
                                  **self.catalog)

    def get_table(self, database: str, name: str) -> CatalogTable | None:
        try:
            table = self.glue.get_table(DatabaseName=database, Name=name, **self.catalog)["Table"]
        except self._errors.EntityNotFoundException:
            return None
        sd = table.get("StorageDescriptor") or {}
        return CatalogTable(
            columns=tuple((c["Name"], c["Type"]) for c in sd.get("Columns") or []),
            parameters=dict(table.get("Parameters") or {}),
            serde_parameters=dict((sd.get("SerdeInfo") or {}).get("Parameters") or {}),
            location=sd.get("Location") or "",
        )

    @staticmethod
    def _columns(columns) -> list[dict]:
        return [{"Name": n, "Type": t, "Comment": ""} for n, t in columns]

    def _sd(self, table: TableDefinition, location: str) -> dict:
        return {
            "Columns": self._columns(table.columns), "Location": s3a_to_s3(location),
            "InputFormat": table.input_format, "OutputFormat": table.output_format,
            "SerdeInfo": {"SerializationLibrary": table.serde, "Parameters": dict(table.serde_parameters)},
        }

    def _table_input(self, table: TableDefinition, parameters: dict[str, str]) -> dict:
        return {"Name": table.name, "TableType": "EXTERNAL_TABLE", "Parameters": parameters,
                "PartitionKeys": self._columns(table.partition_keys), "StorageDescriptor": self._sd(table, table.location)}

    def create_table(self, database: str, table: TableDefinition) -> None:
        parameters = {k: v for k, v in table.parameters.items() if k == "EXTERNAL"}
        parameters[METADATA_LISTING] = "FALSE"
        parameters.update(table.parameters)
        self.glue.create_table(DatabaseName=database, TableInput=self._table_input(table, parameters), **self.catalog)

    def replace_table(self, database: str, table: TableDefinition) -> None:
        """`AWSGlueCatalogSyncClient.createOrReplaceTable`: a table under a temporary name is created and
        dropped first (`validateSchemaAndProperties`), so a definition Glue refuses leaves the old table;
        then the old one is dropped and the new one created."""
        temp = dataclasses.replace(table, name=temp_table_name(table.name))
        self.create_table(database, temp)
        self.glue.delete_table(DatabaseName=database, Name=temp.name, **self.catalog)
        self.glue.delete_table(DatabaseName=database, Name=table.name, **self.catalog)
        self.create_table(database, table)

    def update_table(self, database: str, table: TableDefinition, parameters: dict[str, str]) -> None:
        before = self.get_table(database, table.name)
        self.glue.update_table(DatabaseName=database, TableInput=self._table_input(table, parameters),
                               SkipArchive=self.skip_archive, **self.catalog)
        # AWSGlueCatalogSyncClient.updateTableSchema: a column whose type changed is changed in every partition
        # too (its "cascade"), as Athena and Redshift Spectrum read a partition by its own columns.
        if table.partition_keys and before is not None and _retyped(before.columns, table.columns):
            self.update_partitions(database, table, [
                PartitionDefinition("", values, location)
                for values, location in self.partitions(database, table.name).items()])

    def set_parameters(self, database: str, table: TableDefinition, parameters: dict[str, str]) -> None:
        """The sync stamps alone (`AWSGlueCatalogSyncClient.updateLastCommitTimeSynced`)."""
        current = self.glue.get_table(DatabaseName=database, Name=table.name, **self.catalog)["Table"]
        keep = ("Name", "Description", "Owner", "Retention", "StorageDescriptor", "PartitionKeys", "TableType")
        table_input = {k: current[k] for k in keep if k in current}
        table_input["Parameters"] = {**(current.get("Parameters") or {}), **parameters}
        self.glue.update_table(DatabaseName=database, TableInput=table_input, SkipArchive=self.skip_archive,
                               **self.catalog)

    def partitions(self, database: str, name: str) -> dict[tuple[str, ...], str]:
        out = {}
        for page in self.glue.get_paginator("get_partitions").paginate(DatabaseName=database, TableName=name,
                                                                        **self.catalog):
            for p in page["Partitions"]:
                out[tuple(p["Values"])] = p["StorageDescriptor"]["Location"]
        return out

    def _partition_input(self, table: TableDefinition, part: PartitionDefinition) -> dict:
        return {"Values": list(part.values), "StorageDescriptor": self._sd(table, part.location)}

    def add_partitions(self, database: str, table: TableDefinition, parts: Sequence[PartitionDefinition]) -> None:
        for chunk in _chunks(parts, MAX_PARTITIONS_PER_REQUEST):
            response = self.glue.batch_create_partition(
                DatabaseName=database, TableName=table.name,
                PartitionInputList=[self._partition_input(table, p) for p in chunk], **self.catalog)
            errors = [e for e in response.get("Errors") or []
                      if e.get("ErrorDetail", {}).get("ErrorCode") != "AlreadyExistsException"]
            if errors:
                raise RuntimeError(f"BatchCreatePartition failed for {len(errors)} partition(s): {errors[0]}")

    def update_partitions(self, database: str, table: TableDefinition,
                          parts: Sequence[PartitionDefinition]) -> None:
        for chunk in _chunks(parts, MAX_PARTITIONS_PER_REQUEST):
            response = self.glue.batch_update_partition(
                DatabaseName=database, TableName=table.name,
                Entries=[{"PartitionValueList": list(p.values), "PartitionInput": self._partition_input(table, p)}
                         for p in chunk], **self.catalog)
            if response.get("Errors"):
                raise RuntimeError(f"BatchUpdatePartition failed: {response['Errors'][0]}")

    def drop_partitions(self, database: str, table: TableDefinition, parts: Sequence[PartitionDefinition]) -> None:
        for chunk in _chunks(parts, MAX_DELETE_PARTITIONS_PER_REQUEST):
            response = self.glue.batch_delete_partition(
                DatabaseName=database, TableName=table.name,
                PartitionsToDelete=[{"Values": list(p.values)} for p in chunk], **self.catalog)
            if response.get("Errors"):
                raise RuntimeError(f"BatchDeletePartition failed: {response['Errors'][0]}")
