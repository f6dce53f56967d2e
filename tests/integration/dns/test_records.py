"""Every record type through a live server, asked by dig and by dnspython."""

from __future__ import annotations

import asyncio
import re

import dns.flags
import dns.rcode
import dns.rdatatype
import dns.reversename
import pytest
from tests.support.dns import endpoints, headless, service
from tests.support.dns_cluster import Cluster

pytestmark = pytest.mark.integration

ZONE = "svc.cluster.local"


async def dig(port: int, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        "dig", "@127.0.0.1", "-p", str(port), "+time=2", "+tries=1", *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    return out.decode()


def dig_answers(text: str) -> list[str]:
    """``name ttl class type rdata`` lines of the ANSWER section, whitespace-normalised."""
    m = re.search(r";; ANSWER SECTION:\n(.*?)(?:\n\n|\Z)", text, re.S)
    if not m:
        return []
    return sorted(" ".join(line.split()) for line in m.group(1).splitlines() if line.strip())


def dig_status(text: str) -> str:
    m = re.search(r"status: (\w+)", text)
    assert m, text
    return m.group(1)


async def populate(c: Cluster) -> None:
    await c.client.create(
        service("web", cluster_ip="127.30.0.10", ports=[{"name": "http", "port": 80}])
    )
    await c.client.create(service("web6", cluster_ip="fd00::10", ports=[{"port": 80}]))
    await c.client.create(headless("db", ports=[{"name": "pg", "port": 5432}]))
    await c.client.create(
        endpoints(
            "db",
            addresses=[
                {"ip": "127.10.0.5", "hostname": "db-0"},
                {"ip": "127.10.0.6", "hostname": "db-1"},
            ],
            ports=[{"name": "pg", "port": 5432}],
        )
    )
    await c.client.create(
        service(
            "ext",
            cluster_ip=None,
            ports=[{"port": 80}],
            type="ExternalName",
            externalName="www.example.com",
        )
    )
    await c.until(f"db-1.db.default.{ZONE}", "A", lambda m: bool(m.answer), within=5)
    await c.until(f"ext.default.{ZONE}", "A", lambda m: bool(m.answer), within=5)
    await c.until(f"web6.default.{ZONE}", "AAAA", lambda m: bool(m.answer), within=5)


CASES = [
    # (dig arguments, expected status, expected answer lines)
    ([f"web.default.{ZONE}", "A"], "NOERROR", [f"web.default.{ZONE}. 5 IN A 127.30.0.10"]),
    ([f"web6.default.{ZONE}", "AAAA"], "NOERROR", [f"web6.default.{ZONE}. 5 IN AAAA fd00::10"]),
    (
        [f"_http._tcp.web.default.{ZONE}", "SRV"],
        "NOERROR",
        [f"_http._tcp.web.default.{ZONE}. 5 IN SRV 0 100 80 web.default.{ZONE}."],
    ),
    (
        [f"db.default.{ZONE}", "A"],
        "NOERROR",
        [f"db.default.{ZONE}. 5 IN A 127.10.0.5", f"db.default.{ZONE}. 5 IN A 127.10.0.6"],
    ),
    ([f"db-0.db.default.{ZONE}", "A"], "NOERROR", [f"db-0.db.default.{ZONE}. 5 IN A 127.10.0.5"]),
    (
        [f"_pg._tcp.db.default.{ZONE}", "SRV"],
        "NOERROR",
        [
            f"_pg._tcp.db.default.{ZONE}. 5 IN SRV 0 50 5432 db-0.db.default.{ZONE}.",
            f"_pg._tcp.db.default.{ZONE}. 5 IN SRV 0 50 5432 db-1.db.default.{ZONE}.",
        ],
    ),
    (
        ["-x", "127.30.0.10"],
        "NOERROR",
        [f"10.0.30.127.in-addr.arpa. 5 IN PTR web.default.{ZONE}."],
    ),
    (
        ["-x", "127.10.0.6"],
        "NOERROR",
        [f"6.0.10.127.in-addr.arpa. 5 IN PTR db-1.db.default.{ZONE}."],
    ),
    (
        [f"ext.default.{ZONE}", "A"],
        "NOERROR",
        [f"ext.default.{ZONE}. 5 IN CNAME www.example.com."],
    ),
    (
        ["dns-version.cluster.local", "TXT"],
        "NOERROR",
        ['dns-version.cluster.local. 28800 IN TXT "1.1.0"'],
    ),
    (
        ["cluster.local", "SOA"],
        "NOERROR",
        [
            "cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. "
            "SERIAL 7200 1800 86400 5"
        ],
    ),
    (["cluster.local", "NS"], "NOERROR", ["cluster.local. 5 IN NS ns.dns.cluster.local."]),
    (["ns.dns.cluster.local", "A"], "NOERROR", ["ns.dns.cluster.local. 5 IN A 127.0.0.1"]),
    ([f"nope.default.{ZONE}", "A"], "NXDOMAIN", []),
    ([f"web.default.{ZONE}", "MX"], "NOERROR", []),
    ([f"default.{ZONE}", "A"], "NOERROR", []),
    (["example.com", "A"], "REFUSED", []),
]


async def test_dig_shows_every_record_type(cluster: Cluster) -> None:
    await populate(cluster)
    for args, status, answers in CASES:
        out = await dig(cluster.port, *args)
        assert dig_status(out) == status, (args, out)
        got = [
            re.sub(r"(hostmaster\.cluster\.local\. )\d+", r"\1SERIAL", a) for a in dig_answers(out)
        ]
        assert got == sorted(answers), (args, out)
        if status in ("NXDOMAIN",) or (status == "NOERROR" and not answers):
            assert "AUTHORITY SECTION" in out and "SOA" in out, out


async def test_dig_is_case_insensitive_and_echoes_case(cluster: Cluster) -> None:
    await populate(cluster)
    out = await dig(cluster.port, "WEB.Default.SVC.cluster.LOCAL", "A")
    assert dig_answers(out) == ["WEB.Default.SVC.cluster.LOCAL. 5 IN A 127.30.0.10"]


async def test_dnspython_client_sees_every_record_type(cluster: Cluster) -> None:
    await populate(cluster)
    for args, status, answers in CASES:
        if args[0] == "-x":
            name, rdtype = dns.reversename.from_address(args[1]).to_text(), "PTR"
        else:
            name, rdtype = args
        for tcp in (False, True):
            m = await cluster.ask(name, rdtype, tcp=tcp)
            assert dns.rcode.to_text(m.rcode()) == status, (name, rdtype, tcp)
            got = sorted(
                f"{rr.name} {rr.ttl} IN {dns.rdatatype.to_text(rr.rdtype)} {rd.to_text()}"
                for rr in m.answer
                for rd in rr
            )
            got = [re.sub(r"(hostmaster\.cluster\.local\. )\d+", r"\1SERIAL", a) for a in got]
            assert got == sorted(answers), (name, rdtype, tcp)
            if status == "NXDOMAIN" or (status == "NOERROR" and not answers):
                assert [dns.rdatatype.to_text(r.rdtype) for r in m.authority] == ["SOA"]
            if status != "REFUSED":
                assert m.flags & dns.flags.AA


async def test_udp_truncates_and_dig_retries_over_tcp(cluster: Cluster) -> None:
    addresses = [{"ip": f"127.10.2.{i}"} for i in range(1, 101)]
    await cluster.client.create(headless("big", ports=[{"port": 80}]))
    await cluster.client.create(endpoints("big", addresses=addresses))
    await cluster.until(
        f"big.default.{ZONE}", "A", lambda m: bool(m.flags & dns.flags.TC), within=5.0
    )
    # plain dnspython over UDP: TC and no answers; over TCP: all 100
    udp = await cluster.ask(f"big.default.{ZONE}", "A")
    assert udp.flags & dns.flags.TC and not udp.answer
    tcp = await cluster.ask(f"big.default.{ZONE}", "A", tcp=True)
    assert len(tcp.answer[0]) == 100
    # dig (EDNS 1232 bytes) gets TC over UDP and retries over TCP by itself
    out = await dig(cluster.port, f"big.default.{ZONE}", "A")
    assert "Truncated, retrying in TCP mode" in out, out
    assert len(dig_answers(out)) == 100
    assert "(TCP)" in out
    # without EDNS the limit is 512 bytes
    out = await dig(cluster.port, "+noedns", "+ignore", f"big.default.{ZONE}", "A")
    assert re.search(r"flags: [^;]*\btc\b", out), out


async def test_dig_over_tcp(cluster: Cluster) -> None:
    await populate(cluster)
    out = await dig(cluster.port, "+tcp", f"web.default.{ZONE}", "A")
    assert dig_answers(out) == [f"web.default.{ZONE}. 5 IN A 127.30.0.10"]
