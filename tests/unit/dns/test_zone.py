"""The cluster zone against the Kubernetes DNS specification (schema 1.1.0)."""

from __future__ import annotations

import dns.name
import dns.rcode
import dns.rdatatype as T
import pytest
from tests.support.dns import endpoints, headless, service

from shiftnet.dns.zone import Resolution, Zone, ZoneConfig, build_zone, reverse_name

N = dns.name.from_text
CFG = ZoneConfig()


def zone(*objs, config: ZoneConfig = CFG) -> Zone:  # type: ignore[no-untyped-def]
    svcs = [o for o in objs if o.KIND == "Service"]
    eps = [o for o in objs if o.KIND == "Endpoints"]
    return build_zone(svcs, eps, config, serial=7)


def resolve(z: Zone, name: str, rdtype: int) -> Resolution:
    res = z.resolve(N(name), rdtype)
    assert res is not None, f"{name} should be inside the zone"
    return res


def texts(res: Resolution, section: str = "answer") -> list[str]:
    return sorted(
        f"{rr.name} {rr.ttl} {T.to_text(rr.rdtype)} {rd.to_text()}"
        for rr in getattr(res, section)
        for rd in rr
    )


def assert_nodata(res: Resolution) -> None:
    assert res.rcode == dns.rcode.NOERROR
    assert res.answer == ()
    assert [r.rdtype for r in res.authority] == [T.SOA]


def assert_nxdomain(res: Resolution) -> None:
    assert res.rcode == dns.rcode.NXDOMAIN
    assert res.answer == ()
    assert [r.rdtype for r in res.authority] == [T.SOA]


WEB = service("web", ports=[{"name": "http", "port": 80}, {"port": 9000}])


def test_cluster_ip_service_a_record() -> None:
    res = resolve(zone(WEB), "web.default.svc.cluster.local.", T.A)
    assert res.rcode == dns.rcode.NOERROR
    assert texts(res) == ["web.default.svc.cluster.local. 5 A 127.30.0.10"]
    assert res.authority == ()


def test_ipv6_cluster_ip_gives_aaaa_and_nodata_for_a() -> None:
    z = zone(service("v6", cluster_ip="fd00::10"))
    assert texts(resolve(z, "v6.default.svc.cluster.local.", T.AAAA)) == [
        "v6.default.svc.cluster.local. 5 AAAA fd00::10"
    ]
    assert_nodata(resolve(z, "v6.default.svc.cluster.local.", T.A))


def test_names_are_case_insensitive() -> None:
    res = resolve(zone(WEB), "WeB.DeFault.SVC.Cluster.LOCAL.", T.A)
    assert [rd.to_text() for rr in res.answer for rd in rr] == ["127.30.0.10"]


def test_srv_for_named_ports_only_with_the_service_address_as_additional() -> None:
    z = zone(WEB)
    res = resolve(z, "_http._tcp.web.default.svc.cluster.local.", T.SRV)
    assert texts(res) == [
        "_http._tcp.web.default.svc.cluster.local. 5 SRV 0 100 80 web.default.svc.cluster.local."
    ]
    assert texts(res, "additional") == ["web.default.svc.cluster.local. 5 A 127.30.0.10"]
    # the unnamed port 9000 has no SRV; wrong protocol is no name at all
    assert_nxdomain(resolve(z, "_http._udp.web.default.svc.cluster.local.", T.SRV))


def test_ptr_for_service_ip() -> None:
    res = resolve(zone(WEB), "10.0.30.127.in-addr.arpa.", T.PTR)
    assert texts(res) == ["10.0.30.127.in-addr.arpa. 5 PTR web.default.svc.cluster.local."]


def test_ptr_for_ipv6_service_ip() -> None:
    z = zone(service("v6", cluster_ip="fd00::10"))
    res = resolve(z, reverse_name("fd00::10"), T.PTR)
    assert [rd.to_text() for rr in res.answer for rd in rr] == ["v6.default.svc.cluster.local."]


