"""The served OpenAPI v2 document as gnostic's protobuf: read back field by field, it is
the JSON document; and ``/openapi/v2``'s content negotiation, as kube-openapi's."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

from shiftnet.apiserver.openapi import openapi_v2
from shiftnet.apiserver.openapi_accept import JSON, PROTOBUF, negotiate_v2
from shiftnet.apiserver.openapi_protobuf import encode_document
from shiftnet.apiserver.protowire import WireField, read_fields


def fields(data: bytes) -> list[WireField]:
    return list(read_fields(data))


def text(field: WireField) -> str:
    assert isinstance(field.value, bytes)
    return field.value.decode()


def named(data: bytes) -> tuple[str, bytes]:
    """A gnostic ``Named...`` entry: (name, the value's bytes)."""
    name, value = "", b""
    for f in fields(data):
        if f.number == 1:
            name = text(f)
        elif f.number == 2:
            assert isinstance(f.value, bytes)
            value = f.value
    return name, value


def any_value(data: bytes) -> Any:
    (only,) = fields(data)
    assert only.number == 2  # the yaml text
    return json.loads(text(only))


# Schema field numbers of gnostic's openapi.v2.Schema, read back into JSON keys.
_SCALARS = {1: "$ref", 2: "format", 3: "title", 4: "description", 13: "pattern"}
_INTS = {11: "maxLength", 12: "minLength", 14: "maxItems", 15: "minItems"}


def schema(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(data):
        raw = f.value
        if f.number in _SCALARS:
            out[_SCALARS[f.number]] = text(f)
        elif f.number in _INTS:
            out[_INTS[f.number]] = raw
        elif f.number in (7, 9):
            assert isinstance(raw, int)
            out["maximum" if f.number == 7 else "minimum"] = struct.unpack(
                "<d", raw.to_bytes(8, "little")
            )[0]
        elif f.number == 19:
            out.setdefault("required", []).append(text(f))
        elif f.number == 20:
            assert isinstance(raw, bytes)
            out.setdefault("enum", []).append(any_value(raw))
        elif f.number == 21:
            assert isinstance(raw, bytes)
            (inner,) = fields(raw)
            assert isinstance(inner.value, bytes) and inner.number == 1
            out["additionalProperties"] = schema(inner.value)
        elif f.number == 22:
            assert isinstance(raw, bytes)
            (kind,) = fields(raw)
            out["type"] = text(kind)
        elif f.number == 23:
            assert isinstance(raw, bytes)
            (item,) = fields(raw)
            assert isinstance(item.value, bytes)
            out["items"] = schema(item.value)
        elif f.number == 25:
            assert isinstance(raw, bytes)
            props = dict(named(p.value) for p in fields(raw) if isinstance(p.value, bytes))
            out["properties"] = {k: schema(v) for k, v in props.items()}
        elif f.number == 31:
            assert isinstance(raw, bytes)
            key, value = named(raw)
            out[key] = any_value(value)
        else:
            raise AssertionError(f"unexpected Schema field {f.number}")
    return out


def document_fields() -> dict[int, list[WireField]]:
    by_number: dict[int, list[WireField]] = {}
    for f in fields(encode_document(openapi_v2())):
        by_number.setdefault(f.number, []).append(f)
    return by_number


def test_every_definition_reads_back_as_the_json_document() -> None:
    served = openapi_v2()
    top = document_fields()
    assert text(top[1][0]) == "2.0"
    (definitions,) = top[9]
    assert isinstance(definitions.value, bytes)
    decoded = {}
    for entry in fields(definitions.value):
        assert isinstance(entry.value, bytes)
        name, value = named(entry.value)
        decoded[name] = schema(value)
    assert decoded == served["definitions"]
    route = decoded["com.github.openshift.api.route.v1.Route"]
    assert route["x-kubernetes-group-version-kind"] == [
        {"group": "route.openshift.io", "kind": "Route", "version": "v1"}
    ]


def test_paths_operations_and_security_are_all_there() -> None:
    served = openapi_v2()
    top = document_fields()
    (paths,) = top[8]
    assert isinstance(paths.value, bytes)
    names = [named(f.value)[0] for f in fields(paths.value) if isinstance(f.value, bytes)]
    assert names == list(served["paths"])
    route_path = "/apis/route.openshift.io/v1/namespaces/{namespace}/routes/{name}"
    items = dict(named(f.value) for f in fields(paths.value) if isinstance(f.value, bytes))
    item = items[route_path]
    verbs = {f.number for f in fields(item)}
    assert {2, 3, 5, 8, 9} <= verbs  # get, put, delete, patch, the path's parameters
    (get,) = (f for f in fields(item) if f.number == 2)
    assert isinstance(get.value, bytes)
    ops = {f.number: f for f in fields(get.value)}
    assert text(ops[5]) == served["paths"][route_path]["get"]["operationId"]
    (security_definitions,) = top[13]
    assert isinstance(security_definitions.value, bytes)
    (entry,) = fields(security_definitions.value)
    assert isinstance(entry.value, bytes)
    assert named(entry.value)[0] == "BearerToken"


def test_a_key_without_a_protobuf_field_is_refused_not_dropped() -> None:
    document = openapi_v2()
    document["definitions"]["io.k8s.api.core.v1.Service"]["oneOf"] = []
    with pytest.raises(ValueError, match="no protobuf field for 'oneOf'"):
        encode_document(document)


PB = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


@pytest.mark.parametrize(
    ("accept", "answer"),
    [
        ("", JSON),
        ("*/*", JSON),
        ("application/json", JSON),
        (PB, PROTOBUF),
        ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf", PROTOBUF),
        (f"application/json;q=0.5, {PB}", PROTOBUF),
        (f"{PB};q=0.1, application/json", JSON),
        ("application/*", JSON),
        ("text/html", None),
        ("application/json;q=0", None),
        ("application/yaml, application/vnd.kubernetes.protobuf", None),
        ("text/html, */*;q=0.1", JSON),
        # hostile or broken headers: a weight that is no number takes nothing
        ("application/json;q=abc", None),
        ("application/json;q=2", None),
        (";;;,,,", None),
        ("*", None),
        ("/", None),
        ("application/" + "x" * 10_000, None),
        ("\x00application/json", None),
    ],
)  # fmt: skip
def test_negotiation(accept: str, answer: str | None) -> None:
    assert negotiate_v2(accept) == answer
