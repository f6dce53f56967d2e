"""Answers follow Service and Endpoints changes written through the Client within a second."""

from __future__ import annotations

import dns.rcode
import pytest
from tests.support.dns import endpoints, headless, service
from tests.support.dns_cluster import Cluster

from shiftnet.api import Endpoints, Service

pytestmark = pytest.mark.integration

NAME = "api.default.svc.cluster.local"


def ips(m) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(rd.to_text() for rr in m.answer for rd in rr)


async def test_service_create_and_delete(cluster: Cluster) -> None:
    assert (await cluster.ask(NAME)).rcode() == dns.rcode.NXDOMAIN
    await cluster.client.create(service("api", cluster_ip="127.30.0.20", ports=[{"port": 80}]))
    await cluster.until(NAME, "A", lambda m: ips(m) == ["127.30.0.20"])
    await cluster.client.delete(Service, "default", "api")
    await cluster.until(NAME, "A", lambda m: m.rcode() == dns.rcode.NXDOMAIN)


async def test_endpoints_changes_move_headless_answers(cluster: Cluster) -> None:
    await cluster.client.create(headless("api", ports=[{"name": "http", "port": 80}]))
    await cluster.until(NAME, "A", lambda m: m.rcode() == dns.rcode.NXDOMAIN)  # no endpoints yet

    await cluster.client.create(endpoints("api", addresses=[{"ip": "127.10.0.2"}]))
    await cluster.until(NAME, "A", lambda m: ips(m) == ["127.10.0.2"])

    def add(ep: Endpoints) -> Endpoints:
        ep.subsets[0].addresses.append(
            type(ep.subsets[0].addresses[0])(ip="127.10.0.3", hostname="api-1")
        )
        return ep

    await cluster.client.mutate(Endpoints, "default", "api", add)
    await cluster.until(NAME, "A", lambda m: ips(m) == ["127.10.0.2", "127.10.0.3"])
    await cluster.until(f"api-1.{NAME}", "A", lambda m: ips(m) == ["127.10.0.3"])

    def not_ready(ep: Endpoints) -> Endpoints:
        subset = ep.subsets[0]
        subset.not_ready_addresses = [a for a in subset.addresses if a.ip == "127.10.0.2"]
        subset.addresses = [a for a in subset.addresses if a.ip != "127.10.0.2"]
        return ep

    await cluster.client.mutate(Endpoints, "default", "api", not_ready)
    await cluster.until(NAME, "A", lambda m: ips(m) == ["127.10.0.3"])

    await cluster.client.delete(Endpoints, "default", "api")
    await cluster.until(NAME, "A", lambda m: m.rcode() == dns.rcode.NXDOMAIN)
    await cluster.until(f"api-1.{NAME}", "A", lambda m: m.rcode() == dns.rcode.NXDOMAIN)


async def test_service_port_rename_moves_srv(cluster: Cluster) -> None:
    await cluster.client.create(
        service("api", cluster_ip="127.30.0.21", ports=[{"name": "http", "port": 80}])
    )
    await cluster.until(f"_http._tcp.{NAME}", "SRV", lambda m: bool(m.answer), within=5)

    def rename(svc: Service) -> Service:
        svc.spec.ports[0].name = "web"
        return svc

    await cluster.client.mutate(Service, "default", "api", rename)
    await cluster.until(f"_web._tcp.{NAME}", "SRV", lambda m: bool(m.answer))
    await cluster.until(f"_http._tcp.{NAME}", "SRV", lambda m: m.rcode() == dns.rcode.NXDOMAIN)


async def test_a_burst_of_changes_is_one_rebuild_not_hundreds(cluster: Cluster) -> None:
    builds = cluster.server.stats["zone_builds"]
    for i in range(50):
        await cluster.client.create(
            service(f"s{i}", cluster_ip=f"127.30.5.{i + 1}", ports=[{"port": 80}])
        )
    await cluster.until("s49.default.svc.cluster.local", "A", lambda m: bool(m.answer), within=5)
    assert cluster.server.stats["zone_builds"] - builds < 50
