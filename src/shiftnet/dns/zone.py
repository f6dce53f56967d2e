"""The cluster zone: DNS records computed from Services and Endpoints. Pure.

Records follow the Kubernetes DNS-based service discovery specification
(schema 1.1.0): ``<svc>.<ns>.svc.<zone>`` A/AAAA, headless endpoint records,
SRV for named ports, PTR for service and endpoint IPs, ExternalName CNAMEs
and ``dns-version.<zone>`` TXT. :func:`build_zone` turns a snapshot of the
informer caches into a :class:`Zone`; :meth:`Zone.resolve` answers one
question. No I/O, no clocks: the same objects give the same answers.

Records are kept as plain strings and tuples keyed by lowercase owner text
(building a zone of 10,000 services must take milliseconds, not the seconds
dnspython objects cost); RRsets are made only when a name is first asked for.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from shiftnet.api import Endpoints, Service
from shiftnet.dns.names import dns_label, is_dns1123_subdomain, is_port_name
from shiftnet.errors import shorten

SCHEMA_VERSION = "1.1.0"
TOLERATE_UNREADY = "service.alpha.kubernetes.io/tolerate-unready-endpoints"
SRV_PRIORITY = 10  # values the specification's own example uses
SRV_WEIGHT = 100
MAX_CNAME_CHAIN = 8
MAX_NAME_TEXT = 254  # presentation form with the final dot: 255 octets on the wire

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
# One record's data in presentation form: an address, a target name, a TXT
# string, SRV (priority, weight, port, target) or the SOA fields.
RData = str | tuple[int, int, int, str] | tuple[str, str, int, int, int, int, int]


@dataclass(frozen=True)
class ZoneConfig:
    """What the operator chooses; everything else comes from the cluster."""

    domain: str = "cluster.local"
    ttl: int = 5
    nameservers: tuple[str, ...] = ()  # A/AAAA of ns.dns.<zone>, the server's own address
    headless_empty_nxdomain: bool = True  # CoreDNS and issue 7; the spec says NODATA


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
    records: dict[str, dict[int, set[RData]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def add(self, owner: str, rdtype: int, rdata: RData) -> None:
        if len(owner) > MAX_NAME_TEXT:
            raise ValueError(f"name {owner[:40]}... is longer than 255 octets")
        self.records.setdefault(owner, {}).setdefault(rdtype, set()).add(rdata)

    def touch(self, owner: str) -> None:
        """Make ``owner`` exist even without records (NODATA rather than NXDOMAIN)."""
        if len(owner) > MAX_NAME_TEXT:
            raise ValueError(f"name {owner[:40]}... is longer than 255 octets")
        self.records.setdefault(owner, {})


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def reverse_name(ip: str | Address) -> str:
    """``d.c.b.a.in-addr.arpa.`` (or the ip6.arpa nibble name) of an address."""
    addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    return addr.reverse_pointer + "."


@functools.lru_cache(maxsize=65536)
def _label(value: str) -> str:
    """Validated once per distinct string: namespaces and port names repeat a lot."""
    return dns_label(value).decode("ascii")


def _address_type(addr: Address) -> int:
    return A if addr.version == 4 else AAAA


def _endpoint_label(addr: Address, hostname: str | None) -> str:
    """The endpoint's hostname, or the dashed address as its system-assigned identifier."""
    if hostname:
        return _label(hostname)
    return str(addr).replace(".", "-") if addr.version == 4 else addr.exploded.replace(":", "-")


def _valid_ip(ip: str | None) -> Address | None:
    if not ip:
        return None
    try:
        return ipaddress.ip_address(ip)
    except ValueError:
        return None


def _srv_port(name: str, number: int) -> bool:
    """A named port gets an SRV record when its name and number fit one (the API
    refuses others; the store may hold objects written around it)."""
    return is_port_name(name) and 0 < number < 65536


def _srv_owner(port_name: str, protocol: str, svc_name: str) -> str:
    return f"_{_label(port_name)}._{_label(protocol.lower())}.{svc_name}"


