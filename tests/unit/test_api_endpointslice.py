"""EndpointSlice: shape, Kubernetes' condition defaults, validation with field paths."""

from __future__ import annotations

import re
from typing import Any

import pytest

from shiftnet.api import EndpointSlice, kind_for_name, parse_object
from shiftnet.api.discovery import EndpointConditions
from shiftnet.api.validation import errors, validate
from shiftnet.errors import InvalidInput, InvalidObject


def raw(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "web-x7k2p",
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": "web"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.2"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }
    doc.update(over)
    return doc


def test_round_trip_keeps_the_kubernetes_shape() -> None:
    doc = raw()
    doc["endpoints"][0].update(
        nodeName="node-a", targetRef={"kind": "Pod", "name": "web-1", "namespace": "default"}
    )
    doc["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "u1", "controller": True}
    ]
    obj = parse_object(doc)
    assert isinstance(obj, EndpointSlice)
    assert obj.service_name == "web"
    assert obj.to_dict() == {**doc, "metadata": {**doc["metadata"], "annotations": {}}}


def test_names_users_type() -> None:
    for name in ("endpointslices", "endpointslice", "endpointslice.discovery.k8s.io"):
        assert kind_for_name(name) is EndpointSlice


def test_plain_v1_is_not_served_for_a_kubernetes_group() -> None:
    with pytest.raises(InvalidInput, match=re.escape('use "discovery.k8s.io/v1"')):
        parse_object(raw(apiVersion="v1"))


@pytest.mark.parametrize(
    ("conditions", "ready", "serving", "terminating"),
    [
        ({}, True, True, False),  # unset: ready, serving follows ready
        ({"ready": False}, False, False, False),
        ({"ready": False, "serving": True, "terminating": True}, False, True, True),
        ({"serving": False}, True, False, False),
    ],
)
def test_unset_conditions_mean_what_kubernetes_says(
    conditions: dict[str, bool], ready: bool, serving: bool, terminating: bool
) -> None:
    c = EndpointConditions.model_validate(conditions)
    assert (c.is_ready, c.is_serving, c.is_terminating) == (ready, serving, terminating)


@pytest.mark.parametrize(
    ("over", "field", "message"),
    [
        ({"addressType": ""}, "addressType", "Required value"),
        ({"addressType": "IPX"}, "addressType", 'Unsupported value: "IPX"'),
        ({"endpoints": [{"addresses": ["fd00::1"]}]}, "endpoints[0].addresses[0]", "IPv4"),
        ({"endpoints": [{"addresses": []}]}, "endpoints[0].addresses", "at least 1"),
        (
            {"endpoints": [{"addresses": ["10.0.0.1"], "nodeName": "A_b"}]},
            "endpoints[0].nodeName",
            "RFC 1123",
        ),
        ({"ports": [{"name": "a", "port": 70000}]}, "ports[0].port", "between 1 and 65535"),
        ({"ports": [{"name": "a", "port": 1, "protocol": "ICMP"}]}, "ports[0].protocol", "ICMP"),
        (
            {"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
            "ports[1].name",
            "Duplicate",
        ),
    ],
)
def test_bad_slices_name_the_field(over: dict[str, Any], field: str, message: str) -> None:
    obj = parse_object(raw(**over))
    found = errors(obj)
    assert found and found[0].field == field
    with pytest.raises(InvalidObject, match=message) as err:
        validate(obj)
    assert str(err.value).startswith('EndpointSlice "web-x7k2p" is invalid: ' + field)


def test_more_than_1000_endpoints_is_too_many() -> None:
    many = [{"addresses": [f"10.0.{i // 250}.{i % 250 + 1}"]} for i in range(1001)]
    assert [e.field for e in errors(parse_object(raw(endpoints=many)))] == ["endpoints"]
