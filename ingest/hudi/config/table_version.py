"""Table versions 6, 8 and 9: the one place that says what differs between them.

Mirrors Hudi's `HoodieTableVersion` and what its upgrade handlers change (`SixToSevenUpgradeHandler`,
`SevenToEightUpgradeHandler`, `EightToNineUpgradeHandler`) and what a 1.x writer does at each version:

* timeline: layout 1 under `.hoodie/` at 6; layout 2 under `.hoodie/<hoodie.timeline.path>/` at 8
  and 9, completed instants named `<requested>_<completion>.<action>` (`TimelineLayoutVersion`,
  `InstantFileNameGeneratorV2`); the LSM history folder `timeline/history` is created with the table;
* commit metadata: Jackson JSON at 6, an Avro container of `HoodieCommitMetadata` at 8 and 9
  (`CommitMetadataSerDeV2`), for the inflight and the completed deltacommit alike;
* log files: named with the file slice's base instant at 6 (appended to across deltacommits); from 8
  on with the writing deltacommit's instant, one new file per deltacommit and file group, whose write
  stat has `prevCommit` = that instant, no base file and only the new log file
  (`HoodieAppendHandle.populateWriteStatAndFetchFileSlice`, `init`); so a failed deltacommit is rolled
  back by deleting its files, never with a command block; its marker is `CREATE`, not `APPEND`
  (`WriteMarkers.createLogMarkerIfNotExists` at 8, `DirectWriteMarkersV1` at 6);
* log block headers: ordinals 0-6 at 6, 0-8 from 8 on (`HeaderMetadataType`);
* `hoodie.properties`: merge mode and strategy id from 8 (`SevenToEightUpgradeHandler`), ordering
  fields, `hoodie.table.format` and the legacy payload key from 9 (`EightToNineUpgradeHandler`);
* the streamer checkpoint key: `deltastreamer.checkpoint.key` at 6, `streamer.checkpoint.key.v2` from
  8 (`StreamerCheckpointV1`/`V2`); the streaming sink's `_hudi_streaming_sink_checkpoint` is the same;
* table services: which ones ingest runs, one flag each (compaction, cleaning and archival, into the
  LSM history at 8 and 9, run at every version today); and their plans as 1.x writes them: the
  compaction plan carries `missingSchedulePartitions` (`HoodieCompactionPlanGenerator.getCompactionPlan`),
  a clean plan's extra metadata an empty map (`CleanPlanActionExecutor`); a clean's inflight file
  repeats the plan at 6 and 8, as 0.x and 1.0 write it (`CleanActionExecutor.runClean` passes the plan
  to `transitionCleanRequestedToInflight`), and is empty at 9, as 1.1 writes it (no plan argument);
* merging a file slice's log records when the payload is `OverwriteWithLatestAvroPayload` and the table
  has an ordering field: 0.14/0.15's log scanners merge them with the payload's `preCombine`, which
  keeps the larger ordering value (`HoodieMergedLogRecordScanner.Builder`, `HoodiePreCombineAvroRecordMerger`),
  while the merge with the base file takes the log record; 1.0 made that payload commit-time
  throughout (merge mode `COMMIT_TIME_ORDERING`);
* deletes that carry an ordering value (Hudi writes the record's for `_hoodie_is_deleted`) in a slice's
  logs: at 6 they are merged in log order (`HoodieMergedLogRecordScanner.processNextDeletedRecord`: such a
  delete yields only to a record before it with a larger value; the payloads' `preCombine`: a record
  after a delete always replaces it; `combineAndGetUpdateValue`: a delete that survives the logs removes
  the base file's row whatever its value); from 8 on they compete with records by ordering value
  (`BufferedRecordMergerFactory`);
* `hoodie.table.partition.fields` of a CustomKeyGenerator: the names at 6, `field:TYPE` from 8
  (`SparkKeyGenUtils.getPartitionColumnsForKeyGenerator`, types included above version 6);
* bucket index hashing: 0.14/0.15's cut of record keys into hash values at 6, 1.x's from 8
  (`KeyGenUtils.extractRecordKeysByFields`, rewritten by HUDI-8403 before 1.0: a key without `,` or
  without `:` is hashed whole, and values keep the `,` and `:` they hold);
* record keys of a ComplexKeyGenerator with one key field: `field:value` or the bare value as the
  writer's `hoodie.write.complex.keygen.new.encoding` says at 6 and 8, always `field:value` from 9
  (`KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen`, `mayUseNewEncodingForComplexKeyGen`).

Code elsewhere asks a `TableVersion` instead of comparing version numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.errors import UnsupportedTable
from ingest.hudi.log.log_block import HeaderKey


@dataclass(frozen=True)
class TableVersion:
    number: int
    timeline_layout: int            # hoodie.timeline.layout.version
    avro_commit_metadata: bool      # commit metadata as Avro (else Jackson JSON)
    log_files_by_writer: bool       # log files named with the writing deltacommit's instant
    log_marker: str                 # the marker IOType of a log file written
    header_keys: frozenset[HeaderKey]
    merge_mode_in_properties: bool  # hoodie.record.merge.mode / .strategy.id are table properties
    ordering_fields_key: bool       # hoodie.table.ordering.fields replaces the precombine key
    legacy_payload_key: bool        # payload classes are hoodie.table.legacy.payload.class
    table_format_key: bool          # hoodie.table.format is written
    streamer_checkpoint_key: str
    compaction: bool                # ingest schedules and executes compactions on it
    cleaning: bool                  # ingest cleans it
    archival: bool                  # ingest archives its timeline
    plans_of_1x: bool               # compaction and clean plans as Hudi 1.x writes them
    clean_plan_in_inflight: bool    # the clean's inflight file repeats its plan (else empty)
    # A one-field ComplexKeyGenerator keys as `hoodie.write.complex.keygen.new.encoding` says; else
    # always `field:value` (`KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen`, Hudi 1.1).
    complex_key_form_chosen: bool
    # OverwriteWithLatestAvroPayload's `preCombine` keeps the larger ordering value, and log scanners
    # merge a slice's log records with it (0.14/0.15); else that payload is commit-time throughout.
    overwrite_payload_orders_logs: bool
    # Ordered deletes in a slice's logs merge in log order and remove the base row (0.14/0.15); else
    # they compete with records by ordering value.
    deletes_fold_in_log_order: bool
    bucket_keys_cut_1x: bool  # bucket hash values cut from record keys as 1.x cuts them (else 0.14/0.15)
    typed_custom_partition_fields: bool  # a CustomKeyGenerator's partition fields recorded with their types
    hudi_releases: str

    @property
    def has_completion_times(self) -> bool:
        return self.timeline_layout >= 2

    def runs(self, service: str) -> bool:
        """Whether ingest runs a table service ("compaction", "cleaning", "archival") at this version."""
        return bool(getattr(self, service))

    @property
    def lsm_history(self) -> bool:
        """Archived instants go to the LSM history `timeline/history` (layout 2, Hudi 1.x's
        `TimelineArchiverV2`), else to `.hoodie/archived` log files (`TimelineArchiverV1`)."""
        return self.timeline_layout == 2

    @property
    def delete_ordering_by_java_class(self) -> bool:
        """A delete's ordering value is compared with a log record's only when Java would find them of one
        class (0.14/0.15's `processNextDeletedRecord`, `ReflectionUtils.isSameClass`, the record's read raw
        from Avro); 1.x converts both to the engine's type first (`convertOrderingValueToEngineType`)."""
        return self.timeline_layout == 1

    @property
    def streamer_checkpoint_generations(self) -> tuple[tuple[str, str], ...]:
        """(checkpoint key, reset key) pairs Hudi's streamer resumes from, in its order of preference
        (`CheckpointUtils.getCheckpoint`: 1.x takes the V2 pair if either of its keys is set, else the V1
        pair; 0.14/0.15 know V1 only)."""
        v1 = (_V1_CHECKPOINT_KEY, _V1_RESET_KEY)
        return (v1,) if self.streamer_checkpoint_key == _V1_CHECKPOINT_KEY else ((self.streamer_checkpoint_key,
                                                                                   _V2_RESET_KEY), v1)

    @property
    def streamer_reset_key(self) -> str:
        """Where Hudi's streamer records the `--checkpoint` it was started with (`CHECKPOINT_RESET_KEY`)."""
        return self.streamer_checkpoint_generations[0][1]

    @property
    def replacecommits_end_delta_counts(self) -> bool:
        """The compaction trigger counts delta commits since the latest completed commit or replacecommit
        (0.x's `getCommitTimeline` holds both; `CompactionUtils.getDeltaCommitsSinceLatestCompaction`);
        1.x's holds commits only."""
        return self.timeline_layout == 1

    @property
    def rollback_appends_command_blocks(self) -> bool:
        """At 6 a failed deltacommit's blocks in an older slice's log are neutralised by a command
        block; from 8 on every log file of a deltacommit is its own, and deleted."""
        return not self.log_files_by_writer

    def check_header(self, keys: set[HeaderKey] | frozenset[HeaderKey]) -> None:
        extra = set(keys) - self.header_keys
        if extra:
            names = ", ".join(sorted(k.name for k in extra))
            raise UnsupportedTable(f"table version {self.number} has no log block header {names}")

    @classmethod
    def of(cls, number: int | str) -> TableVersion:
        try:
            return _VERSIONS[int(number)]
        except (KeyError, ValueError):
            known = ", ".join(str(v) for v in _VERSIONS)
            raise UnsupportedTable(f"table version {number} (only versions {known} are supported)") from None


