"""Node agent settings, with the defaults of local network mode."""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path

from shiftnet.errors import ConfigError

NETWORK_MODES = ("local", "sdn")
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def default_state_dir() -> Path:
    """``$SHIFTNET_HOME`` or ``~/.shiftnet``."""
    home = os.environ.get("SHIFTNET_HOME")
    return Path(home) if home else Path.home() / ".shiftnet"


def default_node_name() -> str:
    """The host name, lowercased and cut to a valid DNS-1123 subdomain."""
    raw = socket.gethostname().lower()
    name = re.sub(r"[^a-z0-9.-]+", "-", raw).strip("-.")[:253]
    return name or "localhost"


def check_node_name(name: str) -> str:
    if len(name) > 253 or not _DNS1123.match(name):
        raise ConfigError(
            f'node name "{name}" is invalid: it must be a lowercase DNS-1123 subdomain '
            "(letters, digits, '-' and '.')"
        )
    return name


@dataclass
class NodeConfig:
    """What one node agent needs; every field has a command-line flag on ``shiftnet node``."""

    node_name: str = field(default_factory=default_node_name)
    state_dir: Path = field(default_factory=default_state_dir)
    network: str = "local"
    host_ip: str = "127.0.0.1"  # local mode: the node is this machine's loopback
    # sdn mode: the VXLAN tunnel (OpenShift SDN's vxlan0); 4789 is the IANA VXLAN port
    vni: int = 1
    vxlan_port: int = 4789
    heartbeat_seconds: float = 10.0
    # Crash-loop backoff: first restart after a short run waits backoff_initial,
    # doubling up to backoff_max; a run longer than backoff_reset resets it.
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    backoff_reset: float = 10.0
    stop_pods_on_exit: bool = True
    labels: dict[str, str] = field(default_factory=dict)
    # The cluster DNS pods should use ("host", port), or None for the host's resolver;
    # pods get its search path through LOCALDOMAIN/RES_OPTIONS (see docs/dns.md).
    dns_server: tuple[str, int] | None = None
    cluster_domain: str = "cluster.local"

    def __post_init__(self) -> None:
        check_node_name(self.node_name)
        if self.network not in NETWORK_MODES:
            raise ConfigError(
                f'network mode "{self.network}" is not supported: use one of '
                + ", ".join(NETWORK_MODES)
            )
        try:
            host = ipaddress.IPv4Address(self.host_ip)
        except ValueError:
            raise ConfigError(
                f'node {self.node_name}: host IP "{self.host_ip}" is not an IPv4 address'
            ) from None
        if self.network == "sdn" and host.is_loopback:
            raise ConfigError(
                f'node {self.node_name}: host IP "{self.host_ip}" is a loopback address; the sdn '
                "network mode needs the address other nodes reach this one at (--host-ip)"
            )
        self.state_dir = Path(self.state_dir)

    @property
    def node_dir(self) -> Path:
        """Per-node state: pid files and logs of this node's pods."""
        return self.state_dir / "nodes" / self.node_name
