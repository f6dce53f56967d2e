"""The proxy as a `shiftnet up` component (name, start, stop, summary).

Mode: ``ClusterConfig.extra["proxy_mode"]`` (what ``shiftnet up --proxy-mode``
sets), else SHIFTNET_PROXY_MODE, else by network mode: user space in local
mode (ClusterIPs are loopback addresses the proxy binds directly), nftables
in SDN mode (ClusterIPs are not local addresses there). ``/healthz`` is on
SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS, else on a free loopback port (two local
clusters on one machine cannot share kube-proxy's 10256), named in the summary.
"""

from __future__ import annotations

import os
from typing import Any

from shiftnet.proxy.healthcheck import healthz_address
from shiftnet.proxy.service import ProxyConfig, ServiceProxy


def healthz_from_env() -> str | None:
    """SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS checked (``shiftnet up`` asks before it starts
    anything), a free loopback port when unset, None when set empty (not served)."""
    healthz = os.environ.get("SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS", "127.0.0.1:0") or None
    if healthz:
        healthz_address(healthz)
    return healthz


class ProxyComponent:
    name = "proxy"

    def __init__(self, cluster: Any) -> None:
        cfg = cluster.config
        default = "userspace" if getattr(cfg, "network", "local") == "local" else "nftables"
        mode = cfg.extra.get("proxy_mode") or os.environ.get("SHIFTNET_PROXY_MODE") or default
        # this node's endpoints serve the Local traffic policies
        healthz = healthz_from_env()
        self.config = ProxyConfig.from_env(
            mode=mode,
            node_name=getattr(cfg, "node_name", None),
            healthz_bind_address=healthz,
            state_dir=cfg.state_dir,  # the mode record `shiftnet diagnose` reads
        )
        self.proxy = ServiceProxy(cluster.require_store(), self.config)
        self.proxy.health.avoid = cluster.reserved_ports()

    async def start(self) -> None:
        await self.proxy.start()

    async def stop(self) -> None:
        await self.proxy.stop()

    def metrics_collectors(self) -> list[Any]:
        """kube-proxy's series, and the kernel driver's (in the process-wide registry)."""
        import prometheus_client

        from shiftnet.proxy import metrics

        return [metrics.REGISTRY, prometheus_client.REGISTRY]

    def summary(self) -> str:
        entries = self.proxy.table.entries
        bound = len(self.proxy.userspace.services) if self.proxy.userspace else len(entries)
        text = f"{self.config.mode} mode, {bound} of {len(entries)} service ports served"
        refused = len(self.proxy.userspace.refused) if self.proxy.userspace else 0
        text += f", {refused} refused a field (see the log)" if refused else ""
        url = self.proxy.health.url
        return text + (f", healthz on {url}" if url else "")
