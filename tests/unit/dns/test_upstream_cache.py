"""The forwarding cache: TTLs honoured (counted down, negative TTL from the SOA), LRU bound."""

from __future__ import annotations

import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from shiftnet.dns.upstream import AnswerCache, UpstreamAnswer, cache_ttl, parse_upstream
from shiftnet.errors import ConfigError


def rrset(text: str) -> dns.rrset.RRset:
    name, ttl, _cls, rdtype, *rdata = text.split()
    return dns.rrset.from_text(name, int(ttl), "IN", rdtype, " ".join(rdata))


A = rrset("www.example.com. 60 IN A 192.0.2.1")
SHORT = rrset("www.example.com. 10 IN A 192.0.2.1")
SOA = rrset("example.com. 3600 IN SOA ns.example.com. a.example.com. 1 2 3 4 30")
KEY = (dns.name.from_text("www.example.com."), dns.rdatatype.A, dns.rdataclass.IN)


def test_positive_ttl_is_the_smallest_rrset_ttl() -> None:
    assert cache_ttl(UpstreamAnswer(dns.rcode.NOERROR, (A, SHORT))) == 10


def test_negative_ttl_is_min_of_soa_ttl_and_minimum() -> None:
    assert cache_ttl(UpstreamAnswer(dns.rcode.NXDOMAIN, (), (SOA,))) == 30
    assert cache_ttl(UpstreamAnswer(dns.rcode.NOERROR, (), (SOA,))) == 30


@pytest.mark.parametrize("rcode", [dns.rcode.SERVFAIL, dns.rcode.REFUSED])
def test_failures_are_not_cached(rcode: int) -> None:
    assert cache_ttl(UpstreamAnswer(rcode, (A,))) == 0


def test_negative_without_soa_is_not_cached() -> None:
    assert cache_ttl(UpstreamAnswer(dns.rcode.NXDOMAIN)) == 0


def test_entries_expire_and_ttls_count_down() -> None:
    cache = AnswerCache()
    cache.put(KEY, UpstreamAnswer(dns.rcode.NOERROR, (A,)), now=100.0)
    hit = cache.get(KEY, now=125.5)
    assert hit is not None and hit.answer[0].ttl == 35
    assert A.ttl == 60, "the stored answer is never modified"
    assert cache.get(KEY, now=160.0) is None
    assert len(cache) == 0


def test_max_ttl_caps_long_lived_answers() -> None:
    cache = AnswerCache(max_ttl=5)
    cache.put(KEY, UpstreamAnswer(dns.rcode.NOERROR, (A,)), now=0.0)
    assert cache.get(KEY, now=4.9) is not None
    assert cache.get(KEY, now=5.0) is None


def test_least_recently_used_is_evicted_when_full() -> None:
    cache = AnswerCache(max_entries=2)
    keys = [(dns.name.from_text(f"h{i}.example."), 1, 1) for i in range(3)]
    cache.put(keys[0], UpstreamAnswer(0, (A,)), 0)
    cache.put(keys[1], UpstreamAnswer(0, (A,)), 0)
    assert cache.get(keys[0], 1) is not None  # h0 is now the most recent
    cache.put(keys[2], UpstreamAnswer(0, (A,)), 1)
    assert cache.get(keys[1], 1) is None
    assert cache.get(keys[0], 1) is not None and cache.get(keys[2], 1) is not None


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1.1.1.1", ("1.1.1.1", 53)),
        ("127.0.0.1:5353", ("127.0.0.1", 5353)),
        ("[::1]:5300", ("::1", 5300)),
        ("::1", ("::1", 53)),
    ],
)
def test_parse_upstream(text: str, want: tuple[str, int]) -> None:
    assert parse_upstream(text) == want


@pytest.mark.parametrize("text", ["dns.google", "1.1.1.1:0", "1.1.1.1:99999", "1.1.1.1:x", ""])
def test_parse_upstream_rejects(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_upstream(text)


async def test_identical_questions_in_flight_share_one_upstream_query() -> None:
    import asyncio

    from shiftnet.dns.upstream import Upstreams

    calls = 0
    release = asyncio.Event()

    class Counting(Upstreams):
        async def _ask(self, qname, rdtype, rdclass):  # type: ignore[no-untyped-def]
            nonlocal calls
            calls += 1
            await release.wait()
            return UpstreamAnswer(dns.rcode.NOERROR, (A,))

    up = Counting([("127.0.0.1", 1)])
    name = dns.name.from_text("www.example.com.")
    tasks = [asyncio.ensure_future(up.resolve(name, 1, 1)) for _ in range(5)]
    await asyncio.sleep(0.01)
    release.set()
    results = await asyncio.gather(*tasks)
    assert calls == 1
    assert all(r is not None and r.answer[0][0].address == "192.0.2.1" for r in results)
    assert await up.resolve(name, 1, 1) is not None and calls == 1  # now from the cache
