"""The router's L7 model (Kuryr's): Routes -> policies, Services -> pools, pods -> members.

Pure: (admission result, Endpoints, Services) -> :class:`L7Model`. No I/O, no
clocks; everything is sorted, so equal inputs give equal models and the
renderer turns them into byte-identical files.

The shapes follow Kuryr's load balancer design:

* every admitted Route is an :class:`L7Policy` whose :class:`Rule` is its host,
  path and wildcard flag; termination, insecure policy and parsed annotations
  ride along;
* every Service a policy points at (``spec.to`` and ``alternateBackends``) is
  a :class:`Pool` named ``<namespace>_<service>``; it exists as long as one
  admitted route points at it, with or without Endpoints. A Route created
  before its Service therefore gives a pool with no members (the route answers
  503) that fills when the Endpoints appear, and deleting the last route of a
  pool removes the pool;
* the Endpoints' ready addresses are the pool's members; each policy resolves
  them against its ``port.targetPort`` (a port name, or a number) into the
  :class:`Server` s its backend sends traffic to, with weights scaled into
  HAProxy's 0-256 range the way OpenShift's router does.
"""

from __future__ import annotations

import functools
import gc
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

from shiftnet.api import Endpoints, Route, Service
from shiftnet.api.names import is_digits
from shiftnet.api.route import RouteTargetReference
from shiftnet.api.route_headers import NO_HEADER_ACTIONS, HeaderActions, route_header_actions
from shiftnet.router.admission import AdmissionResult, RouteKey, route_key
from shiftnet.router.annotations import RouteOptions, parse_route_options

HTTP = "http"  # a Route without spec.tls
EDGE = "edge"
PASSTHROUGH = "passthrough"
REENCRYPT = "reencrypt"
TERMINATIONS = (HTTP, EDGE, PASSTHROUGH, REENCRYPT)

INSECURE_NONE = "None"
INSECURE_ALLOW = "Allow"
INSECURE_REDIRECT = "Redirect"

MAX_SERVER_WEIGHT = 256  # HAProxy's largest server weight
DEFAULT_ROUTE_WEIGHT = 100  # OpenShift's default for spec.to / alternateBackends

PoolKey = tuple[str, str]  # (namespace, service)
TargetPort = int | str | None


class PoolMember(NamedTuple):
    """One ready endpoint address on one port of a Service's Endpoints."""

    ip: str
    port: int
    port_name: str  # "" when the Endpoints port has no name
    pod: str  # the address's targetRef name, "" when there is none
    first: bool = False  # the port is its subset's first: what a route without port uses


@dataclass(frozen=True)
class Pool:
    """A Service as a Kuryr pool: named ``<namespace>_<service>``, its endpoints as members."""

    namespace: str
    service: str
    members: tuple[PoolMember, ...]  # sorted; empty until Endpoints with ready addresses exist

    @property
    def key(self) -> PoolKey:
        return (self.namespace, self.service)

    @property
    def name(self) -> str:
        return pool_name(self.namespace, self.service)


class Rule(NamedTuple):
    """What a request must carry to reach a policy: host (lowercase) and path prefix."""

    host: str
    path: str  # "" or the route's spec.path as given
    wildcard: bool  # wildcardPolicy Subdomain: serves every host one label below the parent

    @property
    def domain(self) -> str:
        """For a wildcard rule, the parent domain it serves (``*.<domain>``)."""
        return self.host.split(".", 1)[1] if "." in self.host else ""


class Target(NamedTuple):
    """One weighted backend of a route (``spec.to`` or an alternate backend)."""

    pool: str
    service: str
    weight: int  # the route's weight, 0-256; 0 takes no traffic
    members: int  # members of the pool after resolving the route's target port


