"""A parquet footer's FileMetaData rewritten in place (Thrift compact protocol), data pages untouched.

pyarrow writes a base file's rows; what parquet-avro 1.13 (Hudi's Avro write path) would have put
differently in the footer is changed here, as `ingest.hudi.parquet.base_file` describes: the root
schema element's name, parquet-avro's 2-level list layout (schema and column paths), and Hudi's
key/values (`HoodieAvroWriteSupport`). Every other field pyarrow wrote is kept as it was.

`rename_root` is the cheap case: a schema without lists, whose key/values pyarrow already wrote,
differs in the root's name only, so only the root schema element is re-encoded and the rest of the
footer is copied as bytes (the full rewrite decodes and re-encodes every column chunk's metadata).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ingest.errors import IngestError

_MAGIC = b"PAR1"

# -- the footer rewrite (Thrift compact protocol) ------------------------------------------------
#
# FileMetaData is kept as generic Thrift fields [field id, type, value] so every field pyarrow wrote
# survives untouched; only the schema names/levels, column paths and key/values are changed.

_T_TRUE, _T_FALSE, _T_BYTE, _T_I16, _T_I32, _T_I64, _T_DOUBLE, _T_BINARY, _T_LIST, _T_SET, _T_MAP, _T_STRUCT = range(1, 13)

# parquet.thrift field ids
_FMD_SCHEMA, _FMD_ROW_GROUPS, _FMD_KEY_VALUES = 2, 4, 5
_SE_REPETITION, _SE_NAME, _SE_NUM_CHILDREN, _SE_CONVERTED, _SE_LOGICAL = 3, 4, 5, 6, 10
_RG_COLUMNS, _CC_META, _CMD_PATH = 1, 3, 3
_REQUIRED, _REPEATED = 0, 2
_CONVERTED_LIST, _LOGICAL_LIST = 3, 3


class _ThriftReader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def _byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def _varint(self) -> int:
        shift = result = 0
        while True:
            b = self._byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def _zigzag(self) -> int:
        n = self._varint()
        return (n >> 1) ^ -(n & 1)

    def read_struct(self) -> list[list[Any]]:
        fields: list[list[Any]] = []
        last = 0
        while True:
            header = self._byte()
            if header == 0:
                return fields
            ttype, delta = header & 0x0F, header >> 4
            fid = last + delta if delta else self._zigzag()
            last = fid
            if ttype in (_T_TRUE, _T_FALSE):
                fields.append([fid, _T_TRUE, ttype == _T_TRUE])
            else:
                fields.append([fid, ttype, self._value(ttype)])

    def _value(self, ttype: int) -> Any:
        if ttype in (_T_TRUE, _T_FALSE):  # inside a collection: one byte
            return self._byte() == _T_TRUE
        if ttype == _T_BYTE:
            return self._byte()
        if ttype in (_T_I16, _T_I32, _T_I64):
            return self._zigzag()
        if ttype == _T_DOUBLE:
            self.pos += 8
            return self.data[self.pos - 8 : self.pos]
        if ttype == _T_BINARY:
            n = self._varint()
            self.pos += n
            return self.data[self.pos - n : self.pos]
        if ttype in (_T_LIST, _T_SET):
            header = self._byte()
            size, elem = header >> 4, header & 0x0F
            if size == 15:
                size = self._varint()
            return (elem, [self._value(elem) for _ in range(size)])
        if ttype == _T_MAP:
            size = self._varint()
            if not size:
                return (0, 0, [])
            kv = self._byte()
            return (kv >> 4, kv & 0x0F, [(self._value(kv >> 4), self._value(kv & 0x0F)) for _ in range(size)])
        if ttype == _T_STRUCT:
            return self.read_struct()
        raise IngestError(f"parquet footer holds an unknown Thrift type {ttype}")


def _varint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) if n >= 0 else ((-n) << 1) - 1)


def _write_struct(out: bytearray, fields: list[list[Any]]) -> None:
    last = 0
    for fid, ttype, value in fields:
        wire = (_T_TRUE if value else _T_FALSE) if ttype == _T_TRUE else ttype
        if 0 < fid - last <= 15:
            out.append(((fid - last) << 4) | wire)
        else:
            out.append(wire)
            _zigzag(out, fid)
        last = fid
        if ttype != _T_TRUE:
            _write_value(out, ttype, value)
    out.append(0)


def _write_value(out: bytearray, ttype: int, value: Any) -> None:
    if ttype in (_T_TRUE, _T_FALSE):
        out.append(_T_TRUE if value else _T_FALSE)
    elif ttype == _T_BYTE:
        out.append(value & 0xFF)
    elif ttype in (_T_I16, _T_I32, _T_I64):
        _zigzag(out, value)
    elif ttype == _T_DOUBLE:
        out += value
    elif ttype == _T_BINARY:
        _varint(out, len(value))
        out += value
    elif ttype in (_T_LIST, _T_SET):
        elem, items = value
        if len(items) < 15:
            out.append((len(items) << 4) | elem)
        else:
            out.append(0xF0 | elem)
            _varint(out, len(items))
        for item in items:
            _write_value(out, elem, item)
    elif ttype == _T_MAP:
        ktype, vtype, entries = value
        _varint(out, len(entries))
        if entries:
            out.append((ktype << 4) | vtype)
            for k, v in entries:
                _write_value(out, ktype, k)
                _write_value(out, vtype, v)
    elif ttype == _T_STRUCT:
        _write_struct(out, value)
    else:
        raise IngestError(f"cannot encode Thrift type {ttype}")


def _get(fields: list[list[Any]], fid: int) -> Any:
    for f in fields:
        if f[0] == fid:
            return f[2]
    return None


def _put(fields: list[list[Any]], fid: int, ttype: int, value: Any) -> list[list[Any]]:
    """A copy of `fields` with field `fid` set, kept in field id order."""
    out = [list(f) for f in fields if f[0] != fid] + [[fid, ttype, value]]
    return sorted(out, key=lambda f: f[0])


@dataclass
class _Node:
    element: list[list[Any]]
    children: list[_Node]

    @property
    def name(self) -> str:
        return _get(self.element, _SE_NAME).decode("utf-8")

    @property
    def repetition(self) -> int | None:
        return _get(self.element, _SE_REPETITION)

    def is_list(self) -> bool:
        logical = _get(self.element, _SE_LOGICAL)
        return _get(self.element, _SE_CONVERTED) == _CONVERTED_LIST or (
            logical is not None and _get(logical, _LOGICAL_LIST) is not None
        )

    def flatten(self) -> list[list[list[Any]]]:
        element = _put(self.element, _SE_NUM_CHILDREN, _T_I32, len(self.children)) if self.children else self.element
        return [element] + [e for child in self.children for e in child.flatten()]

    def leaf_paths(self, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        if not self.children:
            return [prefix]
        return [p for child in self.children for p in child.leaf_paths(prefix + (child.name,))]


def _schema_tree(elements: list[list[list[Any]]]) -> _Node:
    position = 0

    def build() -> _Node:
        nonlocal position
        element = elements[position]
        position += 1
        count = _get(element, _SE_NUM_CHILDREN) or 0
        return _Node(element, [build() for _ in range(count)])

    root = build()
    if position != len(elements):
        raise IngestError("parquet footer schema has elements outside its tree")
    return root


def _to_two_level(node: _Node) -> _Node:
    """parquet-avro's old list layout for every 3-level list with a required element."""
    children = [_to_two_level(c) for c in node.children]
    if node.is_list() and len(children) == 1:
        repeated = children[0]
        if (repeated.repetition == _REPEATED and repeated.name == "list" and len(repeated.children) == 1
                and repeated.children[0].repetition == _REQUIRED and repeated.children[0].name == "element"):
            element = repeated.children[0]
            merged = _put(element.element, _SE_REPETITION, _T_I32, _REPEATED)
            merged = _put(merged, _SE_NAME, _T_BINARY, b"array")
            children = [_Node(merged, element.children)]
    return _Node(node.element, children)


