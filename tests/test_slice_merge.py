"""One file slice, base file and log blocks as Hudi's writers leave them, merged as Hudi's Java readers
and compactor merge it.

Each case builds the slice from its parts (a base row, then data and delete blocks in log order) and
reads it with `read_slice`, which ingest's snapshot reads, compactions and index bootstraps share.
The sequences here come from Hudi's writers: a delete block entry carries the record's ordering value
when Hudi's `HoodieAppendHandle` deletes a record flagged `_hoodie_is_deleted`; ingest writes every
delete without one (`IntWrapper(0)`).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from ingest.hudi.avro import schema as avro
from ingest.hudi.log.data_block import avro_data_block, encode_avro_records
from ingest.hudi.log.delete_block import (
    NO_ORDERING_VALUE,
    DeleteRecord,
    OrderingValue,
    OrderingWrapper,
    delete_block,
)
from ingest.hudi.log.log_writer import create_log_file
from ingest.hudi.parquet.base_file import write_base_file
from ingest.hudi.table.file_names import BaseFileName, LogFileName
from ingest.hudi.table.file_system_view import BaseFile, FileSlice, LogFile
from ingest.hudi.table.snapshot import ReadContext, read_slice
from ingest.storage import Storage

SCHEMA = {"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
    {"name": "id", "type": "string"},
    {"name": "ts", "type": ["null", "long"], "default": None},
    {"name": "_hoodie_is_deleted", "type": ["null", "boolean"], "default": None},
]}
FULL = avro.with_meta_fields(SCHEMA)
FILE_ID = "0f4f0e5a-1b7e-4c2e-9d3f-2a6c8b1e7d40-0"
BASE_INSTANT = "20250101000000000"


def row(instant: str, ts: int, deleted: bool | None = None) -> dict:
    return {avro.COMMIT_TIME: instant, avro.COMMIT_SEQNO: f"{instant}_0_1", avro.RECORD_KEY: "k",
            avro.PARTITION_PATH: "", avro.FILE_NAME: "f", "id": "k", "ts": ts, "_hoodie_is_deleted": deleted}


def ordered(ts: int) -> OrderingValue:
    return OrderingValue(OrderingWrapper.LONG, ts)


def read(folder: Path, base_ts: int | None, blocks: list[tuple], *, event_time: bool, log_ordering: bool = False,
         deletes_in_log_order: bool, ts_type: object = None) -> list[int]:
    """The `ts` of the key's row after merging, [] when it is deleted. `blocks`: ("data", ts, deleted) or
    ("delete", ordering value), one block each, in log order, each of its own completed instant. `ts_type`:
    the ordering field's Avro type, when not a long."""
    schema = SCHEMA if ts_type is None else {**SCHEMA, "fields": [
        f if f["name"] != "ts" else {**f, "type": ["null", ts_type]} for f in SCHEMA["fields"]]}
    full = avro.with_meta_fields(schema)
    storage = Storage(str(folder))
    base = None
    if base_ts is not None:
        name = f"{FILE_ID}_0-1-1_{BASE_INSTANT}.parquet"
        write_base_file(storage, name, pa.Table.from_pylist([row(BASE_INSTANT, base_ts)],
                                                            schema=avro.avro_to_arrow(full)), full)
        base = BaseFile("", BaseFileName.parse(name), storage.size(name))
    log_blocks, completed = [], {BASE_INSTANT}
    for n, block in enumerate(blocks, start=1):
        instant = f"2025010100000{n:04d}"
        completed.add(instant)
        if block[0] == "data":
            records = [row(instant, block[1], block[2] if len(block) > 2 else None)]
            log_blocks.append(avro_data_block(instant, full, encode_avro_records(records, full)))
        else:
            log_blocks.append(delete_block(instant, full, [DeleteRecord("k", "", block[1])]))
    name = f".{FILE_ID}_{BASE_INSTANT}.log.1_0-1-1"
    create_log_file(storage, name, log_blocks)
    slice_ = FileSlice("", FILE_ID, BASE_INSTANT, base, (LogFile("", LogFileName.parse(name), storage.size(name)),))
    # The version-6 rules come together (`TableVersion`): deletes in log order, compared by Java class.
    ctx = ReadContext(storage, schema, frozenset(completed), "ts", event_time, log_ordering=log_ordering,
                      deletes_in_log_order=deletes_in_log_order, delete_ordering_by_class=deletes_in_log_order)
    return [r["ts"] for r in read_slice(ctx, slice_).to_pylist()]