class Server(NamedTuple):
    """One pod address the policy's backend sends traffic to, with its HAProxy weight."""

    ip: str
    port: int
    pool: str
    pod: str
    weight: int  # 1-256 (members of weight-0 targets are not servers)

    @property
    def address(self) -> str:
        """``ip:port``, IPv6 addresses in brackets (HAProxy's server address syntax)."""
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class RouteTLS:
    """The route's TLS material, as admitted (admission already checked it parses and matches)."""

    certificate: str | None = None
    key: str | None = None
    ca_certificate: str | None = None
    destination_ca_certificate: str | None = None


@dataclass(frozen=True)
class L7Policy:
    """One admitted Route: its rule, how it is terminated, and the servers behind it."""

    namespace: str
    name: str
    rule: Rule
    termination: str  # one of TERMINATIONS
    insecure_policy: str  # what the HTTP port does: None (not served), Allow, Redirect
    tls: RouteTLS | None
    options: RouteOptions
    target_port: TargetPort
    targets: tuple[Target, ...]
    servers: tuple[Server, ...]  # sorted by (pool, ip, port); weight > 0 only
    warnings: tuple[str, ...]
    headers: HeaderActions = NO_HEADER_ACTIONS  # spec.httpHeaders.actions, checked

    def __hash__(self) -> int:
        # Computed once: policies are compared and hashed as dict keys more than once.
        cached: int | None = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(
                (
                    self.namespace,
                    self.name,
                    self.rule,
                    self.termination,
                    self.insecure_policy,
                    self.tls,
                    self.options,
                    self.target_port,
                    self.targets,
                    self.servers,
                    self.warnings,
                    self.headers,
                )
            )
            object.__setattr__(self, "_hash", cached)
        return cached

    @property
    def key(self) -> RouteKey:
        return (self.namespace, self.name)

    @property
    def pools(self) -> tuple[str, ...]:
        return tuple(t.pool for t in self.targets)

    @property
    def all_weights_zero(self) -> bool:
        """Every target has weight 0: the route answers 503 (OpenShift's rule)."""
        return all(t.weight == 0 for t in self.targets)


@dataclass(frozen=True)
class L7Model:
    """Everything the renderer needs from the cluster: policies and pools, both sorted."""

    policies: tuple[L7Policy, ...]
    pools: tuple[Pool, ...]

    def policy(self, namespace: str, name: str) -> L7Policy | None:
        return self._policy_index.get((namespace, name))

    def pool(self, name: str) -> Pool | None:
        return self._pool_index.get(name)

    @functools.cached_property
    def _policy_index(self) -> dict[RouteKey, L7Policy]:
        return {p.key: p for p in self.policies}

    @functools.cached_property
    def _pool_index(self) -> dict[str, Pool]:
        return {p.name: p for p in self.pools}

    @property
    def pool_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.pools)


def pool_name(namespace: str, service: str) -> str:
    """A pool's name, as Kuryr's Route design names it.

    Namespaces cannot contain ``_``, so the name is unambiguous.
    """
    return f"{namespace}_{service}"


# ------------------------------------------------------------------ pools


_IPV4_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_CANONICAL_IPV4_RE = re.compile(rf"{_IPV4_OCTET}(?:\.{_IPV4_OCTET}){{3}}")


@functools.lru_cache(maxsize=131072)
def _ip(text: str) -> tuple[str, int, int] | None:
    """``(canonical text, version, integer)`` of an address, None when it is not one."""
    if _CANONICAL_IPV4_RE.fullmatch(text):  # the common case, without ipaddress's cost
        a, b, c, d = (int(x) for x in text.split("."))
        return text, 4, (a << 24) | (b << 16) | (c << 8) | d
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    return str(addr), addr.version, int(addr)


def _ip_sort_key(member: PoolMember) -> tuple[int, int, int, str, str, bool]:
    parsed = _ip(member.ip)
    version, number = (parsed[1], parsed[2]) if parsed else (0, 0)
    return (version, number, member.port, member.port_name, member.pod, member.first)


