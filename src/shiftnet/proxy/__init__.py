"""The service proxy: stable ClusterIPs in user-space, iptables and nftables modes."""

from shiftnet.proxy.service import MODES, ProxyConfig, ServiceProxy

__all__ = ["MODES", "ProxyConfig", "ServiceProxy"]
