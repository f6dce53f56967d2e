"""The node port range and the load-balancer pool's default (pure: no I/O).

Both are master settings that other parts read too: ``apply`` and the API
server check node port requests against the range, and the local cluster's
default pool is derived from its service network.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from shiftnet.errors import ConfigError

DEFAULT_NODE_PORT_RANGE = "30000-32767"


@dataclass(frozen=True)
class PortRange:
    """An inclusive range of port numbers, written ``first-last`` as kube-apiserver's flag."""

    first: int
    last: int

    @classmethod
    def parse(cls, text: str) -> PortRange:
        first, sep, last = text.strip().partition("-")
        try:
            rng = cls(int(first), int(last)) if sep else None
        except ValueError:
            rng = None
        if rng is None or not 0 < rng.first <= rng.last < 65536:
            raise ConfigError(
                f"service node port range {text[:40]!r} is not FIRST-LAST with "
                "1 <= FIRST <= LAST <= 65535"
            )
        return rng

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"

    def contains(self, port: int) -> bool:
        return self.first <= port <= self.last

    @property
    def size(self) -> int:
        return self.last - self.first + 1


def local_load_balancer_range(service_network: str) -> str | None:
    """Local mode's default pool: a loopback /24 beside the cluster's service network.

    Service networks of local clusters are 127.30.0.0/16 .. 127.49.0.0/16 (one a
    cluster); the pool is the first /24 of the /16 twenty above it (127.50.0.0/24
    for the first cluster), which no other local range uses.
    """
    try:
        net = ipaddress.ip_network(service_network, strict=False)
    except ValueError:
        return None  # MasterConfig.check names the bad setting
    if net.version != 4 or not net.subnet_of(ipaddress.IPv4Network("127.0.0.0/8")):
        return None
    second = int(net.network_address) >> 16 & 0xFF
    if second + 20 > 255:
        return None
    return f"127.{second + 20}.0.0/24"
