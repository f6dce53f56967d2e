"""describe text: a Service as kubectl shows it (labels and their order)."""

from __future__ import annotations

import datetime as dt

from shiftnet.api import Endpoints, Service, parse_object
from shiftnet.cli.describers import describe_service

NOW = dt.datetime(2026, 1, 2, 0, 0, 0, tzinfo=dt.UTC)


def service(spec: dict[str, object], status: dict[str, object] | None = None) -> Service:
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "shop", "namespace": "demo"},
            "spec": {"selector": {"app": "shop"}, **spec},
            "status": status or {},
        }
    )
    assert isinstance(obj, Service)
    return obj


def endpoints() -> Endpoints:
    return Endpoints.model_validate(
        {
            "metadata": {"name": "shop", "namespace": "demo"},
            "subsets": [{"addresses": [{"ip": "10.128.0.5"}], "ports": [{"port": 8080}]}],
        }
    )


def rows(lines: list[str]) -> dict[str, str]:
    """``Label: value`` lines as a mapping (one-line values only)."""
    return dict((label, value.strip()) for label, value in (line.split(":", 1) for line in lines))


def test_a_local_load_balancer_shows_its_policies_ingress_and_health_check_port() -> None:
    svc = service(
        {
            "type": "LoadBalancer",
            "clusterIP": "172.30.0.10",
            "clusterIPs": ["172.30.0.10"],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "loadBalancerIP": "127.190.0.4",
            "ports": [{"name": "web", "port": 80, "targetPort": 8080, "nodePort": 30080}],
            "externalTrafficPolicy": "Local",
            "internalTrafficPolicy": "Cluster",
            "healthCheckNodePort": 30081,
        },
        {"loadBalancer": {"ingress": [{"ip": "127.190.0.4", "ipMode": "VIP"}]}},
    )
    assert describe_service(svc, endpoints(), NOW) == [
        "Name:                    shop",
        "Namespace:               demo",
        "Labels:                  <none>",
        "Annotations:             <none>",
        "Selector:                app=shop",
        "Type:                    LoadBalancer",
        "IP Family Policy:        SingleStack",
        "IP Families:             IPv4",
        "IP:                      172.30.0.10",
        "IPs:                     172.30.0.10",
        "Desired LoadBalancer IP: 127.190.0.4",
        "LoadBalancer Ingress:    127.190.0.4 (VIP)",
        "Port:                    web  80/TCP",
        "TargetPort:              8080/TCP",
        "NodePort:                web  30080/TCP",
        "Endpoints:               10.128.0.5:8080",
        "Session Affinity:        None",
        "External Traffic Policy: Local",
        "Internal Traffic Policy: Cluster",
        "HealthCheck NodePort:    30081",
    ]


def test_a_plain_service_leaves_out_what_it_does_not_have() -> None:
    shown = rows(describe_service(service({"ports": [{"port": 80}]}), None, NOW))
    for absent in (
        "IP Family Policy",
        "Desired LoadBalancer IP",
        "LoadBalancer Ingress",
        "External Traffic Policy",
        "Internal Traffic Policy",
        "HealthCheck NodePort",
    ):
        assert absent not in shown
    assert shown["IP Families"] == shown["IPs"] == "<none>"


def test_load_balancer_ingress_shows_hostnames_and_every_point() -> None:
    svc = service(
        {"type": "LoadBalancer", "ports": [{"port": 80}]},
        {"loadBalancer": {"ingress": [{"ip": "127.190.0.4"}, {"hostname": "lb.example.com"}]}},
    )
    shown = rows(describe_service(svc, None, NOW))
    assert shown["LoadBalancer Ingress"] == "127.190.0.4, lb.example.com"
