"""The ExternalName chase stops at 8 CNAME links, keeping the CNAMEs it found.

A real Unbound serves ``chain.example`` as an authoritative zone holding a
chain ``c0 -> c1 -> ... -> c12 -> A/AAAA`` (13 links); Unbound follows it
inside its zone and stops after 9 links. CoreDNS counts its own hops and
adds nothing past the 8th (``len(previousRecords) > 7`` in its backend
lookup); shiftnet's bound counts every CNAME of the answer, the zone's and the
upstream's, so a client gets at most 8 whatever the upstream sends (see
docs/dns.md, "ExternalName and the upstreams"). Where the bound cuts the
chain, the answer is NOERROR with the 8 CNAMEs, ending in a name the client's
resolver may follow; a chain of exactly 8 still ends in its address.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import dns.asyncquery
import dns.message
import dns.rcode
import dns.rdatatype
import pytest
from tests.support.dns import service
from tests.support.dns_cluster import Cluster, make_cluster_fixture
from tests.support.unbound import unbound

from shiftnet.dns.zone import MAX_CNAME_CHAIN

pytestmark = pytest.mark.integration

SVC = "default.svc.cluster.local"
CHAIN = [
    "$ORIGIN chain.example.",
    "$TTL 300",
    "@ IN SOA ns.chain.example. admin.chain.example. 1 3600 600 86400 60",
    "@ IN NS ns.chain.example.",
    "ns IN A 192.0.2.1",
    *(f"c{i} IN CNAME c{i + 1}" for i in range(12)),
    "c12 IN A 192.0.2.80",
    "c12 IN AAAA 2001:db8::80",
]


def hops(first: int, last: int) -> list[str]:
    return [f"c{i}.chain.example. CNAME c{i + 1}.chain.example." for i in range(first, last)]


@pytest.fixture(scope="module")
def upstream_port() -> Iterator[int]:
    with unbound(
        "example.com.",
        ["example.com. 3600 IN SOA ns.example.com. admin.example.com. 1 3600 600 86400 60"],
        auth_zones={"chain.example.": "\n".join(CHAIN) + "\n"},
    ) as port:
        yield port


@pytest.fixture
async def chasing(upstream_port: int, tmp_path) -> AsyncIterator[Cluster]:  # type: ignore[no-untyped-def]
    gen = make_cluster_fixture(upstreams=(("127.0.0.1", upstream_port),))(tmp_path)
    c = await gen.__anext__()
    try:
        for name, target in (
            ("long", "c0.chain.example"),  # 13 links upstream
            ("short", "c5.chain.example"),  # 7 upstream + its own: exactly 8
            ("hop", f"long.{SVC}"),  # in the zone first, then out of it
        ):
            await c.client.create(
                service(name, cluster_ip=None, type="ExternalName", externalName=target)
            )
        await c.until(f"hop.{SVC}", "CNAME", lambda m: bool(m.answer), 5)
        yield c
    finally:
        with pytest.raises(StopAsyncIteration):
            await gen.__anext__()


def answer(m) -> list[str]:  # type: ignore[no-untyped-def]
    """Answer records in order, TTLs left out (the upstream's count down)."""
    return [
        f"{rr.name} {dns.rdatatype.to_text(rr.rdtype)} {rd.to_text()}"
        for rr in m.answer
        for rd in rr
    ]


CASES = [
    # the upstream sends 9 CNAMEs; 7 fit behind the zone's own
    ("long", "A", [f"long.{SVC}. CNAME c0.chain.example.", *hops(0, 7)]),
    ("long", "AAAA", [f"long.{SVC}. CNAME c0.chain.example.", *hops(0, 7)]),
    # two of the zone's own, then 6 of the upstream's
    (
        "hop",
        "A",
        [f"hop.{SVC}. CNAME long.{SVC}.", f"long.{SVC}. CNAME c0.chain.example.", *hops(0, 6)],
    ),
    # 8 CNAMEs in all is within the bound: the address ends the answer
    (
        "short",
        "A",
        [f"short.{SVC}. CNAME c5.chain.example.", *hops(5, 12), "c12.chain.example. A 192.0.2.80"],
    ),
    (
        "short",
        "AAAA",
        [
            f"short.{SVC}. CNAME c5.chain.example.",
            *hops(5, 12),
            "c12.chain.example. AAAA 2001:db8::80",
        ],
    ),
]


async def test_the_upstream_really_sends_more_than_the_bound(upstream_port: int) -> None:
    q = dns.message.make_query("c0.chain.example.", "A")
    m = await dns.asyncquery.udp(q, "127.0.0.1", port=upstream_port, timeout=3)
    assert len(m.answer) > MAX_CNAME_CHAIN, m.to_text()


async def test_the_chase_stops_at_8_links_and_keeps_the_cnames_found(chasing: Cluster) -> None:
    for name, rdtype, want in CASES:
        for tcp in (False, True):
            m = await chasing.ask(f"{name}.{SVC}", rdtype, tcp=tcp)
            assert m.rcode() == dns.rcode.NOERROR, (name, rdtype, tcp)
            assert answer(m) == want, (name, rdtype, tcp, m.to_text())
            cnames = [rr for rr in m.answer if rr.rdtype == dns.rdatatype.CNAME]
            assert len(cnames) <= MAX_CNAME_CHAIN
