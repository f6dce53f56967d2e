"""The hot path's wire reading for CoreDNS's labels: query type and rcode, without parsing."""

from __future__ import annotations

import dns.edns
import dns.message
import dns.rcode

from shiftnet.dns.traffic import Histogram, Traffic, query_type


def test_query_type_is_read_past_the_name() -> None:
    for rdtype in ("A", "AAAA", "SRV", "PTR", "TXT", "ANY", "HTTPS"):
        wire = dns.message.make_query("a.b.svc.cluster.local", rdtype, use_edns=0).to_wire()
        assert query_type(wire) == rdtype
    assert query_type(dns.message.make_query("x.test", "HINFO").to_wire()) == "other"
    assert query_type(b"\x00" * 12 + b"\x05abc") == "other"  # cut inside the name
    assert query_type(b"\x00" * 5) == "other"
    # an OPT record with an option: the name is walked, not read from the end
    cookie = dns.message.make_query(
        "x.test", "MX", use_edns=0, options=[dns.edns.GenericOption(10, b"12345678")]
    )
    assert query_type(cookie.to_wire()) == "MX"


def test_responses_count_rcodes_and_histograms_cumulate() -> None:
    traffic = Traffic()
    query = dns.message.make_query("nothing.test", "A")
    qtype = traffic.request(query.to_wire(), "udp", "1")
    reply = dns.message.make_response(query)
    reply.set_rcode(dns.rcode.NXDOMAIN)
    traffic.response(reply.to_wire(), "udp", qtype, 0.0003)
    assert traffic.requests == {("udp", "1", "A"): 1}
    assert traffic.responses == {"NXDOMAIN": 1}
    buckets = dict(traffic.durations["A"].cumulative())
    assert buckets["0.00025"] == 0 and buckets["0.0005"] == 1 and buckets["+Inf"] == 1
    h = Histogram((1.0, 2.0))
    for v in (1.0, 1.5, 9.0):
        h.observe(v)
    assert h.cumulative() == [("1.0", 1.0), ("2.0", 2.0), ("+Inf", 3.0)] and h.total == 11.5
