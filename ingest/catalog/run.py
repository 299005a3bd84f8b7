"""Running a sync to every configured catalog, with errors that name the catalog, database and table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingest.catalog.settings import Catalog, SyncSettings
from ingest.catalog.sync import CatalogClient, SyncResult, sync_table
from ingest.errors import IngestError
from ingest.hudi.table import HudiTable


class CatalogSyncError(IngestError):
    """A sync that failed; the commit it followed stays committed."""


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
    table = HudiTable.open(table_url, storage_options)
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
            results.append(sync_table(table, settings, client))
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
