"""Random and mutated packets through the responder: no exception, sane replies."""

from __future__ import annotations

import dns.message
import dns.rcode
from tests.support.dns import endpoints, headless, service
from tests.support.dns_fuzz import packets

from shiftnet.dns.responder import Forward, Responder
from shiftnet.dns.zone import ZoneConfig, build_zone

COUNT = 20_000  # the 100,000-packet run is against the live server (integration)


def test_fuzzed_packets_never_raise_and_replies_parse() -> None:
    zone = build_zone(
        [service("web", ports=[{"name": "http", "port": 80}]), headless("db")],
        [endpoints("db", addresses=[{"ip": "127.10.0.5", "hostname": "db-0"}])],
        ZoneConfig(),
    )
    r = Responder(zone, forwarding=True)
    outcomes = {"dropped": 0, "answered": 0, "forwarded": 0, "formerr": 0}
    for i, pkt in enumerate(packets(COUNT, seed=7)):
        udp = i % 5 != 0
        out = r.fast(pkt) if udp else None
        if out is None:
            out = r.respond(pkt, udp=udp)
        if out is None:
            outcomes["dropped"] += 1
            continue
        if isinstance(out, Forward):
            outcomes["forwarded"] += 1
            continue
        assert out[:2] == pkt[:2], f"packet {i}: reply id differs"
        assert out[2] & 0x80, f"packet {i}: reply without QR"
        if udp:
            assert len(out) <= 1232, f"packet {i}: UDP reply of {len(out)} bytes"
        if out[3] & 0xF == dns.rcode.FORMERR:
            outcomes["formerr"] += 1
        else:
            dns.message.from_wire(out)  # every non-FORMERR reply is a well-formed message
        outcomes["answered"] += 1
    assert sum(outcomes.values()) - outcomes["formerr"] == COUNT
    # the mix exercised every outcome
    assert all(outcomes[k] > 100 for k in outcomes), outcomes
