"""SDN network mode for the node agent: pods in namespaces, nodes joined by VXLAN.

The agent calls :meth:`SdnNetwork.sync_node` whenever HostSubnets change and
:meth:`setup_pod` / :meth:`teardown_pod` around each pod; :meth:`command`
wraps a pod's process so it runs inside the pod's namespace. Netlink work is
blocking, so it runs on a worker thread, serialized by one lock.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging

from shiftnet.api import HostSubnet
from shiftnet.errors import ConfigError
from shiftnet.sdn.netlink import NodeNetworkDriver, in_netns
from shiftnet.sdn.topology import (
    DEFAULT_VNI,
    DEFAULT_VXLAN_PORT,
    NodeNetwork,
    host_veth,
    plan_node,
    pod_netns,
)

log = logging.getLogger(__name__)

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")


class SdnNetwork:
    def __init__(
        self,
        *,
        node: str,
        host_ip: str,
        cluster_network: str,
        service_network: str,
        vni: int = DEFAULT_VNI,
        vxlan_port: int = DEFAULT_VXLAN_PORT,
        netns: str | None = None,
    ) -> None:
        self.node = node
        self.host_ip = str(ipaddress.IPv4Address(host_ip))
        self.cluster_network = cluster_network
        self.service_network = service_network
        self.vni = vni
        self.vxlan_port = vxlan_port
        self.driver = NodeNetworkDriver(netns)
        self.plan: NodeNetwork | None = None
        self._lock = asyncio.Lock()

    def check_subnet(self, subnet: str) -> None:
        net = ipaddress.ip_network(subnet, strict=False)
        if net.version != 4 or net.subnet_of(LOOPBACK):
            raise ConfigError(
                f'HostSubnet "{subnet}" is a loopback range: the sdn network mode needs a real '
                "cluster network (e.g. 10.1.0.0/16); use the local network mode for loopback"
            )

    async def sync_node(self, subnets: list[HostSubnet]) -> NodeNetwork | None:
        """Rebuild this node's plan from every HostSubnet and apply it."""
        own = next((h for h in subnets if h.host == self.node or h.name == self.node), None)
        if own is None or not own.subnet:
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
            if plan != self.plan:
                await asyncio.to_thread(self.driver.apply, plan)
                self.plan = plan
        return plan

    async def setup_pod(self, namespace: str, name: str, pod_ip: str) -> None:
        if self.plan is None:
            raise ConfigError(f"node {self.node} has no network yet: pod {namespace}/{name} waits")
        plan = self.plan
        async with self._lock:
            await asyncio.to_thread(
                self.driver.attach_pod,
                pod_netns(self.node, namespace, name),
                host_veth(namespace, name),
                pod_ip,
                plan,
            )

    async def teardown_pod(self, namespace: str, name: str, pod_ip: str) -> None:
        async with self._lock:
            await asyncio.to_thread(
                self.driver.detach_pod,
                pod_netns(self.node, namespace, name),
                host_veth(namespace, name),
            )

    def command(self, namespace: str, name: str, argv: list[str]) -> list[str]:
        """``argv`` run inside the pod's network namespace."""
        return in_netns(pod_netns(self.node, namespace, name), argv)
