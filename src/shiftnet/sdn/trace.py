"""``shiftnet lab trace``: the path a packet takes between two pods, read off the kernel.

Nothing here is computed from the plan: every hop is asked of the devices
themselves, through netlink, the way one would by hand with ``ip``:

1. the pod's ``eth0`` names its veth peer's ifindex (``IFLA_LINK``), which in the
   node namespace is the host-side veth, whose ``IFLA_MASTER`` is the bridge;
2. the node's route to the destination pod (``ip route get``) says whether it
   stays on the bridge or leaves through ``vxlan0`` via a remote VTEP;
3. for VXLAN: the VTEP's permanent neighbour entry gives its MAC, the FDB
   entry of that MAC the remote host IP, and the underlay route to that host
   the local device and source address;
4. on the far node, the route to the pod must point at the bridge, and the
   pod's veth peer gives the last hop.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyroute2 import NetNS
from pyroute2.netlink.exceptions import NetlinkError

from shiftnet.errors import ShiftnetError

AF_BRIDGE = 7


class TraceError(ShiftnetError):
    """The devices do not show a complete path."""


@dataclass(frozen=True)
class PodPlace:
    """Where a pod lives: its IP, its namespace, its node's namespace."""

    label: str  # "default/a"
    ip: str
    pod_netns: str
    node: str
    node_netns: str


@dataclass
class Trace:
    hops: list[str]
    notes: list[str] = field(default_factory=list)

    def path(self) -> str:
        return " → ".join(self.hops)


@contextlib.contextmanager
def _ns(name: str) -> Iterator[Any]:
    handle = NetNS(name)
    try:
        yield handle
    finally:
        handle.close()


def _ifname(ipr: Any, index: int) -> str:
    links = ipr.get_links(index)
    if not links:
        raise TraceError(f"no interface with index {index}")
    return str(links[0].get_attr("IFLA_IFNAME"))


def _veth_side(place: PodPlace) -> tuple[str, str]:
    """(host-side veth, its bridge) of a pod, from the pod's eth0 peer index."""
    with _ns(place.pod_netns) as pod:
        found = pod.link_lookup(ifname="eth0")
        if not found:
            raise TraceError(f"pod {place.label}: no eth0 in namespace {place.pod_netns}")
        peer = pod.get_links(found[0])[0].get_attr("IFLA_LINK")
    if peer is None:
        raise TraceError(f"pod {place.label}: eth0 is not a veth")
    with _ns(place.node_netns) as node:
        veth = _ifname(node, int(peer))
        master = node.get_links(int(peer))[0].get_attr("IFLA_MASTER")
        if master is None:
            raise TraceError(f"pod {place.label}: {veth} is on no bridge")
        return veth, _ifname(node, int(master))


def _route(ipr: Any, dst: str) -> tuple[str, str | None, str | None]:
    """``ip route get dst``: (device, gateway, preferred source)."""
    try:
        msg = ipr.route("get", dst=dst)[0]
    except NetlinkError as err:
        raise TraceError(f"no route to {dst}: {err}") from None
    return (
        _ifname(ipr, int(msg.get_attr("RTA_OIF"))),
        msg.get_attr("RTA_GATEWAY"),
        msg.get_attr("RTA_PREFSRC"),
    )


def _vxlan_remote(ipr: Any, dev: str, vtep: str) -> tuple[str, str]:
    """(VTEP MAC from the neighbour table, remote host IP from the FDB)."""
    idx = ipr.link_lookup(ifname=dev)[0]
    mac = next(
        (
            n.get_attr("NDA_LLADDR")
            for n in ipr.get_neighbours(ifindex=idx, family=2)
            if n.get_attr("NDA_DST") == vtep
        ),
        None,
    )
    if mac is None:
        raise TraceError(f"{dev}: no neighbour entry for VTEP {vtep}")
    dst = next(
        (
            f.get_attr("NDA_DST")
            for f in ipr.get_neighbours(ifindex=idx, family=AF_BRIDGE)
            if f.get_attr("NDA_LLADDR") == mac and f.get_attr("NDA_DST")
        ),
        None,
    )
    if dst is None:
        raise TraceError(f"{dev}: no FDB entry sends {mac} to a remote host")
    return str(mac), str(dst)


def _vxlan_bound_to(ipr: Any, local: str) -> str | None:
    for link in ipr.get_links():
        info = link.get_attr("IFLA_LINKINFO")
        if info is None or info.get_attr("IFLA_INFO_KIND") != "vxlan":
            continue
        data = info.get_attr("IFLA_INFO_DATA")
        if data is not None and data.get_attr("IFLA_VXLAN_LOCAL") == local:
            return str(link.get_attr("IFLA_IFNAME"))
    return None


