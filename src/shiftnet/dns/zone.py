"""The cluster zone: DNS records computed from Services and Endpoints. Pure.

Records follow the Kubernetes DNS-based service discovery specification
(schema 1.1.0): ``<svc>.<ns>.svc.<zone>`` A/AAAA, headless endpoint records,
SRV for named ports, PTR for service and endpoint IPs, ExternalName CNAMEs
and ``dns-version.<zone>`` TXT. :func:`build_zone` turns a snapshot of the
informer caches into a :class:`Zone`; :meth:`Zone.resolve` answers one
question. No I/O, no clocks: the same objects give the same answers.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

import dns.exception
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.CNAME
import dns.rdtypes.ANY.NS
import dns.rdtypes.ANY.PTR
import dns.rdtypes.ANY.SOA
import dns.rdtypes.ANY.TXT
import dns.rdtypes.IN.A
import dns.rdtypes.IN.AAAA
import dns.rdtypes.IN.SRV
import dns.rrset
from shiftnet.api import Endpoints, Service
from shiftnet.dns.names import dns_label, is_dns1123_subdomain, is_port_name

SCHEMA_VERSION = "1.1.0"
TOLERATE_UNREADY = "service.alpha.kubernetes.io/tolerate-unready-endpoints"
SRV_PRIORITY = 10  # values the specification's own example uses
SRV_WEIGHT = 100
MAX_CNAME_CHAIN = 8

IN = dns.rdataclass.IN
A = dns.rdatatype.A
AAAA = dns.rdatatype.AAAA
ANY = dns.rdatatype.ANY
CNAME = dns.rdatatype.CNAME
NS = dns.rdatatype.NS
PTR = dns.rdatatype.PTR
SOA = dns.rdatatype.SOA
SRV = dns.rdatatype.SRV
TXT = dns.rdatatype.TXT

Name = dns.name.Name


@dataclass(frozen=True)
class ZoneConfig:
    """What the operator chooses; everything else comes from the cluster."""

    domain: str = "cluster.local"
    ttl: int = 5
    nameservers: tuple[str, ...] = ()  # A/AAAA of ns.dns.<zone>, the server's own address
    headless_empty_nxdomain: bool = False  # spec says NODATA; CoreDNS says NXDOMAIN


@dataclass(frozen=True)
class Resolution:
    """The zone's answer to one question; the server turns it into a message."""

    rcode: int
    answer: tuple[dns.rrset.RRset, ...] = ()
    authority: tuple[dns.rrset.RRset, ...] = ()
    additional: tuple[dns.rrset.RRset, ...] = ()


@dataclass(frozen=True)
class Problem:
    """An object (or part of one) left out of the zone, and why."""

    kind: str
    namespace: str
    name: str
    reason: str