def rewrite_footer(data: bytes, root_name: str, key_values: list[tuple[str, str]], two_level_lists: bool) -> bytes:
    """The file with its FileMetaData changed as the module docstring says; data pages untouched."""
    (footer_len,) = struct.unpack("<I", data[-8:-4])
    footer_start = len(data) - 8 - footer_len
    meta = _ThriftReader(data[footer_start:-8]).read_struct()

    elem_type, elements = _get(meta, _FMD_SCHEMA)
    tree = _schema_tree(elements)
    old_paths = tree.leaf_paths()
    if two_level_lists:
        tree = _to_two_level(tree)
    tree.element = _put(tree.element, _SE_NAME, _T_BINARY, root_name.encode("utf-8"))
    new_paths = tree.leaf_paths()
    meta = _put(meta, _FMD_SCHEMA, _T_LIST, (elem_type, tree.flatten()))

    _, row_groups = _get(meta, _FMD_ROW_GROUPS)
    for row_group in row_groups:
        _, columns = _get(row_group, _RG_COLUMNS)
        if len(columns) != len(new_paths):
            raise IngestError("parquet footer has a row group whose columns do not match its schema")
        for i, chunk in enumerate(columns):
            column_meta = _get(chunk, _CC_META)
            _, path = _get(column_meta, _CMD_PATH)
            if tuple(p.decode("utf-8") for p in path) != old_paths[i]:
                raise IngestError(f"parquet footer column {i} has path {path}, expected {old_paths[i]}")
            column_meta[:] = _put(column_meta, _CMD_PATH, _T_LIST, (_T_BINARY, [p.encode("utf-8") for p in new_paths[i]]))

    entries = [[[1, _T_BINARY, k.encode("utf-8")], [2, _T_BINARY, v.encode("utf-8")]] for k, v in key_values]
    meta = _put(meta, _FMD_KEY_VALUES, _T_LIST, (_T_STRUCT, entries))

    out = bytearray(data[:footer_start])
    _write_struct(out, meta)
    out += struct.pack("<I", len(out) - footer_start)
    out += _MAGIC
    return bytes(out)


