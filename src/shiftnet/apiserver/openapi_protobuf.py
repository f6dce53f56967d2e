"""The OpenAPI v2 document as protobuf: the encoding kubectl before 1.27 reads.

Pure. kubectl up to 1.26 (Debian 12's ``kubernetes-client`` is 1.20) asks
``/openapi/v2`` for ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``
and parses the answer as gnostic's ``openapi.v2.Document`` message before
``apply``, ``explain`` and its own validation; JSON there is a parse error.
This writes the swagger 2.0 document :mod:`shiftnet.apiserver.openapi`
builds into that message, field by field after gnostic's ``OpenAPIv2.proto``.
Values of free shape (``default``, ``enum``, ``example``, every ``x-`` key)
go into the ``yaml`` text of gnostic's ``Any``, as JSON (which YAML reads
as it is): kubectl reads ``x-kubernetes-group-version-kind`` and the patch
merge keys from there. A key this module has no field for is a
``ValueError`` when the document is built, never silently dropped.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from typing import Any

MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
# The older spelling kube-openapi still answers to.
MEDIA_TYPE_DOTTED = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

_VARINT, _FIXED64, _BYTES = 0, 1, 2


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values take ten bytes, as protobuf's
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _Message:
    """One message being written: fields appended in the order they are given."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def _key(self, number: int, wire: int) -> None:
        self._parts.append(_varint(number << 3 | wire))

    def bytes_(self, number: int, data: bytes) -> None:
        self._key(number, _BYTES)
        self._parts += (_varint(len(data)), data)

    def string(self, number: int, value: object) -> None:
        if not isinstance(value, str):
            raise ValueError(f"field {number}: expected a string, got {value!r}")
        if value:  # proto3 leaves empty scalars out
            self.bytes_(number, value.encode())

    def strings(self, number: int, values: object) -> None:
        if not isinstance(values, list):
            raise ValueError(f"field {number}: expected a list of strings, got {values!r}")
        for value in values:
            if not isinstance(value, str):
                raise ValueError(f"field {number}: expected a string, got {value!r}")
            self.bytes_(number, value.encode())

    def boolean(self, number: int, value: object) -> None:
        if not isinstance(value, bool):
            raise ValueError(f"field {number}: expected a boolean, got {value!r}")
        if value:
            self._key(number, _VARINT)
            self._parts.append(b"\x01")

    def integer(self, number: int, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"field {number}: expected an integer, got {value!r}")
        if value:
            self._key(number, _VARINT)
            self._parts.append(_varint(value))

    def double(self, number: int, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"field {number}: expected a number, got {value!r}")
        if value:
            self._key(number, _FIXED64)
            self._parts.append(struct.pack("<d", float(value)))

    def message(self, number: int, inner: _Message) -> None:
        self.bytes_(number, inner.encoded())

    def encoded(self) -> bytes:
        return b"".join(self._parts)


def _any(value: object) -> _Message:
    """gnostic's ``Any``: the value as YAML text (field 2), written as JSON."""
    out = _Message()
    out.bytes_(2, json.dumps(value, separators=(",", ":"), sort_keys=True).encode())
    return out


def _named(name: str, value: _Message) -> _Message:
    """gnostic's ``Named...`` pair: a map entry with its key in field 1."""
    out = _Message()
    out.string(1, name)
    out.message(2, value)
    return out


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{what}: expected an object, got {value!r}")
    return value


Writer = Callable[[_Message, object], None]


def _fields(
    what: str, table: Mapping[str, Writer], extensions: int | None
) -> Callable[[object], _Message]:
    """A message writer from a table of JSON key -> how to write it; ``x-`` keys
    go to the message's vendor extensions (field ``extensions``)."""

    def write(value: object) -> _Message:
        out = _Message()
        for key, item in _mapping(value, what).items():
            writer = table.get(key)
            if writer is not None:
                writer(out, item)
            elif key.startswith("x-") and extensions is not None:
                out.message(extensions, _named(key, _any(item)))
            else:
                raise ValueError(f"{what}: no protobuf field for {key!r}")
        return out

    return write


def _s(n: int) -> Writer:
    return lambda out, v: out.string(n, v)


def _ss(n: int) -> Writer:
    return lambda out, v: out.strings(n, v)


def _b(n: int) -> Writer:
    return lambda out, v: out.boolean(n, v)


def _i(n: int) -> Writer:
    return lambda out, v: out.integer(n, v)


def _d(n: int) -> Writer:
    return lambda out, v: out.double(n, v)


def _m(n: int, writer: Callable[[object], _Message]) -> Writer:
    return lambda out, v: out.message(n, writer(v))


def _each(n: int, writer: Callable[[object], _Message]) -> Writer:
    def write(out: _Message, values: object) -> None:
        if not isinstance(values, list):
            raise ValueError(f"field {n}: expected a list, got {values!r}")
        for value in values:
            out.message(n, writer(value))

    return write


