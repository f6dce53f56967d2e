"""What CoreDNS's kubernetes plugin answers, asked of a live server by dig and by dnspython.

The cases follow the Kubernetes DNS specification's examples (headless
``my-pet``, ``10.3.0.100``, ``2001:db8::1``) and the answers CoreDNS documents
for SRV at the service name (priority 0, weight 100/n, the service or each
endpoint as target, addresses in the additional section), endpoint PTRs,
IPv6 endpoint names in the compressed form (``5678-abcd--2``) and pod records.
Addresses are only data here: nothing connects to them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import dns.flags
import dns.rcode
import dns.rdatatype
import dns.reversename
import pytest
from tests.support.dns import endpoints, headless, service
from tests.support.dns_cluster import Cluster, make_cluster_fixture

from shiftnet.api import ClusterNetwork, Namespace, Pod

pytestmark = pytest.mark.integration

Z = "cluster.local"
SVC = f"svc.{Z}"
V6_ZONE = "0." * 20 + "6.9.0.0.0.0.d.f.ip6.arpa"  # the reverse zone of fd00:96::/112


def cluster_network() -> ClusterNetwork:
    return ClusterNetwork.model_validate(
        {
            "metadata": {
                "name": "default",
                "annotations": {"shiftnet.io/secondary-service-network": "fd00:96::/112"},
            },
            "network": "10.3.0.0/16",
            "hostsubnetlength": 8,
            "clusterNetworks": [{"CIDR": "10.3.0.0/16", "hostSubnetLength": 8}],
            "serviceNetwork": "10.96.0.0/14",
        }
    )


async def populate(c: Cluster) -> None:
    await c.client.create(cluster_network())
    await c.client.create(Namespace.model_validate({"metadata": {"name": "empty"}}))
    await c.client.create(
        service("web", cluster_ip="10.96.0.10", ports=[{"name": "http", "port": 80}])
    )
    await c.client.create(
        endpoints(
            "web",
            addresses=[{"ip": "10.3.0.20"}, {"ip": "10.3.0.21"}],
            ports=[{"name": "http", "port": 8080}],
        )
    )
    await c.client.create(headless("headless", ports=[{"name": "https", "port": 443}]))
    await c.client.create(
        endpoints(
            "headless",
            addresses=[
                {"ip": "10.3.0.100", "hostname": "my-pet"},
                {"ip": "10.3.0.101", "hostname": "my-pet-2"},
                {"ip": "2001:db8::1", "hostname": "my-pet-6"},
                {"ip": "5678:abcd::2"},
            ],
            ports=[{"name": "https", "port": 443}],
        )
    )
    await c.client.create(
        service("alias", cluster_ip=None, type="ExternalName", externalName=f"web.default.{SVC}")
    )
    await c.client.create(
        service(
            "dual",
            cluster_ip="10.96.0.30",
            clusterIPs=["10.96.0.30", "fd00:96::30"],
            ipFamilies=["IPv4", "IPv6"],
            ipFamilyPolicy="PreferDualStack",
            ports=[{"name": "http", "port": 80}],
        )
    )
    # a headless service with two ports; its endpoints, one with a hostname
    await c.client.create(
        headless("multi", ports=[{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    )
    await c.client.create(
        endpoints(
            "multi",
            addresses=[{"ip": "10.3.0.40", "hostname": "m-0"}, {"ip": "10.3.0.41"}],
            ports=[{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}],
        )
    )
    # 10.3.0.20 is an endpoint of web and of web2; 10.3.0.101 is headless's my-pet-2 too
    await c.client.create(
        service("web2", cluster_ip="10.96.0.12", ports=[{"name": "http", "port": 80}])
    )
    await c.client.create(
        endpoints(
            "web2",
            addresses=[{"ip": "10.3.0.20"}, {"ip": "10.3.0.101"}],
            ports=[{"name": "http", "port": 8080}],
        )
    )
    await c.until(f"dual.default.{SVC}", "AAAA", lambda m: bool(m.answer), within=5)
    await c.until(f"m-0.multi.default.{SVC}", "A", lambda m: bool(m.answer), within=5)
    await c.until(f"10-3-0-20.web2.default.{SVC}", "A", lambda m: bool(m.answer), within=5)
    await c.until(f"my-pet.headless.default.{SVC}", "A", lambda m: bool(m.answer), within=5)
    await c.until(f"alias.default.{SVC}", "CNAME", lambda m: bool(m.answer), within=5)
    await c.until("3.10.in-addr.arpa", "SOA", lambda m: bool(m.answer), within=5)
    await c.until(f"empty.{SVC}", "A", lambda m: m.rcode() == dns.rcode.NOERROR, within=5)


# (name, type, rcode, answer lines, additional lines, SOA owner of a negative answer)
CASES: list[tuple[str, str, str, list[str], list[str], str | None]] = [
    # SRV at the bare service name: the service itself for a ClusterIP service
    (
        f"web.default.{SVC}",
        "SRV",
        "NOERROR",
        [f"web.default.{SVC}. 5 IN SRV 0 100 80 web.default.{SVC}."],
        [f"web.default.{SVC}. 5 IN A 10.96.0.10"],
        None,
    ),
    # ... and every endpoint for a headless one, weight 100/4 each
    (
        f"headless.default.{SVC}",
        "SRV",
        "NOERROR",
        [
            f"headless.default.{SVC}. 5 IN SRV 0 25 443 5678-abcd--2.headless.default.{SVC}.",
            f"headless.default.{SVC}. 5 IN SRV 0 25 443 my-pet-2.headless.default.{SVC}.",
            f"headless.default.{SVC}. 5 IN SRV 0 25 443 my-pet-6.headless.default.{SVC}.",
            f"headless.default.{SVC}. 5 IN SRV 0 25 443 my-pet.headless.default.{SVC}.",
        ],
        [
            f"5678-abcd--2.headless.default.{SVC}. 5 IN AAAA 5678:abcd::2",
            f"my-pet-2.headless.default.{SVC}. 5 IN A 10.3.0.101",
            f"my-pet-6.headless.default.{SVC}. 5 IN AAAA 2001:db8::1",
            f"my-pet.headless.default.{SVC}. 5 IN A 10.3.0.100",
        ],
        None,
    ),
    # headless with 2 ports: one record per port and endpoint, weight 100/4
    (
        f"multi.default.{SVC}",
        "SRV",
        "NOERROR",
        [
            f"multi.default.{SVC}. 5 IN SRV 0 25 {port} {h}.multi.default.{SVC}."
            for port in (80, 9090)
            for h in ("10-3-0-41", "m-0")
        ],
        [
            f"10-3-0-41.multi.default.{SVC}. 5 IN A 10.3.0.41",
            f"m-0.multi.default.{SVC}. 5 IN A 10.3.0.40",
        ],
        None,
    ),
    # a dual-stack ClusterIP service: one SRV (two addresses counted: weight 50), A and AAAA
    (
        f"dual.default.{SVC}",
        "SRV",
        "NOERROR",
        [f"dual.default.{SVC}. 5 IN SRV 0 50 80 dual.default.{SVC}."],
        [f"dual.default.{SVC}. 5 IN A 10.96.0.30", f"dual.default.{SVC}. 5 IN AAAA fd00:96::30"],
        None,
    ),
    # an address that is an endpoint of two services: a PTR for each
    (
        "20.0.3.10.in-addr.arpa",
        "PTR",
        "NOERROR",
        [
            f"20.0.3.10.in-addr.arpa. 5 IN PTR 10-3-0-20.web.default.{SVC}.",
            f"20.0.3.10.in-addr.arpa. 5 IN PTR 10-3-0-20.web2.default.{SVC}.",
        ],
        [],
        None,
    ),
    # ... but where one of them has a hostname, only the hostname's (CoreDNS)
    (
        "101.0.3.10.in-addr.arpa",
        "PTR",
        "NOERROR",
        [f"101.0.3.10.in-addr.arpa. 5 IN PTR my-pet-2.headless.default.{SVC}."],
        [],
        None,
    ),
    # the specification's 2.4.2 question
    (
        f"_https._tcp.headless.default.{SVC}",
        "SRV",
        "NOERROR",
        [
            f"_https._tcp.headless.default.{SVC}. 5 IN SRV 0 25 443 {h}.headless.default.{SVC}."
            for h in ("5678-abcd--2", "my-pet", "my-pet-2", "my-pet-6")
        ],
        [
            f"5678-abcd--2.headless.default.{SVC}. 5 IN AAAA 5678:abcd::2",
            f"my-pet-2.headless.default.{SVC}. 5 IN A 10.3.0.101",
            f"my-pet-6.headless.default.{SVC}. 5 IN AAAA 2001:db8::1",
            f"my-pet.headless.default.{SVC}. 5 IN A 10.3.0.100",
        ],
        None,
    ),
    # IPv6 endpoint names in the compressed form, asked in that form
    (
        f"5678-abcd--2.headless.default.{SVC}",
        "AAAA",
        "NOERROR",
        [f"5678-abcd--2.headless.default.{SVC}. 5 IN AAAA 5678:abcd::2"],
        [],
        None,
    ),
    (f"5678-abcd-0-0-0-0-0-2.headless.default.{SVC}", "AAAA", "NXDOMAIN", [], [], Z),
    # endpoints of a ClusterIP service have names too (CoreDNS answers them)
    (
        f"10-3-0-20.web.default.{SVC}",
        "A",
        "NOERROR",
        [f"10-3-0-20.web.default.{SVC}. 5 IN A 10.3.0.20"],
        [],
        None,
    ),
    # PTR: the specification's 2.4.3 examples, and every endpoint of every service
    (
        "100.0.3.10.in-addr.arpa",
        "PTR",
        "NOERROR",
        [f"100.0.3.10.in-addr.arpa. 5 IN PTR my-pet.headless.default.{SVC}."],
        [],
        None,
    ),
    (
        dns.reversename.from_address("2001:db8::1").to_text().rstrip("."),
        "PTR",
        "NOERROR",
        [
            f"{dns.reversename.from_address('2001:db8::1')} 5 IN PTR "
            f"my-pet-6.headless.default.{SVC}."
        ],
        [],
        None,
    ),
    (
        "21.0.3.10.in-addr.arpa",
        "PTR",
        "NOERROR",
        [f"21.0.3.10.in-addr.arpa. 5 IN PTR 10-3-0-21.web.default.{SVC}."],
        [],
        None,
    ),
    (
        "10.0.96.10.in-addr.arpa",
        "PTR",
        "NOERROR",
        [f"10.0.96.10.in-addr.arpa. 5 IN PTR web.default.{SVC}."],
        [],
        None,
    ),
    # a reverse name is known only for its PTR (CoreDNS parses nothing else there)
    ("21.0.3.10.in-addr.arpa", "A", "NXDOMAIN", [], [], "3.10.in-addr.arpa"),
    ("10.0.96.10.in-addr.arpa", "TXT", "NXDOMAIN", [], [], "96.10.in-addr.arpa"),
    # authoritative for the reverse zones of the networks: NXDOMAIN with that zone's SOA
    ("99.0.3.10.in-addr.arpa", "PTR", "NXDOMAIN", [], [], "3.10.in-addr.arpa"),
    ("7.7.98.10.in-addr.arpa", "PTR", "NXDOMAIN", [], [], "98.10.in-addr.arpa"),
    # names with only names below them: NXDOMAIN, as CoreDNS answers them
    ("0.3.10.in-addr.arpa", "PTR", "NXDOMAIN", [], [], "3.10.in-addr.arpa"),
    (f"_tcp.headless.default.{SVC}", "SRV", "NXDOMAIN", [], [], Z),
    # an ExternalName answers addresses and CNAME only: SRV is NODATA, as in CoreDNS
    (f"alias.default.{SVC}", "SRV", "NOERROR", [], [], Z),
    (
        f"alias.default.{SVC}",
        "CNAME",
        "NOERROR",
        [f"alias.default.{SVC}. 5 IN CNAME web.default.{SVC}."],
        [],
        None,
    ),
    # outside every network: not ours (no upstream here, so REFUSED)
    ("1.0.0.11.in-addr.arpa", "PTR", "REFUSED", [], [], None),
    # pod records, insecure (the default): any address in a namespace that exists
    (
        f"10-3-0-55.default.pod.{Z}",
        "A",
        "NOERROR",
        [f"10-3-0-55.default.pod.{Z}. 5 IN A 10.3.0.55"],
        [],
        None,
    ),
    (
        f"fd00--9.empty.pod.{Z}",
        "AAAA",
        "NOERROR",
        [f"fd00--9.empty.pod.{Z}. 5 IN AAAA fd00::9"],
        [],
        None,
    ),
    (f"fd00--9.empty.pod.{Z}", "A", "NOERROR", [], [], Z),
    (f"pod.{Z}", "A", "NOERROR", [], [], Z),
    (f"default.pod.{Z}", "A", "NOERROR", [], [], Z),
    (f"10-3-0-55.nowhere.pod.{Z}", "A", "NXDOMAIN", [], [], Z),
    (f"10-3-0-555.default.pod.{Z}", "A", "NXDOMAIN", [], [], Z),
    (f"a.10-3-0-55.default.pod.{Z}", "A", "NXDOMAIN", [], [], Z),
    # a Namespace object exists even without services; wildcards are off by default
    (f"empty.{SVC}", "A", "NOERROR", [], [], Z),
    (f"*.default.{SVC}", "A", "NXDOMAIN", [], [], Z),
    # ANY: what A gets there, without records (CoreDNS asks itself A to tell the two apart)
    (f"web.default.{SVC}", "ANY", "NOERROR", [], [], Z),
    (f"10-3-0-55.default.pod.{Z}", "ANY", "NOERROR", [], [], Z),
    (Z, "ANY", "NOERROR", [], [], Z),
    (f"nope.default.{SVC}", "ANY", "NXDOMAIN", [], [], Z),
    # dns-version.<zone> is known only for its TXT
    (f"dns-version.{Z}", "TXT", "NOERROR", [f'dns-version.{Z}. 28800 IN TXT "1.1.0"'], [], None),
    (f"dns-version.{Z}", "A", "NXDOMAIN", [], [], Z),
    (f"dns-version.{Z}", "AAAA", "NXDOMAIN", [], [], Z),
    (f"dns-version.{Z}", "ANY", "NXDOMAIN", [], [], Z),
    # a dual-stack Service (PreferDualStack): A and AAAA, and a PTR for each address
    (f"dual.default.{SVC}", "A", "NOERROR", [f"dual.default.{SVC}. 5 IN A 10.96.0.30"], [], None),
    (
        f"dual.default.{SVC}",
        "AAAA",
        "NOERROR",
        [f"dual.default.{SVC}. 5 IN AAAA fd00:96::30"],
        [],
        None,
    ),
    (
        "30.0.96.10.in-addr.arpa",
        "PTR",
        "NOERROR",
        [f"30.0.96.10.in-addr.arpa. 5 IN PTR dual.default.{SVC}."],
        [],
        None,
    ),
    (
        dns.reversename.from_address("fd00:96::30").to_text().rstrip("."),
        "PTR",
        "NOERROR",
        [f"{dns.reversename.from_address('fd00:96::30')} 5 IN PTR dual.default.{SVC}."],
        [],
        None,
    ),
    # the IPv6 service network's reverse zone is ours: a name without a record is NXDOMAIN
    (
        dns.reversename.from_address("fd00:96::31").to_text().rstrip("."),
        "PTR",
        "NXDOMAIN",
        [],
        [],
        V6_ZONE,
    ),
]


async def dig(port: int, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        "dig", "@127.0.0.1", "-p", str(port), "+time=2", "+tries=1", *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    return out.decode()


def dig_section(text: str, section: str) -> list[str]:
    m = re.search(rf";; {section} SECTION:\n(.*?)(?:\n\n|\Z)", text, re.S)
    if not m:
        return []
    return sorted(" ".join(line.split()) for line in m.group(1).splitlines() if line.strip())


def lines(rrsets) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(
        f"{rr.name} {rr.ttl} IN {dns.rdatatype.to_text(rr.rdtype)} {rd.to_text()}"
        for rr in rrsets
        if rr.rdtype != dns.rdatatype.OPT
        for rd in rr
    )


@pytest.fixture
async def cluster(tmp_path) -> AsyncIterator[Cluster]:  # type: ignore[no-untyped-def]
    gen = make_cluster_fixture()(tmp_path)
    c = await gen.__anext__()
    try:
        await populate(c)
        yield c
    finally:
        with pytest.raises(StopAsyncIteration):
            await gen.__anext__()


async def test_dig_gets_what_coredns_answers(cluster: Cluster) -> None:
    for name, rdtype, rcode, answer, additional, soa in CASES:
        out = await dig(cluster.port, name, rdtype)
        m = re.search(r"status: (\w+)", out)
        assert m and m.group(1) == rcode, (name, rdtype, out)
        assert dig_section(out, "ANSWER") == sorted(answer), (name, rdtype, out)
        assert dig_section(out, "ADDITIONAL") == sorted(additional), (name, rdtype, out)
        if soa is not None:
            auth = dig_section(out, "AUTHORITY")
            assert len(auth) == 1 and auth[0].startswith(f"{soa}. 5 IN SOA ns.dns.{soa}. "), out


async def test_dnspython_gets_what_coredns_answers_over_udp_and_tcp(cluster: Cluster) -> None:
    for name, rdtype, rcode, answer, additional, soa in CASES:
        for tcp in (False, True):
            m = await cluster.ask(name, rdtype, tcp=tcp)
            where = (name, rdtype, tcp)
            assert dns.rcode.to_text(m.rcode()) == rcode, where
            assert lines(m.answer) == sorted(answer), where
            assert lines(m.additional) == sorted(additional), where
            if soa is not None:
                assert [(r.name.to_text(), r.rdtype) for r in m.authority] == [
                    (soa + ".", dns.rdatatype.SOA)
                ], where
            if rcode != "REFUSED":
                assert m.flags & dns.flags.AA, where


async def test_new_answers_come_from_the_memoised_fast_path(cluster: Cluster) -> None:
    asked = [
        (f"headless.default.{SVC}", "SRV"),
        ("100.0.3.10.in-addr.arpa", "PTR"),
        (f"10-3-0-55.default.pod.{Z}", "A"),
    ]
    for name, rdtype in asked:
        await cluster.ask(name, rdtype)  # first sight fills the memo
    before = cluster.server.stats["fast_answers"]
    for _ in range(5):
        for name, rdtype in asked:
            m = await cluster.ask(name, rdtype)
            assert m.answer, (name, rdtype)
    assert cluster.server.stats["fast_answers"] - before == 15


async def test_reverse_zone_apex_has_soa_and_ns(cluster: Cluster) -> None:
    m = await cluster.ask("3.10.in-addr.arpa", "SOA")
    assert lines(m.answer) == [
        "3.10.in-addr.arpa. 5 IN SOA ns.dns.3.10.in-addr.arpa. hostmaster.3.10.in-addr.arpa. "
        f"{m.answer[0][0].serial} 7200 1800 86400 5"
    ]
    m = await cluster.ask("3.10.in-addr.arpa", "NS")
    assert lines(m.answer) == ["3.10.in-addr.arpa. 5 IN NS ns.dns.3.10.in-addr.arpa."]
    # a /14 service network is split into the four /16 reverse zones
    for second in (96, 97, 98, 99):
        m = await cluster.ask(f"{second}.10.in-addr.arpa", "SOA")
        assert m.rcode() == dns.rcode.NOERROR and m.answer, second
    m = await cluster.ask("100.10.in-addr.arpa", "SOA")
    assert m.rcode() == dns.rcode.REFUSED


rfc_choices = pytest.fixture(
    make_cluster_fixture(empty_non_terminal_nxdomain=False, externalname_other_cname=True)
)


async def test_rfc_answers_where_coredns_differs_when_asked(rfc_choices: Cluster) -> None:
    c = rfc_choices
    await populate(c)
    for tcp in (False, True):
        m = await c.ask("0.3.10.in-addr.arpa", "PTR", tcp=tcp)
        assert m.rcode() == dns.rcode.NOERROR and not m.answer, tcp
        assert [r.name.to_text() for r in m.authority] == ["3.10.in-addr.arpa."]
        m = await c.ask(f"_tcp.headless.default.{SVC}", "SRV", tcp=tcp)
        assert m.rcode() == dns.rcode.NOERROR and not m.answer, tcp
        m = await c.ask(f"alias.default.{SVC}", "SRV", tcp=tcp)
        assert lines(m.answer) == [
            f"alias.default.{SVC}. 5 IN CNAME web.default.{SVC}.",
            f"web.default.{SVC}. 5 IN SRV 0 100 80 web.default.{SVC}.",
        ], tcp
    out = await dig(c.port, f"_tcp.headless.default.{SVC}", "SRV")
    assert "status: NOERROR" in out and dig_section(out, "ANSWER") == [], out


pods_verified = pytest.fixture(make_cluster_fixture(pod_mode="verified"))
pods_disabled = pytest.fixture(make_cluster_fixture(pod_mode="disabled"))
wildcards_on = pytest.fixture(make_cluster_fixture(wildcards=True))


def running_pod(name: str, namespace: str, ip: str) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "podIP": ip},
        }
    )


async def test_verified_pod_records_answer_only_a_pod_of_that_namespace(
    pods_verified: Cluster,
) -> None:
    c = pods_verified
    await c.client.create(Namespace.model_validate({"metadata": {"name": "shop"}}))
    await c.client.create(running_pod("cart", "shop", "10.3.0.55"))
    name = f"10-3-0-55.shop.pod.{Z}"
    await c.until(name, "A", lambda m: bool(m.answer), within=5)
    assert lines((await c.ask(name, "A")).answer) == [f"{name}. 5 IN A 10.3.0.55"]
    assert (await c.ask(f"10-3-0-56.shop.pod.{Z}", "A")).rcode() == dns.rcode.NXDOMAIN
    await c.client.create(Namespace.model_validate({"metadata": {"name": "other"}}))
    await c.until(f"other.pod.{Z}", "A", lambda m: m.rcode() == dns.rcode.NOERROR, within=5)
    assert (await c.ask(f"10-3-0-55.other.pod.{Z}", "A")).rcode() == dns.rcode.NXDOMAIN
    for asked, status, answer in (
        (name, "NOERROR", [f"{name}. 5 IN A 10.3.0.55"]),
        (f"10-3-0-56.shop.pod.{Z}", "NXDOMAIN", []),
        (f"10-3-0-55.other.pod.{Z}", "NXDOMAIN", []),
        (f"other.pod.{Z}", "NOERROR", []),
    ):
        out = await dig(c.port, asked, "A")
        assert f"status: {status}" in out and dig_section(out, "ANSWER") == answer, out
    await c.client.delete(Pod, "shop", "cart")
    await c.until(name, "A", lambda m: m.rcode() == dns.rcode.NXDOMAIN, within=5)


async def test_verified_pod_changes_swap_the_pod_index_without_a_rebuild(
    pods_verified: Cluster,
) -> None:
    c = pods_verified
    await c.client.create(Namespace.model_validate({"metadata": {"name": "shop"}}))
    await c.client.create(running_pod("cart", "shop", "10.3.0.55"))
    await c.until(f"10-3-0-55.shop.pod.{Z}", "A", lambda m: bool(m.answer), within=5)
    builds, updates = c.server.stats["zone_builds"], c.server.stats["pod_updates"]
    await c.client.create(running_pod("till", "shop", "10.3.0.56"))
    await c.until(f"10-3-0-56.shop.pod.{Z}", "A", lambda m: bool(m.answer), within=5)
    await c.client.delete(Pod, "shop", "cart")
    await c.until(f"10-3-0-55.shop.pod.{Z}", "A", lambda m: m.rcode() == dns.rcode.NXDOMAIN, 5)
    assert (await c.ask(f"10-3-0-56.shop.pod.{Z}", "A")).answer
    assert c.server.stats["zone_builds"] == builds  # Services and Endpoints not walked again
    assert c.server.stats["pod_updates"] > updates


async def test_verified_a_namespace_holding_a_pod_exists_without_its_object(
    pods_verified: Cluster,
) -> None:
    c = pods_verified
    await c.client.create(running_pod("lone", "solo", "10.3.0.77"))
    name = f"10-3-0-77.solo.pod.{Z}"
    await c.until(name, "A", lambda m: bool(m.answer), within=5)
    assert lines((await c.ask(name, "A")).answer) == [f"{name}. 5 IN A 10.3.0.77"]
    m = await c.ask(f"solo.{SVC}", "A")
    assert m.rcode() == dns.rcode.NOERROR and not m.answer
    await c.client.delete(Pod, "solo", "lone")
    await c.until(f"solo.{SVC}", "A", lambda m: m.rcode() == dns.rcode.NXDOMAIN, within=5)


async def test_disabled_pod_records_are_nxdomain(pods_disabled: Cluster) -> None:
    c = pods_disabled
    await c.client.create(service("web", cluster_ip="10.96.0.10", ports=[{"port": 80}]))
    await c.until(f"web.default.{SVC}", "A", lambda m: bool(m.answer), within=5)
    for name in (f"10-3-0-55.default.pod.{Z}", f"default.pod.{Z}"):
        m = await c.ask(name, "A")
        assert m.rcode() == dns.rcode.NXDOMAIN, name
        out = await dig(c.port, name, "A")
        assert "status: NXDOMAIN" in out and dig_section(out, "ANSWER") == [], out
    assert (await c.ask(f"pod.{Z}", "A")).rcode() == dns.rcode.NOERROR
    out = await dig(c.port, f"pod.{Z}", "A")
    assert "status: NOERROR" in out and dig_section(out, "ANSWER") == [], out


async def test_kube_dns_wildcards_when_turned_on(wildcards_on: Cluster) -> None:
    c = wildcards_on
    await c.client.create(service("web", cluster_ip="10.96.0.10", ports=[{"port": 80}]))
    await c.client.create(service("api", cluster_ip="10.96.0.11", ports=[{"port": 80}]))
    await c.client.create(service("web", "shop", cluster_ip="10.96.0.12", ports=[{"port": 80}]))
    await c.client.create(headless("db", ports=[{"name": "pg", "port": 5432}]))
    await c.client.create(
        endpoints(
            "db",
            addresses=[{"ip": "10.3.0.5", "hostname": "db-0"}, {"ip": "10.3.0.6"}],
            ports=[{"name": "pg", "port": 5432}],
        )
    )
    await c.until(f"web.shop.{SVC}", "A", lambda m: bool(m.answer), within=5)
    await c.until(f"db.default.{SVC}", "A", lambda m: bool(m.answer), within=5)
    cases = [
        (f"*.default.{SVC}", "A", ["10.3.0.5", "10.3.0.6", "10.96.0.10", "10.96.0.11"]),
        (f"web.*.{SVC}", "A", ["10.96.0.10", "10.96.0.12"]),
        (f"*.*.{SVC}", "A", ["10.3.0.5", "10.3.0.6", "10.96.0.10", "10.96.0.11", "10.96.0.12"]),
        (f"*.db.default.{SVC}", "A", ["10.3.0.5", "10.3.0.6"]),
        (
            f"*.*.db.default.{SVC}",
            "SRV",
            [f"0 50 5432 10-3-0-6.db.default.{SVC}.", f"0 50 5432 db-0.db.default.{SVC}."],
        ),
    ]
    for name, rdtype, want in cases:
        for tcp in (False, True):
            m = await c.ask(name, rdtype, tcp=tcp)
            assert m.rcode() == dns.rcode.NOERROR, (name, tcp)
            assert {rr.name.to_text() for rr in m.answer} == {name + "."}
            assert sorted(rd.to_text() for rr in m.answer for rd in rr) == sorted(want), name
        out = await dig(c.port, name, rdtype)
        assert sorted(line.split()[-1] for line in dig_section(out, "ANSWER")) == sorted(
            w.split()[-1] for w in want
        ), out
    assert (await c.ask(f"*.nowhere.{SVC}", "A")).rcode() == dns.rcode.NXDOMAIN


async def test_coredns_any_and_dns_version_answers_come_from_the_memoised_fast_path(
    cluster: Cluster,
) -> None:
    asked = [(f"web.default.{SVC}", "ANY"), (f"dns-version.{Z}", "A")]
    for name, rdtype in asked:
        await cluster.ask(name, rdtype)  # first sight fills the memo
    before = cluster.server.stats["fast_answers"]
    for _ in range(3):
        for name, rdtype in asked:
            m = await cluster.ask(name, rdtype)
            assert not m.answer and m.authority, (name, rdtype)
    assert cluster.server.stats["fast_answers"] - before == 6


shiftnet_choices = pytest.fixture(
    make_cluster_fixture(any_rrsets=True, dns_version_other_nxdomain=False)
)


async def test_shiftnet_answers_for_any_and_dns_version_when_asked(
    shiftnet_choices: Cluster,
) -> None:
    c = shiftnet_choices
    await populate(c)
    every_rrset = [
        f"dual.default.{SVC}. 5 IN A 10.96.0.30",
        f"dual.default.{SVC}. 5 IN AAAA fd00:96::30",
        f"dual.default.{SVC}. 5 IN SRV 0 50 80 dual.default.{SVC}.",
    ]
    for tcp in (False, True):
        m = await c.ask(f"dual.default.{SVC}", "ANY", tcp=tcp)
        assert m.rcode() == dns.rcode.NOERROR and lines(m.answer) == every_rrset, tcp
        m = await c.ask(f"dns-version.{Z}", "A", tcp=tcp)
        assert m.rcode() == dns.rcode.NOERROR and not m.answer, tcp
        assert [r.name.to_text() for r in m.authority] == [f"{Z}."], tcp
    out = await dig(c.port, f"dual.default.{SVC}", "ANY")
    assert "status: NOERROR" in out and dig_section(out, "ANSWER") == every_rrset, out
    out = await dig(c.port, f"dns-version.{Z}", "AAAA")
    assert "status: NOERROR" in out and dig_section(out, "ANSWER") == [], out
