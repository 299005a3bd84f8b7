"""Spark DDL schema strings (`id BIGINT, name STRING, ...`) as Arrow schemas, as Spark's `StructType.fromDDL`
parses them, for the declared schema of JSON messages."""

from __future__ import annotations

import re

import pyarrow as pa

from ingest.errors import ConfigError
from ingest.kafka.columns import TIMESTAMP_TYPE

# -- Spark DDL ----------------------------------------------------------------------------------

_SIMPLE_TYPES: dict[str, pa.DataType] = {
    "STRING": pa.string(),
    "VARCHAR": pa.string(),
    "CHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "BYTE": pa.int8(),
    "SMALLINT": pa.int16(),
    "SHORT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "LONG": pa.int64(),
    "FLOAT": pa.float32(),
    "REAL": pa.float32(),
    "DOUBLE": pa.float64(),
    "DATE": pa.date32(),
    "TIMESTAMP": TIMESTAMP_TYPE,
    "TIMESTAMP_LTZ": TIMESTAMP_TYPE,
    "TIMESTAMP_NTZ": pa.timestamp("us"),
    "BINARY": pa.binary(),
}
_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|('(?:[^'\\]|\\.)*')|(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\S))")


class _DDLParser:
    """A recursive-descent reader of Spark's schema DDL (`a INT NOT NULL, b ARRAY<STRUCT<c:STRING>>`)."""

    def __init__(self, text: str):
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                break
            token = next(g for g in match.groups() if g is not None)
            self.tokens.append(token)
            pos = match.end()
        if text[pos:].strip():
            self.fail(f"cannot read {text[pos:]!r}")
        self.pos = 0

    def fail(self, message: str) -> None:
        raise ConfigError(f"{message} in {self.text!r}", key="schema")

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            self.fail("unexpected end")
        self.pos += 1
        return token  # type: ignore[return-value]

    def expect(self, token: str) -> None:
        got = self.take()
        if got.upper() != token:
            self.fail(f"expected {token!r}, got {got!r}")

    def accept(self, token: str) -> bool:
        if (self.peek() or "").upper() == token:
            self.pos += 1
            return True
        return False

    def name(self) -> str:
        token = self.take()
        if token.startswith("`"):
            return token[1:-1].replace("``", "`")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token):
            self.fail(f"expected a field name, got {token!r}")
        return token

    def fields(self, closing: str | None) -> list[pa.Field]:
        out: list[pa.Field] = []
        while True:
            name = self.name()
            self.accept(":")
            dtype = self.type()
            nullable = True
            if self.accept("NOT"):
                self.expect("NULL")
                nullable = False
            if self.accept("COMMENT"):
                comment = self.take()
                if not comment.startswith("'"):
                    self.fail("COMMENT needs a quoted string")
            if any(f.name == name for f in out):
                self.fail(f"field {name!r} is declared twice")
            out.append(pa.field(name, dtype, nullable))
            if not self.accept(","):
                break
        if closing is None and self.peek() is not None:
            self.fail(f"unexpected {self.peek()!r}")
        return out

    def type(self) -> pa.DataType:
        word = self.take().upper()
        if word in ("DECIMAL", "DEC", "NUMERIC"):
            precision, scale = 10, 0
            if self.accept("("):
                precision = int(self.take())
                if self.accept(","):
                    scale = int(self.take())
                self.expect(")")
            if not 0 < precision <= 38 or not 0 <= scale <= precision:
                self.fail(f"DECIMAL({precision},{scale}) is out of range")
            return pa.decimal128(precision, scale)
        if word in ("VARCHAR", "CHAR"):
            self.expect("(")
            self.take()
            self.expect(")")
            return pa.string()
        if word == "ARRAY":
            self.expect("<")
            element = self.type()
            self.expect(">")
            return pa.list_(pa.field("element", element, True))
        if word == "MAP":
            self.expect("<")
            key = self.type()
            self.expect(",")
            value = self.type()
            self.expect(">")
            return pa.map_(key, pa.field("value", value, True))
        if word == "STRUCT":
            self.expect("<")
            if self.accept(">"):
                return pa.struct([])
            fields = self.fields(">")
            self.expect(">")
            return pa.struct(fields)
        if word in _SIMPLE_TYPES:
            return _SIMPLE_TYPES[word]
        self.fail(f"unknown type {word}")
        raise AssertionError  # unreachable: fail raises


def parse_ddl(ddl: str) -> pa.Schema:
    """A Spark DDL schema string as Arrow: fields nullable unless NOT NULL, timestamps in UTC micros."""
    if not ddl.strip():
        raise ConfigError("is empty", key="schema")
    return pa.schema(_DDLParser(ddl).fields(None))
