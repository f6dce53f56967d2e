"""ExternalName: the CNAME and its target, chased through a real Unbound, in one response.

The specification's 2.5 example: ``foo.default.svc.cluster.local A`` answers
``CNAME www.example.com.`` and ``www.example.com. A 192.0.2.53`` (AAAA
``2001:db8::1`` for the IPv6 question), as CoreDNS does with its upstream.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Iterator

import dns.flags
import dns.rcode
import dns.rdatatype
import pytest
from tests.support.dns import service
from tests.support.dns_cluster import Cluster, make_cluster_fixture
from tests.support.unbound import free_udp_tcp_port, unbound

pytestmark = pytest.mark.integration

FOO = "foo.default.svc.cluster.local"
ZONE_DATA = [
    "example.com. 3600 IN SOA ns.example.com. admin.example.com. 1 3600 600 86400 60",
    "www.example.com. 28715 IN A 192.0.2.53",
    "www.example.com. 28715 IN AAAA 2001:db8::1",
    "alias.example.com. 300 IN CNAME www.example.com.",
]


@pytest.fixture(scope="module")
def upstream_port() -> Iterator[int]:
    with unbound("example.com.", ZONE_DATA) as port:
        yield port


async def _cluster(tmp_path, **config: object) -> AsyncIterator[Cluster]:  # type: ignore[no-untyped-def]
    gen = make_cluster_fixture(**config)(tmp_path)
    c = await gen.__anext__()
    try:
        for name, target in (("foo", "www.example.com"), ("via", "alias.example.com"),
                             ("gone", "missing.example.com")):  # fmt: skip
            await c.client.create(
                service(name, cluster_ip=None, ports=[{"port": 80}],
                        type="ExternalName", externalName=target)
            )  # fmt: skip
        await c.until("gone.default.svc.cluster.local", "CNAME", lambda m: bool(m.answer), 5)
        yield c
    finally:
        with pytest.raises(StopAsyncIteration):
            await gen.__anext__()


@pytest.fixture
async def chasing(upstream_port: int, tmp_path) -> AsyncIterator[Cluster]:  # type: ignore[no-untyped-def]
    async for c in _cluster(tmp_path, upstreams=(("127.0.0.1", upstream_port),)):
        yield c


@pytest.fixture
async def dead_upstream(tmp_path) -> AsyncIterator[Cluster]:  # type: ignore[no-untyped-def]
    config = {"upstreams": (("127.0.0.1", free_udp_tcp_port()),), "upstream_timeout": 5.0}
    async for c in _cluster(tmp_path, chase_timeout=0.5, **config):
        yield c


def answer(m) -> list[str]:  # type: ignore[no-untyped-def]
    """Answer records in order, TTLs left out (the upstream's count down)."""
    return [
        f"{rr.name} {dns.rdatatype.to_text(rr.rdtype)} {rd.to_text()}"
        for rr in m.answer
        for rd in rr
    ]


CASES = [
    (FOO, "A", [f"{FOO}. CNAME www.example.com.", "www.example.com. A 192.0.2.53"]),
    (FOO, "AAAA", [f"{FOO}. CNAME www.example.com.", "www.example.com. AAAA 2001:db8::1"]),
    # the upstream's own chain is kept as it came (Unbound's local data stops at the CNAME)
    (
        "via.default.svc.cluster.local",
        "A",
        [
            "via.default.svc.cluster.local. CNAME alias.example.com.",
            "alias.example.com. CNAME www.example.com.",
        ],
    ),
    # the target does not exist upstream: still the CNAME, NOERROR (as CoreDNS)
    (
        "gone.default.svc.cluster.local",
        "A",
        ["gone.default.svc.cluster.local. CNAME missing.example.com."],
    ),
    # only address questions are chased; other types are NODATA (CoreDNS's answer)
    (FOO, "MX", []),
    (FOO, "CNAME", [f"{FOO}. CNAME www.example.com."]),
]


async def test_cname_and_target_in_one_response(chasing: Cluster) -> None:
    for name, rdtype, want in CASES:
        for tcp in (False, True):
            m = await chasing.ask(name, rdtype, tcp=tcp)
            assert m.rcode() == dns.rcode.NOERROR, (name, rdtype, tcp)
            assert answer(m) == want, (name, rdtype, tcp)
            assert m.flags & dns.flags.AA
    # the zone's TTL on the CNAME, the upstream's (counted down) on its data
    m = await chasing.ask(FOO, "A")
    assert m.answer[0].ttl == 5 and 28000 < m.answer[1].ttl <= 28715
    assert chasing.server.stats["chased"] == 9  # 4 address questions x 2 transports + 1


async def test_dig_sees_the_chased_answer(chasing: Cluster) -> None:
    for rdtype, last in (("A", "192.0.2.53"), ("AAAA", "2001:db8::1")):
        proc = await asyncio.create_subprocess_exec(
            "dig", "@127.0.0.1", "-p", str(chasing.port), "+time=2", "+tries=1", FOO, rdtype,
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out = (await proc.communicate())[0].decode()
        assert "status: NOERROR" in out, out
        section = re.search(r";; ANSWER SECTION:\n(.*?)\n\n", out, re.S)
        assert section, out
        rows = [line.split() for line in section.group(1).splitlines()]
        assert [(r[0], r[3], r[4]) for r in rows] == [
            (f"{FOO}.", "CNAME", "www.example.com."),
            ("www.example.com.", rdtype, last),
        ], out


async def test_chased_answers_are_not_memoised(chasing: Cluster) -> None:
    fast = chasing.server.stats["fast_answers"]
    for _ in range(3):
        assert len(answer(await chasing.ask(FOO, "A"))) == 2
    assert chasing.server.stats["fast_answers"] == fast


async def test_a_dead_upstream_still_gives_the_cname_within_the_chase_timeout(
    dead_upstream: Cluster,
) -> None:
    started = time.monotonic()
    m = await dead_upstream.ask(FOO, "A")
    took = time.monotonic() - started
    assert m.rcode() == dns.rcode.NOERROR
    assert answer(m) == [f"{FOO}. CNAME www.example.com."]
    assert took < 2.0, f"the chase is bounded by chase_timeout (0.5 s), took {took:.2f}s"
    # and over TCP
    m = await dead_upstream.ask(FOO, "AAAA", tcp=True)
    assert answer(m) == [f"{FOO}. CNAME www.example.com."]
