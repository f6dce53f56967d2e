"""Prometheus view of the DNS server's counters, with CoreDNS's names where CoreDNS has one.

The hot path only bumps plain integers in ``DNSServer.stats`` and
``DNSServer.traffic``; this collector reads them at scrape time, so serving a
query never takes a metrics lock. ``server`` is ``dns://ADDR:PORT`` and the
zone ``.`` (one server block answers the cluster zone and forwards the rest,
as CoreDNS's default Corefile in Kubernetes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
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
        self.traffic = server.count_traffic()

    def collect(self) -> Iterator[Metric]:
        yield from self._coredns()
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

    def _coredns(self) -> Iterator[Metric]:
        host, port = self.server.address
        server = f"dns://{host}:{port}"
        traffic = self.traffic
        requests = CounterMetricFamily(
            "coredns_dns_requests",
            "Counter of DNS requests made per zone, protocol and family.",
            labels=["server", "zone", "proto", "family", "type"],
        )
        for (proto, family, qtype), n in sorted(traffic.requests.items()):
            requests.add_metric([server, ".", proto, family, qtype], n)
        yield requests
        responses = CounterMetricFamily(
            "coredns_dns_responses",
            "Counter of response status codes.",
            labels=["server", "zone", "rcode"],
        )
        for rcode, n in sorted(traffic.responses.items()):
            responses.add_metric([server, ".", rcode], n)
        yield responses
        tables = (
            ("coredns_dns_request_duration_seconds", "Histogram of the time (in seconds) each "
             "request took per zone.", "type", traffic.durations),
            ("coredns_dns_request_size_bytes", "Size of the EDNS0 UDP buffer in bytes (64K for "
             "TCP) per zone and protocol.", "proto", traffic.request_sizes),
            ("coredns_dns_response_size_bytes", "Size of the returned response in bytes.",
             "proto", traffic.response_sizes),
        )  # fmt: skip
        for name, doc, label, table in tables:
            histograms = HistogramMetricFamily(name, doc, labels=["server", "zone", label])
            for key, histogram in sorted(table.items()):
                histograms.add_metric(
                    [server, ".", key], histogram.cumulative(), sum_value=histogram.total
                )
            yield histograms
        upstreams = self.server.upstreams
        if upstreams is None:
            return
        hits = CounterMetricFamily(
            "coredns_cache_hits",
            "The count of cache hits.",
            labels=["server", "type", "zones"],
        )
        for kind, n in sorted(upstreams.cache.hits.items()):
            hits.add_metric([server, kind, "."], n)
        yield hits
        misses = CounterMetricFamily(
            "coredns_cache_misses", "The count of cache misses.", labels=["server", "zones"]
        )
        misses.add_metric([server, "."], upstreams.cache.misses)
        yield misses
