"""Query bytes in, response bytes out: the cluster zone on the wire.

Two paths. The fast path recognises the plain query every stub resolver and
dnsperf sends (one question, no EDNS, no other records), looks up a memo of
ready-made response bytes keyed by (flags, lowercased name, type, class) and
splices in only the query id and the question as the client spelled it
(answer names are compression pointers into that question, so they come back
in the client's case). Everything else goes through dnspython, which also
fills the memo. The memo belongs to one zone and is dropped with it.

Nothing here touches a socket; :mod:`shiftnet.dns.server` does.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, replace

import dns.edns
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from shiftnet.dns.upstream import UpstreamAnswer
from shiftnet.dns.zone import Resolution, Zone

log = logging.getLogger(__name__)

CLASSIC_UDP_SIZE = 512
MEMO_LIMIT = 100_000  # distinct (name, type) answers kept per zone; random names evict it
_PLAIN_COUNTS = b"\x00\x01\x00\x00\x00\x00\x00\x00"  # qd=1 an=0 ns=0 ar=0
_EDNS_COUNTS = b"\x00\x01\x00\x00\x00\x00\x00\x01"  # qd=1 an=0 ns=0 ar=1 (the OPT)
_TC = 0x02  # in the first flags byte


@dataclass(frozen=True)
class Forward:
    """The question is not ours: ask the upstreams, then answer ``query``."""

    query: dns.message.Message


@dataclass(frozen=True)
class Chase:
    """Ours, ending in a CNAME out of the zone: look ``found.chase`` up upstream, then
    answer ``query`` with ``found`` and what came back (:meth:`Responder.render_chased`)."""

    query: dns.message.Message
    found: Resolution


def _question_end(data: bytes) -> int:
    """Offset just past the question of a plain query, or -1 if it is not one."""
    i = 12
    n = len(data)
    while i < n:
        length = data[i]
        if length == 0:
            return i + 5
        if length > 63:  # a compression pointer or reserved label type
            return -1
        i += length + 1
    return -1


class Responder:
    """Answers queries from one :class:`Zone` (swap it with :meth:`set_zone`)."""

    def __init__(self, zone: Zone, *, forwarding: bool = False, max_udp_size: int = 1232) -> None:
        self.forwarding = forwarding
        self.max_udp_size = max_udp_size
        self.zone = zone
        self._memo: dict[bytes, tuple[bytes, bytes, int]] = {}

    def set_zone(self, zone: Zone) -> None:
        self.zone = zone
        self._memo = {}

    # ------------------------------------------------------------ fast path

    def fast(self, data: bytes) -> bytes | None:
        """The memoised answer to a plain UDP query, or None to take the slow path.

        The key needs no parsing: lowercasing only touches bytes 0x41-0x5A, and
        a memo entry is only ever stored for a validated query shape, whose
        counts and label lengths lowercasing leaves alone. So a hit proves the
        new packet has the same shape and the same name up to case; the raw
        flags and the raw last 15 bytes (type, class and an OPT record) are
        appended so that no two packets that differ outside the name share a key.
        """
        if len(data) > CLASSIC_UDP_SIZE:
            return None
        hit = self._memo.get(data[2:].lower() + data[2:4] + data[-15:])
        if hit is None:
            return None
        head, body, tail = hit
        return data[:2] + head + data[12 : len(data) - tail] + body

    def _remember(self, data: bytes, response: bytes) -> None:
        """Store a response, split around the question, for :meth:`fast`.

        Two query shapes qualify: one question and nothing else, or one
        question and an OPT record without options (EDNS buffer size and DO
        bit, no cookie). Any response is a pure function of such bytes, up to
        the id and the spelling of the name, so it can be replayed.
        """
        if len(data) > CLASSIC_UDP_SIZE or data[2] & 0xFE:
            return
        end = _question_end(data)
        if data[4:12] == _PLAIN_COUNTS and end == len(data):
            tail = 0
        elif (
            data[4:12] == _EDNS_COUNTS
            and end + 11 == len(data)
            and data[end : end + 3] == b"\x00\x00\x29"  # root owner, type OPT
            and data[-2:] == b"\x00\x00"  # no options
        ):
            tail = 11
        else:
            return
        if len(response) < end:
            return
        if len(self._memo) >= MEMO_LIMIT:
            self._memo = {}
        key = data[2:].lower() + data[2:4] + data[-15:]
        self._memo[key] = (response[2:12], response[end:], tail)

    # ------------------------------------------------------------ slow path

    def respond(self, data: bytes, *, udp: bool) -> bytes | Forward | Chase | None:
        """Response bytes, a :class:`Forward` or :class:`Chase` for the upstreams, or None
        to drop silently.

        A chased answer holds upstream data with its own TTLs, so it is never memoised;
        without upstreams the CNAME alone is the answer, and that is.
        """
        if len(data) < 12:
            return None  # not even a header: nothing to answer to
        if data[2] & 0x80:
            return None  # a response: answering it could start a loop
        try:
            query = dns.message.from_wire(data, ignore_trailing=False)
        except dns.message.BadEDNS:
            return self._error(data, dns.rcode.BADVERS)
        except Exception:  # any failure to parse hostile bytes is the sender's format error
            return self._error(data, dns.rcode.FORMERR)
        if query.opcode() != dns.opcode.QUERY:
            return self._reply_rcode(query, dns.rcode.NOTIMP, udp)
        if len(query.question) != 1:
            return self._reply_rcode(query, dns.rcode.FORMERR, udp)
        q = query.question[0]
        if q.rdclass != dns.rdataclass.IN or q.rdtype in (
            dns.rdatatype.AXFR,
            dns.rdatatype.IXFR,
        ):
            return self._reply_rcode(query, dns.rcode.REFUSED, udp)
        qname = dns.name.Name(tuple(label.lower() for label in q.name.labels))
        found = self.zone.resolve(qname, q.rdtype)
        if found is None:
            if self.forwarding:
                return Forward(query)
            return self._reply_rcode(query, dns.rcode.REFUSED, udp)
        if found.chase is not None and self.forwarding:
            return Chase(query, found)
        wire = self.render(query, found, udp=udp)
        if udp:
            self._remember(data, wire)
        return wire

    def render(self, query: dns.message.Message, found: Resolution, *, udp: bool) -> bytes:
        """``found`` as a response to ``query``, truncated (TC) when over the UDP limit."""
        response = self._response(query)
        response.flags |= dns.flags.AA
        response.set_rcode(dns.rcode.Rcode.make(found.rcode))
        response.answer = list(found.answer)
        response.authority = list(found.authority)
        response.additional = list(found.additional)
        return self._to_wire(query, response, udp)

    def render_chased(
        self,
        query: dns.message.Message,
        found: Resolution,
        upstream: tuple[dns.rrset.RRset, ...],
        *,
        udp: bool,
    ) -> bytes:
        """The zone's CNAME chain followed by the records the upstream gave for its end."""
        return self.render(query, replace(found, answer=(*found.answer, *upstream)), udp=udp)

    def render_forwarded(
        self, query: dns.message.Message, upstream: UpstreamAnswer | None, *, udp: bool
    ) -> bytes:
        """An upstream's answer (or SERVFAIL when none came) as a response to ``query``."""
        response = self._response(query)
        if upstream is None:
            response.set_rcode(dns.rcode.SERVFAIL)
        else:
            response.set_rcode(dns.rcode.Rcode.make(upstream.rcode))
            response.answer = list(upstream.answer)
            response.authority = list(upstream.authority)
            response.additional = list(upstream.additional)
        return self._to_wire(query, response, udp)

    def _response(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query, our_payload=self.max_udp_size)
        response.flags &= ~dns.flags.AD
        if self.forwarding:
            response.flags |= dns.flags.RA
        else:
            response.flags &= ~dns.flags.RA
        if query.edns >= 0:
            response.use_edns(0, 0, self.max_udp_size, options=[])
        return response

    def _limit(self, query: dns.message.Message, udp: bool) -> int:
        if not udp:
            return 65535
        if query.edns >= 0:
            return max(CLASSIC_UDP_SIZE, min(query.payload, self.max_udp_size))
        return CLASSIC_UDP_SIZE

    def _to_wire(
        self, query: dns.message.Message, response: dns.message.Message, udp: bool
    ) -> bytes:
        limit = self._limit(query, udp)
        try:
            return response.to_wire(max_size=limit)
        except dns.exception.TooBig:
            truncated = self._response(query)
            truncated.set_rcode(response.rcode())
            truncated.flags |= response.flags & dns.flags.AA
            truncated.flags |= dns.flags.TC
            return truncated.to_wire(max_size=limit)

    def _reply_rcode(self, query: dns.message.Message, rcode: int, udp: bool) -> bytes:
        response = self._response(query)
        response.set_rcode(dns.rcode.Rcode.make(rcode))
        return self._to_wire(query, response, udp)

    @staticmethod
    def _error(data: bytes, rcode: int) -> bytes:
        """A bare header echoing the id (and opcode, RD) with ``rcode``: for unparsable queries."""
        flags = struct.unpack("!H", data[2:4])[0]
        out = 0x8000 | (flags & 0x7900) | (rcode & 0xF)  # QR, opcode, RD, rcode
        if rcode > 15:  # extended rcodes need an OPT record; plain FORMERR says enough
            out = (out & ~0xF) | dns.rcode.FORMERR
        return data[:2] + struct.pack("!HHHHH", out, 0, 0, 0, 0)
