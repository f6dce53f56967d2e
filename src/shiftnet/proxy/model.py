"""Services + Endpoints -> the service table every proxy mode is built from.

Pure: no I/O, no clocks. The same objects always give the same table, sorted,
so renderers built on it produce byte-identical rulesets. A service that cannot
be proxied (bad clusterIP, unsupported protocol) is left out and reported as a
``Problem``; it never takes the other services down.
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from shiftnet.api import Endpoints, Service
from shiftnet.api.names import is_dns1035_label, is_dns1123_label
from shiftnet.errors import shorten

PROTOCOLS = ("TCP", "UDP")


@functools.lru_cache(maxsize=1 << 18)
def canonical_ipv4(text: str) -> str | None:
    """``text`` as a canonical dotted quad, or None when it is not exactly an IPv4 address.

    The C parser (``inet_pton``: strict, no shorthand forms) instead of
    ``ipaddress``: a 10,000-service table has 100,000 endpoint addresses and
    ``ipaddress`` parses in pure Python. Non-canonical spellings (leading
    zeros) are rejected rather than reinterpreted.
    """
    try:
        canonical = socket.inet_ntop(socket.AF_INET, socket.inet_pton(socket.AF_INET, text))
    except (OSError, TypeError, ValueError):
        return None
    return canonical if canonical == text else None


def service_ipv4(text: str) -> str | None:
    """``text`` canonical, when a Service may be reached there: a unicast IPv4 address.

    Not the unspecified address (a user-space listener on 0.0.0.0 would take the
    port on every address, the other ClusterIPs' included), not the limited
    broadcast, not multicast. For ClusterIPs, external IPs and LB addresses.
    """
    ip = canonical_ipv4(text)
    if ip is None or ip in ("0.0.0.0", "255.255.255.255") or 224 <= int(ip.split(".")[0]) < 240:
        return None
    return ip


def _not_service_ip(text: str) -> str:
    return f"{text!r} is not a unicast IPv4 address in canonical form"


DEFAULT_AFFINITY_TIMEOUT = 10800
MAX_AFFINITY_TIMEOUT = 86400


class Backend(NamedTuple):
    """One ready endpoint address and port (a tuple: cheap to build, hash and sort)."""

    ip: str
    port: int

    def __str__(self) -> str:
        return f"{self.ip}:{self.port}"


class ServicePortName(NamedTuple):
    """Identity of one proxied port: ``namespace/name:port`` (port name may be empty)."""

    namespace: str
    name: str
    port: str
    protocol: str

    def __str__(self) -> str:
        base = f"{self.namespace}/{self.name}"
        return f"{base}:{self.port}/{self.protocol}" if self.port else f"{base}/{self.protocol}"

    @property
    def service(self) -> tuple[str, str]:
        return (self.namespace, self.name)


NODE_PORT_ADDRESS = "*"  # the address part of a node port's claim: every node address
EXTERNAL_TYPES = ("NodePort", "LoadBalancer")


@dataclass(frozen=True)
class ServiceEntry:
    """What the proxy must do for one service port: its addresses and where to send them.

    Cluster traffic reaches ``cluster_ip:port``; external traffic reaches
    ``node_port`` on the node's addresses and ``port`` on each of
    ``external_ips`` and ``load_balancer_ips``. ``local_backends`` are the
    backends on the proxy's own node: the only ones a ``*_local`` policy allows.
    """

    id: ServicePortName
    cluster_ip: str
    port: int
    protocol: str
    backends: tuple[Backend, ...]
    affinity: bool
    affinity_timeout: int
    node_port: int = 0  # 0: none
    external_ips: tuple[str, ...] = ()  # spec.externalIPs, canonical, sorted
    load_balancer_ips: tuple[str, ...] = ()  # status.loadBalancer.ingress[].ip, sorted
    external_local: bool = False  # externalTrafficPolicy: Local
    internal_local: bool = False  # internalTrafficPolicy: Local
    local_backends: tuple[Backend, ...] = ()  # the backends on this proxy's node

    @property
    def vip(self) -> tuple[str, str, int]:
        return (self.cluster_ip, self.protocol, self.port)

    @property
    def cluster_backends(self) -> tuple[Backend, ...]:
        """Where traffic to the ClusterIP goes."""
        return self.local_backends if self.internal_local else self.backends

    @property
    def external_backends(self) -> tuple[Backend, ...]:
        """Where traffic to the node port, external IPs and LB addresses goes."""
        return self.local_backends if self.external_local else self.backends

    @property
    def external_vips(self) -> tuple[tuple[str, str, int], ...]:
        """Every external address:port, the node port as ``("*", proto, nodePort)``."""
        node = ((NODE_PORT_ADDRESS, self.protocol, self.node_port),) if self.node_port else ()
        ips = sorted(set(self.external_ips) | set(self.load_balancer_ips))
        return node + tuple((ip, self.protocol, self.port) for ip in ips)

    @property
    def claims(self) -> tuple[tuple[str, str, int], ...]:
        """Every address:port this entry serves; no two entries may share one."""
        return (self.vip, *self.external_vips)


@dataclass(frozen=True)
class Problem:
    """Why one service (or one of its ports) is not proxied."""

    namespace: str
    name: str
    field: str
    message: str

    def __str__(self) -> str:
        where = shorten(f"{self.namespace}/{self.name}")
        return f'Service "{where}" is not proxied: {self.field}: {shorten(self.message)}'


@dataclass(frozen=True)
class ServiceTable:
    """Every proxied service port, keyed and sorted by ``ServicePortName``."""

    entries: Mapping[ServicePortName, ServiceEntry] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()

    def sorted_entries(self) -> list[ServiceEntry]:
        return [self.entries[k] for k in sorted(self.entries)]

    def for_service(self, namespace: str, name: str) -> list[ServiceEntry]:
        return [e for k, e in sorted(self.entries.items()) if k.service == (namespace, name)]


@dataclass(frozen=True)
class TableDiff:
    """Service ports added, removed and changed between two tables."""

    added: tuple[ServiceEntry, ...]
    removed: tuple[ServiceEntry, ...]
    changed: tuple[tuple[ServiceEntry, ServiceEntry], ...]  # (old, new)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def _ready_backends(
    endpoints: Endpoints | None, port_name: str, protocol: str
) -> tuple[Backend, ...]:
    """Ready addresses x the endpoint port whose name (and protocol) match the service port."""
    if endpoints is None:
        return ()
    found: set[Backend] = set()
    canonical = canonical_ipv4
    for subset in endpoints.subsets:
        for ep_port in subset.ports:
            port = ep_port.port
            if (ep_port.name or "") != port_name or ep_port.protocol.upper() != protocol:
                continue
            if not 0 < port < 65536:
                continue
            ips = [canonical(addr.ip) for addr in subset.addresses]
            found.update(Backend(ip, port) for ip in ips if ip is not None)
    return tuple(sorted(found))


def _node_ips(endpoints: Endpoints | None, node_name: str | None) -> frozenset[str]:
    """The ready endpoint addresses whose ``nodeName`` is ``node_name``."""
    if endpoints is None or not node_name:
        return frozenset()
    return frozenset(
        addr.ip
        for subset in endpoints.subsets
        for addr in subset.addresses
        if addr.node_name == node_name
    )


def _external_addresses(
    service: Service, ns: str, name: str
) -> tuple[tuple[str, ...], tuple[str, ...], list[Problem]]:
    """``spec.externalIPs`` and the LB ingress IPs, canonical; bad ones are problems."""
    problems: list[Problem] = []
    external: set[str] = set()
    for i, text in enumerate(service.spec.external_ips):
        ip = service_ipv4(text)
        if ip is None:
            message = _not_service_ip(text)
            problems.append(Problem(ns, name, f"spec.externalIPs[{i}]", message))
        else:
            external.add(ip)
    balancer: set[str] = set()
    if service.spec.type == "LoadBalancer":
        for i, ingress in enumerate(service.status.load_balancer.ingress):
            if "ip" not in ingress:
                continue  # a hostname-only ingress is the balancer's business
            ip = service_ipv4(ingress["ip"])
            if ip is None:
                message = _not_service_ip(ingress["ip"])
                problems.append(Problem(ns, name, f"status.loadBalancer.ingress[{i}].ip", message))
            else:
                balancer.add(ip)
    return tuple(sorted(external)), tuple(sorted(balancer)), problems


def service_entries(
    service: Service, endpoints: Endpoints | None, node_name: str | None = None
) -> tuple[list[ServiceEntry], list[Problem]]:
    """The entries of one Service (one per port), and why any part of it is skipped.

    ``node_name`` is the proxy's node: endpoints there are ``local_backends``.
    """
    ns, name = service.metadata.namespace or "default", service.metadata.name
    spec = service.spec
    problems: list[Problem] = []
    # Names become rule comments and chain-name hashes: only valid ones (the API
    # refuses others; the store may hold objects written around it).
    if not is_dns1123_label(ns):
        return [], [Problem(ns, name, "metadata.namespace", "is not a DNS-1123 label")]
    if not is_dns1035_label(name):
        return [], [Problem(ns, name, "metadata.name", "is not a DNS-1035 label")]
    if spec.type == "ExternalName" or spec.cluster_ip in (None, "", "None"):
        return [], []  # headless / ExternalName / not yet allocated: nothing to proxy
    vip = service_ipv4(spec.cluster_ip)
    if vip is None:
        return [], [Problem(ns, name, "spec.clusterIP", _not_service_ip(spec.cluster_ip))]
    affinity = spec.session_affinity == "ClientIP"
    timeout = spec.affinity_timeout
    if affinity and not 0 < timeout <= MAX_AFFINITY_TIMEOUT:
        problems.append(
            Problem(
                ns,
                name,
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                f"{timeout} is not in 1..{MAX_AFFINITY_TIMEOUT}",
            )
        )
        return [], problems
    for policy_field, policy in (
        ("spec.externalTrafficPolicy", spec.external_traffic_policy),
        ("spec.internalTrafficPolicy", spec.internal_traffic_policy),
    ):
        if policy not in (None, "Cluster", "Local"):
            message = f"{policy!r} is not Cluster or Local"
            return [], [*problems, Problem(ns, name, policy_field, message)]
    external_ips, lb_ips, address_problems = _external_addresses(service, ns, name)
    problems.extend(address_problems)
    serves_node_ports = spec.type in EXTERNAL_TYPES
    local_ips = _node_ips(endpoints, node_name)
    entries: list[ServiceEntry] = []
    for i, port in enumerate(spec.ports):
        proto = port.protocol.upper()
        path = f"spec.ports[{i}]"
        if proto not in PROTOCOLS:
            problems.append(
                Problem(ns, name, f"{path}.protocol", f"{port.protocol!r} is not TCP or UDP")
            )
            continue
        if not 0 < port.port < 65536:
            problems.append(Problem(ns, name, f"{path}.port", f"{port.port} is not in 1..65535"))
            continue
        if port.name and not is_dns1123_label(port.name):
            problems.append(Problem(ns, name, f"{path}.name", "is not a DNS-1123 label"))
            continue
        node_port = (port.node_port or 0) if serves_node_ports else 0
        if not 0 <= node_port < 65536:
            problems.append(
                Problem(ns, name, f"{path}.nodePort", f"{node_port} is not in 1..65535")
            )
            continue
        port_name = port.name or ""
        backends = _ready_backends(endpoints, port_name, proto)
        entries.append(
            ServiceEntry(
                id=ServicePortName(ns, name, port_name, proto),
                cluster_ip=vip,
                port=port.port,
                protocol=proto,
                backends=backends,
                affinity=affinity,
                affinity_timeout=timeout if affinity else DEFAULT_AFFINITY_TIMEOUT,
                node_port=node_port,
                external_ips=external_ips,
                load_balancer_ips=lb_ips,
                external_local=spec.external_traffic_policy == "Local",
                internal_local=spec.internal_traffic_policy == "Local",
                local_backends=tuple(b for b in backends if b.ip in local_ips),
            )
        )
    return entries, problems


def claim_field(entry: ServiceEntry, claim: tuple[str, str, int]) -> str:
    """The Service field a conflicting claim comes from (for the problem report)."""
    if claim == entry.vip:
        return "spec.clusterIP"
    if claim[0] == NODE_PORT_ADDRESS:
        return "spec.ports.nodePort"
    if claim[0] in entry.external_ips:
        return "spec.externalIPs"
    return "status.loadBalancer.ingress"


def claim_text(claim: tuple[str, str, int]) -> str:
    """``ip:port/PROTO``, a node port as ``node port 30080/TCP``."""
    ip, protocol, port = claim
    return f"node port {port}/{protocol}" if ip == NODE_PORT_ADDRESS else f"{ip}:{port}/{protocol}"


def build_service_table(
    services: Iterable[Service], endpoints: Iterable[Endpoints], node_name: str | None = None
) -> ServiceTable:
    """The whole table. Two service ports claiming one address: the first by name wins."""
    eps = {(e.metadata.namespace or "default", e.metadata.name): e for e in endpoints}
    ordered = sorted(services, key=lambda s: (s.metadata.namespace or "default", s.metadata.name))
    return merge_entries(
        service_entries(s, eps.get((s.metadata.namespace or "default", s.metadata.name)), node_name)
        for s in ordered
    )


def merge_entries(
    per_service: Iterable[tuple[list[ServiceEntry], list[Problem]]],
) -> ServiceTable:
    """Join per-service results into a table, refusing a second claim on one address.

    ClusterIPs are claimed first, all of them, then the external addresses: a
    Service's node port, external IP or load-balancer address never takes the
    ClusterIP of another, whichever sorts first (the allocator hands each
    ClusterIP to one Service; any tenant may write an external address)."""
    owner: dict[tuple[str, str, int], ServicePortName] = {}
    problems: list[Problem] = []
    candidates: list[ServiceEntry] = []
    for svc_entries, svc_problems in per_service:
        problems.extend(svc_problems)
        for entry in svc_entries:
            holder = owner.setdefault(entry.vip, entry.id)
            if holder != entry.id:
                problems.append(_taken(entry, entry.vip, holder))
            else:
                candidates.append(entry)
    entries: dict[ServicePortName, ServiceEntry] = {}
    for entry in candidates:
        taken = [(c, owner[c]) for c in entry.external_vips if owner.get(c, entry.id) != entry.id]
        if taken:
            problems.append(_taken(entry, *taken[0]))
            continue
        for claim in entry.external_vips:
            owner[claim] = entry.id
        entries[entry.id] = entry
    problems.sort(key=lambda p: (p.namespace, p.name, p.field))
    return ServiceTable(dict(sorted(entries.items())), tuple(problems))


def _taken(entry: ServiceEntry, claim: tuple[str, str, int], holder: ServicePortName) -> Problem:
    return Problem(
        entry.id.namespace,
        entry.id.name,
        claim_field(entry, claim),
        f"{claim_text(claim)} is already used by {holder}",
    )


def diff_tables(old: ServiceTable, new: ServiceTable) -> TableDiff:
    """What changed, sorted by service port name."""
    added = tuple(new.entries[k] for k in sorted(new.entries.keys() - old.entries.keys()))
    removed = tuple(old.entries[k] for k in sorted(old.entries.keys() - new.entries.keys()))
    changed = tuple(
        (old.entries[k], new.entries[k])
        for k in sorted(old.entries.keys() & new.entries.keys())
        if old.entries[k] != new.entries[k]
    )
    return TableDiff(added, removed, changed)
