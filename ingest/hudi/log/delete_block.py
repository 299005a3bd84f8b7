"""DELETE block content: the keys a commit deletes, with the ordering value of each delete.

Content version 3 (`HoodieDeleteBlock.getContentBytes`)::

    int32 version (3), int32 length, then the Avro binary of HoodieDeleteRecordList

`HoodieDeleteRecordList` is `{deleteRecordList: array<HoodieDeleteRecord>}` with
`HoodieDeleteRecord = {recordKey: [null, string], partitionPath: [null, string], orderingVal}`.
In Hudi 0.14/0.15 `orderingVal` is the union `[null, BooleanWrapper, IntWrapper, LongWrapper,
FloatWrapper, DoubleWrapper, BytesWrapper, StringWrapper, DateWrapper, DecimalWrapper,
TimeMicrosWrapper, TimestampMicrosWrapper]` of one-field records `{value: T}` (defined in
`HoodieMetadata.avsc`, filled by `wrapValueIntoAvro`). Later Hudi appended an ArrayWrapper
branch, and the newest source wraps the union in an array; the Hudi-written fixtures use the
plain union, which is what this module reads and writes. Versions 1 and 2 were Java-serialized
key arrays; they are recognised and refused.
"""

from __future__ import annotations

import datetime as dt
import io
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation
from enum import IntEnum
from typing import Any

import fastavro

from ingest.errors import BadRecordError, LogFormatError, UnsupportedTable
from ingest.hudi.avro.schema import AvroSchema
from ingest.hudi.log.data_block import data_block_header
from ingest.hudi.log.log_block import BlockType, LogBlock

DELETE_BLOCK_VERSION = 3
_MODEL_NAMESPACE = "org.apache.hudi.avro.model"
DECIMAL_WRAPPER_PRECISION = 30
DECIMAL_WRAPPER_SCALE = 15


class OrderingWrapper(IntEnum):
    """Which wrapper record carries an ordering value: its branch in the `orderingVal` union."""

    BOOLEAN = 1
    INT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    BYTES = 6
    STRING = 7
    DATE = 8
    DECIMAL = 9
    TIME_MICROS = 10
    TIMESTAMP_MICROS = 11

    @property
    def record_name(self) -> str:
        """The wrapper's Avro record name, e.g. `IntWrapper`."""
        return _WRAPPER_NAMES[self]


_WRAPPER_NAMES = {
    OrderingWrapper.BOOLEAN: "BooleanWrapper",
    OrderingWrapper.INT: "IntWrapper",
    OrderingWrapper.LONG: "LongWrapper",
    OrderingWrapper.FLOAT: "FloatWrapper",
    OrderingWrapper.DOUBLE: "DoubleWrapper",
    OrderingWrapper.BYTES: "BytesWrapper",
    OrderingWrapper.STRING: "StringWrapper",
    OrderingWrapper.DATE: "DateWrapper",
    OrderingWrapper.DECIMAL: "DecimalWrapper",
    OrderingWrapper.TIME_MICROS: "TimeMicrosWrapper",
    OrderingWrapper.TIMESTAMP_MICROS: "TimestampMicrosWrapper",
}
# The wrapped value's Avro type, without logical annotations: the bytes are the same, and the
# conversions (date days, decimal scale, micros) are done here exactly as Hudi does them.
_WRAPPER_VALUE_TYPES = {
    OrderingWrapper.BOOLEAN: "boolean",
    OrderingWrapper.INT: "int",
    OrderingWrapper.LONG: "long",
    OrderingWrapper.FLOAT: "float",
    OrderingWrapper.DOUBLE: "double",
    OrderingWrapper.BYTES: "bytes",
    OrderingWrapper.STRING: "string",
    OrderingWrapper.DATE: "int",
    OrderingWrapper.DECIMAL: "bytes",
    OrderingWrapper.TIME_MICROS: "long",
    OrderingWrapper.TIMESTAMP_MICROS: "long",
}
_BY_FULL_NAME = {f"{_MODEL_NAMESPACE}.{name}": w for w, name in _WRAPPER_NAMES.items()}
_INT_RANGES = {
    OrderingWrapper.INT: (-(2**31), 2**31 - 1),
    OrderingWrapper.DATE: (-(2**31), 2**31 - 1),
    OrderingWrapper.LONG: (-(2**63), 2**63 - 1),
    OrderingWrapper.TIME_MICROS: (-(2**63), 2**63 - 1),
    OrderingWrapper.TIMESTAMP_MICROS: (-(2**63), 2**63 - 1),
}
_DECIMAL_QUANTUM = Decimal(1).scaleb(-DECIMAL_WRAPPER_SCALE)
# Python's default context keeps 28 digits; decimal(30, 15) needs more to rescale without rounding.
_DECIMAL_CONTEXT = Context(prec=2 * DECIMAL_WRAPPER_PRECISION)


