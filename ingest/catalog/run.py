"""Running a sync to every configured catalog, with errors that name the catalog, database and table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingest.catalog.settings import TOOLS, Catalog, Key, SyncSettings
from ingest.catalog.sync import CatalogClient, SyncResult, sync_table
from ingest.errors import IngestError
from ingest.hudi.config.table_config import TableConfigKey
from ingest.hudi.table.table import HudiTable

TOOL_OF = {catalog: tool for tool, catalog in TOOLS.items()}


class CatalogSyncError(IngestError):
    """A sync that failed; the commit it followed stays committed."""


def check_clients(settings: SyncSettings) -> None:
    """Fail early, naming the extra, when a configured catalog's client library is not installed."""
    if Catalog.HIVE in settings.catalogs:
        from ingest.catalog.hms import require_hmsclient
        require_hmsclient()
    if Catalog.GLUE in settings.catalogs:
        from ingest.catalog.glue import require_boto3
        require_boto3()


def settings_of_table(table: HudiTable, hudi: Mapping[str, object], failures_allowed: int = 3) -> SyncSettings:
    """Sync settings for a table by itself (`ingest sync --path`): its name, database, partition fields and
    partitioning style from `hoodie.properties`, under the Hudi keys given; enabled, with the Hive sync tool
    unless another is named, as Hudi's standalone `HiveSyncTool` runs whatever the enable flags say."""
    config = table.config
    from_table = {
        "hoodie.table.name": config.name,
        "hoodie.database.name": config.raw(TableConfigKey.DATABASE_NAME) or "default",
        "hoodie.datasource.write.partitionpath.field": ",".join(config.partition_fields),
        "hoodie.datasource.write.hive_style_partitioning": str(config.hive_style).lower(),
    }
    return SyncSettings.from_hudi({**from_table, **hudi, Key.META_SYNC: "true"}, failures_allowed=failures_allowed)


def connect(catalog: Catalog, settings: SyncSettings) -> CatalogClient:
    if catalog is Catalog.GLUE:
        from ingest.catalog.glue import GlueCatalog
        return GlueCatalog(settings)
    from ingest.catalog.hms import HiveMetastore
    return HiveMetastore(settings.metastore_uris)


def _where(catalog: Catalog, settings: SyncSettings) -> str:
    target = f"the Hive Metastore at {settings.metastore_uris}" if catalog is Catalog.HIVE else "AWS Glue"
    return f"{target}, table {settings.database}.{settings.table}"


def sync(table_url: str, storage_options: Mapping[str, Any] | None, settings: SyncSettings) -> list[SyncResult]:
    """Sync the table to each configured catalog; the first failure raises, naming where."""
    return sync_opened(HudiTable.open(table_url, storage_options), settings)


def sync_opened(table: HudiTable, settings: SyncSettings) -> list[SyncResult]:
    results = []
    for catalog in settings.catalogs:
        try:
            client = connect(catalog, settings)
        except IngestError:
            raise
        except Exception as e:
            raise CatalogSyncError(f"catalog sync to {_where(catalog, settings)} failed: cannot connect: "
                                   f"{_one_line(e)}") from e
        try:
            result = sync_table(table, settings, client)
            result.tool = TOOL_OF[catalog]
            results.append(result)
        except Exception as e:
            raise CatalogSyncError(f"catalog sync to {_where(catalog, settings)} failed: {_one_line(e)}") from e
        finally:
            try:
                client.close()
            except Exception:  # a broken connection cannot fail the cleanup
                pass
    return results


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