@pytest.mark.parametrize("rdtype", [T.A, T.AAAA, T.TXT, T.SRV])
def test_other_questions_at_a_reverse_name_are_nxdomain_like_coredns(rdtype: int) -> None:
    assert_nxdomain(resolve(zone(WEB), "10.0.30.127.in-addr.arpa.", rdtype))


def test_dns_version_keeps_coredns_ttl_whatever_the_zone_ttl() -> None:
    z = zone(config=ZoneConfig(ttl=17))
    assert texts(resolve(z, "dns-version.cluster.local.", T.TXT)) == [
        'dns-version.cluster.local. 28800 TXT "1.1.0"'
    ]


def test_unknown_reverse_names_are_not_ours() -> None:
    assert zone(WEB).resolve(N("11.0.30.127.in-addr.arpa."), T.PTR) is None


def test_dns_version_txt() -> None:
    res = resolve(zone(), "dns-version.cluster.local.", T.TXT)
    assert texts(res) == ['dns-version.cluster.local. 28800 TXT "1.1.0"']


def test_apex_soa_and_ns() -> None:
    z = zone(config=ZoneConfig(nameservers=("127.0.0.1",)))
    soa = resolve(z, "cluster.local.", T.SOA)
    assert texts(soa) == [
        "cluster.local. 5 SOA ns.dns.cluster.local. hostmaster.cluster.local. 7 7200 1800 86400 5"
    ]
    assert texts(resolve(z, "cluster.local.", T.NS)) == [
        "cluster.local. 5 NS ns.dns.cluster.local."
    ]
    assert texts(resolve(z, "ns.dns.cluster.local.", T.A)) == [
        "ns.dns.cluster.local. 5 A 127.0.0.1"
    ]


def test_nxdomain_and_nodata_are_told_apart() -> None:
    z = zone(WEB)
    # missing service, missing namespace, missing record under a service
    assert_nxdomain(resolve(z, "nope.default.svc.cluster.local.", T.A))
    assert_nxdomain(resolve(z, "web.other.svc.cluster.local.", T.A))
    assert_nxdomain(resolve(z, "x.web.default.svc.cluster.local.", T.A))
    assert_nxdomain(resolve(z, "x.pod.cluster.local.", T.A))  # no such namespace
    # existing name, other type
    assert_nodata(resolve(z, "web.default.svc.cluster.local.", T.MX))
    assert_nodata(resolve(z, "web.default.svc.cluster.local.", T.AAAA))
    # the names CoreDNS knows without records: namespaces, svc, the apex
    assert_nodata(resolve(z, "default.svc.cluster.local.", T.A))
    assert_nodata(resolve(z, "svc.cluster.local.", T.A))
    assert_nodata(resolve(z, "cluster.local.", T.A))


def test_empty_non_terminals_are_nxdomain_by_default_like_coredns() -> None:
    z = zone(WEB)
    assert_nxdomain(resolve(z, "_tcp.web.default.svc.cluster.local.", T.SRV))
    assert_nxdomain(resolve(z, "dns.cluster.local.", T.A))  # above ns.dns.<zone>
    # what is below them still answers
    assert texts(resolve(z, "_http._tcp.web.default.svc.cluster.local.", T.SRV))


def test_empty_non_terminals_exist_when_asked_rfc_8020() -> None:
    z = zone(WEB, config=ZoneConfig(empty_non_terminal_nxdomain=False))
    assert_nodata(resolve(z, "_tcp.web.default.svc.cluster.local.", T.SRV))
    assert_nodata(resolve(z, "dns.cluster.local.", T.A))
    assert_nxdomain(resolve(z, "_udp.web.default.svc.cluster.local.", T.SRV))


def test_negative_answers_carry_the_soa_with_the_negative_ttl() -> None:
    z = zone(WEB, config=ZoneConfig(ttl=30))
    res = resolve(z, "nope.default.svc.cluster.local.", T.A)
    (soa,) = res.authority
    assert soa.name == N("cluster.local.")
    assert soa.ttl == 30 and soa[0].minimum == 30


