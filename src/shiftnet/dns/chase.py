"""An ExternalName's target looked up through the upstreams, as CoreDNS does.

The zone answers ``ext.ns.svc.<zone>`` with a CNAME to a name outside the
cluster; CoreDNS then asks its upstream for that name and puts the CNAME and
the target's addresses in one response, so a client needs one round trip.
The lookup is bounded: it gives up after ``timeout`` seconds, and only the
chain that starts at the target is kept, at most ``links`` CNAMEs long. When
the upstream fails, says NXDOMAIN, or is too slow, the client still gets the
CNAME (and its own resolver may follow it).
"""

from __future__ import annotations

import asyncio
import logging

import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from shiftnet.dns.upstream import Upstreams

log = logging.getLogger(__name__)


async def chase(
    upstreams: Upstreams, target: dns.name.Name, rdtype: int, *, timeout: float, links: int
) -> tuple[dns.rrset.RRset, ...]:
    """The records that answer ``target``/``rdtype`` upstream, or () when none came in time."""
    try:
        found = await asyncio.wait_for(
            upstreams.resolve(target, rdtype, dns.rdataclass.IN), timeout
        )
    except TimeoutError:
        log.info("externalname chase timed out target=%s seconds=%g", target, timeout)
        return ()
    if found is None or found.rcode != dns.rcode.NOERROR:
        return ()
    by_key: dict[tuple[dns.name.Name, int], dns.rrset.RRset] = {
        (rr.name, int(rr.rdtype)): rr for rr in found.answer
    }
    out: list[dns.rrset.RRset] = []
    name = target
    for _ in range(links + 1):
        hit = by_key.get((name, rdtype))
        if hit is not None:
            out.append(hit)
            break
        cname = by_key.get((name, dns.rdatatype.CNAME))
        if cname is None or len(out) == links:
            break
        out.append(cname)
        name = cname[0].target
    return tuple(out)
