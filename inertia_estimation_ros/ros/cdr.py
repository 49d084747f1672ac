"""Little-endian CDR bytes to rclpy message objects without rclpy (issue 16).

``inertia_estimation estimate`` reads a bag's ground truth and live estimates
(``PayloadEstimate``); deserializing them with ``rclpy.serialization`` loaded rclpy and
rosidl's Python generator (~0.2 s of CPU, more than reading them). ``decode`` walks the
message class's own field types (``SLOT_TYPES``, rosidl's definitions) over the bytes, as
rclpy's C type support does: primitives aligned to their size in the payload, strings and
sequences with their uint32 length first, nested messages inline. It covers the field
types of this package's and the common messages (numbers, strings, nested messages and
their fixed arrays and sequences); anything else (big-endian CDR, bool / byte / char arrays,
wide strings) raises ``UnsupportedError``, and the caller deserializes with rclpy.
``test/test_cdr.py`` checks the objects against rclpy's field for field.
"""

from __future__ import annotations

import array
import importlib
import struct
from typing import Any

import numpy as np
from rosidl_parser.definition import (
    AbstractSequence,
    AbstractString,
    Array,
    BasicType,
    NamespacedType,
)

from .grasp_layout import CDR_LITTLE_ENDIAN, ENCAPSULATION, aligned

# rosidl basic types: struct code (their CDR encoding), numpy dtype of a fixed array,
# array.array code of a sequence (rclpy's Python types for them)
NUMBERS = {
    "float": ("f", "float32", "f"),
    "double": ("d", "float64", "d"),
    "int8": ("b", "int8", "b"),
    "uint8": ("B", "uint8", "B"),
    "int16": ("h", "int16", "h"),
    "uint16": ("H", "uint16", "H"),
    "int32": ("i", "int32", "i"),
    "uint32": ("I", "uint32", "I"),
    "int64": ("q", "int64", "q"),
    "uint64": ("Q", "uint64", "Q"),
}
SCALARS = {name: code for name, (code, _, _) in NUMBERS.items()} | {"boolean": "?"}


class UnsupportedError(ValueError):
    """Bytes or a field type ``decode`` does not read: deserialize with rclpy instead."""


def decode(raw: bytes, kind: type) -> Any:
    """The message of class ``kind`` (an rclpy message class) in its CDR bytes ``raw``."""
    if bytes(raw[:2]) != CDR_LITTLE_ENDIAN:
        raise UnsupportedError("not little-endian CDR")
    try:
        message, end = _message(memoryview(raw), ENCAPSULATION, kind)
    except (struct.error, UnicodeDecodeError, AssertionError, IndexError, TypeError) as error:
        raise UnsupportedError(f"{kind.__name__}: {error}") from None
    if end > len(raw):
        raise UnsupportedError(f"{kind.__name__}: {end - len(raw)} bytes missing")
    return message


def _message(raw: memoryview, at: int, kind: type) -> tuple[Any, int]:
    message = kind()
    for name, slot in zip(kind.get_fields_and_field_types(), kind.SLOT_TYPES, strict=True):
        value, at = _value(raw, at, slot)
        setattr(message, name, value)
    return message, at


def _value(raw: memoryview, at: int, slot: Any) -> tuple[Any, int]:
    if isinstance(slot, BasicType):
        code = SCALARS.get(slot.typename)
        if code is None:
            raise UnsupportedError(f"a {slot.typename} field")
        at = aligned(at, struct.calcsize(code))
        return struct.unpack_from("<" + code, raw, at)[0], at + struct.calcsize(code)
    if isinstance(slot, AbstractString):  # not a wide string (AbstractWString)
        at = aligned(at, 4)
        size = struct.unpack_from("<I", raw, at)[0]  # with its terminating null
        if size < 1 or at + 4 + size > len(raw):
            raise UnsupportedError("a string's length")
        return bytes(raw[at + 4 : at + 3 + size]).decode(), at + 4 + size
    if isinstance(slot, NamespacedType):
        return _message(raw, at, _message_class(slot))
    if isinstance(slot, Array):
        count = slot.size
    elif isinstance(slot, AbstractSequence):
        at = aligned(at, 4)
        count, at = struct.unpack_from("<I", raw, at)[0], at + 4
    else:
        raise UnsupportedError(f"a field of type {slot}")
    return _items(raw, at, slot.value_type, count, isinstance(slot, Array))


def _items(raw: memoryview, at: int, item: Any, count: int, fixed: bool) -> tuple[Any, int]:
    """``count`` values of type ``item``: a numpy array (fixed array) or array.array
    (sequence) of numbers, else a list."""
    if isinstance(item, BasicType):
        if item.typename not in NUMBERS:
            raise UnsupportedError(f"an array of {item.typename}")
        code, dtype, typecode = NUMBERS[item.typename]
        size = struct.calcsize(code)
        if count:
            at = aligned(at, size)
        if at + count * size > len(raw):
            raise UnsupportedError("an array past the end")
        values = np.frombuffer(raw, np.dtype(dtype).newbyteorder("<"), count, at)
        at += count * size
        return (values.astype(dtype) if fixed else array.array(typecode, values.tobytes())), at
    values = []
    for _ in range(count):
        value, at = _value(raw, at, item)
        values.append(value)
    return values, at


def _message_class(slot: NamespacedType) -> type:
    return getattr(importlib.import_module(".".join(slot.namespaces)), slot.name)
