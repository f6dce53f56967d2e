"""Which UDP conntrack entries the kernel modes delete (the pure choice)."""

from __future__ import annotations

from dataclasses import replace

from shiftnet.proxy.conntrack import (
    FAILURES,
    ConntrackCleaner,
    Flow,
    stale_flows,
    udp_addresses,
    worth_cleaning,
)
from shiftnet.proxy.model import Backend, ServiceEntry, ServicePortName, ServiceTable, TableDiff


def entry(
    name: str, vip: str, port: int, backends: list[str], protocol: str = "UDP"
) -> ServiceEntry:
    return ServiceEntry(
        id=ServicePortName("default", name, "", protocol),
        cluster_ip=vip,
        port=port,
        protocol=protocol,
        backends=tuple(Backend(ip, 5353) for ip in backends),
        affinity=False,
        affinity_timeout=10800,
    )


def table(*entries: ServiceEntry) -> ServiceTable:
    return ServiceTable(entries={e.id: e for e in entries})


def flow(dst: str, dport: int, reply: str, rport: int = 5353, sport: int = 40000) -> Flow:
    return Flow("10.200.0.2", sport, dst, dport, reply, rport)


DNS = entry("dns", "172.30.0.53", 53, ["10.201.2.2"])


def test_flow_to_a_removed_endpoint_is_stale() -> None:
    gone = flow("172.30.0.53", 53, "10.201.1.2")
    kept = flow("172.30.0.53", 53, "10.201.2.2", sport=40001)
    assert stale_flows(table(DNS), [gone, kept]) == [gone]


def test_flow_made_before_the_service_had_endpoints_is_stale() -> None:
    # not NATed: the reply comes from the ClusterIP itself
    early = flow("172.30.0.53", 53, "172.30.0.53", 53)
    assert stale_flows(table(DNS), [early]) == [early]


def test_endpoint_port_counts() -> None:
    old_port = flow("172.30.0.53", 53, "10.201.2.2", rport=5300)
    assert stale_flows(table(DNS), [old_port]) == [old_port]


def test_other_traffic_is_left_alone() -> None:
    other_port = flow("172.30.0.53", 54, "10.201.1.2")
    other_ip = flow("172.30.0.54", 53, "10.201.1.2")
    tcp = entry("web", "172.30.0.80", 80, ["10.201.2.2"], protocol="TCP")
    to_tcp_vip = flow("172.30.0.80", 80, "10.201.1.2")
    assert stale_flows(table(DNS, tcp), [other_port, other_ip, to_tcp_vip]) == []


def test_flows_to_a_removed_udp_service_are_stale() -> None:
    old = entry("old", "172.30.0.99", 53, ["10.201.1.2"])
    f = flow("172.30.0.99", 53, "10.201.1.2")
    assert stale_flows(table(DNS), [f], removed=[old]) == [f]
    # the address:port now belongs to another service: judged by that one
    reused = entry("new", "172.30.0.99", 53, ["10.201.1.2"])
    assert stale_flows(table(DNS, reused), [f], removed=[old]) == []


def test_empty_service_stales_every_flow_to_it() -> None:
    empty = entry("dns", "172.30.0.53", 53, [])
    f = flow("172.30.0.53", 53, "10.201.2.2")
    assert stale_flows(table(empty), [f]) == [f]


def test_worth_cleaning_only_when_udp_is_involved() -> None:
    tcp = entry("web", "172.30.0.80", 80, ["10.201.2.2"], protocol="TCP")
    tcp2 = entry("web", "172.30.0.80", 80, ["10.201.3.2"], protocol="TCP")
    assert worth_cleaning(table(DNS), None)
    assert not worth_cleaning(table(tcp), None)
    assert not worth_cleaning(table(tcp2), TableDiff(added=(), removed=(), changed=((tcp, tcp2),)))
    assert worth_cleaning(table(), TableDiff(added=(), removed=(DNS,), changed=()))
    moved = entry("dns", "172.30.0.53", 53, ["10.201.1.2"])
    assert worth_cleaning(table(DNS), TableDiff(added=(), removed=(), changed=((moved, DNS),)))


def test_external_addresses_and_node_ports_are_judged_by_their_backends() -> None:
    ext = replace(
        DNS,
        external_ips=("192.0.2.10",),
        node_port=30053,
        local_backends=(Backend("10.201.2.2", 5353),),
        backends=(Backend("10.201.2.2", 5353), Backend("10.201.3.2", 5353)),
    )
    # the node port on any node address, the external IP at the service port
    to_gone = flow("10.0.0.5", 30053, "10.201.1.2")
    to_node_port = flow("10.0.0.5", 30053, "10.201.3.2", sport=40001)
    to_external = flow("192.0.2.10", 53, "10.201.1.2", sport=40002)
    assert stale_flows(table(ext), [to_gone, to_node_port, to_external]) == [to_gone, to_external]
    # externalTrafficPolicy: Local: only the node's own endpoints may answer outside traffic
    local = replace(ext, external_local=True)
    assert stale_flows(table(local), [to_node_port]) == [to_node_port]
    # internalTrafficPolicy: Local: the same for the ClusterIP
    inner = replace(ext, internal_local=True)
    remote = flow("172.30.0.53", 53, "10.201.3.2", sport=40003)
    assert stale_flows(table(inner), [remote]) == [remote]
    assert stale_flows(table(ext), [remote]) == []


def test_removed_service_node_port_flows_are_stale() -> None:
    gone = replace(DNS, node_port=30053)
    f = flow("10.0.0.5", 30053, "10.201.1.2")
    assert stale_flows(table(), [f], removed=[gone]) == [f]


async def test_a_failed_cleanup_is_owed_to_the_next_sync() -> None:
    """The cleaner cannot enter a namespace that does not exist: the failure is counted,
    not raised, and the next sync cleans although it changed only a TCP service."""
    cleaner = ConntrackCleaner("sn-ct-no-such-netns")
    tcp = entry("web", "172.30.0.80", 80, ["10.201.2.2"], protocol="TCP")
    tcp2 = entry("web", "172.30.0.80", 80, ["10.201.3.2"], protocol="TCP")
    tcp_only = TableDiff(added=(), removed=(), changed=((tcp, tcp2),))
    try:
        before = FAILURES._value.get()
        assert await cleaner.after_sync(table(DNS, tcp2), tcp_only) == 0
        assert FAILURES._value.get() == before  # nothing UDP changed, nothing owed: no attempt
        assert await cleaner.after_sync(table(DNS, tcp2), None) == 0
        assert cleaner.owed and FAILURES._value.get() == before + 1
        assert await cleaner.after_sync(table(DNS, tcp2), tcp_only) == 0
        assert FAILURES._value.get() == before + 2  # tried again although only TCP changed
    finally:
        cleaner.close()


def test_udp_addresses_are_where_stale_flows_can_be() -> None:
    ext = replace(DNS, external_ips=("192.0.2.10",), node_port=30053)
    tcp = entry("web", "172.30.0.80", 80, ["10.201.2.2"], protocol="TCP")
    old = entry("old", "172.30.0.99", 53, ["10.201.1.2"])
    assert udp_addresses(table(ext, tcp), [old]) == [
        ("*", 30053),
        ("172.30.0.53", 53),
        ("172.30.0.99", 53),
        ("192.0.2.10", 53),
    ]
