"""Query bytes to response bytes: rcodes, truncation, EDNS, and the memoised fast path."""

from __future__ import annotations

import struct

import dns.edns
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdatatype as T
import pytest
from tests.support.dns import endpoints, headless, service

from shiftnet.dns.responder import Forward, Responder
from shiftnet.dns.zone import ZoneConfig, build_zone

WEB = service("web", ports=[{"name": "http", "port": 80}])
BIG = headless("big")
BIG_EPS = endpoints("big", addresses=[{"ip": f"127.10.1.{i}"} for i in range(1, 61)])


def responder(forwarding: bool = False) -> Responder:
    zone = build_zone([WEB, BIG], [BIG_EPS], ZoneConfig(), serial=1)
    return Responder(zone, forwarding=forwarding)


def query(name: str, rdtype: int = T.A, **kw) -> dns.message.QueryMessage:  # type: ignore[no-untyped-def]
    return dns.message.make_query(name, rdtype, **kw)


def answer(r: Responder, q: dns.message.Message, *, udp: bool = True) -> dns.message.Message:
    wire = r.respond(q.to_wire(), udp=udp)
    assert isinstance(wire, bytes)
    return dns.message.from_wire(wire)


def test_answer_is_authoritative_and_echoes_id_and_question() -> None:
    q = query("Web.Default.svc.cluster.local")
    m = answer(responder(), q)
    assert m.id == q.id
    assert m.flags & dns.flags.QR and m.flags & dns.flags.AA
    assert m.question[0].name.to_text() == "Web.Default.svc.cluster.local."
    assert m.rcode() == dns.rcode.NOERROR
    assert [rd.to_text() for rd in m.answer[0]] == ["127.30.0.10"]


def test_nxdomain_has_soa_in_authority() -> None:
    m = answer(responder(), query("nope.default.svc.cluster.local"))
    assert m.rcode() == dns.rcode.NXDOMAIN
    assert [r.rdtype for r in m.authority] == [T.SOA]


def test_outside_the_zone_is_refused_without_upstreams() -> None:
    m = answer(responder(), query("example.com"))
    assert m.rcode() == dns.rcode.REFUSED
    assert not m.flags & dns.flags.RA


def test_outside_the_zone_is_forwarded_with_upstreams() -> None:
    out = responder(forwarding=True).respond(query("example.com").to_wire(), udp=True)
    assert isinstance(out, Forward)
    assert out.query.question[0].name.to_text() == "example.com."


def test_non_query_opcode_is_notimp() -> None:
    q = query("web.default.svc.cluster.local")
    q.set_opcode(dns.opcode.NOTIFY)
    assert answer(responder(), q).rcode() == dns.rcode.NOTIMP


def test_zone_transfer_is_refused() -> None:
    m = answer(responder(), query("cluster.local", T.AXFR), udp=False)
    assert m.rcode() == dns.rcode.REFUSED


def test_responses_are_not_answered() -> None:
    q = query("web.default.svc.cluster.local")
    q.flags |= dns.flags.QR
    assert responder().respond(q.to_wire(), udp=True) is None


@pytest.mark.parametrize("data", [b"", b"\x12", b"\x12\x34" + b"\x00" * 9])
def test_shorter_than_a_header_is_dropped(data: bytes) -> None:
    assert responder().respond(data, udp=True) is None


def test_garbage_after_a_header_is_formerr_with_the_same_id() -> None:
    data = b"\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07garbage"
    out = responder().respond(data, udp=True)
    assert isinstance(out, bytes)
    assert out[:2] == b"\xab\xcd"
    flags = struct.unpack("!H", out[2:4])[0]
    assert flags & 0x8000 and flags & 0xF == dns.rcode.FORMERR


def test_two_questions_is_formerr() -> None:
    q = query("web.default.svc.cluster.local")
    q.question.append(query("x.cluster.local").question[0])
    assert answer(responder(), q).rcode() == dns.rcode.FORMERR


def test_edns_version_1_is_badvers() -> None:
    q = query("web.default.svc.cluster.local", use_edns=1)
    out = responder().respond(q.to_wire(), udp=True)
    assert isinstance(out, bytes)
    assert struct.unpack("!H", out[2:4])[0] & 0xF in (dns.rcode.FORMERR, dns.rcode.BADVERS & 0xF)


def test_over_512_bytes_without_edns_sets_tc_and_tcp_gets_everything() -> None:
    r = responder()
    q = query("big.default.svc.cluster.local")
    udp = answer(r, q)
    assert udp.flags & dns.flags.TC
    assert not udp.answer
    assert len(r.respond(q.to_wire(), udp=True)) <= 512  # type: ignore[arg-type]
    tcp = answer(r, q, udp=False)
    assert not tcp.flags & dns.flags.TC
    assert len(tcp.answer[0]) == 60


