"""The get tables and ages, as kubectl and oc print them."""

from __future__ import annotations

import datetime as dt

import pytest

from shiftnet.api import Endpoints, Route, Service, parse_object
from shiftnet.cli.printing import format_table, human_duration
from shiftnet.cli.tables import (
    endpoint_list,
    render_table,
    route_host_column,
    route_services_column,
    route_termination_column,
)

NOW = dt.datetime(2026, 1, 2, 0, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-0.5, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 10 * 60, "5h10m"),
        (20 * 3600, "20h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (30 * 86400, "30d"),
        (800 * 86400, "2y70d"),
        (10 * 365 * 86400, "10y"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_format_table_pads_three_spaces_and_strips_trailing_blanks() -> None:
    out = format_table(("NAME", "PATH", "X"), [("a", "", "1"), ("longer", "/p", "")])
    assert out == "NAME     PATH   X\na               1\nlonger   /p\n"


def route(**spec: object) -> Route:
    raw = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"host": "www.example.com", "to": {"kind": "Service", "name": "web"}, **spec},
    }
    obj = parse_object(raw)
    assert isinstance(obj, Route)
    return obj


def with_ingress(r: Route, *entries: tuple[str, str, str | None]) -> Route:
    raw = r.to_dict()
    raw["status"] = {
        "ingress": [
            {
                "host": r.spec.host,
                "routerName": name,
                "conditions": [{"type": "Admitted", "status": status, "reason": reason}],
            }
            for name, status, reason in entries
        ]
    }
    return Route.model_validate(raw)


def test_host_column_follows_router_admission() -> None:
    r = route()
    assert route_host_column(r) == "www.example.com"  # no router reported yet
    assert route_host_column(with_ingress(r, ("a", "True", None))) == "www.example.com"
    assert (
        route_host_column(with_ingress(r, ("a", "False", "HostAlreadyClaimed")))
        == "HostAlreadyClaimed"
    )
    mixed = with_ingress(r, ("a", "True", None), ("b", "False", "HostAlreadyClaimed"))
    assert route_host_column(mixed) == "www.example.com ... 1 rejected"
    two = with_ingress(r, ("a", "True", None), ("b", "True", None))
    assert route_host_column(two) == "www.example.com ... 1 more"
    assert route_host_column(with_ingress(r, ("a", "Unknown", None))) == "Pending"


def test_services_column_shows_shares_only_with_alternates() -> None:
    assert route_services_column(route()) == "web"
    alt = route(
        to={"kind": "Service", "name": "a", "weight": 75},
        alternateBackends=[{"kind": "Service", "name": "b", "weight": 25}],
    )
    assert route_services_column(alt) == "a(75%),b(25%)"
    zero = route(
        to={"kind": "Service", "name": "a", "weight": 0},
        alternateBackends=[{"kind": "Service", "name": "b", "weight": 0}],
    )
    assert route_services_column(zero) == "a(0%),b(0%)"


def test_termination_column() -> None:
    assert route_termination_column(route()) == ""
    assert route_termination_column(route(tls={"termination": "passthrough"})) == "passthrough"
    edge = route(tls={"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"})
    assert route_termination_column(edge) == "edge/Redirect"
    none = route(tls={"termination": "edge", "insecureEdgeTerminationPolicy": "None"})
    assert route_termination_column(none) == "edge"


def test_routes_table_as_oc() -> None:
    r = route(path="/api", port={"targetPort": "web"}, tls={"termination": "edge"})
    lines = render_table(Route, [r], NOW, with_namespace=True).splitlines()
    assert lines[0].split() == [
        "NAMESPACE",
        "NAME",
        "HOST/PORT",
        "PATH",
        "SERVICES",
        "PORT",
        "TERMINATION",
        "WILDCARD",
    ]
    assert lines[1].split() == [
        "default",
        "web",
        "www.example.com",
        "/api",
        "web",
        "web",
        "edge",
        "None",
    ]


def test_endpoints_list_truncates_after_three() -> None:
    ep = Endpoints.model_validate(
        {
            "metadata": {"name": "web"},
            "subsets": [
                {
                    "addresses": [{"ip": f"127.10.0.{i}"} for i in range(1, 6)],
                    "notReadyAddresses": [{"ip": "127.10.0.9"}],
                    "ports": [{"port": 8080}],
                }
            ],
        }
    )
    assert endpoint_list(ep) == "127.10.0.1:8080,127.10.0.2:8080,127.10.0.3:8080 + 2 more..."
    assert endpoint_list(Endpoints.model_validate({"metadata": {"name": "x"}})) == "<none>"


def test_services_table_ports_and_pending_cluster_ip() -> None:
    svc = Service.model_validate(
        {
            "metadata": {"name": "web", "creationTimestamp": "2026-01-01T23:59:00Z"},
            "spec": {
                "ports": [{"port": 80}, {"port": 443, "nodePort": 30443}],
                "selector": {"app": "web"},
            },
        }
    )
    lines = render_table(Service, [svc], NOW, wide=True).splitlines()
    assert lines[0].split() == [
        "NAME",
        "TYPE",
        "CLUSTER-IP",
        "EXTERNAL-IP",
        "PORT(S)",
        "AGE",
        "SELECTOR",
    ]
    assert lines[1].split() == [
        "web",
        "ClusterIP",
        "<pending>",
        "<none>",
        "80/TCP,443:30443/TCP",
        "60s",
        "app=web",
    ]