def trace(src: PodPlace, dst: PodPlace) -> Trace:
    """The hops from ``src``'s eth0 to ``dst``'s eth0, as the kernel would forward."""
    veth_a, bridge_a = _veth_side(src)
    veth_b, bridge_b = _veth_side(dst)
    t = Trace(hops=["eth0", veth_a, bridge_a])
    t.notes.append(f"{src.label}: eth0 {src.ip} in {src.pod_netns}; peer {veth_a} on {bridge_a}")
    with _ns(src.node_netns) as node:
        dev, gw, _ = _route(node, dst.ip)
        t.notes.append(f"{src.node}: route to {dst.ip} → dev {dev}" + (f" via {gw}" if gw else ""))
        if dev == bridge_a:
            if src.node_netns != dst.node_netns:
                raise TraceError(
                    f"{src.node} sends {dst.ip} to its bridge, but {dst.label} runs on {dst.node}"
                )
            t.hops += [veth_b, "eth0"]
            t.notes.append(f"{dst.label}: peer {veth_b} on {bridge_b}; eth0 {dst.ip}")
            return t
        if gw is None:
            raise TraceError(f"{src.node}: route to {dst.ip} leaves by {dev} without a VTEP")
        mac, remote = _vxlan_remote(node, dev, gw)
        t.notes.append(f"{src.node}: {dev} neighbour {gw} is {mac}; FDB {mac} → {remote}")
        under_dev, _, under_src = _route(node, remote)
        t.notes.append(f"{src.node}: underlay route to {remote} → dev {under_dev} src {under_src}")
    with _ns(dst.node_netns) as far:
        far_dev, _, _ = _route(far, dst.ip)
        t.notes.append(f"{dst.node}: route to {dst.ip} → dev {far_dev}")
        if far_dev != bridge_b:
            raise TraceError(f"{dst.node} does not deliver {dst.ip} to its bridge ({far_dev})")
        far_vx = _vxlan_bound_to(far, remote)
        if far_vx is None:
            raise TraceError(f"{dst.node} has no VXLAN device on {remote} (the FDB's remote host)")
    t.hops += [
        dev,
        f"(underlay {under_dev} {under_src} → {remote})",
        far_vx,
        bridge_b,
        veth_b,
        "eth0",
    ]
    t.notes.append(f"{dst.label}: peer {veth_b} on {bridge_b}; eth0 {dst.ip}")
    return t


def _masquerades(node_netns: str, src_ip: str, dst_ip: str) -> str | None:
    """The node's NAT rule that would masquerade ``src_ip`` → ``dst_ip``, as nft prints it."""

    proc = subprocess.run(
        ["ip", "netns", "exec", node_netns, "nft", "-j", "list", "table", "ip", "shiftnet-sdn"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return None
    src, dst = ipaddress.ip_address(src_ip), ipaddress.ip_address(dst_ip)
    for item in json.loads(proc.stdout).get("nftables", []):
        rule = item.get("rule")
        if not rule or not any("masquerade" in e for e in rule.get("expr", [])):
            continue
        ok = True
        for e in rule["expr"]:
            match = e.get("match")
            if not match or match.get("left", {}).get("payload", {}).get("protocol") != "ip":
                continue
            field_ = match["left"]["payload"]["field"]
            addr = src if field_ == "saddr" else dst
            right = match["right"]
            nets = right.get("set", [right]) if isinstance(right, dict) else [right]
            inside = any(addr in _as_net(n) for n in nets)
            ok = ok and (inside if match["op"] in ("==", "in") else not inside)
        if ok:
            return f"saddr {src_ip} → masquerade (table ip shiftnet-sdn, postrouting)"
    return None


def _as_net(item: object) -> ipaddress.IPv4Network | ipaddress.IPv6Network:

    if isinstance(item, dict) and "prefix" in item:
        p = item["prefix"]
        return ipaddress.ip_network(f"{p['addr']}/{p['len']}")
    return ipaddress.ip_network(str(item))


def trace_out(src: PodPlace, dst_ip: str) -> Trace:
    """The hops from ``src``'s eth0 to an address outside the cluster (OpenShift SDN's path out)."""
    veth_a, bridge_a = _veth_side(src)
    t = Trace(hops=["eth0", veth_a, bridge_a])
    t.notes.append(f"{src.label}: eth0 {src.ip} in {src.pod_netns}; peer {veth_a} on {bridge_a}")
    with _ns(src.node_netns) as node:
        dev, gw, via_src = _route(node, dst_ip)
    t.notes.append(
        f"{src.node}: route to {dst_ip} → dev {dev}"
        + (f" via {gw}" if gw else "")
        + (f" src {via_src}" if via_src else "")
    )
    nat = _masquerades(src.node_netns, src.ip, dst_ip)
    if nat is None:
        raise TraceError(f"{src.node}: no masquerade rule for {src.ip} → {dst_ip}")
    t.notes.append(f"{src.node}: {nat}")
    t.hops += [f"(NAT {src.ip} → {via_src})", dev, dst_ip]
    return t
