"""The proxy as a `shiftnet up` component (name, start, stop, summary).

The mode comes from SHIFTNET_PROXY_MODE (``shiftnet up --proxy-mode`` sets
it); local mode defaults to user space, whose ClusterIPs are loopback
addresses the proxy binds directly.
"""

from __future__ import annotations

from typing import Any

from shiftnet.proxy.service import ProxyConfig, ServiceProxy


class ProxyComponent:
    name = "proxy"

    def __init__(self, cluster: Any) -> None:
        self.config = ProxyConfig.from_env()
        self.proxy = ServiceProxy(cluster.require_store(), self.config)

    async def start(self) -> None:
        await self.proxy.start()

    async def stop(self) -> None:
        await self.proxy.stop()

    def summary(self) -> str:
        return f"{self.config.mode} mode, {len(self.proxy.table.entries)} service ports"
