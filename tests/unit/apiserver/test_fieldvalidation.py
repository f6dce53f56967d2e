"""Field validation and body decoding without a server: unknown and duplicate fields."""

from __future__ import annotations

import pytest

from shiftnet.api import Route, Service
from shiftnet.apiserver.bodies import decode
from shiftnet.apiserver.fieldvalidation import (
    FieldCheck,
    drop_unknown,
    parse_directive,
    warning_header,
)
from shiftnet.apiserver.resources import find
from shiftnet.apiserver.status import StatusError

ROUTE = {
    "apiVersion": "route.openshift.io/v1",
    "kind": "Route",
    "metadata": {"name": "r", "colour": "x"},
    "spec": {
        "to": {"kind": "Service", "name": "s", "shade": 1},
        "tls": {"termination": "edge", "extra": {"deeper": True}},
    },
}


def test_unknown_fields_are_found_at_every_depth_and_dropped() -> None:
    cleaned, found = drop_unknown(Route, ROUTE)
    assert sorted(found) == ["metadata.colour", "spec.tls.extra", "spec.to.shade"]
    assert cleaned["spec"]["tls"] == {"termination": "edge"}
    assert "colour" in ROUTE["metadata"]  # the input is left alone
    Route.model_validate(cleaned)


def test_unknown_fields_in_list_items_carry_their_index() -> None:
    svc = {"kind": "Service", "spec": {"ports": [{"port": 80}, {"port": 81, "nmae": "b"}]}}
    cleaned, found = drop_unknown(Service, svc)
    assert found == ["spec.ports[1].nmae"]
    assert cleaned["spec"]["ports"][1] == {"port": 81}


def test_directive_default_is_warn_and_others_are_refused() -> None:
    assert parse_directive([]) == "Warn"
    assert parse_directive([""]) == "Warn"
    assert parse_directive(["Strict"]) == "Strict"
    with pytest.raises(StatusError, match='Unsupported value: "strict"'):
        parse_directive(["strict"])  # upstream's values are case-sensitive


def test_warn_collects_each_field_once_and_ignore_none() -> None:
    info = find("route.openshift.io", "v1", "routes")
    assert info is not None
    warn = FieldCheck("Warn", ("spec.host",))
    warn.report(info, ["spec.x"])
    warn.report(info, ["spec.x"])  # a retried patch
    assert warn.warnings == ['duplicate field "spec.host"', 'unknown field "spec.x"']
    ignore = FieldCheck("Ignore", ("spec.host",))
    ignore.report(info, ["spec.x"])
    assert ignore.warnings == []
    with pytest.raises(StatusError) as err:
        FieldCheck("Strict").report(info, ["spec.x", "spec.y"])
    assert err.value.code == 400
    assert err.value.message.endswith(
        'strict decoding error: unknown field "spec.x", unknown field "spec.y"'
    )


def test_a_warning_header_cannot_be_split_by_a_field_name() -> None:
    value = warning_header('unknown field "a\r\nSet-Cookie: x\u00e9"')
    assert value.startswith('299 - "') and "\r" not in value and "\n" not in value
    assert value.isascii()


@pytest.mark.parametrize(
    ("raw", "kind", "duplicates"),
    [
        (b'{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}', "application/json", ("b.c", "a")),
        (b'[{"x": 1, "x": 1}]', "application/merge-patch+json", ("[0].x",)),
        (b"a: 1\nb: {c: 1, c: 2}\na: 3\n", "application/yaml", ("a", "b.c")),
        (b"l: [{x: 1}, {x: 1, x: 2}]\n", "application/yaml", ("l[1].x",)),
    ],
)
def test_duplicate_keys_keep_the_last_value_and_are_named(
    raw: bytes, kind: str, duplicates: tuple[str, ...]
) -> None:
    body = decode(raw, kind)
    assert sorted(body.duplicates) == sorted(duplicates)
    if isinstance(body.doc, dict) and "a" in body.doc:
        assert body.doc["a"] == 3
    assert type(body.doc) in (dict, list)  # plain containers reach the verbs
