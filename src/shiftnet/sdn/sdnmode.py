"""SDN network mode for the node agent: pods in namespaces, nodes joined by VXLAN.

The agent calls :meth:`SdnNetwork.sync_node` whenever HostSubnets change and
:meth:`setup_pod` / :meth:`teardown_pod` around each pod; :meth:`command`
wraps a pod's process so it runs inside the pod's namespace. Netlink work is
blocking, so it runs on a worker thread, serialized by one lock.

The pod's own resolv.conf and hosts (:mod:`shiftnet.sdn.podresolver`, the
texts its processes see) are also written to ``/etc/netns/<pod namespace>/``,
so a person who runs ``ip netns exec <pod namespace> ...`` sees the same files.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from shiftnet.api import ClusterNetwork, HostSubnet
from shiftnet.errors import ConfigError
from shiftnet.sdn.netlink import NodeNetworkDriver, in_netns
from shiftnet.sdn.topology import (
    DEFAULT_VNI,
    DEFAULT_VXLAN_PORT,
    NodeNetwork,
    host_veth,
    node_tag,
    plan_node,
    pod_netns,
)

log = logging.getLogger(__name__)

LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
# ``ip netns exec NAME`` bind-mounts every file of /etc/netns/NAME/ over /etc/:
# a process started that way reads the pod's own /etc/resolv.conf and /etc/hosts.
ETC_NETNS = Path("/etc/netns")
ETC_FILES = ("resolv.conf", "hosts")  # the only names written there
REPAIR_SECONDS = 25.0  # the agent syncs at least every 30 s


class SdnNetwork:
    def __init__(
        self,
        *,
        node: str,
        host_ip: str,
        cluster_network: str = "",
        service_network: str = "",
        vni: int = DEFAULT_VNI,
        vxlan_port: int = DEFAULT_VXLAN_PORT,
        netns: str | None = None,
        etc_netns: Path = ETC_NETNS,
    ) -> None:
        """``cluster_network``/``service_network`` may stay empty: the agent passes the
        ``default`` ClusterNetwork the master wrote to :meth:`sync_node`."""
        self.node = node
        self.host_ip = str(ipaddress.IPv4Address(host_ip))
        self.cluster_network = cluster_network
        self.service_network = service_network
        self.vni = vni
        self.vxlan_port = vxlan_port
        self.etc_netns = etc_netns
        self.driver = NodeNetworkDriver(netns)
        self.plan: NodeNetwork | None = None
        self._lock = asyncio.Lock()
        self._applied_at = float("-inf")

    def check_subnet(self, subnet: str) -> None:
        net = ipaddress.ip_network(subnet, strict=False)
        if not isinstance(net, ipaddress.IPv4Network) or net.subnet_of(LOOPBACK):
            raise ConfigError(
                f'HostSubnet "{subnet}" is a loopback range: the sdn network mode needs a real '
                "cluster network (e.g. 10.1.0.0/16); use the local network mode for loopback"
            )

    async def sync_node(
        self, subnets: list[HostSubnet], cluster: ClusterNetwork | None = None
    ) -> NodeNetwork | None:
        """Rebuild this node's plan from every HostSubnet and apply it.

        None while this node has no HostSubnet or the cluster network is unknown."""
        if cluster is not None:
            cidr = cluster.cluster_networks[0].cidr if cluster.cluster_networks else cluster.network
            self.cluster_network = cidr or self.cluster_network
            self.service_network = cluster.service_network or self.service_network
        own = next((h for h in subnets if h.host == self.node or h.name == self.node), None)
        if own is None or not own.subnet or not self.cluster_network or not self.service_network:
            return None
        plan = plan_node(
            node=self.node,
            host_ip=self.host_ip,
            subnet=own.subnet,
            others=[(h.host or h.name, h.subnet, h.host_ip) for h in subnets],
            cluster_network=self.cluster_network,
            service_network=self.service_network,
            vni=self.vni,
            vxlan_port=self.vxlan_port,
        )
        async with self._lock:
            # a changed plan is applied at once; an unchanged one again every
            # REPAIR_SECONDS, which repairs drift (a route or device removed by hand)
            stale = time.monotonic() - self._applied_at > REPAIR_SECONDS
            if plan != self.plan or stale:
                await asyncio.to_thread(self.driver.apply, plan)
                self.plan = plan
                self._applied_at = time.monotonic()
        return plan

    async def ensure_node(self, subnets: list[HostSubnet], cluster: ClusterNetwork | None) -> bool:
        """:class:`~shiftnet.sdn.local.PodNetwork`: True once the node network exists."""
        return await self.sync_node(subnets, cluster) is not None

    async def setup_pod(
        self, namespace: str, name: str, pod_ip: str, etc_files: Mapping[str, str] | None = None
    ) -> None:
        """Wire the pod into the node network; ``etc_files`` (``resolv.conf``, ``hosts``:
        the texts its processes see) go to ``/etc/netns/<pod namespace>/``."""
        if self.plan is None:
            raise ConfigError(f"node {self.node} has no network yet: pod {namespace}/{name} waits")
        plan = self.plan
        pod_ns = pod_netns(self.node, namespace, name)
        async with self._lock:
            await asyncio.to_thread(
                self.driver.attach_pod, pod_ns, host_veth(namespace, name), pod_ip, plan
            )
        self._write_etc(pod_ns, etc_files or {})

    def _write_etc(self, pod_ns: str, files: Mapping[str, str]) -> None:
        """Each file atomically, world-readable as in /etc; one not given is removed."""
        folder = self.etc_netns / pod_ns
        if not files:
            self._remove_etc(pod_ns)
            return
        folder.mkdir(parents=True, exist_ok=True)
        for name in ETC_FILES:
            target = folder / name
            if name not in files:
                target.unlink(missing_ok=True)
                continue
            tmp = folder / f".{name}.tmp"
            tmp.write_text(files[name])
            tmp.chmod(0o644)
            tmp.replace(target)
        unknown = sorted(set(files) - set(ETC_FILES))
        if unknown:
            log.warning("not written to /etc/netns pod_netns=%s files=%s", pod_ns, unknown)

    def _remove_etc(self, pod_ns: str) -> None:
        shutil.rmtree(self.etc_netns / pod_ns, ignore_errors=True)

    async def teardown_pod(self, namespace: str, name: str, pod_ip: str) -> None:
        pod_ns = pod_netns(self.node, namespace, name)
        async with self._lock:
            await asyncio.to_thread(self.driver.detach_pod, pod_ns, host_veth(namespace, name))
        self._remove_etc(pod_ns)

    async def remove_stale(self, keep: set[tuple[str, str]]) -> list[str]:
        """Delete this node's pod namespaces (and their /etc/netns folders) whose pod is
        not in ``keep``; the veth pair dies with its namespace."""
        wanted = {pod_netns(self.node, ns, name) for ns, name in keep}
        mine = f"sn-pod-{node_tag(self.node)}-"
        stale = [n for n in self.driver.pod_namespaces() if n.startswith(mine) and n not in wanted]
        if self.etc_netns.is_dir():
            stale_etc = [
                p.name
                for p in self.etc_netns.iterdir()
                if p.name.startswith(mine) and p.name not in wanted
            ]
        else:
            stale_etc = []
        async with self._lock:
            for pod_ns in stale:
                with contextlib.suppress(OSError):
                    await asyncio.to_thread(self.driver.remove_netns, pod_ns)
        for name in stale_etc:
            self._remove_etc(name)
        if stale:
            log.info("removed stale pod namespaces node=%s count=%d", self.node, len(stale))
        return sorted(stale)

    def command(self, namespace: str, name: str, argv: list[str]) -> list[str]:
        """``argv`` run inside the pod's network namespace."""
        return in_netns(pod_netns(self.node, namespace, name), argv)
