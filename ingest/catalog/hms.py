"""A Hive Metastore over its Thrift API, written to as Hudi's `HMSDDLExecutor` writes to it.

Through `hmsclient`, which carries the Thrift bindings generated from Hive's `hive_metastore.thrift`
(the `thrift` package runs them), so no JVM is needed. Tables are created with `create_table`, their
columns and parameters changed with `alter_table_with_environment_context` (`CASCADE` for partitioned
tables, as `updateTableDefinition` does), partitions added with `add_partitions`, updated with
`alter_partitions` and dropped with `drop_partition` keeping the data. `createTime` is written in
seconds, Hive's unit (Hudi casts milliseconds to an int, which overflows).
"""

from __future__ import annotations

import dataclasses
import getpass
import time
from collections.abc import Sequence
from urllib.parse import urlparse

from ingest.catalog.registration import PartitionDefinition, TableDefinition
from ingest.catalog.sync import CatalogTable, temp_table_name
from ingest.errors import IngestError

EXTRA = "ingest[hive]"
# Hive's `HiveAlterHandler.alterTable` refuses a column type change `ColumnType.areColTypesCompatible`
# does not allow (a struct gaining a field, for one) while this metastore setting is true.
INCOMPATIBLE = "types incompatible with the existing columns"
INCOMPATIBLE_SETTING = "hive.metastore.disallow.incompatible.col.type.changes"


def require_hmsclient():
    try:
        from hmsclient import hmsclient
        from hmsclient.genthrift.hive_metastore import ttypes
    except ImportError as e:
        raise IngestError(f"syncing to a Hive Metastore needs the {EXTRA} extra: pip install '{EXTRA}'") from e
    return hmsclient, ttypes


