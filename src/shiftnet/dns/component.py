"""The cluster DNS as a ``shiftnet up`` component (``shiftnet.cluster.LocalCluster``).

Settings come from ``ClusterConfig.extra["dns"]`` (keys ``listen``, ``domain``,
``ttl``, ``upstreams``, ``tcp_idle_timeout``, ``max_tcp_connections``,
``chase_timeout``, ``pods``, ``wildcards``, ``headless_empty``, ``empty_non_terminal``,
``externalname_other``, ``any_query``, ``dns_version_other``)
and otherwise from the ``SHIFTNET_DNS_*`` environment, exactly as ``shiftnet dns``
reads them.
"""

from __future__ import annotations

from typing import Any

from shiftnet.dns.config import DNSConfig
from shiftnet.dns.server import DNSServer


class DNSComponent:
    name = "dns"

    def __init__(self, cluster: Any) -> None:
        opts: dict[str, Any] = dict(cluster.config.extra.get("dns") or {})
        self.config = DNSConfig.build(
            listen=opts.get("listen"),
            domain=opts.get("domain"),
            ttl=opts.get("ttl"),
            upstreams=opts.get("upstreams") or (),
            tcp_idle_timeout=opts.get("tcp_idle_timeout"),
            max_tcp_connections=opts.get("max_tcp_connections"),
            chase_timeout=opts.get("chase_timeout"),
            pod_mode=opts.get("pods"),
            wildcards=opts.get("wildcards"),
            headless_empty=opts.get("headless_empty"),
            empty_non_terminal=opts.get("empty_non_terminal"),
            externalname_other=opts.get("externalname_other"),
            any_query=opts.get("any_query"),
            dns_version_other=opts.get("dns_version_other"),
        )
        self.server = DNSServer(cluster.require_store(), self.config)

    async def start(self) -> None:
        await self.server.start()

    @property
    def address(self) -> tuple[str, int]:
        """Where pods send their queries (what the node agent puts in their resolver env)."""
        host, port = self.server.address
        return (str(host), int(port))

    @property
    def domain(self) -> str:
        return str(self.config.domain)

    async def stop(self) -> None:
        await self.server.stop()

    def metrics_collectors(self) -> list[Any]:
        from shiftnet.dns.metrics import DNSCollector

        return [DNSCollector(self.server)]

    def summary(self) -> str:
        host, port = self.server.address
        return (
            f"{self.config.zone_domain} on {host}:{port} (udp, tcp); "
            "a pod's resolver: shiftnet dns resolv-conf NAMESPACE"
        )
