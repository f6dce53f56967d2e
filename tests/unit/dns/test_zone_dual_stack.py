"""A dual-stack Service (``spec.clusterIPs`` of both families) is named by A and AAAA."""

from __future__ import annotations

import dns.name
import dns.rcode
import dns.rdatatype as T
from tests.support.dns import service

from shiftnet.dns.zone import ZoneConfig, build_zone, reverse_name

N = dns.name.from_text
NAME = "web.default.svc.cluster.local."


def _zone(*svcs):  # type: ignore[no-untyped-def]
    return build_zone(list(svcs), [], ZoneConfig(), serial=1)


def _answer(z, name: str, rdtype: int) -> list[str]:  # type: ignore[no-untyped-def]
    res = z.resolve(N(name), rdtype)
    assert res is not None and res.rcode == dns.rcode.NOERROR
    return sorted(rd.to_text() for rr in res.answer for rd in rr)


DUAL = service(
    "web",
    cluster_ip="172.30.0.10",
    clusterIPs=["172.30.0.10", "fd00:30::a"],
    ipFamilies=["IPv4", "IPv6"],
    ipFamilyPolicy="PreferDualStack",
    ports=[{"name": "http", "port": 80}],
)


def test_dual_stack_service_answers_a_and_aaaa() -> None:
    z = _zone(DUAL)
    assert _answer(z, NAME, T.A) == ["172.30.0.10"]
    assert _answer(z, NAME, T.AAAA) == ["fd00:30::a"]
    # CoreDNS counts one SRV per ClusterIP (weight 100/2), then merges the equal ones
    assert _answer(z, "_http._tcp." + NAME, T.SRV) == [f"0 50 80 {NAME}"]


def test_both_cluster_ips_have_a_ptr() -> None:
    z = _zone(DUAL)
    for ip in ("172.30.0.10", "fd00:30::a"):
        assert _answer(z, reverse_name(ip), T.PTR) == [NAME]


def test_ipv6_primary_first_family_order_does_not_matter() -> None:
    z = _zone(
        service(
            "web",
            cluster_ip="fd00:30::a",
            clusterIPs=["fd00:30::a", "172.30.0.10"],
            ipFamilies=["IPv6", "IPv4"],
            ipFamilyPolicy="RequireDualStack",
        )
    )
    assert _answer(z, NAME, T.A) == ["172.30.0.10"]
    assert _answer(z, NAME, T.AAAA) == ["fd00:30::a"]


def test_single_stack_clusterip_only_service_is_unchanged() -> None:
    z = _zone(service("web", cluster_ip="172.30.0.10"))
    assert _answer(z, NAME, T.A) == ["172.30.0.10"]
    res = z.resolve(N(NAME), T.AAAA)
    assert res is not None and res.rcode == dns.rcode.NOERROR and res.answer == ()


def test_a_bad_second_cluster_ip_is_reported_and_the_first_still_answers() -> None:
    bad = service("web", cluster_ip="172.30.0.10", clusterIPs=["172.30.0.10", "nope"])
    z = _zone(bad)
    assert _answer(z, NAME, T.A) == ["172.30.0.10"]
    assert [p.reason for p in z.problems] == ["spec.clusterIPs 'nope' is not an IP"]
