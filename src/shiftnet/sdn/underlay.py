"""The lab's physical network, built from network namespaces on one machine.

Every lab "machine" is a network namespace with one ``eth0`` on a shared
underlay bridge (itself inside its own namespace, so the host's interfaces and
routes are never touched):

* ``<prefix>-under``: the switch, bridge ``under0``;
* ``<prefix>-master``: the master machine, ``192.168.250.10``: the API server
  listens there, and nodes reach it over the underlay as they would across a
  real network;
* ``<prefix>-node<i>``: node ``<prefix without sn->-node<i>`` (``lab-node1``), host IP
  ``192.168.250.<10+i>``;
* ``<prefix>-inet``: "the internet": ``192.168.250.254`` on the underlay and
  ``203.0.113.1`` (TEST-NET-3) behind it; nodes use it as default gateway, so
  pod traffic to 203.0.113.1 leaves the cluster and is masqueraded.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import signal
from dataclasses import dataclass

from pyroute2 import NetNS, netns

from shiftnet.errors import ConfigError
from shiftnet.sdn.topology import node_tag

log = logging.getLogger(__name__)

UNDERLAY = ipaddress.ip_network("192.168.250.0/24")
INTERNET_GATEWAY = "192.168.250.254"
MASTER_ADDRESS = "192.168.250.10"
INTERNET_ADDRESS = "203.0.113.1"
MAX_NODES = 200


@dataclass(frozen=True)
class LabMachine:
    name: str  # node name in the cluster ("node1") or "inet"
    netns: str
    host_ip: str


class Underlay:
    def __init__(self, prefix: str = "sn-lab") -> None:
        if not prefix.startswith("sn-") or len(prefix) > 20:
            raise ConfigError(f'lab prefix "{prefix}" must start with "sn-" and be short')
        self.prefix = prefix
        self.switch = f"{prefix}-under"

    def node(self, i: int) -> LabMachine:
        if not 1 <= i <= MAX_NODES:
            raise ConfigError(f"lab node index {i} is out of range 1..{MAX_NODES}")
        short = self.prefix.removeprefix("sn-")
        return LabMachine(f"{short}-node{i}", f"{self.prefix}-node{i}", str(UNDERLAY[10 + i]))

    @property
    def master(self) -> LabMachine:
        return LabMachine("master", f"{self.prefix}-master", MASTER_ADDRESS)

    @property
    def internet(self) -> LabMachine:
        return LabMachine("inet", f"{self.prefix}-inet", INTERNET_GATEWAY)

    def _ensure_switch(self) -> None:
        if self.switch not in netns.listnetns():
            netns.create(self.switch)
        with NetNS(self.switch) as sw:
            if not sw.link_lookup(ifname="under0"):
                sw.link("add", ifname="under0", kind="bridge")
            sw.link("set", index=sw.link_lookup(ifname="under0")[0], state="up")

    def _plug(self, m: LabMachine, port: str, default_via: str | None) -> None:
        """Give machine ``m`` an eth0 on the switch (idempotent)."""
        if m.netns not in netns.listnetns():
            netns.create(m.netns)
        with NetNS(self.switch) as sw, NetNS(m.netns) as box:
            if not box.link_lookup(ifname="eth0"):
                stale = sw.link_lookup(ifname=port)
                if stale:
                    sw.link("del", index=stale[0])
                sw.link(
                    "add", ifname=port, kind="veth", peer={"ifname": "eth0", "net_ns_fd": m.netns}
                )
                sw.link(
                    "set",
                    index=sw.link_lookup(ifname=port)[0],
                    master=sw.link_lookup(ifname="under0")[0],
                    state="up",
                )
            eth0 = box.link_lookup(ifname="eth0")[0]
            have = {a.get_attr("IFA_ADDRESS") for a in box.get_addr(index=eth0, family=2)}
            if m.host_ip not in have:
                box.addr("add", index=eth0, address=m.host_ip, prefixlen=UNDERLAY.prefixlen)
            box.link("set", index=eth0, state="up")
            box.link("set", index=box.link_lookup(ifname="lo")[0], state="up")
            if default_via:
                box.route("replace", dst="0.0.0.0/0", gateway=default_via)

    def up(self, nodes: int) -> list[LabMachine]:
        """Create the switch, the master, the internet and ``nodes`` node machines;
        return the nodes."""
        self._ensure_switch()
        self._plug(self.master, "p-master", None)
        inet = self.internet
        self._plug(inet, "p-inet", None)
        with NetNS(inet.netns) as box:
            lo = box.link_lookup(ifname="lo")[0]
            have = {a.get_attr("IFA_ADDRESS") for a in box.get_addr(index=lo, family=2)}
            if INTERNET_ADDRESS not in have:
                box.addr("add", index=lo, address=INTERNET_ADDRESS, prefixlen=32)
        machines = [self.node(i) for i in range(1, nodes + 1)]
        for i, m in enumerate(machines, start=1):
            self._plug(m, f"p-node{i}", INTERNET_GATEWAY)
        log.info("lab underlay up prefix=%s nodes=%d", self.prefix, nodes)
        return machines

    def namespaces(self) -> list[str]:
        """Every namespace of this lab, pods of its nodes included."""
        tags = {node_tag(self.node(i).name) for i in range(1, MAX_NODES + 1)}
        out = []
        for name in netns.listnetns():
            if name.startswith(self.prefix + "-") or (
                name.startswith("sn-pod-") and name.split("-")[2] in tags
            ):
                out.append(name)
        return sorted(out)

    def down(self) -> list[str]:
        """Kill every process still inside this lab's namespaces, then delete the
        namespaces (links, routes and rulesets inside go with them)."""
        removed = []
        names = self.namespaces()
        pids = netns.ns_pids()
        for name in names:
            for pid in pids.get(name, []):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(pid), signal.SIGKILL)
        for name in names:
            with contextlib.suppress(OSError):
                netns.remove(name)
                removed.append(name)
        log.info("lab underlay down prefix=%s removed=%d", self.prefix, len(removed))
        return removed