def test_edns_buffer_size_raises_the_udp_limit() -> None:
    r = responder()
    small = answer(r, query("big.default.svc.cluster.local", use_edns=0, payload=512))
    assert small.flags & dns.flags.TC
    large = answer(r, query("big.default.svc.cluster.local", use_edns=0, payload=4096))
    assert not large.flags & dns.flags.TC
    assert len(large.answer[0]) == 60
    assert large.edns == 0 and large.payload == 1232


@pytest.mark.parametrize(
    "edns",
    [
        {},
        {"use_edns": 0},
        {"use_edns": 0, "payload": 4096},
        {"use_edns": 0, "payload": 512, "want_dnssec": True},
    ],
)
def test_fast_path_matches_the_slow_path_byte_for_byte(edns: dict[str, object]) -> None:
    r = responder()
    for name, rdtype in [
        ("web.default.svc.cluster.local", T.A),
        ("nope.default.svc.cluster.local", T.A),
        ("_http._tcp.web.default.svc.cluster.local", T.SRV),
        ("big.default.svc.cluster.local", T.A),
        ("web.default.svc.cluster.local", T.AAAA),
    ]:
        q = query(name, rdtype, **edns)
        wire = q.to_wire()
        assert r.fast(wire) is None  # nothing memoised yet
        slow = r.respond(wire, udp=True)
        assert isinstance(slow, bytes)
        for qid in (1, 0xFFFF):
            q.id = qid
            fast = r.fast(q.to_wire())
            assert fast is not None
            assert fast[:2] == qid.to_bytes(2, "big")
            assert fast[2:] == slow[2:]


def test_fast_path_echoes_the_clients_case() -> None:
    r = responder()
    r.respond(query("web.default.svc.cluster.local").to_wire(), udp=True)
    wire = r.fast(query("WEB.default.SVC.cluster.local").to_wire())
    assert wire is not None
    m = dns.message.from_wire(wire)
    assert m.question[0].name.to_text() == "WEB.default.SVC.cluster.local."
    assert [rd.to_text() for rd in m.answer[0]] == ["127.30.0.10"]


def test_fast_path_keeps_shapes_apart() -> None:
    r = responder()
    plain = query("web.default.svc.cluster.local")
    r.respond(plain.to_wire(), udp=True)
    assert r.fast(query("web.default.svc.cluster.local", use_edns=0).to_wire()) is None
    small = query("web.default.svc.cluster.local", use_edns=0, payload=512)
    r.respond(small.to_wire(), udp=True)
    assert (
        r.fast(query("web.default.svc.cluster.local", use_edns=0, payload=4096).to_wire()) is None
    )
    norec = query("web.default.svc.cluster.local")
    norec.flags &= ~dns.flags.RD
    assert r.fast(norec.to_wire()) is None  # different flags: its own memo entry


def test_queries_with_edns_options_are_never_memoised() -> None:
    r = responder()
    q = query("web.default.svc.cluster.local", use_edns=0)
    q.use_edns(0, 0, 1232, options=[dns.edns.GenericOption(10, b"cookie!!")])
    r.respond(q.to_wire(), udp=True)
    assert r.fast(q.to_wire()) is None


def test_new_zone_drops_the_memo() -> None:
    r = responder()
    q = query("web.default.svc.cluster.local").to_wire()
    r.respond(q, udp=True)
    assert r.fast(q) is not None
    r.set_zone(build_zone([], [], ZoneConfig()))
    assert r.fast(q) is None
    assert dns.message.from_wire(r.respond(q, udp=True)).rcode() == dns.rcode.NXDOMAIN  # type: ignore[arg-type]


def test_fast_path_keys_do_not_collide_on_bytes_that_lowercase() -> None:
    r = responder()
    https = query("web.default.svc.cluster.local", 65)  # type 0x0041 ('A')
    r.respond(https.to_wire(), udp=True)
    other = query("web.default.svc.cluster.local", 97)  # type 0x0061 ('a')
    assert r.fast(other.to_wire()) is None
    hit = r.fast(https.to_wire())
    assert hit is not None and dns.message.from_wire(hit).question[0].rdtype == 65
    # a flags byte in the 0x41-0x5A range does not pass for its lowercase twin
    q = bytearray(query("web.default.svc.cluster.local").to_wire())
    q[3] = 0x65
    r.respond(bytes(q), udp=True)
    q[3] = 0x45
    assert r.fast(bytes(q)) is None