def test_ttl_is_configurable() -> None:
    z = zone(WEB, config=ZoneConfig(ttl=42))
    assert resolve(z, "web.default.svc.cluster.local.", T.A).answer[0].ttl == 42


def test_domain_is_configurable() -> None:
    z = zone(WEB, config=ZoneConfig(domain="Corp.Example"))
    assert texts(resolve(z, "web.default.svc.corp.example.", T.A)) == [
        "web.default.svc.corp.example. 5 A 127.30.0.10"
    ]
    assert z.resolve(N("web.default.svc.cluster.local."), T.A) is None


def test_outside_names_are_not_ours() -> None:
    assert zone(WEB).resolve(N("example.com."), T.A) is None
    assert zone(WEB).resolve(N("local."), T.A) is None


HL = headless("db", ports=[{"name": "pg", "port": 5432}])
HL_EPS = endpoints(
    "db",
    addresses=[{"ip": "127.10.0.5", "hostname": "db-0"}, {"ip": "127.10.0.6"}],
    not_ready=[{"ip": "127.10.0.7", "hostname": "db-2"}],
    ports=[{"name": "pg", "port": 15432}],
)


def test_headless_one_a_per_ready_endpoint() -> None:
    res = resolve(zone(HL, HL_EPS), "db.default.svc.cluster.local.", T.A)
    assert texts(res) == [
        "db.default.svc.cluster.local. 5 A 127.10.0.5",
        "db.default.svc.cluster.local. 5 A 127.10.0.6",
    ]


def test_headless_endpoint_hostnames_and_dashed_ids() -> None:
    z = zone(HL, HL_EPS)
    assert texts(resolve(z, "db-0.db.default.svc.cluster.local.", T.A)) == [
        "db-0.db.default.svc.cluster.local. 5 A 127.10.0.5"
    ]
    assert texts(resolve(z, "127-10-0-6.db.default.svc.cluster.local.", T.A)) == [
        "127-10-0-6.db.default.svc.cluster.local. 5 A 127.10.0.6"
    ]
    assert_nxdomain(resolve(z, "db-2.db.default.svc.cluster.local.", T.A))  # not ready


def test_headless_srv_targets_each_endpoint_with_endpoint_port() -> None:
    res = resolve(zone(HL, HL_EPS), "_pg._tcp.db.default.svc.cluster.local.", T.SRV)
    assert sorted(rd.to_text() for rr in res.answer for rd in rr) == [
        "0 50 15432 127-10-0-6.db.default.svc.cluster.local.",
        "0 50 15432 db-0.db.default.svc.cluster.local.",
    ]
    assert len(texts(res, "additional")) == 2


def test_headless_ptr_names_the_endpoint() -> None:
    z = zone(HL, HL_EPS)
    assert texts(resolve(z, "5.0.10.127.in-addr.arpa.", T.PTR)) == [
        "5.0.10.127.in-addr.arpa. 5 PTR db-0.db.default.svc.cluster.local."
    ]
    assert texts(resolve(z, "6.0.10.127.in-addr.arpa.", T.PTR)) == [
        "6.0.10.127.in-addr.arpa. 5 PTR 127-10-0-6.db.default.svc.cluster.local."
    ]


def test_headless_publish_not_ready_addresses() -> None:
    svc = headless("db", publishNotReadyAddresses=True)
    res = resolve(zone(svc, HL_EPS), "db.default.svc.cluster.local.", T.A)
    assert len(res.answer[0]) == 3


def test_headless_without_ready_endpoints_can_be_nodata_per_spec() -> None:
    spec = ZoneConfig(headless_empty_nxdomain=False)
    z = zone(HL, endpoints("db", not_ready=[{"ip": "127.10.0.7"}]), config=spec)
    assert_nodata(resolve(z, "db.default.svc.cluster.local.", T.A))
    assert_nodata(resolve(zone(HL, config=spec), "db.default.svc.cluster.local.", T.A))


def test_headless_without_ready_endpoints_is_nxdomain_by_default_like_coredns() -> None:
    z = zone(HL)
    assert_nxdomain(resolve(z, "db.default.svc.cluster.local.", T.A))
    # the namespace still exists: it holds a Service (CoreDNS: the Namespace exists)
    assert_nodata(resolve(z, "default.svc.cluster.local.", T.A))