def pool_from_endpoints(namespace: str, service: str, endpoints: Endpoints | None) -> Pool:
    """The pool of one Service: its Endpoints' ready addresses on every port.

    Addresses that are not IP addresses and ports outside 1-65535 are left
    out (the endpoints controller never writes them; a hand-written object
    might). Not-ready addresses are not members: HAProxy must not send them
    traffic.
    """
    found: list[PoolMember] = []
    for subset in endpoints.subsets if endpoints is not None else ():
        ports = [p for p in subset.ports if 0 < p.port < 65536 and p.protocol.upper() == "TCP"]
        if not ports:
            continue
        for address in subset.addresses:
            ip = address.ip
            if not _CANONICAL_IPV4_RE.fullmatch(ip):  # else it is its own canonical text
                parsed = _ip(ip)
                if parsed is None:
                    continue
                ip = parsed[0]
            pod = (address.target_ref.name or "") if address.target_ref else ""
            for i, port in enumerate(ports):
                found.append(PoolMember(ip, port.port, port.name or "", pod, i == 0))
    # One member (the common case) needs neither de-duplication nor sorting.
    members = tuple(sorted(set(found), key=_ip_sort_key)) if len(found) > 1 else tuple(found)
    return Pool(namespace=namespace, service=service, members=members)


def _service_port_name(service: Service | None, number: int) -> str | None:
    """A route's numeric targetPort may name the Service's port (80) rather than the pod's."""
    if service is None:
        return None
    for port in service.spec.ports:
        if port.port == number:
            return port.name or ""
    return None


def resolve_members(
    pool: Pool, target_port: TargetPort, service: Service | None = None
) -> tuple[PoolMember, ...]:
    """The members a route reaches: those on its ``port.targetPort``.

    A name matches the Endpoints port name; a number (or a string of digits)
    matches the Endpoints port number, or else the Service port of that number
    (so ``targetPort: 80`` on a Service ``80 -> 8080`` reaches 8080). Without a
    target port each subset's first port is used, as OpenShift does.
    """
    members = pool.members
    if target_port is None or target_port == "":
        return _unique([m for m in members if m.first])
    if isinstance(target_port, int) or is_digits(target_port):
        number = int(target_port)
        by_number = _unique([m for m in members if m.port == number])
        if by_number:
            return by_number
        name = _service_port_name(service, number)
        if name is None:
            return ()
        return _unique([m for m in members if m.port_name == name])
    return _unique([m for m in members if m.port_name == target_port])


def _unique(members: Iterable[PoolMember]) -> tuple[PoolMember, ...]:
    """One member per ``ip:port`` (the same address may be listed in two subsets)."""
    if isinstance(members, list) and len(members) < 2:
        return tuple(members)
    seen: set[tuple[str, int]] = set()
    out: list[PoolMember] = []
    for m in members:
        if (m.ip, m.port) not in seen:
            seen.add((m.ip, m.port))
            out.append(m)
    return tuple(out)


# ------------------------------------------------------------------ weights


def scale_weights(targets: Mapping[str, tuple[int, int]]) -> dict[str, int]:
    """Per-member HAProxy weights for each pool: ``{pool: (route weight, members)} -> {pool: w}``.

    Like OpenShift's router (``calculateServiceWeights``): when exactly one target
    has both a weight and members, its members get weight 1 and the others 0;
    otherwise a target's weight is spread over its members (weight / members),
    then every member weight is scaled so the largest is 256, truncated, and
    kept at least 1 for a target whose weight is not 0. A target with weight 0
    or without members gets 0 (no servers).
    """
    active = [p for p, (weight, members) in targets.items() if weight > 0 and members > 0]
    if len(active) <= 1:
        return {pool: 1 if pool in active else 0 for pool in targets}
    per_member: dict[str, Fraction] = {}
    for pool, (weight, members) in targets.items():
        per_member[pool] = Fraction(weight, members) if weight > 0 and members > 0 else Fraction(0)
    largest = max(per_member.values(), default=Fraction(0))
    out: dict[str, int] = {}
    for pool, value in per_member.items():
        if value == 0 or largest == 0:
            out[pool] = 0
        else:
            out[pool] = max(1, int(value * MAX_SERVER_WEIGHT / largest))
    return out


