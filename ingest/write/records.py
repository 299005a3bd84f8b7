"""Turning incoming rows into writable records: key, partition path, delete flag, source order.

Runs on Arrow batches in executors. A row that cannot be written (no key, an unsafe partition path,
no ordering value where one is required) is never dropped: it comes back in `errors` with the reason,
for the caller to quarantine or to fail the batch naming it.

Deletes come from three places: a `_hoodie_is_deleted` column set to true, a configured delete-flag
column set to true, tombstones (`_ingest_is_tombstone`, e.g. a Kafka message with a null value), and
`_ingest_is_deleted`: Hudi's marker in a message whose schema does not declare it (the decoder's).
A tombstone carries only its key, so its partition is unknown (null) and the index finds it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.hudi.keygen.key_generator import KeyGeneratorSpec, compute_keys
from ingest.hudi.merge.precombine import DELETE, KEY, ORDER, PARTITION

TOMBSTONE = "_ingest_is_tombstone"
MARKED_DELETED = "_ingest_is_deleted"
SOURCE_ORDER = "_ingest_source_order"
ERROR = "_ingest_error"
IS_DELETED = "_hoodie_is_deleted"
INTERNAL_PREFIXES = ("_ingest_", "_kafka_")


def data_columns(schema: pa.Schema) -> list[str]:
    """Columns that belong to the table (not ingest's own bookkeeping, not Hudi meta fields)."""
    return [n for n in schema.names if not n.startswith(INTERNAL_PREFIXES) and not n.startswith("_hoodie_")
            or n == IS_DELETED]


def data_schema(schema: pa.Schema) -> pa.Schema:
    names = set(data_columns(schema))
    return pa.schema([f for f in schema if f.name in names])


@dataclass(frozen=True)
class Prepared:
    records: pa.Table   # data columns + _ingest_key, _ingest_partition (null: unknown), _ingest_delete, _ingest_order
    errors: pa.Table    # the failed input rows + _ingest_error


def _true(table: pa.Table, name: str | None) -> np.ndarray:
    if not name or name not in table.column_names:
        return np.zeros(table.num_rows, dtype=bool)
    col = table.column(name)
    if not pa.types.is_boolean(col.type):
        col = pc.equal(pc.utf8_lower(col.cast(pa.string())), "true")
    return np.asarray(pc.fill_null(col, False).to_numpy(zero_copy_only=False), dtype=bool)


def _key_batch(table: pa.Table, spec: KeyGeneratorSpec) -> pa.RecordBatch:
    """The columns the key generator reads, in one batch: combining every column of a large table
    would copy all its data only to read the keys."""
    wanted = {f.split(".")[0] for f in spec.record_key_fields} | {f.name.split(".")[0] for f in spec.partition_fields}
    keyed = table.select([name for name in table.column_names if name in wanted])
    return one_batch(keyed if keyed.num_columns else table)  # else the key generator names the missing field


def one_batch(table: pa.Table) -> pa.RecordBatch:
    """The table's rows as one record batch (empty when it has none)."""
    batches = table.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


def _non_finite_refused(table: pa.Table, spec: KeyGeneratorSpec, ordering_field: str | None) -> list[tuple[str, str]]:
    """FLOAT/DOUBLE columns where NaN and infinities are refused: the ordering field (Java's
    Double.compareTo ranks NaN above every number, so it would win every merge in Hudi's payloads,
    where Python comparisons say it loses) and record key fields (a key "NaN" names no record)."""
    roles = [(f, "record key") for f in spec.record_key_fields] + [(ordering_field, "ordering")]
    return [(name, role) for name, role in roles
            if name and name in table.column_names and pa.types.is_floating(table.column(name).type)]


def prepare(
    table: pa.Table,
    spec: KeyGeneratorSpec,
    *,
    ordering_field: str | None,
    delete_flag_column: str | None = None,
    all_deletes: bool = False,
    order_offset: int = 0,
) -> Prepared:
    """Key every row; `order_offset` numbers rows when the source gives no `_ingest_source_order`."""
    n = table.num_rows
    keys = compute_keys(_key_batch(table, spec), spec)
    tombstone = _true(table, TOMBSTONE)
    deleted = tombstone | _true(table, IS_DELETED) | _true(table, MARKED_DELETED) | _true(table, delete_flag_column) \
        | all_deletes
    errors = np.asarray(pc.is_valid(keys.errors).to_numpy(zero_copy_only=False), dtype=bool) if n else np.zeros(0, bool)
    messages = keys.errors
    # A tombstone's partition fields are absent: its key error may only be about the partition.
    partition = keys.partition_paths
    if tombstone.any():
        partition = pc.if_else(pa.array(tombstone), pa.scalar(None, pa.string()), partition)
        key_ok = np.asarray(pc.is_valid(keys.record_keys).to_numpy(zero_copy_only=False), dtype=bool)
        errors = np.where(tombstone, ~key_ok & errors, errors)
    if ordering_field is not None and ordering_field in table.column_names and n:
        missing_order = np.asarray(pc.is_null(table.column(ordering_field)).to_numpy(zero_copy_only=False), dtype=bool)
        bad_order = missing_order & ~deleted & ~errors
        if bad_order.any():
            errors = errors | bad_order
            messages = pc.if_else(pa.array(bad_order),
                                  pa.scalar(f"ordering field {ordering_field!r} is null"), messages)
    elif ordering_field is not None and n and not deleted.all():
        raise_missing = f"ordering field {ordering_field!r} is not in the data"
        errors = errors | ~deleted
        messages = pc.if_else(pa.array(~deleted), pa.scalar(raise_missing), messages)

    for name, role in _non_finite_refused(table, spec, ordering_field):
        values = table.column(name)
        bad = np.asarray(pc.invert(pc.is_finite(values)).fill_null(False).to_numpy(zero_copy_only=False), bool)
        bad &= ~errors & ~tombstone
        if bad.any():
            errors = errors | bad
            shown = pc.cast(values, pa.string())
            text = pc.binary_join_element_wise(f"{role} field {name!r} is ", shown,
                                               ": not a finite number (NaN and infinities are refused here)", "")
            messages = pc.if_else(pa.array(bad), text, messages)

    if SOURCE_ORDER in table.column_names:
        order = pc.fill_null(table.column(SOURCE_ORDER).cast(pa.int64()), -1)
    else:
        order = pa.array(np.arange(order_offset, order_offset + n, dtype=np.int64))
    cols = data_columns(table.schema)
    records = table.select(cols)
    records = records.append_column(KEY, keys.record_keys).append_column(PARTITION, partition)
    records = records.append_column(DELETE, pa.array(deleted)).append_column(ORDER, order)
    failed = table.append_column(ERROR, messages).filter(pa.array(errors)) if errors.any() else \
        table.append_column(ERROR, pa.nulls(n, pa.string())).slice(0, 0)
    return Prepared(records.filter(pa.array(~errors)) if errors.any() else records, failed)  # filtering copies every column