def _footer_span(data: bytes | memoryview) -> tuple[int, int]:
    """Where the FileMetaData of a parquet file lies: (start, end) offsets."""
    if len(data) < 12 or bytes(data[-4:]) != _MAGIC:
        raise IngestError("not a parquet file (no PAR1 at its end)")
    (footer_len,) = struct.unpack("<I", data[-8:-4])
    return len(data) - 8 - footer_len, len(data) - 8


def rename_root(data: bytes | memoryview, root_name: str) -> bytes:
    """The file with its root schema element renamed `root_name`, every other footer byte as it was."""
    view = memoryview(data)
    start, end = _footer_span(view)
    reader = _ThriftReader(bytes(view[start:end]))
    last = 0
    while True:  # FileMetaData's fields up to `schema` (only `version` comes before it)
        header = reader._byte()
        if header == 0:
            raise IngestError("parquet footer has no schema")
        ttype, delta = header & 0x0F, header >> 4
        last = last + delta if delta else reader._zigzag()
        if last == _FMD_SCHEMA:
            break
        if ttype not in (_T_TRUE, _T_FALSE):
            reader._value(ttype)
    count = reader._byte() >> 4
    if count == 15:
        reader._varint()
    root_start = reader.pos
    root = reader.read_struct()
    if not count or not root:
        raise IngestError("parquet footer has an empty schema")
    renamed = bytearray()
    _write_struct(renamed, _put(root, _SE_NAME, _T_BINARY, root_name.encode("utf-8")))
    footer_len = end - start - (reader.pos - root_start) + len(renamed)
    return b"".join([view[:start + root_start], renamed, view[start + reader.pos:end],
                     struct.pack("<I", footer_len), _MAGIC])