# ------------------------------------------------------------------ policies


def _termination(route: Route) -> str:
    if route.spec.tls is None:
        return HTTP
    term = route.spec.tls.termination.lower()
    return term if term in (EDGE, PASSTHROUGH, REENCRYPT) else EDGE


def _insecure_policy(route: Route, termination: str) -> str:
    if termination == HTTP:
        return INSECURE_ALLOW
    raw = route.spec.tls.insecure_edge_termination_policy if route.spec.tls else None
    for policy in (INSECURE_NONE, INSECURE_ALLOW, INSECURE_REDIRECT):
        if raw is not None and raw.lower() == policy.lower():
            if termination == PASSTHROUGH and policy == INSECURE_ALLOW:
                return INSECURE_NONE  # the API refuses it; never serve passthrough in clear
            return policy
    return INSECURE_NONE


def _tls(route: Route, termination: str) -> RouteTLS | None:
    tls = route.spec.tls
    if tls is None or termination == PASSTHROUGH:
        return None
    return RouteTLS(
        certificate=tls.certificate or None,
        key=tls.key or None,
        ca_certificate=tls.ca_certificate or None,
        destination_ca_certificate=(
            tls.destination_ca_certificate or None if termination == REENCRYPT else None
        ),
    )


def _target_port(route: Route) -> TargetPort:
    if route.spec.port is None:
        return None
    value = route.spec.port.target_port
    if isinstance(value, str) and is_digits(value):
        return int(value)
    return value


def build_policy(
    route: Route,
    host: str,
    pools: Mapping[PoolKey, Pool],
    services: Mapping[PoolKey, Service],
) -> L7Policy:
    """The policy of one admitted route, given the pools of its namespace's Services."""
    namespace = route.metadata.namespace or ""
    termination = _termination(route)
    options, warnings = parse_route_options(route.metadata.annotations)
    target_port = _target_port(route)
    spec = route.spec
    if not spec.alternate_backends:
        targets, servers, notes = _one_backend(spec.to, namespace, target_port, pools, services)
    else:
        targets, servers, notes = _backends(route, namespace, target_port, pools, services)
    return L7Policy(
        namespace=namespace,
        name=route.metadata.name,
        # A wildcard route on a single-label host has no parent domain to serve:
        # OpenShift's router admits it and matches its own host only.
        rule=Rule(host, spec.path or "", spec.wildcard_policy == "Subdomain" and "." in host),
        termination=termination,
        insecure_policy=_insecure_policy(route, termination),
        tls=_tls(route, termination),
        options=options,
        target_port=target_port,
        targets=targets,
        servers=servers,
        warnings=warnings + notes if notes else warnings,
        headers=route_header_actions(route),
    )


def _no_port_note(target_port: TargetPort, namespace: str, service: str) -> str:
    return (
        f'spec.port.targetPort {target_port!r} matches no port of service "{namespace}/{service}"'
    )


def _one_backend(
    ref: RouteTargetReference,
    namespace: str,
    target_port: TargetPort,
    pools: Mapping[PoolKey, Pool],
    services: Mapping[PoolKey, Service],
) -> tuple[tuple[Target, ...], tuple[Server, ...], tuple[str, ...]]:
    """:func:`_backends` for a route with ``spec.to`` only (the common case), without dicts.

    One target takes all: its members get weight 1 unless its own weight is 0
    (OpenShift renders 1 for a route's only active service: equal members need no
    larger weight, and HAProxy sizes its per-server state by the weights).
    """
    service = ref.name
    pname = pool_name(namespace, service)
    weight = DEFAULT_ROUTE_WEIGHT if ref.weight is None else ref.weight
    weight = max(0, min(MAX_SERVER_WEIGHT, weight))
    key = (namespace, service)
    pool = pools[key]
    members = resolve_members(pool, target_port, services.get(key))
    notes: tuple[str, ...] = ()
    if pool.members and not members and target_port is not None:
        notes = (_no_port_note(target_port, namespace, service),)
    servers: tuple[Server, ...] = ()
    if weight > 0 and members:
        servers = tuple(Server(m.ip, m.port, pname, m.pod, 1) for m in members)
    return (Target(pname, service, weight, len(members)),), servers, notes


