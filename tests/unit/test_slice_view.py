"""A Service's slices as one Endpoints view; kube-proxy's terminating fallback."""

from __future__ import annotations

from typing import Any

from shiftnet.api import EndpointSlice
from shiftnet.api.slice_view import endpoints_from_slices


def es(
    name: str, endpoints: list[dict[str, Any]], ports: list[dict[str, Any]], family: str = "IPv4"
) -> EndpointSlice:
    return EndpointSlice.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": {"kubernetes.io/service-name": "web"},
            },
            "addressType": family,
            "endpoints": endpoints,
            "ports": ports,
        }
    )


def ep(ip: str, ready: bool, serving: bool, terminating: bool) -> dict[str, Any]:
    return {
        "addresses": [ip],
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "nodeName": "node-a",
        "targetRef": {"kind": "Pod", "namespace": "default", "name": f"pod-{ip}"},
    }


HTTP = [{"name": "http", "port": 8080, "protocol": "TCP"}]


def summary(
    slices: list[EndpointSlice], fallback: bool
) -> list[tuple[list[str], list[str], list[int]]]:
    view = endpoints_from_slices("default", "web", slices, terminating_fallback=fallback)
    assert (view.name, view.namespace) == ("web", "default")
    return [
        (
            [a.ip for a in s.addresses],
            [a.ip for a in s.not_ready_addresses],
            [p.port for p in s.ports],
        )
        for s in view.subsets
    ]


def test_ready_endpoints_are_addresses_of_every_slice() -> None:
    slices = [
        es("web-b", [ep("10.0.0.3", True, True, False)], HTTP),
        es("web-a", [ep("10.0.0.1", True, True, False), ep("10.0.0.2", False, False, False)], HTTP),
    ]
    assert summary(slices, fallback=False) == [
        (["10.0.0.1"], ["10.0.0.2"], [8080]),
        (["10.0.0.3"], [], [8080]),
    ]
    view = endpoints_from_slices("default", "web", slices)
    first = view.subsets[0].addresses[0]
    assert first.node_name == "node-a" and first.target_ref is not None
    assert first.target_ref.name == "pod-10.0.0.1"


def test_terminating_serving_endpoints_serve_only_when_nothing_is_ready() -> None:
    going = es(
        "web-a", [ep("10.0.0.1", False, True, True), ep("10.0.0.2", False, False, True)], HTTP
    )
    assert summary([going], fallback=False) == [([], ["10.0.0.1", "10.0.0.2"], [8080])]
    # kube-proxy: no ready endpoint -> the serving, terminating ones
    assert summary([going], fallback=True) == [(["10.0.0.1"], ["10.0.0.2"], [8080])]
    fresh = es("web-b", [ep("10.0.0.9", True, True, False)], HTTP)
    assert summary([going, fresh], fallback=True) == [
        ([], ["10.0.0.1", "10.0.0.2"], [8080]),
        (["10.0.0.9"], [], [8080]),
    ]


def test_fallback_is_decided_per_port_name() -> None:
    metrics = [{"name": "metrics", "port": 9100, "protocol": "TCP"}]
    slices = [
        es("web-a", [ep("10.0.0.1", True, True, False)], HTTP),
        es("web-b", [ep("10.0.0.2", False, True, True)], metrics),
    ]
    assert summary(slices, fallback=True) == [
        (["10.0.0.1"], [], [8080]),
        (["10.0.0.2"], [], [9100]),
    ]


def test_fqdn_slices_and_unnumbered_ports_are_left_out() -> None:
    slices = [
        es("web-a", [{"addresses": ["db.example.com"]}], HTTP, family="FQDN"),
        es("web-b", [ep("fd00::1", True, True, False)], [{"name": "x"}, *HTTP], family="IPv6"),
    ]
    assert summary(slices, fallback=False) == [(["fd00::1"], [], [8080])]


def test_unset_conditions_are_ready() -> None:
    bare = es("web-a", [{"addresses": ["10.0.0.1"]}], HTTP)
    assert summary([bare], fallback=True) == [(["10.0.0.1"], [], [8080])]
