"""The records of the cluster zone, from Services, Endpoints and the cluster's networks. Pure.

What each object contributes, as CoreDNS's ``kubernetes`` plugin answers it:

* a ClusterIP Service: A/AAAA per ClusterIP and a PTR each; SRV at the bare
  name for every port (target the service name) and at ``_<port>._<proto>``
  for every named port; an A/AAAA and PTR for each ready endpoint under the
  service name (``<hostname>.<svc>...``, the dashed address without one);
* a headless Service: the ready endpoints' addresses at the service name, the
  endpoint names, and SRV with each endpoint as target;
* an ExternalName Service: a CNAME;
* every namespace that exists: ``<ns>.svc.<zone>`` (and ``<ns>.pod.<zone>``
  unless pod records are disabled) as names without data;
* the service and pod networks: a reverse zone each (SOA, NS).

SRV records carry priority 0 and weight ``floor(100 / n)`` for the ``n``
records of the name, as CoreDNS computes them. A PTR names the Service when
the address is a ClusterIP, else every endpoint name that has the address
(only those from an endpoint ``hostname`` when there are any, as CoreDNS).

Records are plain strings and tuples keyed by lowercase owner text: a zone of
10,000 services must build in milliseconds; dnspython objects are made only
when a name is asked for (:mod:`shiftnet.dns.zone`).
"""

from __future__ import annotations

import functools
import ipaddress
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import dns.rdatatype
from shiftnet.api import ClusterNetwork, Endpoints, Service
from shiftnet.api.network import SECONDARY_SERVICE_NETWORK_ANNOTATION
from shiftnet.dns.addresses import Address, dashed_label, reverse_name, reverse_zones
from shiftnet.dns.names import dns_label, is_dns1123_subdomain, is_port_name
from shiftnet.dns.podrecords import POD_MODES
from shiftnet.errors import shorten

SCHEMA_VERSION = "1.1.0"
TOLERATE_UNREADY = "service.alpha.kubernetes.io/tolerate-unready-endpoints"
SRV_PRIORITY = 0  # CoreDNS's; the weight is shared out over the records of a name
MAX_NAME_TEXT = 254  # presentation form with the final dot: 255 octets on the wire

A = dns.rdatatype.A
AAAA = dns.rdatatype.AAAA
CNAME = dns.rdatatype.CNAME
NS = dns.rdatatype.NS
PTR = dns.rdatatype.PTR
SOA = dns.rdatatype.SOA
SRV = dns.rdatatype.SRV
TXT = dns.rdatatype.TXT

# One record's data in presentation form: an address, a target name, a TXT
# string, SRV (priority, weight, port, target) or the SOA fields.
RData = str | tuple[int, int, int, str] | tuple[str, str, int, int, int, int, int]
Records = dict[str, dict[int, set[RData]]]


@dataclass(frozen=True)
class ZoneConfig:
    """What the operator chooses; everything else comes from the cluster."""

    domain: str = "cluster.local"
    ttl: int = 5
    nameservers: tuple[str, ...] = ()  # A/AAAA of ns.dns.<zone>, the server's own address
    headless_empty_nxdomain: bool = True  # CoreDNS; the specification says NODATA
    pod_mode: str = "insecure"  # disabled | insecure | verified (CoreDNS's ``pods``)
    wildcards: bool = False  # kube-dns's ``*`` labels; CoreDNS dropped them in 1.9
    # CoreDNS: names with only children below them are NXDOMAIN; RFC 8020 says NODATA
    empty_non_terminal_nxdomain: bool = True
    # CoreDNS: an ExternalName asked for a type other than A/AAAA/CNAME is NODATA;
    # RFC 1034 would answer the CNAME and let the client's resolver follow it
    externalname_other_cname: bool = False
    # CoreDNS answers ANY as it would A, without the records (NODATA where the name
    # exists); RFC 8482 lets a server answer ANY with every RRset it holds
    any_rrsets: bool = False
    # CoreDNS: dns-version.<zone> knows only its TXT, other types are NXDOMAIN;
    # the name exists, so RFC 1034 would say NODATA
    dns_version_other_nxdomain: bool = True

    def __post_init__(self) -> None:
        if self.pod_mode not in POD_MODES:
            raise ValueError(f"pod mode {self.pod_mode!r} is not one of {', '.join(POD_MODES)}")