def test_external_name_is_a_cname() -> None:
    z = zone(service("ext", cluster_ip=None, type="ExternalName", externalName="db.Example.com."))
    res = resolve(z, "ext.default.svc.cluster.local.", T.A)
    assert res.rcode == dns.rcode.NOERROR
    assert texts(res) == ["ext.default.svc.cluster.local. 5 CNAME db.example.com."]
    assert texts(resolve(z, "ext.default.svc.cluster.local.", T.CNAME)) == texts(res)


@pytest.mark.parametrize("rdtype", [T.SRV, T.MX, T.TXT, T.ANY])
def test_external_name_other_types_are_nodata_by_default_like_coredns(rdtype: int) -> None:
    z = zone(service("ext", cluster_ip=None, type="ExternalName", externalName="db.example.com"))
    assert_nodata(resolve(z, "ext.default.svc.cluster.local.", rdtype))


@pytest.mark.parametrize("rdtype", [T.SRV, T.MX, T.TXT, T.ANY])
def test_external_name_other_types_get_the_cname_when_asked(rdtype: int) -> None:
    z = zone(
        service("ext", cluster_ip=None, type="ExternalName", externalName="db.example.com"),
        config=ZoneConfig(externalname_other_cname=True, any_rrsets=True),
    )
    res = resolve(z, "ext.default.svc.cluster.local.", rdtype)
    assert res.rcode == dns.rcode.NOERROR and res.chase is None
    assert texts(res) == ["ext.default.svc.cluster.local. 5 CNAME db.example.com."]


def test_external_name_inside_the_zone_is_followed() -> None:
    ext = service(
        "alias", cluster_ip=None, type="ExternalName", externalName="web.default.svc.cluster.local"
    )
    res = resolve(zone(WEB, ext), "alias.default.svc.cluster.local.", T.A)
    assert texts(res) == [
        "alias.default.svc.cluster.local. 5 CNAME web.default.svc.cluster.local.",
        "web.default.svc.cluster.local. 5 A 127.30.0.10",
    ]


def test_external_name_loop_is_servfail_not_a_hang() -> None:
    a = service(
        "a", cluster_ip=None, type="ExternalName", externalName="b.default.svc.cluster.local"
    )
    b = service(
        "b", cluster_ip=None, type="ExternalName", externalName="a.default.svc.cluster.local"
    )
    assert resolve(zone(a, b), "a.default.svc.cluster.local.", T.A).rcode == dns.rcode.SERVFAIL


@pytest.mark.parametrize(
    "bad",
    [
        service("ext", cluster_ip=None, type="ExternalName", externalName="bad name;rm -rf"),
        service("ext", cluster_ip=None, type="ExternalName", externalName=""),
        service("Bad_Name"),
        service("ok", namespace="Bad.NS"),
    ],
)
def test_invalid_names_are_left_out_and_reported(bad) -> None:  # type: ignore[no-untyped-def]
    z = zone(bad, WEB)
    assert len(z.problems) == 1
    assert z.problems[0].kind == "Service"
    # the good service is unaffected
    assert resolve(z, "web.default.svc.cluster.local.", T.A).answer


def test_invalid_endpoint_hostname_is_left_out() -> None:
    eps = endpoints("db", addresses=[{"ip": "127.10.0.5", "hostname": "Evil.Host"}])
    z = zone(HL, eps)
    assert [p.kind for p in z.problems] == ["Endpoints"]


def test_service_without_cluster_ip_yet_exists_without_records() -> None:
    assert_nodata(
        resolve(zone(service("new", cluster_ip="")), "new.default.svc.cluster.local.", T.A)
    )