def _a(n: int) -> Writer:
    """A free-shaped value: gnostic's ``Any``."""
    return _m(n, _any)


def _as(n: int) -> Writer:
    return _each(n, _any)


def _map(n: int, writer: Callable[[object], _Message], what: str) -> Writer:
    """A JSON object of named values as gnostic's repeated ``Named...`` (field ``n``)."""

    def write(out: _Message, value: object) -> None:
        for name, item in _mapping(value, what).items():
            out.message(n, _named(name, writer(item)))

    return write


def _wrapped(n: int, writer: Callable[[object], _Message], what: str) -> Writer:
    """A map held in a message of its own (``Properties``, ``Definitions``...): field ``n``
    holds a message whose field 1 repeats the named entries."""

    def write(out: _Message, value: object) -> None:
        holder = _Message()
        _map(1, writer, what)(holder, value)
        out.message(n, holder)

    return write


def _schema(value: object) -> _Message:
    return _SCHEMA(value)


def _type_item(out: _Message, value: object) -> None:
    holder = _Message()
    holder.strings(1, [value] if isinstance(value, str) else value)
    out.message(22, holder)


def _items_item(out: _Message, value: object) -> None:
    holder = _Message()
    for item in value if isinstance(value, list) else [value]:
        holder.message(1, _schema(item))
    out.message(23, holder)


def _additional(out: _Message, value: object) -> None:
    holder = _Message()
    if isinstance(value, bool):
        holder.boolean(2, value)
    else:
        holder.message(1, _schema(value))
    out.message(21, holder)


_SCHEMA = _fields(
    "schema",
    {
        "$ref": _s(1),
        "format": _s(2),
        "title": _s(3),
        "description": _s(4),
        "default": _a(5),
        "multipleOf": _d(6),
        "maximum": _d(7),
        "exclusiveMaximum": _b(8),
        "minimum": _d(9),
        "exclusiveMinimum": _b(10),
        "maxLength": _i(11),
        "minLength": _i(12),
        "pattern": _s(13),
        "maxItems": _i(14),
        "minItems": _i(15),
        "uniqueItems": _b(16),
        "maxProperties": _i(17),
        "minProperties": _i(18),
        "required": _ss(19),
        "enum": _as(20),
        "additionalProperties": _additional,
        "type": _type_item,
        "items": _items_item,
        "allOf": _each(24, _schema),
        "properties": _wrapped(25, _schema, "properties"),
        "discriminator": _s(26),
        "readOnly": _b(27),
        "example": _a(30),
    },
    31,
)

# Primitive item and non-body parameter layouts share their tails: each
# ``*SubSchema`` message numbers the same JSON keys from a different start.
_PRIMITIVE_TAIL = (
    "type",
    "format",
    "items",
    "collectionFormat",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
)
_KIND_OF = {
    "type": _s,
    "format": _s,
    "collectionFormat": _s,
    "pattern": _s,
    "default": _a,
    "enum": _as,
    "maximum": _d,
    "minimum": _d,
    "multipleOf": _d,
    "exclusiveMaximum": _b,
    "exclusiveMinimum": _b,
    "uniqueItems": _b,
    "maxLength": _i,
    "minLength": _i,
    "maxItems": _i,
    "minItems": _i,
}


def _primitive_fields(start: int) -> dict[str, Writer]:
    table: dict[str, Writer] = {}
    for offset, key in enumerate(_PRIMITIVE_TAIL):
        n = start + offset
        table[key] = _m(n, _primitives_items) if key == "items" else _KIND_OF[key](n)
    return table


def _primitives_items(value: object) -> _Message:
    return _PRIMITIVES_ITEMS(value)


_PRIMITIVES_ITEMS = _fields("items", _primitive_fields(1), 18)


def _sub_schema(with_empty_value: bool, what: str) -> Callable[[object], _Message]:
    """Query and formData parameters carry ``allowEmptyValue`` (field 5); path and
    header parameters do not, so their primitive fields start one lower."""
    head: dict[str, Writer] = {"required": _b(1), "in": _s(2), "description": _s(3), "name": _s(4)}
    start = 6 if with_empty_value else 5
    if with_empty_value:
        head["allowEmptyValue"] = _b(5)
    extensions = start + len(_PRIMITIVE_TAIL)
    return _fields(what, head | _primitive_fields(start), extensions)


_NON_BODY = {
    "header": (1, _sub_schema(False, "header parameter")),
    "formData": (2, _sub_schema(True, "formData parameter")),
    "query": (3, _sub_schema(True, "query parameter")),
    "path": (4, _sub_schema(False, "path parameter")),
}
_BODY = _fields(
    "body parameter",
    {"description": _s(1), "name": _s(2), "in": _s(3), "required": _b(4), "schema": _m(5, _schema)},
    6,
)


