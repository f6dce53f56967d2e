"""The pure half of the proxy's health checks: who gets one, what it counts, what it says."""

from __future__ import annotations

import json

from shiftnet.api import Endpoints, Service
from shiftnet.proxy import healthcheck_model as model


def svc(**spec: object) -> Service:
    body = {"clusterIP": "127.30.0.5", "ports": [{"name": "a", "port": 80}], **spec}
    return Service.model_validate({"metadata": {"name": "web", "namespace": "ns"}, "spec": body})


def test_only_local_load_balancers_with_a_port_get_a_health_check() -> None:
    assert model.health_check_port(svc(type="LoadBalancer", externalTrafficPolicy="Local")) == 0
    local = {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}
    assert model.health_check_port(svc(**local, healthCheckNodePort=30100)) == 30100
    # written around the API: a stale port on another type or policy is not served
    stale = svc(**local, healthCheckNodePort=30100)
    stale.spec.external_traffic_policy = "Cluster"
    assert model.health_check_port(stale) == 0
    stale.spec.external_traffic_policy, stale.spec.type = "Local", "NodePort"
    assert model.health_check_port(stale) == 0


def test_local_ready_endpoints_are_distinct_ip_ports_on_this_node() -> None:
    eps = Endpoints.model_validate(
        {
            "metadata": {"name": "web", "namespace": "ns"},
            "subsets": [
                {
                    "addresses": [
                        {"ip": "10.0.0.1", "nodeName": "n1"},
                        {"ip": "10.0.0.2", "nodeName": "n2"},
                    ],
                    "notReadyAddresses": [{"ip": "10.0.0.3", "nodeName": "n1"}],
                    "ports": [{"name": "a", "port": 8080}, {"name": "b", "port": 8443}],
                },
                {
                    "addresses": [{"ip": "10.0.0.1", "nodeName": "n1"}],
                    "ports": [{"name": "a", "port": 8080}],
                },
            ],
        }
    )
    assert model.local_ready_endpoints(eps, "n1") == 2  # 10.0.0.1:8080 and :8443
    assert model.local_ready_endpoints(eps, "n2") == 2
    assert model.local_ready_endpoints(eps, None) == 0
    assert model.local_ready_endpoints(None, "n1") == 0


def test_a_mode_that_does_not_serve_local_traffic_reports_no_local_endpoint() -> None:
    """User-space never opens a Local Service's node port: its health check must not
    draw a balancer's traffic to this node, however many endpoints the node runs."""
    lb = svc(type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=30100)
    eps = Endpoints.model_validate(
        {
            "metadata": {"name": "web", "namespace": "ns"},
            "subsets": [
                {
                    "addresses": [{"ip": "10.0.0.1", "nodeName": "n1"}],
                    "ports": [{"name": "a", "port": 8080}],
                }
            ],
        }
    )
    kernel = model.target(lb, eps, "n1", serves_local_traffic=True)
    assert (kernel.port, kernel.local_endpoints) == (30100, 1)
    assert model.service_answer(kernel, proxy_healthy=True)[0] == 200
    relay = model.target(lb, eps, "n1", serves_local_traffic=False)
    assert relay == model.HealthCheckTarget("ns", "web", 30100, 0)  # still served, on its port
    status, body = model.service_answer(relay, proxy_healthy=True)
    assert status == 503
    assert json.loads(body) == {
        "service": {"namespace": "ns", "name": "web"},
        "localEndpoints": 0,
        "serviceProxyHealthy": True,
    }


def test_service_answer_is_kube_proxys_json() -> None:
    t = model.HealthCheckTarget("ns", 'we"b', 30100, 2)
    status, body = model.service_answer(t, proxy_healthy=True)
    assert status == 200
    assert json.loads(body) == {
        "service": {"namespace": "ns", "name": 'we"b'},
        "localEndpoints": 2,
        "serviceProxyHealthy": True,
    }
    assert model.service_answer(t, proxy_healthy=False)[0] == 503
    none = model.HealthCheckTarget("ns", "web", 30100, 0)
    assert model.service_answer(none, proxy_healthy=True)[0] == 503


def test_proxy_health_rule() -> None:
    assert not model.proxy_healthy(10.0, None, None, 60)  # never synced
    assert model.proxy_healthy(10.0, 5.0, None, 60)
    assert model.proxy_healthy(100.0, 5.0, 50.0, 60)  # a change waits, not too long yet
    assert not model.proxy_healthy(200.0, 5.0, 50.0, 60)


def test_http_framing() -> None:
    raw = model.http_response(503, b"{}")
    assert raw.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert b"\r\nX-Content-Type-Options: nosniff\r\n" in raw
    assert b"\r\nContent-Length: 2\r\n" in raw and raw.endswith(b"\r\n\r\n{}")
    assert model.http_response(200, b"{}", head=True).endswith(b"\r\n\r\n")
    assert model.request_line(b"GET /healthz?x=1 HTTP/1.1\r\nHost: a\r\n\r\n") == (
        "GET",
        "/healthz",
    )
    for bad in (b"\x00" * 10, b"GET /\r\n\r\n", b"G\xffT / HTTP/1.1\r\n\r\n", b"GET / SPDY\r\n"):
        assert model.request_line(bad) is None


def test_the_health_check_model_does_no_io() -> None:
    from pathlib import Path

    from tests.support.import_rules import check
    from tests.unit.test_import_rules import IO_MODULES

    src = Path(__file__).resolve().parents[3] / "src"
    io = [*IO_MODULES, "shiftnet.proxy.healthcheck"]
    assert check(src, "shiftnet", ["shiftnet.proxy.healthcheck_model"], io) == []