ANY_CASES = [
    # (name, CoreDNS's rcode: the rcode A gets there)
    ("cluster.local.", dns.rcode.NOERROR),
    ("web.default.svc.cluster.local.", dns.rcode.NOERROR),
    ("_http._tcp.web.default.svc.cluster.local.", dns.rcode.NOERROR),
    ("dns-version.cluster.local.", dns.rcode.NXDOMAIN),
    ("10-3-0-9.default.pod.cluster.local.", dns.rcode.NOERROR),
    ("default.svc.cluster.local.", dns.rcode.NOERROR),
    ("nope.default.svc.cluster.local.", dns.rcode.NXDOMAIN),
    ("_tcp.web.default.svc.cluster.local.", dns.rcode.NXDOMAIN),
]


@pytest.mark.parametrize(("name", "rcode"), ANY_CASES)
def test_any_is_answered_without_records_by_default_like_coredns(name: str, rcode: int) -> None:
    z = zone(WEB, config=ZoneConfig(nameservers=("127.0.0.1",)))
    res = resolve(z, name, T.ANY)
    assert res.rcode == rcode and res.answer == () and res.additional == ()
    assert [r.rdtype for r in res.authority] == [T.SOA]


def test_any_to_an_external_name_inside_the_zone_is_no_chase_and_no_records() -> None:
    z = zone(
        WEB,
        service(
            "al", cluster_ip=None, type="ExternalName", externalName="web.default.svc.cluster.local"
        ),
    )
    assert_nodata(resolve(z, "al.default.svc.cluster.local.", T.ANY))


def test_any_returns_every_rrset_at_the_name_when_asked() -> None:
    z = zone(WEB, config=ZoneConfig(nameservers=("127.0.0.1",), any_rrsets=True))
    res = resolve(z, "cluster.local.", T.ANY)
    assert sorted(T.to_text(r.rdtype) for r in res.answer) == ["NS", "SOA"]
    res = resolve(z, "web.default.svc.cluster.local.", T.ANY)
    assert texts(res) == [
        "web.default.svc.cluster.local. 5 A 127.30.0.10",
        "web.default.svc.cluster.local. 5 SRV 0 50 80 web.default.svc.cluster.local.",
        "web.default.svc.cluster.local. 5 SRV 0 50 9000 web.default.svc.cluster.local.",
    ]
    assert texts(resolve(z, "dns-version.cluster.local.", T.ANY)) == [
        'dns-version.cluster.local. 28800 TXT "1.1.0"'
    ]


@pytest.mark.parametrize("rdtype", [T.A, T.AAAA, T.SRV, T.MX, T.CNAME, T.PTR])
def test_dns_version_other_types_are_nxdomain_by_default_like_coredns(rdtype: int) -> None:
    assert_nxdomain(resolve(zone(WEB), "dns-version.cluster.local.", rdtype))


@pytest.mark.parametrize("rdtype", [T.A, T.AAAA, T.SRV])
def test_dns_version_other_types_are_nodata_when_asked(rdtype: int) -> None:
    z = zone(WEB, config=ZoneConfig(dns_version_other_nxdomain=False))
    assert_nodata(resolve(z, "dns-version.cluster.local.", rdtype))
    assert texts(resolve(z, "dns-version.cluster.local.", T.TXT)) == [
        'dns-version.cluster.local. 28800 TXT "1.1.0"'
    ]


def test_build_is_deterministic() -> None:
    svcs = [service(f"s{i}", cluster_ip=f"127.30.1.{i}") for i in range(1, 30)]
    a = build_zone(svcs, [HL_EPS], CFG, serial=3)
    b = build_zone(list(reversed(svcs)), [HL_EPS], CFG, serial=3)
    dump = lambda z: [  # noqa: E731
        (n, z.records(n)) for n in z.names()
    ]
    assert dump(a) == dump(b)


def test_long_names_that_overflow_255_octets_are_reported_not_fatal() -> None:
    ns = "n" * 63
    svc = service("s" * 63, namespace=ns, ports=[{"name": "p" * 15, "port": 1}])
    z = build_zone([svc, WEB], [], ZoneConfig(domain=".".join(["d" * 60] * 2)))
    assert z.problems
    assert z.resolve(N("web.default.svc." + ".".join(["d" * 60] * 2) + "."), T.A)
