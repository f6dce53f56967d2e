"""Prometheus view of the DNS server's counters.

The hot path only bumps plain integers in ``DNSServer.stats``; this collector
reads them at scrape time, so serving a query never takes a metrics lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from shiftnet.dns.server import DNSServer

_COUNTERS = {
    "fast_answers": "Queries answered from memoised wire bytes",
    "forwarded": "Queries sent on to the upstream resolvers (cache hits included)",
    "chased": "ExternalName answers whose target was looked up through the upstreams",
    "dropped": "Queries not answered (malformed beyond a header, responses, full buffers)",
    "internal_errors": "Queries that hit a bug in the server (each logged)",
    "zone_builds": "Times the cluster zone was rebuilt from the informer caches",
    "pod_updates": "Times only the zone's pods changed (verified pod records), without a rebuild",
    "tcp_evicted": "Idle TCP clients closed to admit a new one at the connection limit",
    "tcp_refused": "TCP clients refused because every connection was busy being answered",
}


class DNSCollector(Collector):
    def __init__(self, server: DNSServer) -> None:
        self.server = server

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        stats = self.server.stats
        queries = CounterMetricFamily(
            "shiftnet_dns_queries", "DNS queries received", labels=["transport"]
        )
        queries.add_metric(["udp"], stats["udp_queries"])
        queries.add_metric(["tcp"], stats["tcp_queries"])
        yield queries
        for key, doc in _COUNTERS.items():
            yield CounterMetricFamily(f"shiftnet_dns_{key}", doc, value=stats[key])
        yield GaugeMetricFamily(
            "shiftnet_dns_zone_records", "Records in the cluster zone", value=len(self.server.zone)
        )
