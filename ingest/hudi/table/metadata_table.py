"""The metadata table (`.hoodie/metadata`): ingest does not maintain it, so it removes it before writing.

A Hudi writer with `hoodie.metadata.enable=false` does the same (`HoodieTable.maybeDeleteMetadataTable`,
`HoodieTableMetadataUtil.deleteMetadataTable`): while `hoodie.table.metadata.partitions` names any
partition, it first empties that key and `hoodie.table.metadata.partitions.inflight`
(`HoodieTableConfig.clearMetadataPartitions`, written through the backup protocol of `update`),
then deletes the folder. Readers and writers that list files through the metadata table look at
that key first (`isMetadataTableAvailable`), so once it is empty nobody reads a metadata table that
misses our files; Hudi writers that use one rebuild it on their next write, from a full listing.
"""

from __future__ import annotations

import logging

from ingest.hudi.config.table_config import TableConfig, TableConfigKey
from ingest.hudi.table.table import HudiTable
from ingest.hudi.timeline.timeline import METAFOLDER

log = logging.getLogger(__name__)

FOLDER = f"{METAFOLDER}/metadata"


def present(table: HudiTable) -> bool:
    config = table.config
    return bool(config.get(TableConfigKey.METADATA_PARTITIONS) or config.get(TableConfigKey.METADATA_PARTITIONS_INFLIGHT)
                or table.storage.exists(FOLDER))


def remove(table: HudiTable) -> bool:
    """Remove the metadata table, properties first, then the folder; True when there was one."""
    if not present(table):
        return False
    partitions = table.config.raw(TableConfigKey.METADATA_PARTITIONS) or ""
    if partitions or table.config.raw(TableConfigKey.METADATA_PARTITIONS_INFLIGHT):
        TableConfig.update(table.storage, {TableConfigKey.METADATA_PARTITIONS.key: "",
                                           TableConfigKey.METADATA_PARTITIONS_INFLIGHT.key: ""})
    table.storage.delete_tree(FOLDER)
    log.warning("%s: removed the metadata table (partitions: %s) before writing; ingest does not maintain it, "
                "and Hudi writers that use one rebuild it on their next write", table.base_url, partitions or "none")
    return True
