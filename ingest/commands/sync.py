"""`ingest sync`: register a table and its partitions in its catalogs now (Hive Metastore, AWS Glue).

    ingest sync --config conf/pipeline.yaml [--set SECTION.KEY=VALUE ...]
    ingest sync --path PATH [--set hudi.hoodie.datasource.hive_sync.metastore.uris=thrift://hms:9083 ...]

With `--config`, the pipeline's sync settings (its `hudi:` section); with `--path`, the table's own
name, database and partitioning plus Hudi's sync keys given with `--set` (a `hudi.` prefix is
accepted). Either way it syncs whether or not `hoodie.datasource.meta.sync.enable` is on, as
Hudi's standalone `HiveSyncTool` does. Running it again changes nothing when nothing was committed
since. Exit codes: 0 synced, 1 a sync failed (the message names the catalog, database and table),
2 the settings are invalid.
"""

from __future__ import annotations

import argparse
import sys

from ingest.commands.args import add_set, hudi_sets, pipeline_sets
from ingest.config import keys as K
from ingest.errors import ConfigError

INVALID = 2
SYNC_PREFIXES = ("hoodie.datasource.meta.sync.", "hoodie.datasource.hive_sync.", "hoodie.meta.sync.",
                 "hoodie.meta_sync.", "hoodie.aws.")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("sync", help="register the table and its partitions in its catalogs now",
                              description="Sync a table to the Hive Metastore and/or AWS Glue as Hudi's sync tools "
                                          "do: the _ro, _rt and snapshot tables, their columns and partitions.")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--config", metavar="FILE", help="a pipeline's YAML configuration")
    where.add_argument("--path", help="the table's base path or URL")
    add_set(p, "hudi.hoodie.datasource.hive_sync.metastore.uris=thrift://hms:9083 (with --path: Hudi's sync "
               "settings only)")
    p.set_defaults(func=run)


def _checked_sync_keys(pairs: dict[str, str]) -> dict[str, str]:
    """--set for --path: Hudi's sync keys only, each checked as the configuration checks it."""
    out = {}
    for name, value in pairs.items():
        hudi = name[len(K.HUDI) + 1:] if name.startswith(K.HUDI + ".") else name
        key = K.lookup(f"{K.HUDI}.{hudi}")
        if key is None or not hudi.startswith(SYNC_PREFIXES):
            raise ConfigError("is not a Hudi sync setting ingest knows (hoodie.datasource.hive_sync.*, "
                              "hoodie.datasource.meta.sync.*, hoodie.aws.*)", source="--set", key=name)
        try:
            out[hudi] = K.to_text(K.parse(key, value))
        except ValueError as e:
            raise ConfigError(str(e), source="--set", key=name) from e
    return out


def _settings(args: argparse.Namespace):
    from ingest.catalog.run import settings_of_table
    from ingest.catalog.settings import Key, SyncSettings
    from ingest.config.loader import load_config
    from ingest.hudi.table.table import HudiTable

    if args.config:
        config = load_config(args.config, pipeline_sets(args.overrides), check_table=False)
        settings = SyncSettings.from_hudi({**config.hudi, Key.META_SYNC: "true"},
                                          failures_allowed=config.catalog.failures_allowed)
        return HudiTable.open(config.table.path, config.table.storage_options), settings
    table = HudiTable.open(args.path)
    try:
        return table, settings_of_table(table, _checked_sync_keys(hudi_sets(args.overrides)))
    except ValueError as e:
        raise ConfigError(str(e), source="--set") from e


def run(args: argparse.Namespace) -> int:
    from ingest.catalog.run import sync_opened

    try:
        table, settings = _settings(args)
    except ConfigError as e:
        print(f"ingest: error: {e}", file=sys.stderr)
        return INVALID
    for result in sync_opened(table, settings):
        print(result.text())
    return 0
