"""A few lines of protobuf writing, for building test bodies field by field.

The server only reads protobuf; the tests need to write it, including the
broken forms a real encoder never makes (wrong wire types, truncations).
"""

from __future__ import annotations

VARINT, FIXED64, BYTES, GROUP_START, FIXED32 = 0, 1, 2, 3, 5


def varint(value: int) -> bytes:
    value %= 1 << 64  # negative numbers as Go writes them: ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def num(number: int, value: int) -> bytes:
    """A varint field (int32, int64, bool)."""
    return key(number, VARINT) + varint(value)


def raw(number: int, data: bytes) -> bytes:
    """A length-delimited field."""
    return key(number, BYTES) + varint(len(data)) + data


def text(number: int, value: str) -> bytes:
    return raw(number, value.encode())


def msg(number: int, *parts: bytes) -> bytes:
    return raw(number, b"".join(parts))


def entry(number: int, k: str, v: str) -> bytes:
    """One entry of a map<string, string>."""
    return msg(number, text(1, k), text(2, v))


def int_or_string(number: int, value: int | str) -> bytes:
    if isinstance(value, str):
        return msg(number, num(1, 1), num(2, 0), text(3, value))
    return msg(number, num(1, 0), num(2, value), text(3, ""))


def envelope(api_version: str, kind: str, body: bytes, encoding: str = "") -> bytes:
    """``k8s\\x00`` + runtime.Unknown, as client-go frames an object."""
    type_meta = msg(1, text(1, api_version), text(2, kind))
    return b"k8s\x00" + type_meta + raw(2, body) + text(3, encoding) + text(4, "")
