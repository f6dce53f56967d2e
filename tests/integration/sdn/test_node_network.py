"""SDN mode plumbing with real namespaces, bridges, VXLAN and nftables (root only)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from shiftnet.sdn.netlink import NodeNetworkDriver, in_netns
from shiftnet.sdn.topology import NodeNetwork, host_veth, plan_node, pod_netns
from shiftnet.sdn.underlay import INTERNET_ADDRESS, LabMachine, Underlay

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

CLUSTER = "10.1.0.0/16"
SERVICES = "172.30.0.0/16"


def sh(ns: str | None, *argv: str, check: bool = True) -> str:
    proc = subprocess.run(in_netns(ns, list(argv)), capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} failed: {proc.stderr}")
    return proc.stdout


def plans(nodes: list[LabMachine], subnets: dict[str, str]) -> dict[str, NodeNetwork]:
    others = [(m.name, subnets[m.name], m.host_ip) for m in nodes if m.name in subnets]
    return {
        m.name: plan_node(
            node=m.name,
            host_ip=m.host_ip,
            subnet=subnets[m.name],
            others=others,
            cluster_network=CLUSTER,
            service_network=SERVICES,
        )
        for m in nodes
        if m.name in subnets
    }


@pytest.fixture
def lab() -> Iterator[tuple[Underlay, list[LabMachine]]]:
    under = Underlay(f"sn-t{uuid.uuid4().hex[:6]}")
    try:
        yield under, under.up(3)
    finally:
        under.down()
    assert under.namespaces() == []


TCP_SERVER = (
    "import socket,sys;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
    "s.bind((sys.argv[1],8080));s.listen()\n"
    "while True:\n c,a=s.accept();c.send(a[0].encode());c.close()"
)
TCP_CLIENT = (
    "import socket,sys;s=socket.create_connection((sys.argv[1],8080),timeout=3);"
    "print(s.recv(100).decode())"
)


def connect(from_ns: str, ip: str) -> str:
    """Connect from a namespace to ip:8080; return the source address the server saw."""
    return sh(from_ns, sys.executable, "-c", TCP_CLIENT, ip).strip()


@pytest.fixture
def servers() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def serve(procs: list[subprocess.Popen[bytes]], ns: str, ip: str) -> None:
    procs.append(subprocess.Popen(in_netns(ns, [sys.executable, "-c", TCP_SERVER, ip])))
    for _ in range(50):
        if f"{ip}:8080" in sh(ns, "ss", "-ltn"):
            return
        import time

        time.sleep(0.05)
    raise AssertionError(f"server on {ip} did not start")


def attach(
    driver: NodeNetworkDriver, net: NodeNetwork, pod: str, host_octet: int
) -> tuple[str, str]:
    ip = net.gateway.rsplit(".", 1)[0] + f".{host_octet}"
    ns = pod_netns(net.node, "default", pod)
    driver.attach_pod(ns, host_veth("default", pod), ip, net)
    return ns, ip


def test_pods_reach_each_other_on_one_node_and_across_vxlan(lab, servers) -> None:
    _under, nodes = lab
    subnets = {
        nodes[0].name: "10.1.0.0/24",
        nodes[1].name: "10.1.1.0/24",
        nodes[2].name: "10.1.2.0/24",
    }
    p = plans(nodes, subnets)
    drivers = {m.name: NodeNetworkDriver(m.netns) for m in nodes}
    for m in nodes:
        drivers[m.name].apply(p[m.name])
    a_ns, a_ip = attach(drivers[nodes[0].name], p[nodes[0].name], "a", 2)
    b_ns, b_ip = attach(drivers[nodes[0].name], p[nodes[0].name], "b", 3)
    c_ns, c_ip = attach(drivers[nodes[1].name], p[nodes[1].name], "c", 2)
    for ns, ip in ((b_ns, b_ip), (c_ns, c_ip)):
        serve(servers, ns, ip)
    # same node, through br0: the server sees the pod's own address
    assert connect(a_ns, b_ip) == a_ip
    # across nodes, through vxlan0: still no NAT inside the cluster network
    assert connect(a_ns, c_ip) == a_ip
    # the node reaches its own pods and remote pods too (router / probes path)
    assert connect(nodes[2].netns, c_ip).startswith("10.1.2.")


def test_traffic_leaving_the_cluster_is_masqueraded(lab, servers) -> None:
    under, nodes = lab
    subnets = {nodes[0].name: "10.1.0.0/24"}
    p = plans(nodes, subnets)[nodes[0].name]
    driver = NodeNetworkDriver(nodes[0].netns)
    driver.apply(p)
    a_ns, _ = attach(driver, p, "a", 2)
    serve(servers, under.internet.netns, INTERNET_ADDRESS)
    assert connect(a_ns, INTERNET_ADDRESS) == nodes[0].host_ip


def dump(ns: str) -> str:
    """The node's network state, each listing sorted (the kernel's order is not ours)."""
    return "\n".join(
        "\n".join(sorted(sh(ns, *cmd).splitlines()))
        for cmd in (
            ["ip", "-d", "link", "show", "vxlan0"],
            ["ip", "route"],
            ["ip", "neigh", "show", "dev", "vxlan0"],
            ["bridge", "fdb", "show", "dev", "vxlan0"],
            ["nft", "list", "table", "ip", "shiftnet-sdn"],
        )
    )


def test_apply_is_idempotent_repairs_drift_and_forgets_departed_nodes(lab, servers) -> None:
    _under, nodes = lab
    subnets = {
        nodes[0].name: "10.1.0.0/24",
        nodes[1].name: "10.1.1.0/24",
        nodes[2].name: "10.1.2.0/24",
    }
    p = plans(nodes, subnets)
    d0 = NodeNetworkDriver(nodes[0].netns)
    d0.apply(p[nodes[0].name])
    before = dump(nodes[0].netns)
    d0.apply(p[nodes[0].name])
    assert dump(nodes[0].netns) == before
    # drift: someone deletes a route and an FDB entry; the next apply repairs it
    sh(nodes[0].netns, "ip", "route", "del", "10.1.1.0/24")
    sh(
        nodes[0].netns,
        "bridge",
        "fdb",
        "del",
        p[nodes[1].name].vtep_mac,
        "dev",
        "vxlan0",
        "dst",
        nodes[1].host_ip,
    )
    d0.apply(p[nodes[0].name])
    assert dump(nodes[0].netns) == before
    # node 2 leaves: its route, neighbour and FDB entry disappear on node 0
    del subnets[nodes[2].name]
    d0.apply(plans(nodes, subnets)[nodes[0].name])
    after = dump(nodes[0].netns)
    assert "10.1.2.0/24" not in after
    assert p[nodes[2].name].vtep_mac not in after
    assert nodes[2].host_ip not in after
    assert "10.1.1.0/24" in after


def test_pod_attach_is_idempotent_and_detach_removes_everything(lab) -> None:
    under, nodes = lab
    p = plans(nodes, {nodes[0].name: "10.1.0.0/24"})[nodes[0].name]
    d = NodeNetworkDriver(nodes[0].netns)
    d.apply(p)
    ns, _ip = attach(d, p, "a", 2)

    def wiring() -> str:
        ports = sh(nodes[0].netns, "ip", "-o", "link", "show", "master", "br0")
        names = sorted(line.split(":")[1].strip().split("@")[0] for line in ports.splitlines())
        return sh(ns, "ip", "-o", "addr") + sh(ns, "ip", "route") + " ".join(names)

    first = wiring()
    assert host_veth("default", "a") in first
    attach(d, p, "a", 2)
    assert wiring() == first
    assert "default via 10.1.0.1" in sh(ns, "ip", "route")
    d.detach_pod(ns, host_veth("default", "a"))
    assert ns not in under.namespaces()
    assert host_veth("default", "a") not in sh(nodes[0].netns, "ip", "-o", "link")