def _parameter(value: object) -> _Message:
    """gnostic's ``Parameter``: a body parameter, or a non-body one by where it is."""
    where = _mapping(value, "parameter").get("in")
    out = _Message()
    if where == "body":
        out.message(1, _BODY(value))
        return out
    if where not in _NON_BODY:
        raise ValueError(f"parameter: unknown location {where!r}")
    number, writer = _NON_BODY[where]
    non_body = _Message()
    non_body.message(number, writer(value))
    out.message(2, non_body)
    return out


def _json_reference(value: object) -> _Message:
    return _fields("reference", {"$ref": _s(1), "description": _s(2)}, None)(value)


def _or_reference(what: str, writer: Callable[[object], _Message]) -> Callable[[object], _Message]:
    """gnostic's ``ParametersItem``/``ResponseValue``: the thing in field 1, or a JSON
    reference to one (``$ref``) in field 2."""

    def write(value: object) -> _Message:
        out = _Message()
        if "$ref" in _mapping(value, what):
            out.message(2, _json_reference(value))
        else:
            out.message(1, writer(value))
        return out

    return write


_parameters_item = _or_reference("parameter", _parameter)


def _schema_item(value: object) -> _Message:
    out = _Message()
    out.message(1, _schema(value))
    return out


_RESPONSE = _fields("response", {"description": _s(1), "schema": _m(2, _schema_item)}, 5)
_response_value = _or_reference("response", _RESPONSE)


def _entries(
    what: str, field: int, extensions: int, writer: Callable[[object], _Message]
) -> Callable[[object], _Message]:
    """gnostic's ``Responses``/``Paths``: a JSON object whose named entries repeat in
    ``field`` and whose ``x-`` keys repeat in ``extensions``."""

    def write(value: object) -> _Message:
        out = _Message()
        for name, item in _mapping(value, what).items():
            if name.startswith("x-"):
                out.message(extensions, _named(name, _any(item)))
            else:
                out.message(field, _named(name, writer(item)))
        return out

    return write


_responses = _entries("responses", 1, 2, _response_value)
_EXTERNAL_DOCS = _fields("externalDocs", {"description": _s(1), "url": _s(2)}, 3)

_OPERATION = _fields(
    "operation",
    {
        "tags": _ss(1),
        "summary": _s(2),
        "description": _s(3),
        "externalDocs": _m(4, _EXTERNAL_DOCS),
        "operationId": _s(5),
        "produces": _ss(6),
        "consumes": _ss(7),
        "parameters": _each(8, _parameters_item),
        "responses": _m(9, _responses),
        "schemes": _ss(10),
        "deprecated": _b(11),
    },
    13,
)

_PATH_ITEM = _fields(
    "path",
    {
        "$ref": _s(1),
        "get": _m(2, _OPERATION),
        "put": _m(3, _OPERATION),
        "post": _m(4, _OPERATION),
        "delete": _m(5, _OPERATION),
        "options": _m(6, _OPERATION),
        "head": _m(7, _OPERATION),
        "patch": _m(8, _OPERATION),
        "parameters": _each(9, _parameters_item),
    },
    10,
)


_paths = _entries("paths", 2, 1, _PATH_ITEM)


_INFO = _fields(
    "info",
    {"title": _s(1), "version": _s(2), "description": _s(3), "termsOfService": _s(4)},
    7,
)
_API_KEY = _fields(
    "apiKey security", {"type": _s(1), "name": _s(2), "in": _s(3), "description": _s(4)}, 5
)
_BASIC = _fields("basic security", {"type": _s(1), "description": _s(2)}, 3)


def _security_definition(value: object) -> _Message:
    kind = _mapping(value, "security definition").get("type")
    out = _Message()
    if kind == "apiKey":
        out.message(2, _API_KEY(value))
    elif kind == "basic":
        out.message(1, _BASIC(value))
    else:
        raise ValueError(f"security definition: no protobuf form for type {kind!r}")
    return out


def _string_array(value: object) -> _Message:
    out = _Message()
    out.strings(1, value)
    return out


def _security_requirement(value: object) -> _Message:
    out = _Message()
    _map(1, _string_array, "security requirement")(out, value)
    return out


_DOCUMENT = _fields(
    "document",
    {
        "swagger": _s(1),
        "info": _m(2, _INFO),
        "host": _s(3),
        "basePath": _s(4),
        "schemes": _ss(5),
        "consumes": _ss(6),
        "produces": _ss(7),
        "paths": _m(8, _paths),
        "definitions": _wrapped(9, _schema, "definitions"),
        "security": _each(12, _security_requirement),
        "securityDefinitions": _wrapped(13, _security_definition, "securityDefinitions"),
        "externalDocs": _m(15, _EXTERNAL_DOCS),
    },
    16,
)


def encode_document(document: Mapping[str, Any]) -> bytes:
    """The swagger 2.0 ``document`` as the bytes of gnostic's ``openapi.v2.Document``."""
    return _DOCUMENT(document).encoded()
