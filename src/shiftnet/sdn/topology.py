"""SDN mode, pure: what one node's network must look like, from the HostSubnets.

OpenShift SDN is built on Open vSwitch. This kernel has no OVS, so
shiftnet builds the same paths from plain Linux parts, the way flannel's VXLAN
backend does:

* OVS ``br0`` → a Linux bridge ``br0``; pods' veths are its ports;
* ``tun0`` (the node's gateway into the pod network) → ``br0``'s own address,
  the first address of the node subnet;
* ``vxlan0`` (OVS VXLAN port, flows per remote node) → a VXLAN device without
  learning, plus, per remote node, a route ``<subnet> via <vtep> onlink``, a
  permanent neighbour entry ``<vtep> → <vtep MAC>`` and an FDB entry
  ``<vtep MAC> → <remote host IP>``;
* the NAT for traffic leaving the cluster → an nftables masquerade rule.

Each node's VTEP address is the network address of its subnet (never given to
a pod) and its MAC is derived from that address, so no extra state has to be
published: every node can compute every other node's entries from the
HostSubnets alone.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass

BRIDGE = "br0"
VXLAN = "vxlan0"
DEFAULT_VNI = 1
DEFAULT_VXLAN_PORT = 4789
VXLAN_OVERHEAD = 50


@dataclass(frozen=True, order=True)
class RemotePath:
    """How to reach one other node's pods."""

    node: str
    subnet: str
    vtep_ip: str
    vtep_mac: str
    host_ip: str


@dataclass(frozen=True)
class NodeNetwork:
    """The desired network of one node (SDN mode)."""

    node: str
    host_ip: str
    subnet: str
    gateway: str  # br0's address: the pods' default gateway
    prefixlen: int
    cluster_network: str
    service_network: str
    vni: int
    vxlan_port: int
    vtep_ip: str
    vtep_mac: str
    mtu: int
    remotes: tuple[RemotePath, ...]


def vtep_ip(subnet: str) -> str:
    return str(ipaddress.ip_network(subnet, strict=False).network_address)


def vtep_mac(subnet: str) -> str:
    """A locally administered unicast MAC (0a:58:…) made of the subnet's network address."""
    ip = ipaddress.ip_network(subnet, strict=False).network_address.packed
    return "0a:58:" + ":".join(f"{b:02x}" for b in ip)


def gateway_of(subnet: str) -> str:
    return str(ipaddress.ip_network(subnet, strict=False).network_address + 1)


def plan_node(
    *,
    node: str,
    host_ip: str,
    subnet: str,
    others: list[tuple[str, str, str]],
    cluster_network: str,
    service_network: str,
    vni: int = DEFAULT_VNI,
    vxlan_port: int = DEFAULT_VXLAN_PORT,
    underlay_mtu: int = 1500,
) -> NodeNetwork:
    """``others`` is ``(node, subnet, host_ip)`` of every other node with a HostSubnet."""
    net = ipaddress.ip_network(subnet, strict=False)
    remotes = tuple(
        sorted(
            RemotePath(
                node=name,
                subnet=str(ipaddress.ip_network(sub, strict=False)),
                vtep_ip=vtep_ip(sub),
                vtep_mac=vtep_mac(sub),
                host_ip=hip,
            )
            for name, sub, hip in others
            if name != node and sub and hip
        )
    )
    return NodeNetwork(
        node=node,
        host_ip=host_ip,
        subnet=str(net),
        gateway=gateway_of(subnet),
        prefixlen=net.prefixlen,
        cluster_network=str(ipaddress.ip_network(cluster_network, strict=False)),
        service_network=str(ipaddress.ip_network(service_network, strict=False)),
        vni=vni,
        vxlan_port=vxlan_port,
        vtep_ip=vtep_ip(subnet),
        vtep_mac=vtep_mac(subnet),
        mtu=underlay_mtu - VXLAN_OVERHEAD,
        remotes=remotes,
    )


def node_tag(node: str) -> str:
    """Six hex digits naming a node inside pod namespace names (so a lab can find its own)."""
    return hashlib.sha256(node.encode()).hexdigest()[:6]


def pod_netns(node: str, namespace: str, name: str) -> str:
    """A short, stable, collision-resistant network namespace name for a pod."""
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:10]
    return f"sn-pod-{node_tag(node)}-{digest}"


def host_veth(namespace: str, name: str) -> str:
    """The bridge-side veth name (IFNAMSIZ allows 15 characters)."""
    return "veth" + hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:11]


def masquerade_ruleset(net: NodeNetwork, table: str = "shiftnet-sdn") -> str:
    """nftables: masquerade pod traffic that leaves the cluster network (OpenShift SDN's NAT path).

    Every value is an address parsed by :mod:`ipaddress` above, never raw user text.
    """
    cluster = net.cluster_network
    service = net.service_network
    return (
        f"table ip {table} {{}}\n"
        f"delete table ip {table}\n"
        f"table ip {table} {{\n"
        "  chain postrouting {\n"
        "    type nat hook postrouting priority srcnat; policy accept;\n"
        f"    ip saddr {cluster} ip daddr != {{ {cluster}, {service} }} masquerade\n"
        "  }\n"
        "}\n"
    )
