"""What an upgrade from table version 6 (or 8) to 8 or 9 changes in `hoodie.properties`.

Mirrors Hudi 1.2's upgrade handlers and how `UpgradeDowngrade.run` applies them:

* every handler on the way (6 to 7, 7 to 8, 8 to 9) reads the table's config as it is on storage when
  the upgrade starts (`upgradeDowngradeHelper.getTable` loads it afresh; nothing is written between
  handlers); their keys to set and to remove are gathered and written once, after every other step,
  with `hoodie.table.version` and `hoodie.timeline.layout.version` (`HoodieTableConfig.setTableVersion`),
  through the backup protocol (`HoodieTableConfig.updateAndDeleteProps`, whose `modify` applies the
  upserts, then the removals: a key one handler sets and another removes is removed);
* 6 to 7 changes nothing (`SixToSevenUpgradeHandler`);
* 7 to 8 (`SevenToEightUpgradeHandler.upgrade`): `hoodie.timeline.path`, the merge mode, strategy id and
  payload class a Merge-On-Read table's precombine field and payload imply (`upgradeMergeMode`),
  `hoodie.table.initial.version` = the version on storage (`setInitialVersion`), the key generator's
  type beside its class (`upgradeKeyGeneratorType`);
* 8 to 9 (`EightToNineUpgradeHandler.upgrade`): the strategy id goes unless the merge mode is CUSTOM
  (`reconcileMergeModeConfig`), the payload class moves to `hoodie.table.legacy.payload.class`
  (`reconcilePayloadClassConfig`), the precombine field becomes `hoodie.table.ordering.fields`
  (`reconcileOrderingFieldsConfig`);
* each key set is also set under its alternative names, and a key removed is removed under its own name
  only: `hoodie.compaction.record.merger.strategy` keeps the strategy id the upgrade set, which Hudi's
  downgrade to 8 and its pre-9 merge inference read (`HoodieTableConfig.getRecordMergeStrategyId`).

What ingest does not upgrade is refused before anything changes (`check_upgradable`): payload classes
other than the three built-in ones ingest writes (Hudi would also set partial-update modes and merge
properties for them), the custom key generator (7 to 8 needs the writer's typed partition fields),
bootstrapped tables, the complex key generator with one record key field at 8 to 9 (Hudi refuses it,
`KeyGenUtils.isComplexKeyGeneratorWithSingleRecordKeyField`), and index definitions at 8 to 9 (Hudi
rewrites them, `populateIndexVersionIfMissing`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.errors import UnsupportedTable
from ingest.hudi.config.table_config import (
    BUILT_IN_PAYLOADS,
    COMMIT_TIME_MERGE_STRATEGY,
    DEFAULT_PAYLOAD,
    EVENT_TIME_MERGE_STRATEGY,
    EVENT_TIME_PAYLOAD,
    OVERWRITE_WITH_LATEST_PAYLOAD,
    PAYLOAD_BASED_MERGE_STRATEGY,
    RecordMergeMode,
    TableConfig,
    TableConfigKey,
)
from ingest.hudi.config.table_version import TableVersion
from ingest.hudi.keygen.key_generator import SPARK_CLASS, KeyGeneratorType

K = TableConfigKey

# `KeyGeneratorType.fromClassName`: each built-in class has a type of its own, the Avro ones `<TYPE>_AVRO`.
_KEYGEN_TYPE_NAMES = {
    **{cls: kind.value for kind, cls in SPARK_CLASS.items()},
    **{cls.replace("KeyGenerator", "AvroKeyGenerator"): f"{kind.value}_AVRO" for kind, cls in SPARK_CLASS.items()},
}
_CUSTOM_KEYGENS = (SPARK_CLASS[KeyGeneratorType.CUSTOM],
                   SPARK_CLASS[KeyGeneratorType.CUSTOM].replace("KeyGenerator", "AvroKeyGenerator"))
_COMPLEX_KEYGENS = ("COMPLEX", "COMPLEX_AVRO")


@dataclass(frozen=True)
class PropertyChanges:
    """Keys to set and keys to remove; a removal wins."""

    updates: dict[str, str]
    deletes: frozenset[str]

    def applied_to(self, props: dict[str, str]) -> dict[str, str]:
        out = {**props, **self.updates}
        for key in self.deletes:
            out.pop(key, None)
        return out


def _payload(config: TableConfig) -> str:
    return config.payload_class  # `HoodieTableConfig.getPayloadClass`: the default when unset


def check_upgradable(config: TableConfig, target: TableVersion, where: str) -> None:
    """Refuse, in one line, a table whose upgrade ingest would not do as Hudi does."""
    payload = config.props.get(K.PAYLOAD_CLASS.key) or config.props.get(K.LEGACY_PAYLOAD_CLASS.key)
    if payload and payload not in BUILT_IN_PAYLOADS:
        raise UnsupportedTable(f"{where}: payload class {payload}: ingest upgrades tables whose payload is one of "
                               f"{', '.join(p.rsplit('.', 1)[1] for p in BUILT_IN_PAYLOADS)}")
    keygen = config.raw(K.KEY_GENERATOR_CLASS) or ""
    from_version = config.table_version
    if not from_version.merge_mode_in_properties and keygen in _CUSTOM_KEYGENS:
        raise UnsupportedTable(f"{where}: {keygen}: upgrading to table version 8 records the writer's typed "
                               "partition fields (SevenToEightUpgradeHandler.upgradePartitionFields), which "
                               "ingest does not have; upgrade this table with Hudi")
    if config.raw(K.BOOTSTRAP_INDEX_CLASS) or config.raw(K.BOOTSTRAP_INDEX_TYPE):
        raise UnsupportedTable(f"{where}: a bootstrapped table ({K.BOOTSTRAP_INDEX_CLASS.key}); ingest does not "
                               "upgrade it")
    if target.ordering_fields_key and not from_version.ordering_fields_key:
        if _keygen_type(config) in _COMPLEX_KEYGENS and len(config.record_key_fields) == 1:
            raise UnsupportedTable(f"{where}: the complex key generator with one record key field: Hudi refuses "
                                   "to upgrade it to version 9 (KeyGenUtils.isComplexKeyGeneratorWithSingleRecordKeyField)")
        if config.raw(K.INDEX_DEFINITIONS_PATH):
            raise UnsupportedTable(f"{where}: {K.INDEX_DEFINITIONS_PATH.key} is set: upgrading to version 9 rewrites "
                                   "the index definitions (EightToNineUpgradeHandler.populateIndexVersionIfMissing), "
                                   "which ingest does not do; upgrade this table with Hudi")


def _keygen_type(config: TableConfig) -> str | None:
    raw = config.raw(K.KEY_GENERATOR_TYPE)
    if raw:
        return raw
    keygen = config.raw(K.KEY_GENERATOR_CLASS)
    return _KEYGEN_TYPE_NAMES.get(keygen, "USER_PROVIDED") if keygen else None


def _seven_to_eight(config: TableConfig, updates: dict[str, str], deletes: set[str]) -> None:
    updates[K.TIMELINE_PATH.key] = K.TIMELINE_PATH.value.default
    # upgradeMergeMode, Merge-On-Read (the only type ingest writes).
    payload = _payload(config)
    precombine = config.raw(K.PRECOMBINE_FIELD)
    if payload not in BUILT_IN_PAYLOADS:
        merge = (payload, RecordMergeMode.CUSTOM, PAYLOAD_BASED_MERGE_STRATEGY)
    elif precombine or payload == DEFAULT_PAYLOAD:
        # An OverwriteWithLatest table with a precombine field becomes event-time ordered too.
        merge = (DEFAULT_PAYLOAD, RecordMergeMode.EVENT_TIME_ORDERING, EVENT_TIME_MERGE_STRATEGY)
    else:
        merge = (OVERWRITE_WITH_LATEST_PAYLOAD, RecordMergeMode.COMMIT_TIME_ORDERING, COMMIT_TIME_MERGE_STRATEGY)
    updates[K.PAYLOAD_CLASS.key], mode, updates[K.RECORD_MERGE_STRATEGY_ID.key] = merge
    updates[K.RECORD_MERGE_MODE.key] = mode.value
    # setInitialVersion: the version on storage (6), which is what the table was before 1.x.
    updates[K.INITIAL_VERSION.key] = str(config.version)
    keygen = config.raw(K.KEY_GENERATOR_CLASS)
    if keygen:  # upgradeKeyGeneratorType
        updates[K.KEY_GENERATOR_CLASS.key] = keygen
        updates[K.KEY_GENERATOR_TYPE.key] = _KEYGEN_TYPE_NAMES.get(keygen, "USER_PROVIDED")


def _eight_to_nine(config: TableConfig, updates: dict[str, str], deletes: set[str]) -> None:
    payload = config.props.get(K.LEGACY_PAYLOAD_CLASS.key) or _payload(config)
    mode = config.raw(K.RECORD_MERGE_MODE)
    if mode != RecordMergeMode.CUSTOM.value:  # reconcileMergeModeConfig
        deletes.add(K.RECORD_MERGE_STRATEGY_ID.key)
    if payload == EVENT_TIME_PAYLOAD:
        updates[K.RECORD_MERGE_MODE.key] = RecordMergeMode.EVENT_TIME_ORDERING.value
        updates[K.RECORD_MERGE_STRATEGY_ID.key] = EVENT_TIME_MERGE_STRATEGY
    if payload:  # reconcilePayloadClassConfig: every built-in payload is in PAYLOAD_CLASSES_TO_HANDLE
        updates[K.LEGACY_PAYLOAD_CLASS.key] = payload
        deletes.add(K.PAYLOAD_CLASS.key)
    ordering = config.raw(K.ORDERING_FIELDS) or config.raw(K.PRECOMBINE_FIELD)
    if ordering:  # reconcileOrderingFieldsConfig
        updates[K.ORDERING_FIELDS.key] = ordering
        deletes.add(K.PRECOMBINE_FIELD.key)


# The keys the handlers set that Hudi's `HoodieTableConfig` declares with alternatives: `UpgradeDowngrade.run`
# sets each alternative to the same value ("add alternate keys"), and removes only the main key. The
# others it sets (timeline path, payload class, merge mode, initial version, key generator class and
# type, legacy payload class) have none.
_ALTERNATIVES = {K.RECORD_MERGE_STRATEGY_ID.key: (K.RECORD_MERGER_STRATEGY.key,)}


def changes(config: TableConfig, target: TableVersion) -> PropertyChanges:
    """The property changes of every handler from the table's version to `target`, from its config as stored."""
    updates: dict[str, str] = {}
    deletes: set[str] = set()
    start = config.table_version
    if not start.has_completion_times and target.has_completion_times:
        _seven_to_eight(config, updates, deletes)
    if not start.ordering_fields_key and target.ordering_fields_key:
        _eight_to_nine(config, updates, deletes)
    for key, alternatives in _ALTERNATIVES.items():
        if key in updates:
            updates.update(dict.fromkeys(alternatives, updates[key]))
    updates[K.VERSION.key] = str(target.number)
    updates[K.TIMELINE_LAYOUT_VERSION.key] = str(target.timeline_layout)
    return PropertyChanges(updates, frozenset(deletes))
