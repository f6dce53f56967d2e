"""Local network mode: pod addresses are loopback addresses, nothing to plumb.

Linux routes all of 127.0.0.0/8 to ``lo``, so a process can bind any
127.x.y.z without root. A pod's "network" is therefore just its address; the
node's subnet must lie inside 127.0.0.0/8 for that to hold. The SDN mode
implements the same small interface with namespaces and veths.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from shiftnet.api import ClusterNetwork, HostSubnet
from shiftnet.errors import ConfigError

if TYPE_CHECKING:
    from shiftnet.sdn.config import NodeConfig

LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
LOCAL_HOST_IP = "127.0.0.1"


class PodNetwork(Protocol):
    """What a network mode does for a node and its pods."""

    def check_subnet(self, subnet: str) -> None: ...
    async def ensure_node(self, subnets: list[HostSubnet], cluster: ClusterNetwork | None) -> bool:
        """Make the node's network match the HostSubnets; True once pods can be attached."""
        ...

    async def setup_pod(
        self, namespace: str, name: str, pod_ip: str, etc_files: Mapping[str, str] | None = None
    ) -> None:
        """Wire the pod in; ``etc_files`` are the texts of its resolv.conf and hosts."""
        ...

    async def teardown_pod(self, namespace: str, name: str, pod_ip: str) -> None: ...
    async def remove_stale(self, keep: set[tuple[str, str]]) -> list[str]:
        """Remove pod sandboxes left by an earlier agent for pods not in ``keep``."""
        ...

    def command(self, namespace: str, name: str, argv: list[str]) -> list[str]:
        """``argv`` as it must be run to be inside the pod's network."""
        ...


class LocalNetwork:
    """Loopback pod addresses: validation only, set-up and tear-down are no-ops."""

    def check_subnet(self, subnet: str) -> None:
        net = ipaddress.ip_network(subnet, strict=False)
        if not isinstance(net, ipaddress.IPv4Network) or not net.subnet_of(LOOPBACK):
            raise ConfigError(
                f'HostSubnet "{subnet}" is not inside 127.0.0.0/8: local network mode needs a '
                "loopback cluster network (e.g. 127.10.0.0/16); use the sdn network mode for others"
            )

    async def setup_pod(
        self, namespace: str, name: str, pod_ip: str, etc_files: Mapping[str, str] | None = None
    ) -> None:
        return None

    async def teardown_pod(self, namespace: str, name: str, pod_ip: str) -> None:
        return None

    async def ensure_node(self, subnets: list[HostSubnet], cluster: ClusterNetwork | None) -> bool:
        return True

    async def remove_stale(self, keep: set[tuple[str, str]]) -> list[str]:
        return []

    def command(self, namespace: str, name: str, argv: list[str]) -> list[str]:
        return argv


def network_for(config: NodeConfig) -> PodNetwork:
    if config.network == "local":
        return LocalNetwork()
    if config.network == "sdn":
        from shiftnet.sdn.sdnmode import SdnNetwork

        return SdnNetwork(
            node=config.node_name,
            host_ip=config.host_ip,
            vni=config.vni,
            vxlan_port=config.vxlan_port,
        )
    raise ConfigError(f'network mode "{config.network}" is not supported: use local or sdn')
