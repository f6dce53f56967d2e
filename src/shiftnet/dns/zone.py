"""The cluster zone: answers to questions about the cluster's names. Pure.

Records follow the Kubernetes DNS-based service discovery specification
(schema 1.1.0) as CoreDNS's ``kubernetes`` plugin answers it (what each
object contributes: :mod:`shiftnet.dns.records`). :func:`build_zone` turns a
snapshot of the informer caches into a :class:`Zone`; :meth:`Zone.resolve`
answers one question. Besides the stored records, the zone answers pod
records (:mod:`shiftnet.dns.podrecords`) and, when asked to, kube-dns
wildcards (:mod:`shiftnet.dns.wildcards`) by computing them from the
question. It is authoritative for the cluster domain and for the reverse
zones of the service and pod networks. No I/O, no clocks: the same objects
give the same answers.
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from shiftnet.api import Endpoints, Service
from shiftnet.dns.addresses import Address, reverse_name
from shiftnet.dns.podrecords import pod_name
from shiftnet.dns.records import (
    SCHEMA_VERSION,
    Problem,
    RData,
    Records,
    ZoneConfig,
    collect,
)
from shiftnet.dns.wildcards import is_wildcard_query, matching_owners

__all__ = [
    "SCHEMA_VERSION",
    "Problem",
    "Resolution",
    "Zone",
    "ZoneConfig",
    "build_zone",
    "reverse_name",
]

MAX_CNAME_CHAIN = 8

IN = dns.rdataclass.IN
A = dns.rdatatype.A
AAAA = dns.rdatatype.AAAA
ANY = dns.rdatatype.ANY
CNAME = dns.rdatatype.CNAME
PTR = dns.rdatatype.PTR
SOA = dns.rdatatype.SOA
SRV = dns.rdatatype.SRV
TXT = dns.rdatatype.TXT
# CoreDNS gives the schema version's TXT a fixed TTL of 8 hours, whatever the zone's TTL.
DNS_VERSION_TTL = 28800
REVERSE_SUFFIXES = (".in-addr.arpa.", ".ip6.arpa.")

Name = dns.name.Name


@dataclass(frozen=True)
class Resolution:
    """The zone's answer to one question; the server turns it into a message.

    ``chase`` is set when the answer ends in a CNAME to a name outside the
    zone (an ExternalName) and the question was for addresses: the server
    looks that name up through its upstreams and adds what it finds.
    """

    rcode: int
    answer: tuple[dns.rrset.RRset, ...] = ()
    authority: tuple[dns.rrset.RRset, ...] = ()
    additional: tuple[dns.rrset.RRset, ...] = ()
    chase: Name | None = None


def build_zone(
    services: Iterable[Service],
    endpoints: Iterable[Endpoints],
    config: ZoneConfig,
    serial: int = 1,
    *,
    namespaces: Iterable[str] = (),
    pods: Iterable[tuple[str, str | Address]] = (),
    networks: Iterable[str] = (),
) -> Zone:
    """The zone for one snapshot of the cluster; invalid objects are skipped and reported.

    ``namespaces``: the Namespace objects; ``pods``: (namespace, IP) of running
    pods (used in ``verified`` pod mode); ``networks``: the service and pod
    CIDRs whose reverse zones we serve.
    """
    c = collect(services, endpoints, config, serial, namespaces=namespaces, networks=networks)
    pod_ips: set[tuple[str, Address]] = set()
    for ns, ip in pods:
        try:
            pod_ips.add((ns, ipaddress.ip_address(ip)))
        except ValueError:
            continue
    return Zone(
        c.origin,
        config.ttl,
        c.records,
        tuple(c.problems),
        reverse_origins=c.reverse_origins,
        namespaces=frozenset(c.namespaces),
        pod_mode=config.pod_mode,
        pods=frozenset(pod_ips),
        wildcards=config.wildcards,
        empty_non_terminals=not config.empty_non_terminal_nxdomain,
        externalname_other_cname=config.externalname_other_cname,
        any_rrsets=config.any_rrsets,
        dns_version_other_nxdomain=config.dns_version_other_nxdomain,
    )


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
        records: Records,
        problems: tuple[Problem, ...] = (),
        *,
        reverse_origins: Iterable[str] = (),
        namespaces: frozenset[str] = frozenset(),
        pod_mode: str = "disabled",
        pods: frozenset[tuple[str, Address]] = frozenset(),
        wildcards: bool = False,
        empty_non_terminals: bool = False,
        externalname_other_cname: bool = False,
        any_rrsets: bool = False,
        dns_version_other_nxdomain: bool = True,
    ) -> None:
        """``empty_non_terminals``: names with only children below them exist (RFC 8020)
        rather than being NXDOMAIN (CoreDNS); ``externalname_other_cname``: an ExternalName
        asked for another type than A/AAAA/CNAME answers the CNAME (RFC 1034) rather than
        NODATA (CoreDNS); ``any_rrsets``: ANY answers every RRset at the name rather than
        A's rcode without records (CoreDNS); ``dns_version_other_nxdomain``: types other
        than TXT at ``dns-version`` are NXDOMAIN (CoreDNS) rather than NODATA."""
        self.origin_text = origin
        self.origin = dns.name.from_text(origin)
        self.ttl = ttl
        self.problems = problems
        self.namespaces = namespaces
        self.pod_mode = pod_mode
        self.pods = pods
        self.wildcards = wildcards
        self.externalname_other_cname = externalname_other_cname
        self.any_rrsets = any_rrsets
        self.dns_version_other_nxdomain = dns_version_other_nxdomain
        self._version_owner = "dns-version." + origin
        self._dot_origin = "." + origin
        self._pod_suffix = ".pod." + origin
        self._svc_suffix = "svc." + origin
        self._reverse = frozenset(reverse_origins)
        self._records: dict[str, dict[int, tuple[RData, ...]]] = {
            owner: {
                t: tuple(rds) if len(rds) == 1 else tuple(sorted(rds, key=_sort_key))
                for t, rds in by_type.items()
            }
            for owner, by_type in records.items()
        }
        self._rrsets: dict[tuple[str, int], dns.rrset.RRset] = {}  # built on first use
        self._exists = self._with_empty_non_terminals() if empty_non_terminals else set(records)
        self._svc_names: list[str] | None = None  # for wildcards, listed on first use
        self._negatives = {apex: self._negative_for(apex) for apex in (origin, *self._reverse)}

    def _with_empty_non_terminals(self) -> set[str]:
        """Every owner, and every name between an owner and its zone's apex."""
        exists = set(self._records)
        for owner in self._records:
            apex = self._apex(owner)
            if apex is None or owner == apex:
                continue
            rest = owner[: -len(apex) - 1]
            while "." in rest:
                rest = rest.split(".", 1)[1]
                exists.add(f"{rest}.{apex}")
        return exists

    def _negative_for(self, apex: str) -> tuple[dns.rrset.RRset, ...]:
        soa = self._rrset(apex, SOA)
        negative = dns.rrset.RRset(dns.name.from_text(apex), IN, dns.rdatatype.SOA)
        negative.add(soa[0], min(self.ttl, soa[0].minimum))  # RFC 2308 section 3
        return (negative,)

    def with_pods(self, pods: frozenset[tuple[str, Address]]) -> Zone:
        """This zone with other pods for ``verified`` pod records: the records, names and
        rdata made so far are shared (nothing else differs), so a pod that starts or
        stops costs no rebuild (see :mod:`shiftnet.dns.podindex`)."""
        zone = copy.copy(self)
        zone.pods = pods
        return zone

    def __len__(self) -> int:
        return sum(len(v) for v in self._records.values())

    def names(self) -> list[str]:
        """Every owner name holding records, sorted (for tests and the benchmark)."""
        return sorted(n for n, v in self._records.items() if v)

    def records(self, owner: str) -> dict[int, tuple[RData, ...]]:
        return self._records.get(owner.lower(), {})

    @property
    def reverse_origins(self) -> list[str]:
        return sorted(self._reverse)

    def _rrset(self, owner: str, rdtype: int) -> dns.rrset.RRset:
        key = (owner, rdtype)
        rrset = self._rrsets.get(key)
        if rrset is None:
            rrset = self._make_rrset(owner, rdtype, self._records[owner][rdtype])
            self._rrsets[key] = rrset
        return rrset

    def _make_rrset(self, owner: str, rdtype: int, rds: Iterable[RData]) -> dns.rrset.RRset:
        rrset = dns.rrset.RRset(dns.name.from_text(owner), IN, dns.rdatatype.RdataType.make(rdtype))
        ttl = DNS_VERSION_TTL if owner == self._version_owner else self.ttl
        for rd in rds:
            rrset.add(_rdata(rdtype, rd), ttl)
        return rrset

    def _apex(self, key: str) -> str | None:
        """The apex of the zone of ours that holds ``key`` (the most specific), or None."""
        if key == self.origin_text or key.endswith(self._dot_origin):
            return self.origin_text
        if self._reverse and key.endswith(".arpa."):
            i = 0
            while i < len(key):
                if key[i:] in self._reverse:
                    return key[i:]
                i = key.find(".", i) + 1
                if i == 0:
                    break
        return None

    def _owns(self, key: str) -> bool:
        return key in self._records or self._apex(key) is not None

    def owns(self, qname: Name) -> bool:
        """Is the question ours (the cluster zone, our reverse zones, or a PTR we hold)?"""
        return self._owns(qname.to_text().lower())

    def _negative(self, key: str) -> tuple[dns.rrset.RRset, ...]:
        return self._negatives[self._apex(key) or self.origin_text]

    def resolve(self, qname: Name, qtype: int) -> Resolution | None:
        """The answer to ``qname``/``qtype``; None when the name is not ours to answer."""
        key = qname.to_text().lower()
        if not self._owns(key):
            return None
        if qtype == ANY and not self.any_rrsets:
            return self._any_as_coredns(qname, key)
        answer: list[dns.rrset.RRset] = []
        for _ in range(MAX_CNAME_CHAIN):
            found = self._records.get(key)
            if found is None:
                return self._computed(key, qtype, tuple(answer))
            if CNAME in found and qtype != CNAME:
                if qtype not in (A, AAAA) and not self.externalname_other_cname:
                    # CoreDNS: an alias answers only addresses and itself
                    return Resolution(dns.rcode.NOERROR, tuple(answer), self._negative(key))
                if qtype == ANY:
                    return Resolution(dns.rcode.NOERROR, (*answer, self._rrset(key, CNAME)))
                answer.append(self._rrset(key, CNAME))
                target = str(found[CNAME][0])
                if not self._owns(target):
                    chase = dns.name.from_text(target) if qtype in (A, AAAA) else None
                    return Resolution(dns.rcode.NOERROR, tuple(answer), chase=chase)
                key = target
                continue
            types = sorted(found) if qtype == ANY else [qtype] if qtype in found else []
            if not types:
                rcode = dns.rcode.NOERROR
                if key == self._version_owner and self.dns_version_other_nxdomain:
                    rcode = dns.rcode.NXDOMAIN  # CoreDNS knows dns-version only for TXT
                elif PTR in found and key.endswith(REVERSE_SUFFIXES):
                    rcode = dns.rcode.NXDOMAIN  # CoreDNS answers reverse names only for PTR
                return Resolution(rcode, tuple(answer), self._negative(key))
            hits = [self._rrset(key, t) for t in types]
            extra = self._additional(found[SRV]) if SRV in types else ()
            return Resolution(dns.rcode.NOERROR, (*answer, *hits), (), extra)
        return Resolution(dns.rcode.SERVFAIL, tuple(answer))  # a CNAME loop

    def _any_as_coredns(self, qname: Name, key: str) -> Resolution | None:
        """ANY as CoreDNS answers it: the rcode an A question gets, and no records."""
        as_a = self.resolve(qname, A)
        if as_a is None or as_a.rcode not in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
            return as_a  # SERVFAIL of a CNAME loop stays one
        return Resolution(as_a.rcode, (), self._negative(key))

    def _computed(self, key: str, qtype: int, answer: tuple[dns.rrset.RRset, ...]) -> Resolution:
        """Names without stored records: pod records, wildcards, or nothing."""
        if key.endswith(self._pod_suffix):
            labels = key[: -len(self._pod_suffix)].split(".")
            pod = pod_name(labels, self.pod_mode, self.namespaces, self.pods)
            if pod.address is not None:
                rdtype = A if pod.address.version == 4 else AAAA
                if qtype in (rdtype, ANY):
                    rrset = self._make_rrset(key, rdtype, [str(pod.address)])
                    return Resolution(dns.rcode.NOERROR, (*answer, rrset))
            rcode = dns.rcode.NOERROR if pod.exists else dns.rcode.NXDOMAIN
            return Resolution(rcode, answer, self._negative(key))
        if self.wildcards and is_wildcard_query(key, self._svc_suffix):
            return self._wildcard(key, qtype, answer)
        rcode = dns.rcode.NOERROR if key in self._exists else dns.rcode.NXDOMAIN
        return Resolution(rcode, answer, self._negative(key))

    def _wildcard(self, key: str, qtype: int, answer: tuple[dns.rrset.RRset, ...]) -> Resolution:
        """The union of the records of every name ``key`` matches, owned by ``key``."""
        if self._svc_names is None:
            self._svc_names = [n for n in self._exists if n.endswith(self._svc_suffix)]
        owners = matching_owners(key, self._svc_suffix, self._svc_names)
        pattern = key[: -len(self._svc_suffix)].split(".")[:-1]
        if not owners and not (len(pattern) == 2 and pattern[1] in self.namespaces):
            return Resolution(dns.rcode.NXDOMAIN, answer, self._negative(key))
        found: dict[int, set[RData]] = {}
        for owner in owners:
            for t, rds in self._records.get(owner, {}).items():
                if t != CNAME and (qtype == ANY or t == qtype):
                    found.setdefault(t, set()).update(rds)
        if not found:
            return Resolution(dns.rcode.NOERROR, answer, self._negative(key))
        hits = [self._make_rrset(key, t, sorted(found[t], key=_sort_key)) for t in sorted(found)]
        extra = self._additional(tuple(found[SRV])) if SRV in found else ()
        return Resolution(dns.rcode.NOERROR, (*answer, *hits), (), extra)

    def _additional(self, srvs: tuple[RData, ...]) -> tuple[dns.rrset.RRset, ...]:
        """Addresses of SRV targets, as the specification allows."""
        extra: list[dns.rrset.RRset] = []
        seen: set[str] = set()
        for rd in sorted(srvs, key=_sort_key):
            target = str(rd[3]) if isinstance(rd, tuple) else ""
            if target in seen or target not in self._records:
                continue
            seen.add(target)
            at = self._records[target]
            extra.extend(self._rrset(target, t) for t in (A, AAAA) if t in at)
        return tuple(extra)