def _add_service(
    b: _Builder, svc: Service, eps: Endpoints | None, cfg: ZoneConfig, origin: str
) -> None:
    ns, name = svc.metadata.namespace or "", svc.metadata.name
    svc_name = f"{_label(name)}.{_label(ns)}.svc.{origin}"
    spec = svc.spec

    if spec.type == "ExternalName":
        target = (spec.external_name or "").rstrip(".").lower()
        if not is_dns1123_subdomain(target) or any(len(p) > 63 for p in target.split(".")):
            raise ValueError(
                f"spec.externalName {shorten(spec.external_name or '')!r} is not a DNS name "
                "(a DNS-1123 subdomain of labels up to 63 characters)"
            )
        b.add(svc_name, CNAME, target + ".")
        return

    if spec.headless:
        _add_headless(b, svc, svc_name, eps, cfg)
        return

    b.touch(svc_name)
    ips = _cluster_ips(b, svc)
    if not ips:
        return
    for ip in ips:  # a dual-stack Service has one of each family: A and AAAA
        b.add(svc_name, _address_type(ip), str(ip))
        b.add(reverse_name(ip), PTR, svc_name)
    for port in spec.ports:
        if port.name and _srv_port(port.name, port.port):
            owner = _srv_owner(port.name, port.protocol, svc_name)
            b.add(owner, SRV, (SRV_PRIORITY, SRV_WEIGHT, port.port, svc_name))


def _cluster_ips(b: _Builder, svc: Service) -> list[Address]:
    """The Service's ClusterIPs (``spec.clusterIPs``, else ``spec.clusterIP``) that are
    addresses; any other value is reported and left out."""
    ns, name = svc.metadata.namespace or "", svc.metadata.name
    out: list[Address] = []
    for text in svc.spec.effective_cluster_ips:
        ip = _valid_ip(text)
        if ip is None:
            b.problems.append(
                Problem("Service", ns, name, f"spec.clusterIPs {text!r} is not an IP")
            )
        elif ip not in out:
            out.append(ip)
    return out