@dataclass(frozen=True)
class Problem:
    """An object (or part of one) left out of the zone, and why."""

    kind: str
    namespace: str
    name: str
    reason: str


@dataclass
class Collected:
    """Everything :func:`collect` found: the records and what the zone needs besides."""

    origin: str
    records: Records
    problems: list[Problem]
    reverse_origins: list[str]
    namespaces: set[str]


@dataclass
class _Builder:
    records: Records = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    srv: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # owner -> (port, target)
    endpoint_ptrs: dict[str, set[str]] = field(default_factory=dict)  # reverse name -> names
    hostname_ptrs: dict[str, set[str]] = field(default_factory=dict)  # those from a hostname

    def add(self, owner: str, rdtype: int, rdata: RData) -> None:
        if len(owner) > MAX_NAME_TEXT:
            raise ValueError(f"name {owner[:40]}... is longer than 255 octets")
        self.records.setdefault(owner, {}).setdefault(rdtype, set()).add(rdata)

    def touch(self, owner: str) -> None:
        """Make ``owner`` exist even without records (NODATA rather than NXDOMAIN)."""
        if len(owner) > MAX_NAME_TEXT:
            raise ValueError(f"name {owner[:40]}... is longer than 255 octets")
        self.records.setdefault(owner, {})

    def srv_entry(self, owner: str, port: int, target: str) -> None:
        if len(owner) > MAX_NAME_TEXT:
            raise ValueError(f"name {owner[:40]}... is longer than 255 octets")
        self.srv.setdefault(owner, []).append((port, target))

    def finish(self) -> None:
        """SRV weights once every record of a name is known; endpoint PTRs where no
        ClusterIP claimed the address, named by hostname where any endpoint has one."""
        for owner, entries in self.srv.items():
            weight = srv_weight(len(entries))
            for port, target in entries:
                self.add(owner, SRV, (SRV_PRIORITY, weight, port, target))
        for rev, names in self.endpoint_ptrs.items():
            if PTR not in self.records.get(rev, {}):
                for name in self.hostname_ptrs.get(rev) or names:
                    self.add(rev, PTR, name)


def srv_weight(n: int) -> int:
    """CoreDNS's weight for each of ``n`` SRV records of equal priority (at least 1)."""
    return max(1, math.floor(100.0 / (100 * n) * 100))


@functools.lru_cache(maxsize=1024)
def label(value: str) -> str:
    """Validated once per distinct string: namespaces and port names repeat a lot.

    The cap is small on purpose: every Service name ever seen passes through
    here, and an entry costs about 210 bytes against 0.3 us to validate again."""
    return dns_label(value).decode("ascii")


def address_type(addr: Address) -> int:
    return A if addr.version == 4 else AAAA


def _endpoint_label(addr: Address, hostname: str | None) -> str:
    """The endpoint's hostname, or the dashed address as its system-assigned identifier."""
    return label(hostname) if hostname else dashed_label(addr)


def _valid_ip(ip: str | None) -> Address | None:
    if not ip:
        return None
    try:
        return ipaddress.ip_address(ip)
    except ValueError:
        return None


def _port_number(number: int) -> bool:
    """A port SRV can carry (the API refuses others; the store may hold objects written
    around it)."""
    return 0 < number < 65536


def _srv_owner(port_name: str, protocol: str, svc_name: str) -> str:
    return f"_{label(port_name)}._{label(protocol.lower())}.{svc_name}"


def _add_service(
    b: _Builder, svc: Service, eps: Endpoints | None, cfg: ZoneConfig, origin: str
) -> None:
    ns, name = svc.metadata.namespace or "", svc.metadata.name
    svc_name = f"{label(name)}.{label(ns)}.svc.{origin}"
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
        _add_endpoints(b, svc, svc_name, eps, cfg, headless=True)
        return

    b.touch(svc_name)
    ips = _cluster_ips(b, svc)
    for ip in ips:  # a dual-stack Service has one of each family: A and AAAA
        b.add(svc_name, address_type(ip), str(ip))
        b.add(reverse_name(ip), PTR, svc_name)
    for port in spec.ports if ips else []:
        if not _port_number(port.port):
            continue
        named = bool(port.name) and is_port_name(port.name or "")
        for _ in ips:  # CoreDNS counts one record per ClusterIP before merging them
            b.srv_entry(svc_name, port.port, svc_name)
            if named:
                owner = _srv_owner(port.name or "", port.protocol, svc_name)
                b.srv_entry(owner, port.port, svc_name)
    _add_endpoints(b, svc, svc_name, eps, cfg, headless=False)


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


