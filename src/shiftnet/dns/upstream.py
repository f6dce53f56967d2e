"""Forwarding for names outside the cluster zone, with a TTL-respecting cache.

Pods resolve everything through the cluster DNS, so names like
``example.com`` are passed to the configured upstream resolvers. Answers are
cached for no longer than their smallest TTL (negative answers for the SOA's
negative TTL, RFC 2308) and served with TTLs counted down, so a client never
sees data older than its owner allowed. Identical questions in flight share
one upstream query.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import dns.asyncquery
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from shiftnet.api.names import is_digits
from shiftnet.errors import ConfigError

log = logging.getLogger(__name__)

CacheKey = tuple[dns.name.Name, int, int]


@dataclass(frozen=True)
class UpstreamAnswer:
    """The sections of an upstream response that are passed on to the client."""

    rcode: int
    answer: tuple[dns.rrset.RRset, ...] = ()
    authority: tuple[dns.rrset.RRset, ...] = ()
    additional: tuple[dns.rrset.RRset, ...] = ()


def parse_upstream(text: str) -> tuple[str, int]:
    """``"1.1.1.1"``, ``"127.0.0.1:5353"`` or ``"[::1]:53"`` as (address, port)."""
    import ipaddress

    host, port = text.strip(), 53
    if host.startswith("["):
        inner, _, rest = host[1:].partition("]")
        host = inner
        if rest.startswith(":"):
            port = _port(text, rest[1:])
    elif host.count(":") == 1:
        host, _, port_text = host.partition(":")
        port = _port(text, port_text)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError(f"upstream {text!r} is not an IP address with an optional port") from None
    return host, port


def _port(text: str, port_text: str) -> int:
    if not is_digits(port_text) or not 0 < int(port_text) < 65536:
        raise ConfigError(f"upstream {text!r} has an invalid port")
    return int(port_text)


def cache_ttl(answer: UpstreamAnswer) -> int:
    """How long ``answer`` may be cached: 0 for 'not at all'."""
    if answer.rcode not in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
        return 0
    if answer.rcode == dns.rcode.NOERROR and answer.answer:
        return min(r.ttl for r in (*answer.answer, *answer.authority))
    for rrset in answer.authority:  # negative answer: the SOA bounds it (RFC 2308 sec. 5)
        if rrset.rdtype == dns.rdatatype.SOA:
            return min(int(rrset.ttl), int(rrset[0].minimum))
    return 0


def _aged(rrsets: tuple[dns.rrset.RRset, ...], elapsed: int) -> tuple[dns.rrset.RRset, ...]:
    out = []
    for rrset in rrsets:
        copy = dns.rrset.RRset(rrset.name, rrset.rdclass, rrset.rdtype)
        copy.update(rrset)  # type: ignore[no-untyped-call]
        copy.ttl = max(0, rrset.ttl - elapsed)
        out.append(copy)
    return tuple(out)


class AnswerCache:
    """Answers by (name, type, class), each kept until its TTL runs out; LRU when full."""

    def __init__(self, max_entries: int = 10_000, max_ttl: int = 3600) -> None:
        self.max_entries = max_entries
        self.max_ttl = max_ttl
        self._entries: OrderedDict[CacheKey, tuple[float, float, UpstreamAnswer]] = OrderedDict()
        self.hits = {"success": 0, "denial": 0}  # CoreDNS's cache types (NXDOMAIN/NODATA: denial)
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey, now: float) -> UpstreamAnswer | None:
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        stored, expires, answer = entry
        if now >= expires:
            del self._entries[key]
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits["success" if answer.rcode == 0 and answer.answer else "denial"] += 1
        elapsed = int(now - stored)
        return UpstreamAnswer(
            answer.rcode,
            _aged(answer.answer, elapsed),
            _aged(answer.authority, elapsed),
            _aged(answer.additional, elapsed),
        )

    def put(self, key: CacheKey, answer: UpstreamAnswer, now: float) -> None:
        ttl = min(cache_ttl(answer), self.max_ttl)
        if ttl <= 0:
            return
        self._entries[key] = (now, now + ttl, answer)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


class Upstreams:
    """The configured resolvers, tried in order, behind one :class:`AnswerCache`."""

    def __init__(
        self,
        servers: Sequence[tuple[str, int]],
        *,
        timeout: float = 2.0,
        cache: AnswerCache | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not servers:
            raise ConfigError("at least one upstream resolver is needed for forwarding")
        self.servers = list(servers)
        self.timeout = timeout
        self.cache = cache if cache is not None else AnswerCache()
        self.clock = clock
        self.sent = 0  # queries that went to an upstream (not answered from the cache)
        self._inflight: dict[CacheKey, asyncio.Future[UpstreamAnswer | None]] = {}

    async def resolve(
        self, qname: dns.name.Name, rdtype: int, rdclass: int
    ) -> UpstreamAnswer | None:
        """The answer for one question, or None when no upstream answered."""
        key: CacheKey = (qname.canonicalize(), rdtype, rdclass)
        cached = self.cache.get(key, self.clock())
        if cached is not None:
            return cached
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[UpstreamAnswer | None] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            answer = await self._ask(qname, rdtype, rdclass)
            if answer is not None:
                self.cache.put(key, answer, self.clock())
            future.set_result(answer)
            return answer
        except asyncio.CancelledError:
            future.cancel()  # waiters give up too; their clients retry
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, nobody logs it as lost
            raise
        finally:
            del self._inflight[key]

    async def _ask(self, qname: dns.name.Name, rdtype: int, rdclass: int) -> UpstreamAnswer | None:
        query = dns.message.make_query(
            qname,
            dns.rdatatype.RdataType.make(rdtype),
            dns.rdataclass.RdataClass.make(rdclass),
            use_edns=0,
            payload=1232,
        )
        query.flags |= dns.flags.RD
        for host, port in self.servers:
            self.sent += 1
            try:
                response, _ = await dns.asyncquery.udp_with_fallback(
                    query, host, timeout=self.timeout, port=port
                )
            except (dns.exception.DNSException, OSError, EOFError) as exc:
                log.warning("upstream failed server=%s:%d name=%s error=%s", host, port, qname, exc)
                continue
            return UpstreamAnswer(
                response.rcode(),
                tuple(response.answer),
                tuple(response.authority),
                tuple(r for r in response.additional if r.rdtype != dns.rdatatype.OPT),
            )
        return None