@dataclass
class _Builder:
    origin: Name
    ttl: int
    rdata: dict[Name, dict[int, set[dns.rdata.Rdata]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def add(self, owner: Name, rd: dns.rdata.Rdata) -> None:
        self.rdata.setdefault(owner, {}).setdefault(rd.rdtype, set()).add(rd)

    def touch(self, owner: Name) -> None:
        """Make ``owner`` exist even without records (NODATA rather than NXDOMAIN)."""
        self.rdata.setdefault(owner, {})


# dnspython's rdata constructors are untyped; these are the only calls to them.


def _ptr(target: Name) -> dns.rdata.Rdata:
    return dns.rdtypes.ANY.PTR.PTR(IN, PTR, target)  # type: ignore[no-untyped-call]


def _cname(target: Name) -> dns.rdata.Rdata:
    return dns.rdtypes.ANY.CNAME.CNAME(IN, CNAME, target)  # type: ignore[no-untyped-call]


def _srv(port: int, target: Name) -> dns.rdata.Rdata:
    return dns.rdtypes.IN.SRV.SRV(  # type: ignore[no-untyped-call]
        IN, SRV, SRV_PRIORITY, SRV_WEIGHT, port, target
    )


def _address_rdata(ip: str) -> dns.rdata.Rdata:
    addr = ipaddress.ip_address(ip)
    if addr.version == 4:
        return dns.rdtypes.IN.A.A(IN, A, str(addr))  # type: ignore[no-untyped-call]
    return dns.rdtypes.IN.AAAA.AAAA(IN, AAAA, str(addr))  # type: ignore[no-untyped-call]


def reverse_name(ip: str) -> Name:
    """``d.c.b.a.in-addr.arpa.`` (or the ip6.arpa nibble name) of an address."""
    return dns.name.from_text(ipaddress.ip_address(ip).reverse_pointer + ".")


def _endpoint_label(ip: str, hostname: str | None) -> bytes:
    """The endpoint's hostname, or the dashed address as its system-assigned identifier."""
    if hostname:
        return dns_label(hostname)
    addr = ipaddress.ip_address(ip)
    text = str(addr).replace(".", "-") if addr.version == 4 else addr.exploded.replace(":", "-")
    return text.encode("ascii")


def _valid_ip(ip: str | None) -> str | None:
    if not ip:
        return None
    try:
        return str(ipaddress.ip_address(ip))
    except ValueError:
        return None


def _add_service(b: _Builder, svc: Service, eps: Endpoints | None, cfg: ZoneConfig) -> None:
    ns, name = svc.metadata.namespace or "", svc.metadata.name
    svc_name = Name((dns_label(name), dns_label(ns), b"svc", *b.origin.labels))
    spec = svc.spec

    if spec.type == "ExternalName":
        target = (spec.external_name or "").rstrip(".").lower()
        if not is_dns1123_subdomain(target):
            raise ValueError(
                f"spec.externalName {spec.external_name!r} is not a DNS-1123 subdomain"
            )
        tname = Name((*(p.encode("ascii") for p in target.split(".")), b""))
        b.add(svc_name, _cname(tname))
        return

    if spec.headless:
        _add_headless(b, svc, svc_name, eps, cfg)
        return

    b.touch(svc_name)
    ip = _valid_ip(spec.cluster_ip)
    if ip is None:
        if spec.cluster_ip:
            b.problems.append(
                Problem("Service", ns, name, f"spec.clusterIP {spec.cluster_ip!r} is not an IP")
            )
        return
    b.add(svc_name, _address_rdata(ip))
    b.add(reverse_name(ip), _ptr(svc_name))
    for port in spec.ports:
        if port.name and is_port_name(port.name):
            owner = _srv_owner(port.name, port.protocol, svc_name)
            b.add(owner, _srv(port.port, svc_name))


def _srv_owner(port_name: str, protocol: str, svc_name: Name) -> Name:
    proto = dns_label(protocol.lower())
    return Name((b"_" + dns_label(port_name), b"_" + proto, *svc_name.labels))


def _add_headless(
    b: _Builder, svc: Service, svc_name: Name, eps: Endpoints | None, cfg: ZoneConfig
) -> None:
    ns, name = svc.metadata.namespace or "", svc.metadata.name
    tolerate = svc.spec.publish_not_ready_addresses or (
        svc.metadata.annotations.get(TOLERATE_UNREADY, "").lower() == "true"
    )
    any_ready = False
    for subset in eps.subsets if eps else []:
        addresses = list(subset.addresses)
        if tolerate:
            addresses += subset.not_ready_addresses
        for addr in addresses:
            ip = _valid_ip(addr.ip)
            if ip is None:
                b.problems.append(
                    Problem("Endpoints", ns, name, f"address {addr.ip!r} is not an IP")
                )
                continue
            try:
                host = Name((_endpoint_label(ip, addr.hostname), *svc_name.labels))
            except ValueError as exc:
                b.problems.append(Problem("Endpoints", ns, name, f"hostname: {exc}"))
                continue
            any_ready = True
            rd = _address_rdata(ip)
            b.add(svc_name, rd)
            b.add(host, rd)
            b.add(reverse_name(ip), _ptr(host))
            for port in subset.ports:
                if port.name and is_port_name(port.name):
                    b.add(_srv_owner(port.name, port.protocol, svc_name), _srv(port.port, host))
    if any_ready or not cfg.headless_empty_nxdomain:
        b.touch(svc_name)


def build_zone(
    services: Iterable[Service],
    endpoints: Iterable[Endpoints],
    config: ZoneConfig,
    serial: int = 1,
) -> Zone:
    """The zone for one snapshot of the cluster; invalid objects are skipped and reported."""
    origin = Name((*(dns_label(p) for p in config.domain.lower().strip(".").split(".")), b""))
    b = _Builder(origin=origin, ttl=config.ttl)
    ns_host = Name((b"ns", b"dns", *origin.labels))
    b.add(
        origin,
        dns.rdtypes.ANY.SOA.SOA(  # type: ignore[no-untyped-call]
            IN,
            SOA,
            ns_host,
            Name((b"hostmaster", *origin.labels)),
            serial & 0xFFFFFFFF,
            7200,
            1800,
            86400,
            config.ttl,
        ),
    )
    b.add(origin, dns.rdtypes.ANY.NS.NS(IN, NS, ns_host))  # type: ignore[no-untyped-call]
    b.touch(ns_host)
    for ip in config.nameservers:
        b.add(ns_host, _address_rdata(ip))
    b.add(
        Name((b"dns-version", *origin.labels)),
        dns.rdtypes.ANY.TXT.TXT(IN, TXT, [SCHEMA_VERSION.encode("ascii")]),
    )
    b.touch(Name((b"svc", *origin.labels)))

    eps_by_key = {e.key: e for e in endpoints}
    for svc in sorted(services, key=lambda s: s.key):
        try:
            _add_service(b, svc, eps_by_key.get(svc.key), config)
        except (ValueError, dns.exception.DNSException) as exc:
            ns, name = svc.key
            b.problems.append(Problem("Service", ns, name, str(exc)))
    return Zone(origin, config.ttl, b.rdata, tuple(b.problems))


class Zone:
    """An immutable index from owner name to RRsets, with the names that exist."""

    def __init__(
        self,
        origin: Name,
        ttl: int,
        rdata: dict[Name, dict[int, set[dns.rdata.Rdata]]],
        problems: tuple[Problem, ...] = (),
    ) -> None:
        self.origin = origin
        self.ttl = ttl
        self.problems = problems
        self._rrsets: dict[Name, dict[int, dns.rrset.RRset]] = {}
        self._exists: set[Name] = set()
        for owner in sorted(rdata):
            by_type: dict[int, dns.rrset.RRset] = {}
            for rdtype in sorted(rdata[owner]):
                rrset = dns.rrset.RRset(owner, IN, dns.rdatatype.RdataType.make(rdtype))
                for rd in sorted(rdata[owner][rdtype], key=lambda r: r.to_digestable()):
                    rrset.add(rd, ttl)
                by_type[rdtype] = rrset
            self._rrsets[owner] = by_type
            self._exists.add(owner)
            if owner.is_subdomain(origin):
                # empty non-terminals between the record and the apex exist too
                parent = owner
                while parent != origin:
                    parent = parent.parent()
                    self._exists.add(parent)
        soa = self._rrsets[origin][SOA]
        negative_ttl = min(ttl, soa[0].minimum)  # RFC 2308 section 3
        neg = dns.rrset.RRset(origin, IN, dns.rdatatype.SOA)
        neg.add(soa[0], negative_ttl)
        self._negative = (neg,)

    def __len__(self) -> int:
        return sum(len(v) for v in self._rrsets.values())

    def names(self) -> list[Name]:
        """Every owner name holding records, sorted (for tests and the benchmark)."""
        return sorted(n for n, v in self._rrsets.items() if v)

    def owns(self, qname: Name) -> bool:
        """Is the question ours (the cluster zone, or a reverse name we hold)?"""
        return qname.is_subdomain(self.origin) or qname in self._rrsets

    def rrsets(self, qname: Name) -> dict[int, dns.rrset.RRset]:
        return self._rrsets.get(qname, {})

    def resolve(self, qname: Name, qtype: int) -> Resolution | None:
        """The answer to ``qname``/``qtype``; None when the name is not ours to answer."""
        if not self.owns(qname):
            return None
        answer: list[dns.rrset.RRset] = []
        name = qname
        for _ in range(MAX_CNAME_CHAIN):
            found = self._rrsets.get(name)
            if found is None:
                if name in self._exists:
                    return Resolution(dns.rcode.NOERROR, tuple(answer), self._negative)
                return Resolution(dns.rcode.NXDOMAIN, tuple(answer), self._negative)
            cname = found.get(CNAME)
            if cname is not None and qtype not in (CNAME, ANY):
                answer.append(cname)
                target = cname[0].target
                if not self.owns(target):
                    return Resolution(dns.rcode.NOERROR, tuple(answer))
                name = target
                continue
            if qtype == ANY:
                hits = [found[t] for t in sorted(found)]
            else:
                hit = found.get(qtype)
                hits = [hit] if hit is not None else []
            if not hits:
                return Resolution(dns.rcode.NOERROR, tuple(answer), self._negative)
            answer.extend(hits)
            return Resolution(dns.rcode.NOERROR, tuple(answer), (), self._additional(hits))
        return Resolution(dns.rcode.SERVFAIL, tuple(answer))  # a CNAME loop

    def _additional(self, hits: list[dns.rrset.RRset]) -> tuple[dns.rrset.RRset, ...]:
        """Addresses of SRV targets, as the specification allows."""
        extra: list[dns.rrset.RRset] = []
        seen: set[Name] = set()
        for rrset in hits:
            if rrset.rdtype != SRV:
                continue
            for rd in rrset:
                if rd.target in seen:
                    continue
                seen.add(rd.target)
                at = self._rrsets.get(rd.target, {})
                extra.extend(at[t] for t in (A, AAAA) if t in at)
        return tuple(extra)