def _add_endpoints(
    b: _Builder,
    svc: Service,
    svc_name: str,
    eps: Endpoints | None,
    cfg: ZoneConfig,
    *,
    headless: bool,
) -> None:
    """Endpoint names and PTRs; for a headless service also its addresses and SRV."""
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
            rdtype, text = address_type(ip), str(ip)
            b.add(host, rdtype, text)
            rev = reverse_name(ip)
            b.endpoint_ptrs.setdefault(rev, set()).add(host)
            if addr.hostname:
                b.hostname_ptrs.setdefault(rev, set()).add(host)
            if not headless:
                continue
            b.add(svc_name, rdtype, text)
            for port in subset.ports:
                if not _port_number(port.port):
                    continue
                b.srv_entry(svc_name, port.port, host)
                if port.name and is_port_name(port.name):
                    b.srv_entry(_srv_owner(port.name, port.protocol, svc_name), port.port, host)
    if headless and (any_ready or not cfg.headless_empty_nxdomain):
        b.touch(svc_name)


def _add_apex(b: _Builder, apex: str, cfg: ZoneConfig, serial: int) -> None:
    """SOA and NS of a zone we are authoritative for; ``ns.dns.<apex>`` has our address."""
    ns_host = f"ns.dns.{apex}"
    soa = (ns_host, f"hostmaster.{apex}", serial & 0xFFFFFFFF, 7200, 1800, 86400, cfg.ttl)
    b.add(apex, SOA, soa)
    b.add(apex, NS, ns_host)
    b.touch(ns_host)
    for ns_ip in cfg.nameservers:
        addr = ipaddress.ip_address(ns_ip)
        b.add(ns_host, address_type(addr), str(addr))


def _reverse_origins(b: _Builder, networks: Iterable[str]) -> list[str]:
    out: list[str] = []
    for cidr in networks:
        try:
            zones = reverse_zones(cidr)
        except ValueError as exc:
            b.problems.append(Problem("ClusterNetwork", "", "default", f"network: {exc}"))
            continue
        out.extend(z for z in zones if z not in out)
    return out


def collect(
    services: Iterable[Service],
    endpoints: Iterable[Endpoints],
    config: ZoneConfig,
    serial: int = 1,
    *,
    namespaces: Iterable[str] = (),
    networks: Iterable[str] = (),
) -> Collected:
    """The records of one snapshot of the cluster; invalid objects are skipped and reported."""
    origin = ".".join(label(p) for p in config.domain.lower().strip(".").split(".")) + "."
    b = _Builder()
    _add_apex(b, origin, config, serial)
    b.add(f"dns-version.{origin}", TXT, SCHEMA_VERSION)
    b.touch(f"svc.{origin}")
    b.touch(f"pod.{origin}")

    services = sorted(services, key=lambda s: s.key)
    eps_by_key = {e.key: e for e in endpoints}
    for svc in services:
        try:
            _add_service(b, svc, eps_by_key.get(svc.key), config, origin)
        except ValueError as exc:
            ns, name = svc.key
            b.problems.append(Problem("Service", ns, name, str(exc)))
    b.finish()

    existing: set[str] = set()
    for ns in sorted({*namespaces, *(s.metadata.namespace or "" for s in services)}):
        try:
            ns_label = label(ns)
        except ValueError:
            continue  # its services were reported above; a Namespace object cannot be invalid
        existing.add(ns_label)
        b.touch(f"{ns_label}.svc.{origin}")
        if config.pod_mode != "disabled":
            b.touch(f"{ns_label}.pod.{origin}")

    reverse = _reverse_origins(b, networks)
    for apex in reverse:
        _add_apex(b, apex, config, serial)
    return Collected(origin, b.records, b.problems, reverse, existing)


def network_cidrs(cluster_networks: Iterable[ClusterNetwork]) -> list[str]:
    """The service and pod networks a ClusterNetwork records, each once, in order."""
    out: list[str] = []
    for cn in cluster_networks:
        found = [
            cn.service_network,
            cn.metadata.annotations.get(SECONDARY_SERVICE_NETWORK_ANNOTATION),
            cn.network,
            *(entry.cidr for entry in cn.cluster_networks),
        ]
        out.extend(c for c in found if c and c not in out)
    return out
