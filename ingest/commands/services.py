"""`ingest compact | clean | archive | rollback PATH`: run one table service on a table now.

Settings are Hudi's keys (`--set hudi.hoodie.cleaner.commits.retained=5`, repeatable; the bare
`hoodie.*` spelling too) over Hudi's defaults; the command line follows `ingest.commands.args`.
Scheduling, cleaning, archiving and rolling back take the table's writer lease, so they refuse to run
while a writer's commit holds it (a running writer does them inline); executing a planned compaction
does not. With Hudi's optimistic concurrency control set (`--set hudi.hoodie.write.concurrency.mode=...`
and its lock provider), scheduling, cleaning and archiving take Hudi's lock file too.
"""

from __future__ import annotations

import argparse
import sys

from ingest import services
from ingest.commands.args import add_path, add_set, hudi_lock, hudi_sets
from ingest.errors import ConfigError
from ingest.hudi.config.service_settings import ServiceSettings
from ingest.hudi.timeline.heartbeat import HeartbeatSettings

INTERVAL, MISSES = "hoodie.client.heartbeat.interval_in_ms", "hoodie.client.heartbeat.tolerable.misses"


def _settings(args: argparse.Namespace) -> ServiceSettings:
    return ServiceSettings.from_mapping(hudi_sets(args.overrides), source="--set")


def _add_common(parser: argparse.ArgumentParser, example: str) -> None:
    add_path(parser)
    add_set(parser, f"{example} (Hudi's settings; Hudi's defaults otherwise)")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("compact", help="schedule and execute compaction of a table",
                              description="Schedule a compaction of every file slice with log files (under the "
                                          "writer lease) and execute pending compactions.")
    _add_common(p, "hudi.hoodie.compaction.strategy=LogFileNumBasedCompactionStrategy")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--schedule-only", action="store_true", help="only write the plan")
    mode.add_argument("--execute", metavar="INSTANT", help="only execute this planned compaction")
    p.set_defaults(func=run_compact)

    p = subparsers.add_parser("clean", help="delete file slices no retained commit needs",
                              description="Finish interrupted cleans, then clean by hoodie.cleaner.policy.")
    _add_common(p, "hudi.hoodie.cleaner.commits.retained=5")
    p.set_defaults(func=run_clean)

    p = subparsers.add_parser("archive", help="move old instants to the archived timeline",
                              description="Archive completed instants beyond hoodie.keep.max.commits.")
    _add_common(p, "hudi.hoodie.keep.max.commits=50")
    p.set_defaults(func=run_archive)

    p = subparsers.add_parser("rollback", help="roll back a pending write",
                              description="Roll back a write that never completed (completed ones are refused).")
    _add_common(p, "hudi.hoodie.client.heartbeat.interval_in_ms=120000 (the Hudi writers' heartbeat settings)")
    p.add_argument("instant", metavar="INSTANT", help="the pending instant time")
    p.set_defaults(func=run_rollback)


def run_compact(args: argparse.Namespace) -> int:
    result = services.compact(args.path, _settings(args), instant=args.execute, execute=not args.schedule_only,
                              hudi_lock=hudi_lock(args))
    if result.note:
        print(result.note, file=sys.stderr)
    print(f"scheduled: {result.scheduled or '-'}")
    print(f"executed: {', '.join(result.executed) or '-'}")
    for message in result.held:  # not done: another executor's heartbeat is fresh
        print(message, file=sys.stderr)
    return 1 if result.held else 0


def run_clean(args: argparse.Namespace) -> int:
    results = services.clean(args.path, _settings(args), hudi_lock=hudi_lock(args))
    for r in results:
        print(f"clean {r.instant}: {len(r.deleted)} file(s) deleted, {len(r.failed)} not deleted (already gone, "
              "or outside the table)")
    if not results:
        print("nothing to clean")
    return 0


def run_archive(args: argparse.Namespace) -> int:
    result = services.archive(args.path, _settings(args), hudi_lock=hudi_lock(args))
    if result.archived:
        print(f"archived {len(result.archived)} instant(s) {result.archived[0]}..{result.archived[-1]}"
              f" into {result.file or '(entries already archived)'}")
    else:
        print("nothing to archive")
    return 0


def run_rollback(args: argparse.Namespace) -> int:
    hudi = hudi_sets(args.overrides)
    beats = HeartbeatSettings()
    try:
        beats = HeartbeatSettings(int(hudi.get(INTERVAL, beats.interval_ms)), int(hudi.get(MISSES, beats.tolerable_misses)))
    except ValueError as e:
        raise ConfigError(f"hudi.{INTERVAL} and hudi.{MISSES} are whole numbers: {e}", source="--set") from None
    done = services.rollback_instant(args.path, args.instant, heartbeat=beats, hudi_lock=hudi_lock(args))
    print(f"rolled back {args.instant} ({done.timestamp}.rollback)")
    return 0
