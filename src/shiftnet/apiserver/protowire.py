"""The protobuf wire format, read only: a message's bytes into numbered fields.

Pure. Kubernetes' clients encode built-in kinds as protobuf (see
:mod:`shiftnet.apiserver.protobuf`); this reads the encoding itself, with no
schema: each field is a number, a wire type and a value (an integer for
varints and fixed-width fields, bytes for length-delimited ones). Anything
that does not parse (a varint that never ends, a length past the end, the
retired group wire types, field number 0) is :class:`MalformedProtobuf`,
never an ``IndexError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

from shiftnet.errors import InvalidInput

_MAX_VARINT_BYTES = 10  # 64 bits, 7 per byte
_INT64_WRAP = 1 << 64
_INT64_SIGN = 1 << 63


class MalformedProtobuf(InvalidInput):
    """Bytes that are not a protobuf message (or not the one the schema expects)."""


class WireType(IntEnum):
    VARINT = 0
    FIXED64 = 1
    BYTES = 2
    FIXED32 = 5


@dataclass(frozen=True)
class WireField:
    number: int
    wire_type: WireType
    value: int | bytes


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    value = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise MalformedProtobuf(f"a varint at byte {pos} runs past the end")
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return value, pos + i + 1
    raise MalformedProtobuf(f"a varint at byte {pos} is longer than 10 bytes")


def signed64(value: int) -> int:
    """A varint's 64 bits as Go's int64 (negative int32 and int64 use all ten bytes)."""
    value %= _INT64_WRAP
    return value - _INT64_WRAP if value >= _INT64_SIGN else value


def _fixed(data: bytes, pos: int, size: int) -> tuple[int, int]:
    end = pos + size
    if end > len(data):
        raise MalformedProtobuf(f"a {size * 8}-bit field at byte {pos} runs past the end")
    return int.from_bytes(data[pos:end], "little"), end


def read_fields(data: bytes) -> Iterator[WireField]:
    """Every field of one message, in the order written, one at a time (a caller
    that counts can stop long before a huge body is all read)."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 0x7
        if number == 0:
            raise MalformedProtobuf(f"field number 0 at byte {start}")
        value: int | bytes
        if wire == WireType.VARINT:
            value, pos = read_varint(data, pos)
        elif wire == WireType.FIXED64:
            value, pos = _fixed(data, pos, 8)
        elif wire == WireType.FIXED32:
            value, pos = _fixed(data, pos, 4)
        elif wire == WireType.BYTES:
            size, pos = read_varint(data, pos)
            if size > len(data) - pos:
                raise MalformedProtobuf(
                    f"field {number} at byte {start} claims {size} bytes; "
                    f"{len(data) - pos} are left"
                )
            value, pos = data[pos : pos + size], pos + size
        else:
            raise MalformedProtobuf(f"field {number} at byte {start} has wire type {wire}")
        yield WireField(number, WireType(wire), value)
