"""describe text: the Route as oc shows it, with per-router admission lines."""

from __future__ import annotations

import datetime as dt

from shiftnet.api import Endpoints, Route, parse_object
from shiftnet.cli.describers import Block, describe_route, route_endpoints

NOW = dt.datetime(2026, 1, 2, 0, 0, 0, tzinfo=dt.UTC)


def route(**spec: object) -> Route:
    obj = parse_object(
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"b": "2", "a": "1"}},
            "spec": {"host": "shop.example.com", "to": {"kind": "Service", "name": "web"}, **spec},
        }
    )
    assert isinstance(obj, Route)
    return obj


def endpoints(
    name: str, *ports: tuple[str, int], ips: tuple[str, ...] = ("127.10.0.2", "127.10.0.3")
) -> Endpoints:
    return Endpoints.model_validate(
        {
            "metadata": {"name": name, "namespace": "shop"},
            "subsets": [
                {
                    "addresses": [{"ip": ip} for ip in ips],
                    "ports": [{"name": n, "port": p} for n, p in ports],
                }
            ],
        }
    )


def test_block_aligns_values_and_continues_lists() -> None:
    lines = Block().add("Name", "x").add("Labels", ["a=1", "b=2"]).add("Long Label", "v").lines()
    assert lines == ["Name:       x", "Labels:     a=1", "            b=2", "Long Label: v"]


def test_route_endpoints_follow_the_target_port() -> None:
    ep = endpoints("web", ("http", 8080), ("metrics", 9090))
    assert route_endpoints(route(), ep) == (
        "127.10.0.2:8080, 127.10.0.3:8080, 127.10.0.2:9090, 127.10.0.3:9090"
    )
    assert (
        route_endpoints(route(port={"targetPort": "metrics"}), ep)
        == "127.10.0.2:9090, 127.10.0.3:9090"
    )
    assert (
        route_endpoints(route(port={"targetPort": 8080}), ep) == "127.10.0.2:8080, 127.10.0.3:8080"
    )
    assert route_endpoints(route(port={"targetPort": "nope"}), ep) == "<none>"
    assert route_endpoints(route(), None) == "<none>"


def test_describe_route_with_alternates_and_router_verdicts() -> None:
    r = route(
        to={"kind": "Service", "name": "web", "weight": 3},
        alternateBackends=[{"kind": "Service", "name": "canary", "weight": 1}],
        tls={"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"},
    )
    raw = r.to_dict()
    raw["status"] = {
        "ingress": [
            {
                "host": "shop.example.com",
                "routerName": "default",
                "conditions": [
                    {
                        "type": "Admitted",
                        "status": "True",
                        "lastTransitionTime": "2026-01-01T23:00:00Z",
                    }
                ],
            },
            {
                "host": "shop.example.com",
                "routerName": "shard-b",
                "conditions": [
                    {
                        "type": "Admitted",
                        "status": "False",
                        "reason": "HostAlreadyClaimed",
                        "message": "route other already exposes shop.example.com and is older",
                        "lastTransitionTime": "2026-01-01T23:59:30Z",
                    }
                ],
            },
        ]
    }
    r = Route.model_validate(raw)
    eps = {"web": endpoints("web", ("http", 8080)), "canary": None}
    text = "\n".join(describe_route(r, eps, NOW))
    assert text == (
        "Name:            web\n"
        "Namespace:       shop\n"
        "Labels:          a=1\n"
        "                 b=2\n"
        "Annotations:     <none>\n"
        "Requested Host:  shop.example.com\n"
        "                   exposed on router default 60m ago\n"
        "                   rejected by router shard-b: HostAlreadyClaimed (30s ago)\n"
        "                     route other already exposes shop.example.com and is older\n"
        "Path:            <none>\n"
        "TLS Termination: edge\n"
        "Insecure Policy: Redirect\n"
        "Endpoint Port:   <all endpoint ports>\n"
        "\n"
        "Service:   web\n"
        "Weight:    3 (75%)\n"
        "Endpoints: 127.10.0.2:8080, 127.10.0.3:8080\n"
        "\n"
        "Service:   canary\n"
        "Weight:    1 (25%)\n"
        "Endpoints: <none>"
    )