@dataclass(frozen=True)
class OrderingValue:
    """An ordering value and the wrapper it is written with.

    Values as Avro holds them: bool, int (INT, LONG; DATE as days since 1970-01-01; TIME_MICROS
    and TIMESTAMP_MICROS as microseconds), float, bytes, str, Decimal (DECIMAL, rescaled to 15
    places as Hudi's `tryUpcastDecimal` does).
    """

    wrapper: OrderingWrapper
    value: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "wrapper", OrderingWrapper(self.wrapper))
        object.__setattr__(self, "value", _checked_value(self.wrapper, self.value))


def _checked_value(wrapper: OrderingWrapper, value: Any) -> Any:
    name = wrapper.record_name
    if wrapper == OrderingWrapper.BOOLEAN:
        if isinstance(value, bool):
            return value
    elif wrapper in _INT_RANGES:
        lo, hi = _INT_RANGES[wrapper]
        if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
            return value
    elif wrapper in (OrderingWrapper.FLOAT, OrderingWrapper.DOUBLE):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif wrapper == OrderingWrapper.BYTES:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
    elif wrapper == OrderingWrapper.STRING:
        if isinstance(value, str):
            return value
    elif wrapper == OrderingWrapper.DECIMAL:
        if isinstance(value, (Decimal, int)) and not isinstance(value, bool):
            try:
                scaled = Decimal(value).quantize(_DECIMAL_QUANTUM, context=_DECIMAL_CONTEXT)
            except InvalidOperation as e:
                raise BadRecordError(f"ordering value {value!r} does not fit {name}(30, 15)") from e
            if scaled != value or len(scaled.as_tuple().digits) > DECIMAL_WRAPPER_PRECISION:
                raise BadRecordError(f"ordering value {value!r} does not fit {name}(30, 15) without rounding")
            return scaled
    raise BadRecordError(f"ordering value {value!r} ({type(value).__name__}) cannot be written as {name}")


# What Hudi writes for a delete that has no ordering value: DeleteRecord.create(key) uses 0 (an Integer).
NO_ORDERING_VALUE = OrderingValue(OrderingWrapper.INT, 0)


@dataclass(frozen=True)
class DeleteRecord:
    """One deleted key. `ordering_value` None is the union's null branch."""

    record_key: str | None
    partition_path: str | None
    ordering_value: OrderingValue | None = NO_ORDERING_VALUE


def _non_null(avro_type: Any) -> Any:
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        if len(branches) != 1:
            raise BadRecordError(f"ordering field type {avro_type} is not a nullable single type")
        return branches[0]
    return avro_type


_SIMPLE_WRAPPERS = {
    "boolean": OrderingWrapper.BOOLEAN,
    "int": OrderingWrapper.INT,
    "long": OrderingWrapper.LONG,
    "float": OrderingWrapper.FLOAT,
    "double": OrderingWrapper.DOUBLE,
    "bytes": OrderingWrapper.BYTES,
    "string": OrderingWrapper.STRING,
}


def ordering_wrapper(avro_type: Any, *, consistent_logical_timestamp: bool = False) -> OrderingWrapper:
    """The wrapper Hudi puts a table's ordering values in, given the ordering field's Avro type.

    Mirrors `HoodieAvroUtils.getNestedFieldVal` + `wrapValueIntoAvro`: date -> DateWrapper,
    decimal -> DecimalWrapper, timestamps -> LongWrapper of the raw long unless
    `hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled`, when they become
    TimestampMicrosWrapper.
    """
    t = _non_null(avro_type)
    logical = t.get("logicalType") if isinstance(t, dict) else None
    base = t.get("type") if isinstance(t, dict) else t
    if logical == "date" and base == "int":
        return OrderingWrapper.DATE
    if logical == "decimal":
        return OrderingWrapper.DECIMAL
    if logical in ("timestamp-millis", "timestamp-micros") and base == "long" and consistent_logical_timestamp:
        return OrderingWrapper.TIMESTAMP_MICROS
    if isinstance(base, str) and base in _SIMPLE_WRAPPERS:
        return _SIMPLE_WRAPPERS[base]
    raise BadRecordError(f"Hudi cannot order records by a field of type {t}")


def ordering_value(
    avro_type: Any, value: Any, *, consistent_logical_timestamp: bool = False
) -> OrderingValue | None:
    """The ordering value Hudi writes for `value` of a table's ordering field of type `avro_type`.

    Values are Avro's own: a date as days or `datetime.date`, a timestamp as the stored long. A null
    value has no ordering value (None).
    """
    if value is None:
        return None
    wrapper = ordering_wrapper(avro_type, consistent_logical_timestamp=consistent_logical_timestamp)
    if wrapper is OrderingWrapper.DATE and isinstance(value, dt.date):
        return OrderingValue(wrapper, (value - dt.date(1970, 1, 1)).days)
    if wrapper is OrderingWrapper.TIMESTAMP_MICROS:
        logical = _non_null(avro_type).get("logicalType")
        return OrderingValue(wrapper, value * 1000 if logical == "timestamp-millis" else value)
    return OrderingValue(wrapper, value)


# -- the Avro schema of the content ----------------------------------------------------------------