# Version 6 (Hudi 0.14/0.15), `DefaultHoodieRecordPayload` with ordering field `ts`.
V6_EVENT_TIME = [
    # `HoodieMergedLogRecordScanner.processNextDeletedRecord`: the delete replaces the record before it
    # unless that one's value is larger (`choosePrev`); then `DefaultHoodieRecordPayload.
    # combineAndGetUpdateValue` of the empty payload left (`if (recordBytes.length == 0) return
    # Option.empty()`) removes the base row whatever its value.
    pytest.param(10, [("delete", ordered(5))], [], id="an ordered delete removes a newer base row"),
    pytest.param(1, [("data", 7), ("delete", ordered(5))], [7], id="a larger record before an ordered delete stays"),
    pytest.param(1, [("data", 3), ("delete", ordered(5))], [], id="a smaller record before an ordered delete goes"),
    # The payload's `preCombine`: `if (oldValue.recordBytes.length == 0) return this` (a record after a
    # delete replaces it); the base row then competes by value (`needUpdatingPersistedRecord`).
    pytest.param(1, [("delete", ordered(5)), ("data", 3)], [3], id="a record after an ordered delete replaces it"),
    pytest.param(None, [("delete", ordered(5)), ("data", 3), ("data", 2)], [3],
                 id="then records compete by value"),
    # Deletes without an ordering value, as ingest writes them: the same answers either way.
    pytest.param(10, [("delete", NO_ORDERING_VALUE)], [], id="a delete without value removes the base row"),
    pytest.param(1, [("data", 7), ("delete", NO_ORDERING_VALUE), ("data", 3)], [3],
                 id="a record after a delete without value"),
    # The logs' survivor is the later record, which `DefaultHoodieRecordPayload` then compares with the
    # base row: the deleted base row shows again until the slice is compacted.
    pytest.param(10, [("delete", NO_ORDERING_VALUE), ("data", 3)], [10],
                 id="a smaller record after a delete loses to the base row"),
    pytest.param(5, [("data", 5)], [5], id="a tie with the base goes to the log"),
    pytest.param(9, [("data", 5)], [9], id="a smaller log record loses to the base"),
]


@pytest.mark.parametrize(("base_ts", "blocks", "expected"), V6_EVENT_TIME)
def test_version_6_event_time_slices_merge_as_hudi_0_15_merges_them(tmp_path, base_ts, blocks, expected):
    assert read(tmp_path, base_ts, blocks, event_time=True, deletes_in_log_order=True) == expected


@pytest.mark.parametrize(("ts_type", "earlier", "delete", "later"), [
    # `processNextDeletedRecord` compares the two values only when `ReflectionUtils.isSameClass(curOrderingVal,
    # deleteOrderingVal)`: the record's comes from `SpillableMapUtils.getPreCombineVal` as Avro's
    # `GenericDatumReader` read it (`Utf8`, `Integer` days, `ByteBuffer`), the delete's from
    # `HoodieAvroUtils.unwrapAvroValueWrapper` (`String`, `LocalDate`, `BigDecimal`). Never the same class, so the
    # delete replaces the record whatever the values.
    pytest.param("string", "2024-02-01", OrderingValue(OrderingWrapper.STRING, "2024-01-01"), "2024-03-01",
                 id="string"),
    pytest.param({"type": "int", "logicalType": "date"}, dt.date(2024, 2, 1),
                 OrderingValue(OrderingWrapper.DATE, (dt.date(2024, 1, 1) - dt.date(1970, 1, 1)).days),
                 dt.date(2024, 3, 1), id="date"),
])
@pytest.mark.parametrize("log_ordering", [False, True])
def test_version_6_deletes_whose_value_unwraps_to_another_class_replace_a_larger_record(
        tmp_path, ts_type, earlier, delete, later, log_ordering):
    merge = {"event_time": not log_ordering, "log_ordering": log_ordering, "deletes_in_log_order": True}
    assert read(tmp_path / "gone", None, [("data", earlier), ("delete", delete)], ts_type=ts_type, **merge) == []
    # A record after the delete replaces it (`preCombine`: `if (oldValue.recordBytes.length == 0) return this`).
    assert read(tmp_path / "back", None, [("data", later), ("delete", delete), ("data", earlier)], ts_type=ts_type,
                **merge) == [earlier]
    # 1.x converts the delete's value to the engine's type (`RecordContext.convertOrderingValueToEngineType`)
    # and compares: the larger record stays.
    assert read(tmp_path / "v8", None, [("data", earlier), ("delete", delete)], ts_type=ts_type, event_time=True,
                deletes_in_log_order=False) == [earlier]


