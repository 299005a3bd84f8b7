"""What a decoder returns: rows aligned with the input, bad rows all-null, and the error of each."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

# -- outcomes -----------------------------------------------------------------------------------


def loose(schema: pa.Schema) -> pa.Schema:
    """`schema` with top-level nulls allowed: working tables hold all-null rows for bad records."""
    return pa.schema([f.with_nullable(True) for f in schema])


@dataclass
class Outcome:
    """Decoded rows aligned with the input (error rows all-null) and the errors by row."""

    table: pa.Table
    errors: dict[int, str]
    marked: pa.Array | None = None  # Hudi's delete marker, where the schema does not declare it


def aligned(pieces: list[tuple[np.ndarray, pa.Table]], n: int, schema: pa.Schema) -> pa.Table:
    """One table of n rows from pieces (original row indices, rows); rows in no piece are null."""
    if not pieces:
        return pa.table({f.name: pa.nulls(n, f.type) for f in schema}, schema=schema)
    tables = [t.cast(schema) if t.schema != schema else t for _, t in pieces]
    combined = pa.concat_tables(tables)
    positions = np.full(n, -1, dtype=np.int64)
    positions[np.concatenate([idx for idx, _ in pieces])] = np.arange(combined.num_rows)
    return combined.take(pa.array(positions, mask=positions < 0))


def rows_where(mask: pa.Array) -> np.ndarray:
    return np.flatnonzero(mask.fill_null(False).to_numpy(zero_copy_only=False))