def _backends(
    route: Route,
    namespace: str,
    target_port: TargetPort,
    pools: Mapping[PoolKey, Pool],
    services: Mapping[PoolKey, Service],
) -> tuple[tuple[Target, ...], tuple[Server, ...], tuple[str, ...]]:
    """Targets, servers and target-port notes of a route with alternate backends."""
    notes: list[str] = []
    weights: dict[str, int] = {}
    services_of: dict[str, str] = {}
    for ref in route.backends():
        name = pool_name(namespace, ref.name)
        weight = DEFAULT_ROUTE_WEIGHT if ref.weight is None else ref.weight
        weight = max(0, min(MAX_SERVER_WEIGHT, weight))
        weights[name] = weight  # a service named twice: the last weight given, as OpenShift
        services_of[name] = ref.name

    resolved: dict[str, tuple[PoolMember, ...]] = {}
    for pname, service in services_of.items():
        pool = pools[(namespace, service)]
        members = resolve_members(pool, target_port, services.get((namespace, service)))
        if pool.members and not members and target_port is not None:
            notes.append(_no_port_note(target_port, namespace, service))
        resolved[pname] = members

    scaled = scale_weights(
        {p: (min(weights[p], MAX_SERVER_WEIGHT), len(resolved[p])) for p in weights}
    )
    targets = tuple(
        Target(
            pool=p,
            service=services_of[p],
            weight=min(weights[p], MAX_SERVER_WEIGHT),
            members=len(resolved[p]),
        )
        for p in weights
    )
    servers = tuple(
        Server(ip=m.ip, port=m.port, pool=p, pod=m.pod, weight=scaled[p])
        for p in sorted(resolved)
        if scaled[p] > 0
        for m in resolved[p]
    )
    return targets, servers, tuple(notes)


def build_model(
    admission: AdmissionResult,
    endpoints: Iterable[Endpoints] = (),
    services: Iterable[Service] = (),
) -> L7Model:
    """The L7 model of every admitted route (Kuryr's sequences hold by construction).

    Pools are made for exactly the Services admitted routes point at; a pool
    whose Service or Endpoints do not exist yet has no members.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()  # many short-lived acyclic objects: see render.gc_paused
    try:
        return _build_model(admission, endpoints, services)
    finally:
        if gc_was_enabled:
            gc.enable()


def _build_model(
    admission: AdmissionResult, endpoints: Iterable[Endpoints], services: Iterable[Service]
) -> L7Model:
    eps: dict[PoolKey, Endpoints] = {
        (e.metadata.namespace or "", e.metadata.name): e for e in endpoints
    }
    svcs: dict[PoolKey, Service] = {
        (s.metadata.namespace or "", s.metadata.name): s for s in services
    }
    wanted: set[PoolKey] = set()
    for route in admission.admitted:
        namespace = route.metadata.namespace or ""
        for ref in route.backends():
            wanted.add((namespace, ref.name))
    pools = {key: pool_from_endpoints(key[0], key[1], eps.get(key)) for key in sorted(wanted)}
    policies: list[L7Policy] = []
    for route in admission.admitted:  # sorted by key already
        decision = admission.decisions.get(route_key(route))
        host = decision.host if decision is not None else (route.spec.host or "").lower()
        policies.append(build_policy(route, host, pools, svcs))
    return L7Model(policies=tuple(policies), pools=tuple(pools[k] for k in sorted(pools)))