@pytest.mark.parametrize(("base_ts", "blocks", "expected"), [
    # `OverwriteWithLatestAvroPayload` at 0.14/0.15: `preCombine` keeps the larger value in the logs, a
    # record after a delete replaces it, and the logs' survivor replaces the base row whatever its value
    # (`combineAndGetUpdateValue` is `getInsertValue`: empty for a delete).
    pytest.param(10, [("delete", ordered(5))], [], id="an ordered delete removes a newer base row"),
    pytest.param(10, [("data", 7), ("delete", ordered(5))], [7], id="a larger record before an ordered delete stays"),
    pytest.param(10, [("delete", ordered(5)), ("data", 3)], [3], id="a record after an ordered delete replaces it"),
    pytest.param(10, [("data", 3), ("data", 2)], [3], id="log records by value, over the base"),
])
def test_version_6_overwrite_with_latest_slices_merge_as_hudi_0_15_merges_them(tmp_path, base_ts, blocks, expected):
    assert read(tmp_path, base_ts, blocks, event_time=False, log_ordering=True, deletes_in_log_order=True) == expected


@pytest.mark.parametrize(("base_ts", "blocks", "expected"), [
    # Hudi 1.1 (`BufferedRecordMergerFactory`, event-time): deletes with a value compete with records by
    # value, whatever their order in the logs and against the base.
    pytest.param(10, [("delete", ordered(5))], [10], id="an older ordered delete leaves the base row"),
    pytest.param(1, [("delete", ordered(5)), ("data", 3)], [], id="an ordered delete beats a later smaller record"),
    pytest.param(1, [("data", 7), ("delete", ordered(5))], [7], id="a larger record before it stays"),
])
def test_later_versions_compare_ordered_deletes_by_value(tmp_path, base_ts, blocks, expected):
    assert read(tmp_path, base_ts, blocks, event_time=True, deletes_in_log_order=False) == expected


@pytest.mark.parametrize(("base_ts", "blocks", "expected"), [
    # Hudi 1.1 (`HoodieFileGroupReader`, event-time): the log versions merge in log order (`deltaMerge`), then
    # the survivor meets the base row (`finalMerge`). `EventTimeRecordMerger.shouldKeepNewerRecord`: "if
    # (newRecord.isCommitTimeOrderingDelete() || oldRecord.isCommitTimeOrderingDelete()) return true", so a
    # delete without value (`IntWrapper(0)`, as Spark SQL's DELETE and ingest write it) replaces what came
    # before it and a later record replaces it; the base row then competes with that record by value.
    pytest.param(10, [("delete", NO_ORDERING_VALUE)], [], id="a delete without value removes the base row"),
    pytest.param(10, [("delete", NO_ORDERING_VALUE), ("data", 3)], [10],
                 id="a smaller record after a delete without value loses to the base row"),
    pytest.param(10, [("data", 12), ("delete", NO_ORDERING_VALUE), ("data", 3)], [10],
                 id="records before the delete are gone, the base row is not"),
    pytest.param(1, [("delete", NO_ORDERING_VALUE), ("data", 3)], [3], id="a larger record after it wins"),
    # `OrderingValues.create` turns a missing ordering value into the default 0: a record flagged
    # `_hoodie_is_deleted` without one is a delete without value (`isCommitTimeOrderingDelete`).
    pytest.param(10, [("data", None, True)], [], id="a flagged record without value deletes the base row"),
    pytest.param(10, [("data", 12), ("data", None, True), ("data", 3)], [10],
                 id="a flagged record without value is a delete without value between records"),
])
def test_version_8_and_9_event_time_slices_merge_as_hudi_1_1_merges_them(tmp_path, base_ts, blocks, expected):
    assert read(tmp_path, base_ts, blocks, event_time=True, deletes_in_log_order=False) == expected


