"""`ingest upgrade PATH --to 8|9`: upgrade a table to Hudi 1.x's table version 8 or 9, as Hudi 1.x would.

The steps and their order are Hudi's upgrade handlers' (see `ingest.upgrade`); a run that died at any
step is finished by running the command again. A table already at the version is left alone (exit
0, one line); a downgrade is refused (exit 1, one line). With Hudi's optimistic concurrency control
set (`--set hudi.hoodie.write.concurrency.mode=...` and its lock provider), Hudi's lock file is held too.
"""

from __future__ import annotations

import argparse

from ingest import upgrade
from ingest.commands.args import add_path, add_set, hudi_lock


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "upgrade", help="upgrade a table to table version 8 (Hudi 1.0) or 9 (Hudi 1.1/1.2)",
        description="Roll back failed writes, compact, move the timeline into .hoodie/timeline and rewrite "
                    "hoodie.properties, as a Hudi 1.x writer does on its first write to an older table. Readers "
                    "older than Hudi 1.0 cannot read the result.")
    add_path(p)
    p.add_argument("--to", dest="to_version", type=int, required=True, choices=upgrade.UPGRADE_TARGETS,
                   help="the table version to upgrade to")
    add_set(p, "hudi.hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL (with its lock provider, "
               "Hudi's lock file is taken too, as the services take it)")
    p.set_defaults(func=run_upgrade)


def run_upgrade(args: argparse.Namespace) -> int:
    result = upgrade.upgrade(args.path, args.to_version, hudi_lock=hudi_lock(args))
    print(result.line(args.path))
    return 0
