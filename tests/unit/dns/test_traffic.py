"""The hot path's wire reading for CoreDNS's labels: query type and rcode, without parsing."""

from __future__ import annotations

import dns.edns
import dns.message
import dns.rcode

from shiftnet.dns.traffic import DURATION_BUCKETS, SIZE_BUCKETS, Histogram, Traffic, query_type


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


def test_inline_counting_agrees_with_observe() -> None:
    """The hot path buckets sizes by a table and durations by a shortcut: the same
    buckets, sums and counts as ``Histogram.observe`` for every size and duration."""
    traffic = Traffic()
    sizes, durations = Histogram(SIZE_BUCKETS), Histogram(DURATION_BUCKETS)
    query = dns.message.make_query("a.b.svc.cluster.local", "SRV").to_wire()
    for n in (*range(0, 4200), 8291, 8292, 16000, 16001, 65535):
        reply = (query[:2] + b"\x81\x83" + query[4:] + b"\x00" * n)[: max(n, 4)]
        seconds = n * 0.00001
        qtype = traffic.request(query, "tcp", "1")
        traffic.response(reply, "tcp", qtype, seconds)
        sizes.observe(len(reply))
        durations.observe(seconds)
    assert qtype == "SRV"
    assert traffic.response_sizes["tcp"].counts == sizes.counts
    assert traffic.response_sizes["tcp"].total == sizes.total
    assert traffic.durations["SRV"].counts == durations.counts
    assert traffic.durations["SRV"].count == durations.count == 4205
    assert traffic.responses == {"NXDOMAIN": 4205}