def test_a_base_rows_flag_is_read_as_it_is_when_no_log_version_meets_it(tmp_path):
    """Hudi's readers merge a base file's row only with log versions of its own key; one that none
    meets is returned from the base file as it is, whatever other keys' log records the slice holds."""
    storage = Storage(str(tmp_path))
    name = f"{FILE_ID}_0-1-1_{BASE_INSTANT}.parquet"
    write_base_file(storage, name, pa.Table.from_pylist([row(BASE_INSTANT, 1, True)], schema=avro.avro_to_arrow(FULL)),
                    FULL)
    other = dict(row("20250101000000001", 2), **{avro.RECORD_KEY: "other", "id": "other"})
    log = f".{FILE_ID}_{BASE_INSTANT}.log.1_0-1-1"
    create_log_file(storage, log, [avro_data_block("20250101000000001", FULL, encode_avro_records([other], FULL))])
    slice_ = FileSlice("", FILE_ID, BASE_INSTANT, BaseFile("", BaseFileName.parse(name), storage.size(name)),
                       (LogFile("", LogFileName.parse(log), storage.size(log)),))
    for deletes_in_log_order in (True, False):
        ctx = ReadContext(storage, SCHEMA, frozenset({BASE_INSTANT, "20250101000000001"}), "ts", True,
                          deletes_in_log_order=deletes_in_log_order)
        assert sorted(r["id"] for r in read_slice(ctx, slice_).to_pylist()) == ["k", "other"]


@pytest.mark.parametrize("deletes_in_log_order", [True, False])
@pytest.mark.parametrize(("base_ts", "blocks", "expected"), [
    # A record flagged `_hoodie_is_deleted` inside a data block is a delete to Hudi's readers (0.x:
    # `isDeleteRecord` in the payloads' `getInsertValue`/`combineAndGetUpdateValue`; 1.x:
    # `FileGroupRecordBuffer.isBuiltInDeleteRecord`), once it wins by value.
    pytest.param(1, [("data", 5, True)], [], id="a flagged record that wins deletes"),
    pytest.param(9, [("data", 5, True)], [9], id="a flagged record that loses leaves the base row"),
    pytest.param(None, [("data", 5, True), ("data", 7, False)], [7], id="a later larger record wins over it"),
])
def test_a_record_flagged_deleted_in_a_data_block_is_a_delete(tmp_path, base_ts, blocks, expected,
                                                                deletes_in_log_order):
    assert read(tmp_path, base_ts, blocks, event_time=True, deletes_in_log_order=deletes_in_log_order) == expected


def test_values_of_a_column_widened_to_a_floating_type_round_to_the_nearest(tmp_path):
    """A long column a Hudi writer widened to double (`HoodieSchemaUtils.deduceWriterSchema`): the older base
    files' values are cast on read, rounding to the nearest double as Spark's `Cast` does (and Avro's
    resolution in log blocks), not refused: 2**53 + 1 reads as 2**53."""
    old = {**SCHEMA, "fields": [*SCHEMA["fields"][:1], {"name": "ts", "type": ["null", "long"], "default": None}]}
    new = {**SCHEMA, "fields": [*SCHEMA["fields"][:1], {"name": "ts", "type": ["null", "double"], "default": None}]}
    storage, full = Storage(str(tmp_path)), avro.with_meta_fields(old)
    name = f"{FILE_ID}_0-1-1_{BASE_INSTANT}.parquet"
    rows = [{k: v for k, v in row(BASE_INSTANT, 2**53 + 1).items() if k != "_hoodie_is_deleted"}]
    write_base_file(storage, name, pa.Table.from_pylist(rows, schema=avro.avro_to_arrow(full)), full)
    instant = "20250101000000001"
    other = {k: v for k, v in dict(row(instant, 2**53 + 3), **{avro.RECORD_KEY: "o", "id": "o"}).items()
             if k != "_hoodie_is_deleted"}
    log = f".{FILE_ID}_{BASE_INSTANT}.log.1_0-1-1"
    create_log_file(storage, log, [avro_data_block(instant, full, encode_avro_records([other], full))])
    slice_ = FileSlice("", FILE_ID, BASE_INSTANT, BaseFile("", BaseFileName.parse(name), storage.size(name)),
                       (LogFile("", LogFileName.parse(log), storage.size(log)),))
    ctx = ReadContext(storage, new, frozenset({BASE_INSTANT, instant}), "ts", True, deletes_in_log_order=False)
    got = {r["id"]: r["ts"] for r in read_slice(ctx, slice_).to_pylist()}
    assert got == {"k": float(2**53), "o": float(2**53 + 4)}
