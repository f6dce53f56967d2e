"""The DNS server's /metrics: CoreDNS's series after known queries, scraped over HTTP."""

from __future__ import annotations

import asyncio
import os
import urllib.request
from collections.abc import AsyncIterator, Iterator

import dns.rcode
import pytest
from tests.support.dns import service
from tests.support.dns_cluster import Cluster, make_cluster_fixture
from tests.support.leaks import LeakProbe
from tests.support.scrape import Scrape, scrape
from tests.support.unbound import unbound

from shiftnet.dns.metrics import DNSCollector
from shiftnet.metrics_endpoint import MetricsEndpoint

pytestmark = pytest.mark.integration

ZONE_DATA = [
    "example.test. 3600 IN SOA ns.example.test. admin.example.test. 1 3600 600 86400 1",
    "long.example.test. 300 IN A 192.0.2.2",
]


@pytest.fixture(scope="module")
def upstream_port() -> Iterator[int]:
    with unbound("example.test.", ZONE_DATA) as port:
        yield port


@pytest.fixture
async def forwarding(upstream_port: int, tmp_path) -> AsyncIterator[Cluster]:  # type: ignore[no-untyped-def]
    gen = make_cluster_fixture(upstreams=(("127.0.0.1", upstream_port),))(tmp_path)
    c = await gen.__anext__()
    try:
        yield c
    finally:
        with pytest.raises(StopAsyncIteration):
            await gen.__anext__()


def _delta(before: Scrape, after: Scrape, name: str, **labels: str) -> float:
    return (after.value(name, **labels) or 0.0) - (before.value(name, **labels) or 0.0)


async def test_known_queries_show_in_coredns_series(forwarding: Cluster) -> None:
    c = forwarding
    await c.client.create(service("web", cluster_ip="127.30.0.10", ports=[{"port": 80}]))
    await c.until("web.default.svc.cluster.local", "A", lambda m: bool(m.answer), 5)
    endpoint = MetricsEndpoint(":0", [DNSCollector(c.server)])
    try:
        before = await asyncio.to_thread(scrape, endpoint.url)
        for _ in range(5):
            assert (await c.ask("web.default.svc.cluster.local")).answer
        for _ in range(3):
            m = await c.ask("nothing.default.svc.cluster.local", "AAAA")
            assert m.rcode() == dns.rcode.NXDOMAIN
        for _ in range(2):
            assert (await c.ask("web.default.svc.cluster.local", "SRV", tcp=True)).answer
        for _ in range(2):  # the first goes upstream, the second comes from the cache
            assert (await c.ask("long.example.test")).answer
        after = await asyncio.to_thread(scrape, endpoint.url)
    finally:
        endpoint.stop()
    host, port = c.server.address
    server = f"dns://{host}:{port}"
    req = "coredns_dns_requests_total"
    common = {"server": server, "zone": ".", "family": "1"}
    assert _delta(before, after, req, proto="udp", type="A", **common) == 7
    assert _delta(before, after, req, proto="udp", type="AAAA", **common) == 3
    assert _delta(before, after, req, proto="tcp", type="SRV", **common) == 2
    resp = "coredns_dns_responses_total"
    assert _delta(before, after, resp, server=server, zone=".", rcode="NXDOMAIN") == 3
    assert _delta(before, after, resp, server=server, zone=".", rcode="NOERROR") == 9
    duration = "coredns_dns_request_duration_seconds_count"
    assert _delta(before, after, duration, server=server, zone=".", type="A") == 7
    sizes = "coredns_dns_response_size_bytes_count"
    assert _delta(before, after, sizes, server=server, zone=".", proto="tcp") == 2
    inf = after.value(
        "coredns_dns_request_size_bytes_bucket", server=server, proto="udp", le="+Inf"
    )
    assert inf == after.value("coredns_dns_request_size_bytes_count", server=server, proto="udp")
    assert _delta(before, after, "coredns_cache_misses_total", server=server, zones=".") == 1
    hits = "coredns_cache_hits_total"
    assert _delta(before, after, hits, server=server, type="success", zones=".") == 1


async def test_thousands_of_scrapes_leak_no_descriptor(forwarding: Cluster) -> None:
    endpoint = MetricsEndpoint("127.0.0.1:0", [DNSCollector(forwarding.server)])
    try:

        def many(n: int) -> None:
            # Each scrape is a whole connection and answer; parsing every one would
            # only spend the test's time, so the series are parsed once.
            for _ in range(n):
                with urllib.request.urlopen(endpoint.url, timeout=10) as resp:
                    assert (
                        resp.status == 200
                        and b"\n# TYPE coredns_dns_requests_total " in resp.read()
                    )

        first = await asyncio.to_thread(scrape, endpoint.url)
        assert first.text.count("# TYPE coredns_dns_requests_total ") == 1
        await asyncio.to_thread(many, 50)
        probe = LeakProbe(os.getpid(), name="dns metrics", rss_growth_kib=None)
        await asyncio.to_thread(many, 3000)
        await probe.settled()
    finally:
        endpoint.stop()
