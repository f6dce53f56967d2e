"""Kubernetes protobuf request bodies into the JSON shape the server reads.

Pure. kubectl's typed clients (``kubectl create namespace``, ``kubectl create
service``, ``kubectl debug --copy-to``, ``kubectl drain``) always send
``application/vnd.kubernetes.protobuf``: client-go picks it for built-in
kinds on its own, and nothing a server answers makes it send JSON instead.
So the server reads them: the four bytes ``k8s\\x00``, then a
``runtime.Unknown`` (``typeMeta`` with apiVersion and kind, ``raw`` with the
object's own message), decoded with the field tables of
:mod:`shiftnet.apiserver.protoschema` into the dict a JSON body would have
given. From there the request is the same as a JSON one: field validation,
the model, the checks.

A field number the table does not know is kept under the key
``(protobuf field N)``, so ``fieldValidation`` treats it as it treats an
unknown JSON key (Strict refuses it by that name, Warn and Ignore drop it); a
field given twice keeps the last value and is reported as a duplicate.
Bodies that do not parse are :class:`~shiftnet.apiserver.protowire.MalformedProtobuf`
naming where; kinds without a table are :class:`UnsupportedProtobuf`.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from shiftnet.api.strict_yaml import MAX_NESTING, nesting
from shiftnet.apiserver.protoschema import KINDS, Field, Kind, Message
from shiftnet.apiserver.protowire import (
    MalformedProtobuf,
    WireField,
    WireType,
    read_fields,
    signed64,
)
from shiftnet.errors import ShiftnetError, shorten

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
PREFIX = b"k8s\x00"
_MAPS = (Kind.STRING_MAP, Kind.BYTES_MAP, Kind.QUANTITY_MAP)
NOT_DECODED = "(not decoded)"
# Far more than any object kubectl writes; keeps a 3 MiB body of tiny fields from
# holding the server's one thread for seconds.
MAX_VALUES = 100_000


class UnsupportedProtobuf(ShiftnetError):
    """A well-formed protobuf body the server does not read (a kind without a field table)."""


def unknown_key(number: int) -> str:
    """The key an unknown field number is kept under, as field validation names it."""
    return f"(protobuf field {number})"


def served_kinds() -> str:
    names = sorted({kind for _, kind in KINDS})
    return ", ".join(names[:-1]) + " and " + names[-1]


@dataclass(frozen=True)
class ProtobufBody:
    """A decoded body and the paths of the fields it gave more than once."""

    doc: dict[str, Any]
    duplicates: tuple[str, ...] = ()


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _text(value: bytes, path: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedProtobuf(f"{path} is not valid UTF-8") from None


def _is_zero(value: Any) -> bool:
    return value is None or value in ("", 0, False, {}, [])


@dataclass
class _Decoder:
    duplicates: list[str] = field(default_factory=list)
    values: int = 0

    def message(self, data: bytes, msg: Message, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        seen: set[int] = set()
        where = f"{path} ({msg.name})" if path else msg.name
        for wire in self.fields_of(data, where):
            spec = msg.fields.get(wire.number)
            if spec is None:
                out[unknown_key(wire.number)] = NOT_DECODED
                continue
            if wire.number in seen and not (spec.repeated or spec.kind in _MAPS):
                self.duplicates.append(_child(path, spec.name))
            seen.add(wire.number)
            self._field(out, wire, spec, path)
        return out

    def _field(self, out: dict[str, Any], wire: WireField, spec: Field, path: str) -> None:
        here = _child(path, spec.name)
        if spec.inline:
            assert spec.message is not None
            out.update(self.message(self.bytes_of(wire, here), spec.message, path))
            return
        if spec.kind in _MAPS:
            key, value = self._map_entry(self.bytes_of(wire, here), here, spec.kind)
            entries = out.setdefault(spec.name, {})
            if key in entries:
                self.duplicates.append(_child(here, key))
            entries[key] = value
            return
        if spec.kind is Kind.UNREAD:
            raise UnsupportedProtobuf(
                f"{here} is not read from protobuf bodies: send the object as JSON or YAML"
            )
        if spec.repeated:
            items = out.setdefault(spec.name, [])
            item = self._value(wire, spec, f"{here}[{len(items)}]")
            items.append(NOT_DECODED if item is None else item)  # an empty element is one
            return
        value = self._value(wire, spec, here)
        if spec.pointer and value is not None:
            out[spec.name] = value
        elif _is_zero(value):
            out.pop(spec.name, None)  # Go writes unset non-pointer fields as zero
        else:
            out[spec.name] = value

    def bytes_of(self, wire: WireField, path: str) -> bytes:
        if wire.wire_type is not WireType.BYTES or not isinstance(wire.value, bytes):
            raise MalformedProtobuf(
                f"{path} has wire type {wire.wire_type.name.lower()}, not length-delimited"
            )
        return wire.value

    def varint_of(self, wire: WireField, path: str) -> int:
        if wire.wire_type is not WireType.VARINT or not isinstance(wire.value, int):
            raise MalformedProtobuf(
                f"{path} has wire type {wire.wire_type.name.lower()}, not varint"
            )
        return signed64(wire.value)

    def _value(self, wire: WireField, spec: Field, path: str) -> Any:
        kind = spec.kind
        if kind is Kind.INT:
            return self.varint_of(wire, path)
        if kind is Kind.BOOL:
            return self.varint_of(wire, path) != 0
        data = self.bytes_of(wire, path)
        if kind is Kind.STRING:
            return _text(data, path)
        if kind is Kind.MESSAGE:
            assert spec.message is not None
            return self.message(data, spec.message, path)
        if kind is Kind.TIME:
            return self._time(data, path)
        if kind is Kind.INT_OR_STRING:
            return self._int_or_string(data, path)
        if kind is Kind.FIELDS_V1:
            return self._fields_v1(data, path)
        return NOT_DECODED if data else None  # OPAQUE: named, not read

    def _map_entry(self, data: bytes, path: str, kind: Kind) -> tuple[str, str]:
        """One map entry: a string value; bytes given as base64, as JSON has them; or a
        Quantity, whose field 1 is its string."""
        key = value = ""
        for wire in self.fields_of(data, path):
            if wire.number == 1:
                key = _text(self.bytes_of(wire, f"{path} key"), f"{path} key")
            elif wire.number == 2:
                here = _child(path, key)
                found = self.bytes_of(wire, here)
                if kind is Kind.BYTES_MAP:
                    value = base64.b64encode(found).decode()
                elif kind is Kind.QUANTITY_MAP:
                    value = self._quantity(found, here)
                else:
                    value = _text(found, here)
            else:
                raise MalformedProtobuf(f"an entry of {path} has field {wire.number}")
        return key, value

    def _quantity(self, data: bytes, path: str) -> str:
        text = ""
        for wire in self.fields_of(data, path):
            if wire.number != 1:
                raise MalformedProtobuf(f"{path} (Quantity) has field {wire.number}")
            text = _text(self.bytes_of(wire, path), path)
        return text

    def fields_of(self, data: bytes, path: str) -> Iterator[WireField]:
        """The fields of one message, counted against :data:`MAX_VALUES` as they are read."""
        fields = read_fields(data)
        while True:
            try:
                wire = next(fields, None)
            except MalformedProtobuf as err:
                raise MalformedProtobuf(f"in {path}: {err}") from None
            if wire is None:
                return
            self.values += 1
            if self.values > MAX_VALUES:
                raise MalformedProtobuf(f"it holds more than {MAX_VALUES} values")
            yield wire

    def _time(self, data: bytes, path: str) -> str | None:
        """meta/v1 Time: no bytes is the zero time (JSON null); nanoseconds are
        dropped, as upstream drops them."""
        if not data:
            return None
        seconds = 0
        for wire in self.fields_of(data, path):
            if wire.number == 1:
                seconds = self.varint_of(wire, f"{path}.seconds")
        try:
            stamp = dt.datetime.fromtimestamp(seconds, dt.UTC)
        except (OverflowError, OSError, ValueError):
            raise MalformedProtobuf(f"{path} is out of range: {seconds} seconds") from None
        return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _fields_v1(self, data: bytes, path: str) -> Any:
        """meta/v1 FieldsV1: its JSON tree, carried as bytes in field 1."""
        raw = b""
        for wire in self.fields_of(data, path):
            if wire.number == 1:
                raw = self.bytes_of(wire, f"{path}.Raw")
        too_deep = f"{path} nests deeper than {MAX_NESTING} levels"  # as a JSON body may
        try:
            tree = json.loads(raw) if raw else None
        except RecursionError:
            raise MalformedProtobuf(too_deep) from None
        except ValueError:
            raise MalformedProtobuf(f"{path} does not hold JSON") from None
        if nesting(tree) > MAX_NESTING:
            raise MalformedProtobuf(too_deep)
        return tree

    def _int_or_string(self, data: bytes, path: str) -> int | str:
        is_string, number, text = False, 0, ""
        for wire in self.fields_of(data, path):
            if wire.number == 1:
                is_string = self.varint_of(wire, f"{path}.type") == 1
            elif wire.number == 2:
                number = self.varint_of(wire, f"{path}.intVal")
            elif wire.number == 3:
                text = _text(self.bytes_of(wire, f"{path}.strVal"), f"{path}.strVal")
        return text if is_string else number


def _envelope(raw: bytes) -> tuple[str, str, bytes]:
    """apiVersion, kind and the object's bytes from ``k8s\\x00`` + ``runtime.Unknown``."""
    if not raw.startswith(PREFIX):
        raise MalformedProtobuf("it does not begin with Kubernetes' protobuf prefix k8s\\x00")
    decoder = _Decoder()
    api_version = kind = encoding = ""
    body = b""
    for wire in decoder.fields_of(raw[len(PREFIX) :], "the envelope"):
        if wire.number == 1:
            for meta in decoder.fields_of(decoder.bytes_of(wire, "typeMeta"), "typeMeta"):
                text = _text(decoder.bytes_of(meta, "typeMeta"), "typeMeta")
                if meta.number == 1:
                    api_version = text
                elif meta.number == 2:
                    kind = text
        elif wire.number == 2:
            body = decoder.bytes_of(wire, "raw")
        elif wire.number == 3:
            encoding = _text(decoder.bytes_of(wire, "contentEncoding"), "contentEncoding")
    if encoding:
        raise UnsupportedProtobuf(
            f'protobuf bodies with contentEncoding "{shorten(encoding, 32)}" are not read'
        )
    return api_version, kind, body


def decode_object(raw: bytes) -> ProtobufBody:
    """A ``application/vnd.kubernetes.protobuf`` body as the dict its JSON form would be."""
    api_version, kind, body = _envelope(raw)
    msg = KINDS.get((api_version, kind))
    if msg is None:
        shown = f"{shorten(kind, 64) or 'an object without a kind'}"
        if api_version:
            shown += f" ({shorten(api_version, 64)})"
        raise UnsupportedProtobuf(
            f"protobuf bodies are read for {served_kinds()}; send {shown} as JSON or YAML"
        )
    decoder = _Decoder()
    doc = decoder.message(body, msg, "")
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    out.update(doc)
    return ProtobufBody(out, tuple(decoder.duplicates))


def accepts_only_protobuf(accept: str) -> bool:
    """True when an ``Accept`` header names protobuf and nothing the server writes
    (JSON, ``*/*``, ``application/*``): such a client cannot read any answer."""
    types = [part.split(";", 1)[0].strip().lower() for part in accept.split(",")]
    types = [t for t in types if t]
    if not types:
        return False
    return all(t == MEDIA_TYPE for t in types)
