"""A write task groups rows by bucket, shard or partition (`tasks._group_order`): a stable sort by the
columns' codes, first column first. Small code ranges take a 16-bit radix sort; it must give the
order of the general lexsort exactly, or file groups would get rows in another order (a base file's
`_hoodie_commit_seqno` numbers, the order pre-combining breaks ties in)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.write import tasks


def _reference(table: pa.Table, columns: list[str]) -> np.ndarray:
    codes = []
    for name in columns:
        col = table.column(name).combine_chunks()
        if pa.types.is_integer(col.type):
            codes.append(np.asarray(pc.fill_null(col, -1).to_numpy(zero_copy_only=False), dtype=np.int64))
        else:
            codes.append(np.asarray(col.dictionary_encode(null_encoding="encode").indices.to_numpy(
                zero_copy_only=False), dtype=np.int64))
    return np.lexsort(codes[::-1])


@settings(max_examples=150, deadline=None)
@given(
    ints=st.lists(st.one_of(st.none(), st.integers(0, 70_000)), min_size=1, max_size=200),
    narrow=st.booleans(),
    texts=st.data(),
)
def test_group_order_is_the_stable_sort_by_the_columns(ints, narrow, texts):
    values = [None if v is None else (v % 7 if narrow else v) for v in ints]  # 16-bit key, or too wide for it
    strings = texts.draw(st.lists(st.one_of(st.none(), st.sampled_from("abcde")), min_size=len(values),
                                  max_size=len(values)))
    table = pa.table({"i": pa.array(values, pa.int32()), "s": pa.array(strings, pa.string())})
    for columns in (["i"], ["s"], ["i", "s"], ["s", "i"]):
        order, starts = tasks._group_order(table, columns)
        expected = _reference(table, columns)
        assert order.tolist() == expected.tolist(), columns
        rows = table.take(pa.array(order)).to_pylist()
        for begin, end in zip(starts[:-1], starts[1:], strict=True):
            assert end > begin
            assert all([r[c] for c in columns] == [rows[begin][c] for c in columns] for r in rows[begin:end])
            if end < len(rows):
                assert [rows[end][c] for c in columns] != [rows[begin][c] for c in columns]
