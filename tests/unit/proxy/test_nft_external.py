"""nftables rendering of node ports, external IPs, LB addresses and traffic policies (pure)."""

from __future__ import annotations

import dataclasses

from shiftnet.proxy.model import Backend, ServiceEntry, ServicePortName, ServiceTable
from shiftnet.proxy.nftables import (
    NODE_PORTS_MAP,
    NftConfig,
    describe,
    render_full,
    render_update,
)

B1, B2 = Backend("10.1.0.1", 8080), Backend("10.1.0.2", 8080)


def entry(**kw: object) -> ServiceEntry:
    base = ServiceEntry(
        id=ServicePortName("default", "web", "main", "TCP"),
        cluster_ip="172.30.0.1",
        port=80,
        protocol="TCP",
        backends=(B1, B2),
        affinity=False,
        affinity_timeout=10800,
        node_port=30080,
        external_ips=("192.0.2.1",),
        load_balancer_ips=("198.51.100.7",),
        local_backends=(B1,),
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def ext_chain(d) -> tuple[str, tuple[str, ...]]:  # type: ignore[no-untyped-def]
    (found,) = [(n, r) for n, r in d.chains.items() if n.startswith("ext-")]
    return found


def test_cluster_policy_masquerades_and_reuses_the_cluster_spread() -> None:
    d = describe(entry(), NftConfig())
    name, rules = ext_chain(d)
    assert rules[1:] == (
        "jump mark-for-masquerade",
        "ip daddr set 172.30.0.1 th dport set 80 goto spread-2",
    )
    assert sorted(d.extra) == sorted(
        [
            (NODE_PORTS_MAP, f"tcp . 30080 : goto {name}"),
            ("service-ips", f"192.0.2.1 . tcp . 80 : goto {name}"),
            ("service-ips", f"198.51.100.7 . tcp . 80 : goto {name}"),
        ]
    )
    assert d.element == "172.30.0.1 . tcp . 80 : goto spread-2"


def test_local_policy_keeps_the_source_and_picks_local_endpoints() -> None:
    _, rules = ext_chain(describe(entry(external_local=True), NftConfig()))
    to_cluster = "ip daddr set 172.30.0.1 th dport set 80 goto spread-2"
    assert rules[1:] == (
        "fib saddr type local jump mark-for-masquerade",  # the node itself: cluster-wide
        f"fib saddr type local {to_cluster}",
        "meta l4proto tcp dnat ip to 10.1.0.1:8080",  # others: local, source kept
    )
    _, rules = ext_chain(
        describe(entry(external_local=True), NftConfig(cluster_cidr="10.1.0.0/16"))
    )
    assert rules[1] == f"ip saddr 10.1.0.0/16 {to_cluster}"  # pods: cluster-wide, unmarked
    # no local endpoint: external addresses are refused, the node port is not DNATed
    d = describe(entry(external_local=True, local_backends=()), NftConfig())
    assert sorted(d.extra) == [
        ("no-endpoint-services", "192.0.2.1 . tcp . 80 : goto reject-service"),
        ("no-endpoint-services", "198.51.100.7 . tcp . 80 : goto reject-service"),
    ]
    assert not [c for c in d.chains if c.startswith("ext-")]


def test_internal_policy_local_puts_only_local_endpoints_behind_the_cluster_ip() -> None:
    d = describe(entry(internal_local=True), NftConfig())
    assert d.endpoint_elements == ("172.30.0.1 . 80 . 0 : 10.1.0.1 . 8080",)
    _, rules = ext_chain(d)  # external traffic (Cluster) still reaches both
    assert rules[-2:] == (
        "numgen random mod 2 == 0 meta l4proto tcp dnat ip to 10.1.0.1:8080",
        "meta l4proto tcp dnat ip to 10.1.0.2:8080",
    )


def test_affinity_with_local_policy_is_sticky_among_local_endpoints() -> None:
    d = describe(entry(affinity=True, external_local=True), NftConfig())
    _, rules = ext_chain(d)
    assert len([r for r in rules if r.startswith("ip saddr @aff-")]) == 1
    assert rules[-1].startswith("goto sep-")
    assert rules[-1].split()[-1] in d.chains


def test_full_and_partial_renderings_carry_the_node_ports() -> None:
    table = ServiceTable({entry().id: entry()})
    text = render_full(table, NftConfig())
    assert f"map {NODE_PORTS_MAP} {{" in text and "tcp . 30080 : goto ext-" in text
    assert "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport" in text
    cfg = NftConfig()
    old, new = describe(entry(), cfg), describe(entry(node_port=30081, external_ips=()), cfg)
    script = render_update([(old, new)], cfg)
    assert f"delete element ip shiftnet-proxy {NODE_PORTS_MAP} {{ tcp . 30080 }}" in script
    assert "delete element ip shiftnet-proxy service-ips { 192.0.2.1 . tcp . 80 }" in script
    assert f"add element ip shiftnet-proxy {NODE_PORTS_MAP} {{ tcp . 30081 : goto ext-" in script
    assert "198.51.100.7" not in script  # unchanged: not touched
