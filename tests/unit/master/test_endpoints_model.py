"""The pure endpoints model: selection, readiness, port resolution, determinism."""

from __future__ import annotations

import random

from tests.support.master import pod, service

from shiftnet.master.endpoints_model import (
    desired_endpoints,
    has_selector,
    resolve_port,
    same_content,
    selects,
)

WEB = [{"name": "web", "containerPort": 8080}]


def summary(ep):  # type: ignore[no-untyped-def]
    return [
        (
            [a.ip for a in s.addresses],
            [a.ip for a in s.not_ready_addresses],
            [(p.name, p.port, p.protocol) for p in s.ports],
        )
        for s in ep.subsets
    ]


def test_ready_and_not_ready_and_ineligible_pods() -> None:
    svc = service(
        "web", selector={"app": "web"}, ports=[{"name": "http", "port": 80, "targetPort": "web"}]
    )
    pods = [
        pod("a", "127.10.0.10", labels={"app": "web"}, ports=WEB),
        pod("b", "127.10.0.9", labels={"app": "web"}, ports=WEB, ready=False),
        pod("no-ip", None, labels={"app": "web"}, ports=WEB),
        pod("done", "127.10.0.3", labels={"app": "web"}, ports=WEB, phase="Succeeded"),
        pod("other-app", "127.10.0.4", labels={"app": "db"}, ports=WEB),
        pod("other-ns", "127.10.0.5", ns="x", labels={"app": "web"}, ports=WEB),
    ]
    ep = desired_endpoints(svc, pods)
    assert summary(ep) == [(["127.10.0.10"], ["127.10.0.9"], [("http", 8080, "TCP")])]
    addr = ep.subsets[0].addresses[0]
    assert addr.target_ref is not None
    assert (addr.target_ref.kind, addr.target_ref.name, addr.node_name) == ("Pod", "a", "node-a")
    assert (ep.name, ep.namespace) == ("web", "default")
    assert ep.metadata.annotations == {"shiftnet.io/managed-by": "endpoints-controller"}


def test_publish_not_ready_addresses_puts_everyone_under_addresses() -> None:
    svc = service("web", selector={"app": "web"}, publishNotReadyAddresses=True)
    pods = [pod("b", "127.10.0.3", labels={"app": "web"}, ready=False)]
    assert summary(desired_endpoints(svc, pods)) == [(["127.10.0.3"], [], [(None, 80, "TCP")])]


def test_named_port_missing_on_some_pods_splits_subsets() -> None:
    svc = service(
        "m",
        selector={"app": "m"},
        ports=[
            {"name": "a", "port": 80, "targetPort": 9000},
            {"name": "b", "port": 81, "targetPort": "metrics"},
        ],
    )
    pods = [
        pod(
            "m1",
            "127.10.0.2",
            labels={"app": "m"},
            ports=[{"name": "metrics", "containerPort": 9100}],
        ),
        pod("m2", "127.10.0.3", labels={"app": "m"}),
        pod(
            "m3",
            "127.10.0.4",
            labels={"app": "m"},
            ports=[{"name": "metrics", "containerPort": 9100, "protocol": "UDP"}],
        ),
    ]
    assert summary(desired_endpoints(svc, pods)) == [
        (["127.10.0.3", "127.10.0.4"], [], [("a", 9000, "TCP")]),
        (["127.10.0.2"], [], [("a", 9000, "TCP"), ("b", 9100, "TCP")]),
    ]


def test_pod_with_none_of_the_named_ports_is_left_out() -> None:
    svc = service("s", selector={"app": "s"}, ports=[{"port": 80, "targetPort": "web"}])
    assert desired_endpoints(svc, [pod("p", "127.10.0.2", labels={"app": "s"})]).subsets == []


def test_resolve_port() -> None:
    p = pod("p", "127.10.0.2", ports=WEB)
    assert resolve_port(p, 81, "TCP") == 81
    assert resolve_port(p, "8443", "TCP") == 8443
    assert resolve_port(p, "web", "TCP") == 8080
    assert resolve_port(p, "web", "UDP") is None
    assert resolve_port(p, "nope", "TCP") is None
    assert resolve_port(p, "\u00b2", "TCP") is None  # str.isdigit's digit, not a number
    assert resolve_port(p, "\u0668\u0660\u0668\u0660", "TCP") is None  # 8080, Arabic-Indic


def test_hostname_only_when_subdomain_is_the_service() -> None:
    svc = service("db", selector={"app": "db"}, cluster_ip="None")
    pods = [
        pod("db-0", "127.10.0.2", labels={"app": "db"}, hostname="db-0", subdomain="db"),
        pod("db-1", "127.10.0.3", labels={"app": "db"}, hostname="db-1", subdomain="other"),
    ]
    addrs = desired_endpoints(svc, pods).subsets[0].addresses
    assert [(a.ip, a.hostname) for a in addrs] == [("127.10.0.2", "db-0"), ("127.10.0.3", None)]


def test_selectorless_service_selects_nothing() -> None:
    svc = service("ext")
    assert not has_selector(svc)
    assert not selects(svc, pod("p", "127.10.0.2"))
    empty = service("e", selector={})
    assert not has_selector(empty)


def test_output_is_byte_identical_whatever_the_input_order() -> None:
    svc = service("web", selector={"app": "web"}, ports=[{"port": 80, "targetPort": "web"}])
    pods = [
        pod(f"p{i}", f"127.10.{i % 3}.{i}", labels={"app": "web"}, ports=WEB, ready=i % 2 == 0)
        for i in range(2, 40)
    ]
    first = desired_endpoints(svc, pods)
    for seed in range(5):
        shuffled = list(pods)
        random.Random(seed).shuffle(shuffled)
        again = desired_endpoints(svc, shuffled)
        assert again.to_dict() == first.to_dict()
        assert same_content(again, first)
    ips = [a.ip for a in first.subsets[0].addresses]
    assert ips == sorted(ips, key=lambda ip: tuple(int(x) for x in ip.split(".")))
    assert ips[:2] == ["127.10.0.6", "127.10.0.12"]  # numeric, not string order
