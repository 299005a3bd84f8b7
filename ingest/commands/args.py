"""The conventions every `ingest` command line follows: what it acts on, and `--set`.

    ingest COMMAND TARGET [options] [--set SECTION.KEY=VALUE ...]

TARGET is positional: a table's PATH for the table commands (`read`, `inspect table`, `compact`,
`clean`, `archive`, `rollback`), a pipeline's configuration FILE for the pipeline commands
(`validate-config`, `stream`, `backfill`). The spellings documented before, `--path PATH` and
`--config FILE`, stay accepted. Settings are `--set SECTION.KEY=VALUE` everywhere; Hudi's are in the
`hudi` section as in a configuration file (`--set hudi.hoodie.cleaner.commits.retained=5`), and a bare
`hoodie.*` key, as the table services took them, is read as `hudi.hoodie.*`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ingest.errors import ConfigError
from ingest.hudi.table.lock_provider import LockSettings

_TARGETS = "_targets"
HUDI_SECTION = "hudi"


def add_target(parser: argparse.ArgumentParser, dest: str, metavar: str, help: str, flag: str) -> None:
    """A positional TARGET, with `flag` as the older spelling of it; `resolve_targets` checks one came."""
    parser.add_argument(dest, nargs="?", metavar=metavar, help=help)
    parser.add_argument(flag, dest=f"{dest}_flag", metavar=metavar, help=f"the same as {metavar}")
    targets = (*(parser.get_default(_TARGETS) or ()), (dest, flag, metavar))
    parser.set_defaults(**{_TARGETS: targets, "_parser": parser})


def add_path(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "path", "PATH", "the table's base path: a local path or an fsspec URL", "--path")


def resolve_targets(args: argparse.Namespace) -> None:
    """Each target from its position or its flag; neither, or two different ones, is a usage error."""
    for dest, flag, metavar in getattr(args, _TARGETS, ()):
        given, flagged = getattr(args, dest), getattr(args, f"{dest}_flag")
        if given is not None and flagged is not None and given != flagged:
            args._parser.error(f"{metavar} given twice: {given} and {flag} {flagged}")
        if given is None and flagged is None:
            args._parser.error(f"the following arguments are required: {metavar}")
        setattr(args, dest, given if given is not None else flagged)


def add_set(parser: argparse.ArgumentParser, example: str) -> None:
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help=f"override one setting (repeatable), e.g. --set {example}")


def pipeline_sets(items: Sequence[str]) -> list[str]:
    """`--set` items as a configuration reads them: a bare `hoodie.*` key is in the `hudi` section."""
    return [f"{HUDI_SECTION}.{item.lstrip()}" if item.lstrip().startswith("hoodie.") else item for item in items]


def hudi_sets(items: Sequence[str]) -> dict[str, str]:
    """Hudi's settings from `--set` items, for commands that take no others (the table services)."""
    out = {}
    for item in pipeline_sets(items):
        name, sep, value = item.partition("=")
        section, _, key = name.strip().partition(".")
        if not sep or not key.strip():
            raise ConfigError(f"expected SECTION.KEY=VALUE, got {item!r}", source="--set")
        if section != HUDI_SECTION:
            raise ConfigError(f"{name.strip()}: this command takes Hudi's settings only "
                              f"({HUDI_SECTION}.hoodie.*=VALUE)", source="--set")
        out[key.strip()] = value.strip()
    return out


def hudi_lock(args: argparse.Namespace) -> LockSettings | None:
    """Hudi's lock, when `--set hudi.hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL` (and its
    lock provider) say Hudi writers share the table."""
    try:
        return LockSettings.from_hudi(hudi_sets(args.overrides), args.path)
    except ConfigError as e:
        raise ConfigError(str(e), source="--set") from None