def _add_headless(
    b: _Builder, svc: Service, svc_name: str, eps: Endpoints | None, cfg: ZoneConfig
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
                host = f"{_endpoint_label(ip, addr.hostname)}.{svc_name}"
            except ValueError as exc:
                b.problems.append(Problem("Endpoints", ns, name, f"hostname: {exc}"))
                continue
            any_ready = True
            rdtype, text = _address_type(ip), str(ip)
            b.add(svc_name, rdtype, text)
            b.add(host, rdtype, text)
            b.add(reverse_name(ip), PTR, host)
            for port in subset.ports:
                if port.name and _srv_port(port.name, port.port):
                    owner = _srv_owner(port.name, port.protocol, svc_name)
                    b.add(owner, SRV, (SRV_PRIORITY, SRV_WEIGHT, port.port, host))
    if any_ready or not cfg.headless_empty_nxdomain:
        b.touch(svc_name)


def build_zone(
    services: Iterable[Service],
    endpoints: Iterable[Endpoints],
    config: ZoneConfig,
    serial: int = 1,
) -> Zone:
    """The zone for one snapshot of the cluster; invalid objects are skipped and reported."""
    origin = ".".join(_label(p) for p in config.domain.lower().strip(".").split(".")) + "."
    b = _Builder()
    ns_host = f"ns.dns.{origin}"
    soa = (ns_host, f"hostmaster.{origin}", serial & 0xFFFFFFFF, 7200, 1800, 86400, config.ttl)
    b.add(origin, SOA, soa)
    b.add(origin, NS, ns_host)
    b.touch(ns_host)
    for ns_ip in config.nameservers:
        addr = ipaddress.ip_address(ns_ip)
        b.add(ns_host, _address_type(addr), str(addr))
    b.add(f"dns-version.{origin}", TXT, SCHEMA_VERSION)
    b.touch(f"svc.{origin}")

    eps_by_key = {e.key: e for e in endpoints}
    for svc in sorted(services, key=lambda s: s.key):
        try:
            _add_service(b, svc, eps_by_key.get(svc.key), config, origin)
        except ValueError as exc:
            ns, name = svc.key
            b.problems.append(Problem("Service", ns, name, str(exc)))
    return Zone(origin, config.ttl, b.records, tuple(b.problems))


def _sort_key(rd: RData) -> tuple[int, str | tuple[int, int, int, str] | int]:
    """Addresses in numeric order, everything else by value: deterministic answers."""
    if isinstance(rd, str):
        try:
            return (0, int(ipaddress.ip_address(rd)))
        except ValueError:
            return (1, rd)
    return (2, str(rd))


def _rdata(rdtype: int, rd: RData) -> dns.rdata.Rdata:
    """One record's data as a dnspython object (text form: every value here is validated)."""
    if isinstance(rd, str):
        text = f'"{rd}"' if rdtype == TXT else rd
    else:
        text = " ".join(str(v) for v in rd)
    return dns.rdata.from_text(IN, dns.rdatatype.RdataType.make(rdtype), text)


class Zone:
    """An immutable index from owner name to records, with the names that exist."""

    def __init__(
        self,
        origin: str,
        ttl: int,
        records: dict[str, dict[int, set[RData]]],
        problems: tuple[Problem, ...] = (),
    ) -> None:
        self.origin_text = origin
        self.origin = dns.name.from_text(origin)
        self.ttl = ttl
        self.problems = problems
        self._records: dict[str, dict[int, tuple[RData, ...]]] = {
            owner: {
                t: tuple(rds) if len(rds) == 1 else tuple(sorted(rds, key=_sort_key))
                for t, rds in by_type.items()
            }
            for owner, by_type in records.items()
        }
        self._rrsets: dict[tuple[str, int], dns.rrset.RRset] = {}  # built on first use
        suffix = "." + origin
        exists = set(self._records)
        for owner in self._records:
            if owner.endswith(suffix):
                # empty non-terminals between the record and the apex exist too
                rest = owner[: -len(suffix)]
                while "." in rest:
                    rest = rest.split(".", 1)[1]
                    exists.add(rest + suffix)
        self._exists = exists
        soa = self._rrset(origin, SOA)
        negative = dns.rrset.RRset(self.origin, IN, dns.rdatatype.SOA)
        negative.add(soa[0], min(ttl, soa[0].minimum))  # RFC 2308 section 3
        self._negative = (negative,)

    def __len__(self) -> int:
        return sum(len(v) for v in self._records.values())

    def names(self) -> list[str]:
        """Every owner name holding records, sorted (for tests and the benchmark)."""
        return sorted(n for n, v in self._records.items() if v)

    def records(self, owner: str) -> dict[int, tuple[RData, ...]]:
        return self._records.get(owner.lower(), {})

    def _rrset(self, owner: str, rdtype: int) -> dns.rrset.RRset:
        key = (owner, rdtype)
        rrset = self._rrsets.get(key)
        if rrset is None:
            rrset = dns.rrset.RRset(
                dns.name.from_text(owner), IN, dns.rdatatype.RdataType.make(rdtype)
            )
            for rd in self._records[owner][rdtype]:
                rrset.add(_rdata(rdtype, rd), self.ttl)
            self._rrsets[key] = rrset
        return rrset

    def _owns(self, key: str) -> bool:
        return (
            key == self.origin_text or key.endswith("." + self.origin_text) or key in self._records
        )

    def owns(self, qname: Name) -> bool:
        """Is the question ours (the cluster zone, or a reverse name we hold)?"""
        return self._owns(qname.to_text().lower())

    def resolve(self, qname: Name, qtype: int) -> Resolution | None:
        """The answer to ``qname``/``qtype``; None when the name is not ours to answer."""
        key = qname.to_text().lower()
        if not self._owns(key):
            return None
        answer: list[dns.rrset.RRset] = []
        for _ in range(MAX_CNAME_CHAIN):
            found = self._records.get(key)
            if found is None:
                rcode = dns.rcode.NOERROR if key in self._exists else dns.rcode.NXDOMAIN
                return Resolution(rcode, tuple(answer), self._negative)
            if CNAME in found and qtype not in (CNAME, ANY):
                answer.append(self._rrset(key, CNAME))
                target = str(found[CNAME][0])
                if not self._owns(target):
                    return Resolution(dns.rcode.NOERROR, tuple(answer))
                key = target
                continue
            types = sorted(found) if qtype == ANY else [qtype] if qtype in found else []
            if not types:
                return Resolution(dns.rcode.NOERROR, tuple(answer), self._negative)
            hits = [self._rrset(key, t) for t in types]
            return Resolution(dns.rcode.NOERROR, (*answer, *hits), (), self._additional(key, types))
        return Resolution(dns.rcode.SERVFAIL, tuple(answer))  # a CNAME loop

    def _additional(self, owner: str, types: list[int]) -> tuple[dns.rrset.RRset, ...]:
        """Addresses of SRV targets, as the specification allows."""
        if SRV not in types:
            return ()
        extra: list[dns.rrset.RRset] = []
        seen: set[str] = set()
        for rd in self._records[owner][SRV]:
            target = str(rd[3]) if isinstance(rd, tuple) else ""
            if target in seen or target not in self._records:
                continue
            seen.add(target)
            at = self._records[target]
            extra.extend(self._rrset(target, t) for t in (A, AAAA) if t in at)
        return tuple(extra)