_V1_CHECKPOINT_KEY = "deltastreamer.checkpoint.key"
_V1_RESET_KEY = "deltastreamer.checkpoint.reset_key"
_V2_RESET_KEY = "streamer.checkpoint.reset.key.v2"
_V6_HEADERS = frozenset(k for k in HeaderKey if k <= HeaderKey.BLOCK_IDENTIFIER)

V6 = TableVersion(6, 1, False, False, "APPEND", _V6_HEADERS, False, False, False, False, _V1_CHECKPOINT_KEY,
                  compaction=True, cleaning=True, archival=True, plans_of_1x=False, clean_plan_in_inflight=True,
                  complex_key_form_chosen=True, overwrite_payload_orders_logs=True,
                  deletes_fold_in_log_order=True, bucket_keys_cut_1x=False,
                  typed_custom_partition_fields=False, hudi_releases="Hudi 0.14/0.15")
V8 = TableVersion(8, 2, True, True, "CREATE", frozenset(HeaderKey), True, False, False, False, "streamer.checkpoint.key.v2",
                  compaction=True, cleaning=True, archival=True, plans_of_1x=True, clean_plan_in_inflight=True,
                  complex_key_form_chosen=True, overwrite_payload_orders_logs=False,
                  deletes_fold_in_log_order=False, bucket_keys_cut_1x=True,
                  typed_custom_partition_fields=True, hudi_releases="Hudi 1.0")
V9 = TableVersion(9, 2, True, True, "CREATE", frozenset(HeaderKey), True, True, True, True, "streamer.checkpoint.key.v2",
                  compaction=True, cleaning=True, archival=True, plans_of_1x=True, clean_plan_in_inflight=False,
                  complex_key_form_chosen=False, overwrite_payload_orders_logs=False,
                  deletes_fold_in_log_order=False, bucket_keys_cut_1x=True,
                  typed_custom_partition_fields=True, hudi_releases="Hudi 1.1/1.2")
_VERSIONS = {v.number: v for v in (V6, V8, V9)}

READABLE_VERSIONS: tuple[int, ...] = tuple(_VERSIONS)
WRITABLE_VERSIONS: tuple[int, ...] = (6, 8, 9)
DEFAULT_WRITE_VERSION = V6  # every Hudi reader since 0.14 reads it
