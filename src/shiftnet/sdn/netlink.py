"""SDN mode driver: make a node's devices, routes and pod attachments match the plan.

Talks netlink through pyroute2 (no shelling out per step); the only commands
run are one ``sysctl`` for forwarding and one atomic ``nft -f`` for the NAT
table. Every operation is idempotent: applying the same plan twice changes
nothing, and applying a plan after a crash repairs what is missing and removes
what is stale (routes, neighbours and FDB entries of nodes that left).

``netns`` names the node's network namespace; ``None`` means "the namespace
this process runs in" (the agent running on a real node).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import subprocess
from collections.abc import Iterator
from typing import Any

from pyroute2 import IPRoute, netns
from pyroute2 import config as pyroute2_config
from pyroute2.netlink.exceptions import NetlinkError

from shiftnet.errors import ShiftnetError
from shiftnet.sdn import threadns
from shiftnet.sdn.topology import BRIDGE, VXLAN, NodeNetwork, masquerade_ruleset

log = logging.getLogger(__name__)

# pyroute2 forks a helper per network-namespace operation and ends it with SIGTERM.
# A fork inherits asyncio's signal handlers and wakeup fd, so the helper's SIGTERM
# would reach the agent's event loop as if the agent itself were told to stop.
# This makes the helper take SIGTERM the default way (it just dies).
pyroute2_config.disable_mp_signal = True

NUD_PERMANENT = 0x80
NTF_SELF = 0x02
AF_BRIDGE = 7
MAIN_TABLE = 254
PROTO_KERNEL = 2
LOOPBACK_INDEX = 1  # lo is the first device of every network namespace


class NetworkSetupError(ShiftnetError):
    """A node or pod network could not be set up."""


def in_netns(name: str | None, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", name, *argv] if name else argv


@contextlib.contextmanager
def _ipr(name: str | None) -> Iterator[Any]:
    """A netlink handle bound to namespace ``name`` (opened from inside it, no fork)."""
    if name:
        with threadns.entered(name):
            handle = IPRoute()
    else:
        handle = IPRoute()
    try:
        yield handle
    finally:
        handle.close()


def _index(ipr: Any, ifname: str) -> int | None:
    found = ipr.link_lookup(ifname=ifname)
    return int(found[0]) if found else None


def _link_attr(link: Any, name: str) -> Any:
    return link.get_attr(name)


def _vxlan_matches(ipr: Any, idx: int, net: NodeNetwork) -> bool:
    link = ipr.get_links(idx)[0]
    info = _link_attr(link, "IFLA_LINKINFO")
    if info is None or info.get_attr("IFLA_INFO_KIND") != "vxlan":
        return False
    data = info.get_attr("IFLA_INFO_DATA")
    return bool(
        data is not None
        and data.get_attr("IFLA_VXLAN_ID") == net.vni
        and data.get_attr("IFLA_VXLAN_PORT") == net.vxlan_port
        and data.get_attr("IFLA_VXLAN_LOCAL") == net.host_ip
    )


def _ensure_addresses(ipr: Any, idx: int, want: set[tuple[str, int]]) -> None:
    have = {
        (a.get_attr("IFA_ADDRESS"), int(a["prefixlen"])) for a in ipr.get_addr(index=idx, family=2)
    }
    for addr, plen in sorted(have - want):
        ipr.addr("del", index=idx, address=addr, prefixlen=plen)
    for addr, plen in sorted(want - have):
        ipr.addr("add", index=idx, address=addr, prefixlen=plen)


class NodeNetworkDriver:
    def __init__(self, netns_name: str | None = None) -> None:
        self.netns = netns_name

    # ------------------------------------------------------------ node

    def apply(self, net: NodeNetwork) -> None:
        """Bridge, gateway, VXLAN, remote paths, forwarding and NAT, as ``net`` says."""
        try:
            with _ipr(self.netns) as ipr:
                self._bridge(ipr, net)
                self._vxlan(ipr, net)
                self._remotes(ipr, net)
        except NetlinkError as exc:
            raise NetworkSetupError(f"node {net.node}: netlink refused a change: {exc}") from exc
        self._run(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        self._run(["nft", "-f", "-"], masquerade_ruleset(net))
        log.info("node network applied node=%s remotes=%d", net.node, len(net.remotes))

    def _run(self, argv: list[str], stdin: str | None = None) -> None:
        proc = subprocess.run(
            in_netns(self.netns, argv), input=stdin, text=True, capture_output=True, check=False
        )
        if proc.returncode != 0:
            raise NetworkSetupError(f"{argv[0]} failed: {proc.stderr.strip()}")

    def _bridge(self, ipr: Any, net: NodeNetwork) -> None:
        idx = _index(ipr, BRIDGE)
        if idx is None:
            ipr.link("add", ifname=BRIDGE, kind="bridge")
            idx = _index(ipr, BRIDGE)
        assert idx is not None
        ipr.link("set", index=idx, mtu=net.mtu, state="up")
        _ensure_addresses(ipr, idx, {(net.gateway, net.prefixlen)})

    def _vxlan(self, ipr: Any, net: NodeNetwork) -> None:
        idx = _index(ipr, VXLAN)
        if idx is not None and not _vxlan_matches(ipr, idx, net):
            ipr.link("del", index=idx)
            idx = None
        if idx is None:
            ipr.link(
                "add",
                ifname=VXLAN,
                kind="vxlan",
                vxlan_id=net.vni,
                vxlan_port=net.vxlan_port,
                vxlan_local=net.host_ip,
                vxlan_learning=0,
            )
            idx = _index(ipr, VXLAN)
        assert idx is not None
        ipr.link("set", index=idx, address=net.vtep_mac, mtu=net.mtu, state="up")
        _ensure_addresses(ipr, idx, {(net.vtep_ip, 32)})

    def _remotes(self, ipr: Any, net: NodeNetwork) -> None:
        idx = _index(ipr, VXLAN)
        want_routes = {r.subnet: r for r in net.remotes}
        for route in ipr.get_routes(family=2, oif=idx, table=MAIN_TABLE):
            dst = route.get_attr("RTA_DST")
            if dst is None or route["proto"] == PROTO_KERNEL:
                continue
            cidr = f"{dst}/{route['dst_len']}"
            if cidr not in want_routes:
                ipr.route("del", dst=cidr, oif=idx, table=MAIN_TABLE)
        want_neigh = {r.vtep_ip: r.vtep_mac for r in net.remotes}
        for n in ipr.get_neighbours(ifindex=idx, family=2):
            ip = n.get_attr("NDA_DST")
            if ip not in want_neigh:
                ipr.neigh("del", ifindex=idx, dst=ip, family=2)
        want_fdb = {r.vtep_mac: r.host_ip for r in net.remotes}
        for f in ipr.get_neighbours(ifindex=idx, family=AF_BRIDGE):
            mac = f.get_attr("NDA_LLADDR")
            dst = f.get_attr("NDA_DST")
            if dst is not None and want_fdb.get(mac) != dst:
                ipr.fdb("del", ifindex=idx, lladdr=mac, dst=dst, flags=NTF_SELF)
        for r in net.remotes:
            ipr.fdb(
                "replace",
                ifindex=idx,
                lladdr=r.vtep_mac,
                dst=r.host_ip,
                state=NUD_PERMANENT,
                flags=NTF_SELF,
            )
            ipr.neigh("replace", ifindex=idx, dst=r.vtep_ip, lladdr=r.vtep_mac, state=NUD_PERMANENT)
            ipr.route("replace", dst=r.subnet, gateway=r.vtep_ip, oif=idx, flags=4)  # RTNH_F_ONLINK

    def teardown(self) -> None:
        """Remove what :meth:`apply` made (lab teardown, agent uninstall)."""
        with _ipr(self.netns) as ipr:
            for name in (VXLAN, BRIDGE):
                idx = _index(ipr, name)
                if idx is not None:
                    ipr.link("del", index=idx)
        with contextlib.suppress(NetworkSetupError):
            self._run(["nft", "delete", "table", "ip", "shiftnet-sdn"])

    # ------------------------------------------------------------ pods

    def attach_pod(self, pod_ns: str, host_if: str, pod_ip: str, net: NodeNetwork) -> None:
        """A network namespace with eth0 = pod_ip, default route via the gateway, its veth
        peer on br0. Idempotent: a pod already wired this way is left untouched.

        A fresh pod costs eight netlink requests: the veth pair is created already on
        the bridge, up, with its MTU on both ends, in one message."""
        try:
            fresh = threadns.create(pod_ns)
            with _ipr(self.netns) as ipr, _ipr(pod_ns) as pod:
                if not fresh:
                    if self._pod_ok(ipr, pod, host_if, pod_ip, net):
                        return
                    stale = _index(pod, "eth0")
                    if stale is not None:
                        pod.link("del", index=stale)
                old = _index(ipr, host_if)
                if old is not None:
                    ipr.link("del", index=old)
                bridge = self._bridge_index(ipr)
                ipr.link(
                    "add",
                    ifname=host_if,
                    kind="veth",
                    master=bridge,
                    mtu=net.mtu,
                    state="up",
                    peer={"ifname": "eth0", "net_ns_fd": pod_ns, "mtu": net.mtu},
                )
                # hairpin: a pod reaching itself through a Service ClusterIP gets its
                # DNATed packet back out of the port it came in by (kubelet does the same)
                ipr.brport("set", index=_index(ipr, host_if), mode=1)
                pod.link("set", index=LOOPBACK_INDEX, state="up")
                eth0 = _index(pod, "eth0")
                pod.addr("add", index=eth0, address=pod_ip, prefixlen=net.prefixlen)
                pod.link("set", index=eth0, state="up")  # pyroute2 drops the peer's flags
                pod.route("replace", dst="0.0.0.0/0", gateway=net.gateway)
        except NetlinkError as exc:
            raise NetworkSetupError(
                f"pod network {pod_ns} ({pod_ip}): netlink refused a change: {exc}"
            ) from None

    def _bridge_index(self, ipr: Any) -> int:
        idx = _index(ipr, BRIDGE)
        if idx is None:
            raise NetworkSetupError(f"node network has no {BRIDGE}: pods cannot be attached yet")
        return idx

    @staticmethod
    def _pod_ok(ipr: Any, pod: Any, host_if: str, pod_ip: str, net: NodeNetwork) -> bool:
        hidx = _index(ipr, host_if)
        eth0 = _index(pod, "eth0")
        if hidx is None or eth0 is None:
            return False
        link = ipr.get_links(hidx)[0]
        if link.get_attr("IFLA_MASTER") != _index(ipr, BRIDGE):
            return False
        addrs = {a.get_attr("IFA_ADDRESS") for a in pod.get_addr(index=eth0, family=2)}
        return pod_ip in addrs

    def detach_pod(self, pod_ns: str, host_if: str) -> None:
        with _ipr(self.netns) as ipr:
            idx = _index(ipr, host_if)
            if idx is not None:
                ipr.link("del", index=idx)
        if pod_ns in netns.listnetns():
            netns.remove(pod_ns)

    def remove_netns(self, pod_ns: str) -> None:
        """A pod namespace whose pod is gone: its eth0 first (the bridge-side peer goes
        with it, even if a stray process still holds the namespace), then the name."""
        if pod_ns not in netns.listnetns():
            return
        with contextlib.suppress(NetlinkError), _ipr(pod_ns) as pod:
            eth0 = _index(pod, "eth0")
            if eth0 is not None:
                pod.link("del", index=eth0)
        netns.remove(pod_ns)

    def pod_namespaces(self) -> list[str]:
        return sorted(n for n in netns.listnetns() if n.startswith("sn-pod-"))


def check_ipv4(value: str) -> str:
    """Addresses reach netlink only after parsing (never raw user text)."""
    return str(ipaddress.IPv4Address(value))


def running_as_root() -> bool:
    return os.geteuid() == 0