class HiveMetastore:
    def __init__(self, uris: str):
        hmsclient, self.t = require_hmsclient()
        self.description = f"the Hive Metastore at {uris}"
        errors = []
        for uri in [u.strip() for u in uris.split(",") if u.strip()]:
            parsed = urlparse(uri)
            try:
                self.client = hmsclient.HMSClient(host=parsed.hostname, port=parsed.port or 9083)
                self.client.open()
                return
            except Exception as e:  # try the next URI, as Hive's client does
                errors.append(f"{uri}: {e}")
        raise ConnectionError("; ".join(errors) or f"no metastore URI in {uris!r}")

    def close(self) -> None:
        self.client.close()

    # -- databases and tables -------------------------------------------------------------------

    def database_exists(self, database: str) -> bool:
        try:
            self.client.get_database(database)
            return True
        except self.t.NoSuchObjectException:
            return False

    def create_database(self, database: str) -> None:
        self.client.create_database(self.t.Database(name=database, description="automatically created by hoodie",
                                                    parameters={}))

    def table_names(self, database: str) -> list[str]:
        return sorted(self.client.get_all_tables(database))

    def get_table(self, database: str, name: str) -> CatalogTable | None:
        try:
            table = self.client.get_table(database, name)
        except self.t.NoSuchObjectException:
            return None
        return CatalogTable(
            columns=tuple((c.name, c.type) for c in table.sd.cols),
            parameters=dict(table.parameters or {}),
            serde_parameters=dict(table.sd.serdeInfo.parameters or {}),
            location=table.sd.location or "",
        )

    def _fields(self, columns) -> list:
        return [self.t.FieldSchema(name=n, type=ty, comment="") for n, ty in columns]

    def _sd(self, table: TableDefinition, location: str):
        return self.t.StorageDescriptor(
            cols=self._fields(table.columns), location=location, inputFormat=table.input_format,
            outputFormat=table.output_format, compressed=False, numBuckets=-1,
            serdeInfo=self.t.SerDeInfo(name=None, serializationLib=table.serde,
                                       parameters=dict(table.serde_parameters)),
            bucketCols=[], sortCols=[], parameters={},
        )

    def create_table(self, database: str, table: TableDefinition) -> None:
        self.client.create_table(self.t.Table(
            tableName=table.name, dbName=database, owner=getpass.getuser(), createTime=int(time.time()),
            lastAccessTime=0, retention=0, sd=self._sd(table, table.location),
            partitionKeys=self._fields(table.partition_keys), parameters=dict(table.parameters),
            tableType="EXTERNAL_TABLE",
        ))

    def replace_table(self, database: str, table: TableDefinition) -> None:
        """`HoodieHiveSyncClient.createOrReplaceTable`: the new table is created under a temporary name
        first, so a definition the metastore refuses leaves the old one; then the old one is dropped (its
        data kept) and the new one renamed."""
        temp = dataclasses.replace(table, name=temp_table_name(table.name))
        self.create_table(database, temp)
        self.client.drop_table(database, table.name, False)
        created = self.client.get_table(database, temp.name)
        created.tableName = table.name
        self.client.alter_table(database, temp.name, created)

    def update_table(self, database: str, table: TableDefinition, parameters: dict[str, str]) -> None:
        current = self.client.get_table(database, table.name)
        before = [(c.name, c.type) for c in current.sd.cols]
        current.sd = self._sd(table, current.sd.location)
        current.parameters = dict(parameters)
        context = self.t.EnvironmentContext(properties={"CASCADE": "true"} if table.partition_keys else {})
        try:
            self.client.alter_table_with_environment_context(database, table.name, current, context)
        except self.t.InvalidOperationException as e:
            if INCOMPATIBLE not in str(e.message):
                raise
            # Hive compares the columns by position (`throwExceptionIfIncompatibleColTypeChange`).
            changed = [f"{c.name} from {old} to {c.type}" for (_, old), c in zip(before, current.sd.cols, strict=False)
                       if old != c.type] or [str(e.message).strip().replace("\n", " ")]
            raise IngestError(
                f"the metastore refuses to change column types of {table.name} ({'; '.join(changed)}): "
                f"{INCOMPATIBLE_SETTING} is true there, Hive's default. Set it to false in the metastore's "
                "configuration (Hudi's own sync needs the same for this change)") from e

    def set_parameters(self, database: str, table: TableDefinition, parameters: dict[str, str]) -> None:
        """`HoodieHiveSyncClient.updateLastCommitTimeSynced`: with the sync stamps, the location and the serde
        `path` are set to the base path again."""
        current = self.client.get_table(database, table.name)
        current.parameters = {**(current.parameters or {}), **parameters}
        current.sd.location = table.location
        current.sd.serdeInfo.parameters = {**(current.sd.serdeInfo.parameters or {}), "path": table.location}
        self.client.alter_table_with_environment_context(database, table.name, current, self.t.EnvironmentContext(
            properties={}))

    # -- partitions --------------------------------------------------------------------------------

    def partitions(self, database: str, name: str) -> dict[tuple[str, ...], str]:
        return {tuple(p.values): p.sd.location for p in self.client.get_partitions(database, name, -1)}

    def _partition(self, database: str, table: TableDefinition, part: PartitionDefinition):
        return self.t.Partition(values=list(part.values), dbName=database, tableName=table.name, createTime=0,
                                lastAccessTime=0, sd=self._sd(table, part.location), parameters={})

    def add_partitions(self, database: str, table: TableDefinition, parts: Sequence[PartitionDefinition]) -> None:
        # HMSDDLExecutor.addPartitionsToTable: `client.add_partitions(partitions, true, false)`, if not exists,
        # so a partition another sync added meanwhile does not fail this one.
        self.client.add_partitions_req(self.t.AddPartitionsRequest(
            dbName=database, tblName=table.name, parts=[self._partition(database, table, p) for p in parts],
            ifNotExists=True, needResult=False))

    def update_partitions(self, database: str, table: TableDefinition,
                          parts: Sequence[PartitionDefinition]) -> None:
        self.client.alter_partitions(database, table.name, [self._partition(database, table, p) for p in parts])

    def drop_partitions(self, database: str, table: TableDefinition, parts: Sequence[PartitionDefinition]) -> None:
        for part in parts:
            self.client.drop_partition(database, table.name, list(part.values), False)
