"""Settings of the table services (compaction, cleaning, archival), under Hudi's keys and defaults.

One frozen object built from a flat `Mapping[str, str]` (a pipeline's `hudi:` section, a properties
file, CLI overrides), so the writer, the async jobs and the config system all read the same keys the
same way. Keys and defaults are those of Hudi 0.14/0.15's `HoodieCompactionConfig`,
`HoodieCleanConfig`, `HoodieArchivalConfig` and `HoodieStorageConfig`; unknown keys are ignored here
(they belong to other parts of the configuration). A bad value raises `ConfigError` naming its key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from ingest.errors import ConfigError

_STRATEGY_PACKAGE = "org.apache.hudi.table.action.compact.strategy"


class TriggerStrategy(str, Enum):
    """`hoodie.compact.inline.trigger.strategy` (`CompactionTriggerStrategy`)."""

    NUM_COMMITS = "NUM_COMMITS"
    TIME_ELAPSED = "TIME_ELAPSED"
    NUM_OR_TIME = "NUM_OR_TIME"
    NUM_AND_TIME = "NUM_AND_TIME"


class CompactionStrategy(str, Enum):
    """`hoodie.compaction.strategy`: which file slices a plan takes, in what order."""

    LOG_FILE_SIZE = f"{_STRATEGY_PACKAGE}.LogFileSizeBasedCompactionStrategy"
    LOG_FILE_NUM = f"{_STRATEGY_PACKAGE}.LogFileNumBasedCompactionStrategy"
    BOUNDED_IO = f"{_STRATEGY_PACKAGE}.BoundedIOCompactionStrategy"
    UNBOUNDED = f"{_STRATEGY_PACKAGE}.UnBoundedCompactionStrategy"

    @property
    def simple_name(self) -> str:
        return self.value.rsplit(".", 1)[1]


class CleanerPolicy(str, Enum):
    """`hoodie.cleaner.policy` (`HoodieCleaningPolicy`)."""

    KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
    KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"


class Key:
    """The keys read here."""

    COMPACT_INLINE = "hoodie.compact.inline"
    COMPACT_SCHEDULE_INLINE = "hoodie.compact.schedule.inline"
    MAX_DELTA_COMMITS = "hoodie.compact.inline.max.delta.commits"
    MAX_DELTA_SECONDS = "hoodie.compact.inline.max.delta.seconds"
    TRIGGER_STRATEGY = "hoodie.compact.inline.trigger.strategy"
    COMPACTION_STRATEGY = "hoodie.compaction.strategy"
    LOG_FILE_SIZE_THRESHOLD = "hoodie.compaction.logfile.size.threshold"
    LOG_FILE_NUM_THRESHOLD = "hoodie.compaction.logfile.num.threshold"
    TARGET_IO = "hoodie.compaction.target.io"
    PARQUET_MAX_FILE_SIZE = "hoodie.parquet.max.file.size"
    CLEAN_AUTOMATIC = "hoodie.clean.automatic"
    CLEANER_POLICY = "hoodie.cleaner.policy"
    COMMITS_RETAINED = "hoodie.cleaner.commits.retained"
    FILE_VERSIONS_RETAINED = "hoodie.cleaner.fileversions.retained"
    CLEAN_MAX_COMMITS = "hoodie.clean.max.commits"
    CLEAN_INCREMENTAL = "hoodie.cleaner.incremental.mode"
    ARCHIVE_AUTOMATIC = "hoodie.archive.automatic"
    KEEP_MIN_COMMITS = "hoodie.keep.min.commits"
    KEEP_MAX_COMMITS = "hoodie.keep.max.commits"
    ARCHIVAL_BATCH = "hoodie.commits.archival.batch"
    TIMELINE_COMPACTION_BATCH = "hoodie.timeline.compaction.batch.size"


@dataclass(frozen=True)
class CompactionSettings:
    inline: bool = False                  # schedule and execute after each write
    schedule_inline: bool = False         # schedule after each write, execute elsewhere
    max_delta_commits: int = 5
    max_delta_seconds: int = 3600
    trigger: TriggerStrategy = TriggerStrategy.NUM_COMMITS
    strategy: CompactionStrategy = CompactionStrategy.LOG_FILE_SIZE
    log_file_size_threshold: int = 0      # bytes of logs a slice needs (LogFileSizeBased)
    log_file_num_threshold: int = 0       # log files a slice needs (LogFileNumBased)
    target_io_mb: int = 500 * 1024        # IO bound of one plan (BoundedIO and subclasses)
    parquet_max_file_size: int = 120 * 1024 * 1024  # write IO estimated for a slice without base file

    @property
    def schedules_inline(self) -> bool:
        return self.inline or self.schedule_inline


@dataclass(frozen=True)
class CleanSettings:
    automatic: bool = True
    policy: CleanerPolicy = CleanerPolicy.KEEP_LATEST_COMMITS
    commits_retained: int = 10
    file_versions_retained: int = 3
    max_commits: int = 1                  # commits since the last clean before the next is planned
    incremental: bool = True              # only partitions written since the last clean's horizon


@dataclass(frozen=True)
class ArchiveSettings:
    automatic: bool = True
    min_commits: int = 20
    max_commits: int = 30
    batch: int = 10                       # archived entries per log block
    timeline_compaction_batch: int = 10   # LSM history files of a layer merged into the next (8, 9)


T = TypeVar("T")


def _parse(settings: Mapping[str, str], key: str, default: T, parse: Callable[[str], T], allowed: str) -> T:
    raw = settings.get(key)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        return parse(str(raw).strip())
    except (ValueError, KeyError) as e:
        raise ConfigError(f"{raw!r} is not {allowed}", key=key) from e


def _bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered not in ("true", "false"):
        raise ValueError(raw)
    return lowered == "true"


def _count(minimum: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = int(raw)
        if value < minimum:
            raise ValueError(raw)
        return value

    return parse


def _strategy(raw: str) -> CompactionStrategy:
    for strategy in CompactionStrategy:
        if raw in (strategy.value, strategy.simple_name):
            return strategy
    raise ValueError(raw)


@dataclass(frozen=True)
class ServiceSettings:
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    clean: CleanSettings = field(default_factory=CleanSettings)
    archive: ArchiveSettings = field(default_factory=ArchiveSettings)

    @classmethod
    def from_mapping(cls, settings: Mapping[str, str] | None = None, *, source: str | None = None) -> ServiceSettings:
        s = settings or {}
        try:
            built = cls._build(s)
        except ConfigError as e:
            if source is None:
                raise
            raise ConfigError(str(e), source=source) from e
        built._validate(source)
        return built

    @classmethod
    def _build(cls, s: Mapping[str, str]) -> ServiceSettings:
        boolean, positive, non_negative = "true or false", "a whole number of at least 1", "a whole number of at least 0"
        strategies = ", ".join(x.simple_name for x in CompactionStrategy)
        compaction = CompactionSettings(
            inline=_parse(s, Key.COMPACT_INLINE, False, _bool, boolean),
            schedule_inline=_parse(s, Key.COMPACT_SCHEDULE_INLINE, False, _bool, boolean),
            max_delta_commits=_parse(s, Key.MAX_DELTA_COMMITS, 5, _count(1), positive),
            max_delta_seconds=_parse(s, Key.MAX_DELTA_SECONDS, 3600, _count(0), non_negative),
            trigger=_parse(s, Key.TRIGGER_STRATEGY, TriggerStrategy.NUM_COMMITS, lambda r: TriggerStrategy[r.upper()],
                           "one of " + ", ".join(t.value for t in TriggerStrategy)),
            strategy=_parse(s, Key.COMPACTION_STRATEGY, CompactionStrategy.LOG_FILE_SIZE, _strategy,
                            f"a supported compaction strategy ({strategies}, or their class names)"),
            log_file_size_threshold=_parse(s, Key.LOG_FILE_SIZE_THRESHOLD, 0, _count(0), non_negative),
            log_file_num_threshold=_parse(s, Key.LOG_FILE_NUM_THRESHOLD, 0, _count(0), non_negative),
            target_io_mb=_parse(s, Key.TARGET_IO, 500 * 1024, _count(0), non_negative),
            parquet_max_file_size=_parse(s, Key.PARQUET_MAX_FILE_SIZE, 120 * 1024 * 1024, _count(1), positive),
        )
        clean = CleanSettings(
            automatic=_parse(s, Key.CLEAN_AUTOMATIC, True, _bool, boolean),
            policy=_parse(s, Key.CLEANER_POLICY, CleanerPolicy.KEEP_LATEST_COMMITS, lambda r: CleanerPolicy[r.upper()],
                          "one of " + ", ".join(p.value for p in CleanerPolicy)),
            commits_retained=_parse(s, Key.COMMITS_RETAINED, 10, _count(1), positive),
            file_versions_retained=_parse(s, Key.FILE_VERSIONS_RETAINED, 3, _count(1), positive),
            max_commits=_parse(s, Key.CLEAN_MAX_COMMITS, 1, _count(1), positive),
            incremental=_parse(s, Key.CLEAN_INCREMENTAL, True, _bool, boolean),
        )
        archive = ArchiveSettings(
            automatic=_parse(s, Key.ARCHIVE_AUTOMATIC, True, _bool, boolean),
            min_commits=_parse(s, Key.KEEP_MIN_COMMITS, 20, _count(1), positive),
            max_commits=_parse(s, Key.KEEP_MAX_COMMITS, 30, _count(1), positive),
            batch=_parse(s, Key.ARCHIVAL_BATCH, 10, _count(1), positive),
            timeline_compaction_batch=_parse(s, Key.TIMELINE_COMPACTION_BATCH, 10, _count(1), positive),
        )
        return cls(compaction, clean, archive)

    def _validate(self, source: str | None) -> None:
        """The cross-key rules Hudi's `HoodieWriteConfig` builder enforces."""
        a, c = self.archive, self.clean
        if a.max_commits <= a.min_commits:
            raise ConfigError(f"must be greater than {Key.KEEP_MIN_COMMITS} ({a.min_commits}), got {a.max_commits}",
                              source=source, key=Key.KEEP_MAX_COMMITS)
        if c.policy is CleanerPolicy.KEEP_LATEST_COMMITS and a.min_commits <= c.commits_retained:
            raise ConfigError(
                f"must be greater than {Key.COMMITS_RETAINED} ({c.commits_retained}), got {a.min_commits}: "
                "archiving commits the cleaner still retains would let incremental reads miss data",
                source=source, key=Key.KEEP_MIN_COMMITS,
            )
