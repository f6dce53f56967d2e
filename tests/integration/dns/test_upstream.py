"""Names outside the cluster zone: forwarded to a real Unbound, cached no longer than the TTL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import dns.flags
import dns.rcode
import dns.rdatatype
import pytest
from tests.support.dns import service
from tests.support.dns_cluster import Cluster, make_cluster_fixture
from tests.support.unbound import unbound

pytestmark = pytest.mark.integration

ZONE_DATA = [
    "example.test. 3600 IN SOA ns.example.test. admin.example.test. 1 3600 600 86400 1",
    "www.example.test. 1 IN A 192.0.2.1",
    "long.example.test. 300 IN A 192.0.2.2",
    "txt.example.test. 300 IN TXT " + "x" * 200,
] + [f"many.example.test. 300 IN A 192.0.2.{i}" for i in range(1, 80)]


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


def ips(m) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(rd.to_text() for rr in m.answer for rd in rr)


async def test_outside_names_are_forwarded(forwarding: Cluster) -> None:
    m = await forwarding.ask("long.example.test")
    assert m.rcode() == dns.rcode.NOERROR
    assert ips(m) == ["192.0.2.2"]
    assert m.flags & dns.flags.RA and not m.flags & dns.flags.AA
    nx = await forwarding.ask("missing.example.test")
    assert nx.rcode() == dns.rcode.NXDOMAIN
    assert [r.rdtype for r in nx.authority] == [dns.rdatatype.SOA]


async def test_cluster_names_are_still_answered_locally(forwarding: Cluster) -> None:
    await forwarding.client.create(service("web", cluster_ip="127.30.0.10", ports=[{"port": 80}]))
    await forwarding.until("web.default.svc.cluster.local", "A", lambda m: bool(m.answer), 5)
    sent = forwarding.server.upstreams.sent  # type: ignore[union-attr]
    m = await forwarding.ask("nope.default.svc.cluster.local")
    assert m.rcode() == dns.rcode.NXDOMAIN and m.flags & dns.flags.AA
    assert forwarding.server.upstreams.sent == sent  # type: ignore[union-attr]


async def test_cache_respects_ttl(forwarding: Cluster) -> None:
    up = forwarding.server.upstreams
    assert up is not None
    first = await forwarding.ask("long.example.test")
    sent = up.sent
    again = await forwarding.ask("LONG.example.test")  # case does not matter to the cache
    assert up.sent == sent, "second query inside the TTL must come from the cache"
    assert ips(again) == ips(first)
    assert again.answer[0].ttl <= first.answer[0].ttl

    await forwarding.ask("www.example.test")  # TTL 1
    sent = up.sent
    await asyncio.sleep(1.1)
    m = await forwarding.ask("www.example.test")
    assert ips(m) == ["192.0.2.1"]
    assert up.sent == sent + 1, "an expired answer must be asked for again"


async def test_large_forwarded_answers_truncate_over_udp_and_pass_over_tcp(
    forwarding: Cluster,
) -> None:
    udp = await forwarding.ask("many.example.test")
    assert udp.flags & dns.flags.TC
    tcp = await forwarding.ask("many.example.test", tcp=True)
    assert len(tcp.answer[0]) == 79


async def test_dead_upstream_gives_servfail(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.support.unbound import free_udp_tcp_port

    gen = make_cluster_fixture(
        upstreams=(("127.0.0.1", free_udp_tcp_port()),), upstream_timeout=0.3
    )(tmp_path)
    c = await gen.__anext__()
    try:
        m = await c.ask("example.org")
        assert m.rcode() == dns.rcode.SERVFAIL
    finally:
        with pytest.raises(StopAsyncIteration):
            await gen.__anext__()