def _wrapper_schema(wrapper: OrderingWrapper) -> dict[str, Any]:
    return {
        "type": "record",
        "name": wrapper.record_name,
        "namespace": _MODEL_NAMESPACE,
        "fields": [{"name": "value", "type": _WRAPPER_VALUE_TYPES[wrapper]}],
    }


_DELETE_RECORD_LIST_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieDeleteRecordList",
        "namespace": _MODEL_NAMESPACE,
        "fields": [
            {
                "name": "deleteRecordList",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieDeleteRecord",
                        "fields": [
                            {"name": "recordKey", "type": ["null", "string"], "default": None},
                            {"name": "partitionPath", "type": ["null", "string"], "default": None},
                            {
                                "name": "orderingVal",
                                "type": ["null"] + [_wrapper_schema(w) for w in OrderingWrapper],
                                "default": None,
                            },
                        ],
                    },
                },
            }
        ],
    }
)


def _java_signed_bytes(n: int) -> bytes:
    # BigInteger.toByteArray: the shortest two's complement that holds the sign bit.
    length = ((n if n >= 0 else ~n).bit_length() // 8) + 1
    return n.to_bytes(length, "big", signed=True)


def _avro_ordering(v: OrderingValue | None) -> Any:
    if v is None:
        return None
    if v.wrapper == OrderingWrapper.DECIMAL:
        unscaled = int(v.value.scaleb(DECIMAL_WRAPPER_SCALE, context=_DECIMAL_CONTEXT))
        inner: Any = _java_signed_bytes(unscaled)
    else:
        inner = v.value
    return (f"{_MODEL_NAMESPACE}.{v.wrapper.record_name}", {"value": inner})


def _python_ordering(avro: Any) -> OrderingValue | None:
    if avro is None:
        return None
    name, record = avro
    wrapper = _BY_FULL_NAME[name]
    value = record["value"]
    if wrapper == OrderingWrapper.DECIMAL:
        if not value:
            raise LogFormatError("DecimalWrapper holds no bytes")
        unscaled = int.from_bytes(value, "big", signed=True)
        value = Decimal(unscaled).scaleb(-DECIMAL_WRAPPER_SCALE, context=_DECIMAL_CONTEXT)
    return OrderingValue(wrapper, value)


# -- content ---------------------------------------------------------------------------------------


def encode_delete_content(deletes: Iterable[DeleteRecord]) -> bytes:
    """DELETE content version 3 for `deletes`, in their order."""
    datum = {
        "deleteRecordList": [
            {
                "recordKey": d.record_key,
                "partitionPath": d.partition_path,
                "orderingVal": _avro_ordering(d.ordering_value),
            }
            for d in deletes
        ]
    }
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, _DELETE_RECORD_LIST_SCHEMA, datum)
    except Exception as e:  # e.g. a non-str key
        raise BadRecordError(f"delete records cannot be encoded: {e}") from e
    avro = out.getvalue()
    return struct.pack(">ii", DELETE_BLOCK_VERSION, len(avro)) + avro


def decode_delete_content(content: bytes) -> list[DeleteRecord]:
    """The deletes of a DELETE content; LogFormatError if the bytes do not decode exactly."""
    if len(content) < 8:
        raise LogFormatError(f"DELETE content of {len(content)} bytes has no version and length")
    version, length = struct.unpack_from(">ii", content, 0)
    if version in (1, 2):
        raise UnsupportedTable(f"DELETE block content version {version} (Java-serialized keys) is not supported")
    if version != DELETE_BLOCK_VERSION:
        raise LogFormatError(f"DELETE content version {version} is not one Hudi writes")
    if length < 0 or 8 + length != len(content):
        raise LogFormatError(f"DELETE content declares {length} Avro bytes but holds {len(content) - 8}")
    datum = io.BytesIO(memoryview(content)[8:])
    try:
        decoded = fastavro.schemaless_reader(datum, _DELETE_RECORD_LIST_SCHEMA, return_record_name=True)
        deletes = [
            DeleteRecord(r["recordKey"], r["partitionPath"], _python_ordering(r["orderingVal"]))
            for r in decoded["deleteRecordList"]
        ]
    except LogFormatError:
        raise
    except Exception as e:  # a malformed datum fails in fastavro with assorted exception types
        raise LogFormatError(f"DELETE content does not decode: {e!r}") from e
    if datum.tell() != length:
        raise LogFormatError(f"DELETE content: Avro datum is {datum.tell()} bytes, its length says {length}")
    return deletes


def delete_block(instant_time: str, schema: AvroSchema | str, deletes: Sequence[DeleteRecord]) -> LogBlock:
    """A DELETE block; Hudi's header carries the instant and the table's writer schema."""
    return LogBlock(BlockType.DELETE, data_block_header(instant_time, schema), encode_delete_content(deletes))


def decode_delete_block(block: LogBlock) -> list[DeleteRecord]:
    if block.block_type != BlockType.DELETE:
        raise ValueError(f"{block.block_type.name} is not a DELETE block")
    return decode_delete_content(block.content)
