"""Which routes this router serves, and the ``status.ingress[]`` entry it owes each one.

Pure: (routes, namespaces, config) -> decisions. No clocks: the status writer
stamps ``lastTransitionTime``; everything here is deterministic, so two
replicas of one router compute identical status and never fight over it.

Order of checks for a route (the first failure decides its reason):

1. shard: ``ROUTE_LABELS`` / ``NAMESPACE_LABELS``; out-of-shard routes are
   neither served nor given status by this router;
2. host: empty -> ``NoHostValue`` (unless ``spec.subdomain`` + ROUTER_DOMAIN or
   ROUTER_SUBDOMAIN give one); not a DNS name -> ``InvalidHost``;
3. policy: wildcard routes when not allowed, hosts outside the allowed or
   inside a denied domain -> ``RouteNotAdmitted``;
4. the route's spec and TLS material -> ``ExtendedValidationFailed`` (a
   certificate Secret that is missing or not ``kubernetes.io/tls`` ->
   ``ExternalCertificateValidationFailed``);
5. host claims, oldest route first (``creationTimestamp``, then ``uid``) ->
   ``HostAlreadyClaimed`` naming the route that holds the claim.

Because claims are granted in age order from scratch on every call, deleting
a winner lets the next-oldest route win by itself on the next computation.
"""

from __future__ import annotations

import datetime as dt
import functools
import gc
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shiftnet.api import Namespace, Route, RouteIngress, RouteIngressCondition
from shiftnet.api.names import hostname_errors
from shiftnet.api.route_validation import extended_tls_errors, route_standing_errors
from shiftnet.api.selectors import Selector
from shiftnet.router.annotations import parse_route_options
from shiftnet.router.config import RouterConfig

HOST_ALREADY_CLAIMED = "HostAlreadyClaimed"
INVALID_HOST = "InvalidHost"
NO_HOST_VALUE = "NoHostValue"
ROUTE_NOT_ADMITTED = "RouteNotAdmitted"
EXTENDED_VALIDATION_FAILED = "ExtendedValidationFailed"

# What a served path may contain: "/" then visible ASCII without "?" and "#",
# which a request path never holds (map files and regexes need no more).
_SERVED_PATH_RE = re.compile(r"/[\x21-\x22\x24-\x3e\x40-\x7e]{0,2047}")

RouteKey = tuple[str, str]


@dataclass(slots=True)
class Decision:
    """This router's verdict on one in-shard route (never changed once made).

    Not ``frozen``: a frozen dataclass sets each field through
    ``object.__setattr__``, a few microseconds per route at 10,000 routes.
    """

    key: RouteKey
    admitted: bool
    host: str  # effective, lowercased ("" when there is none)
    reason: str | None = None
    message: str | None = None
    wildcard_policy: str = "None"
    router_name: str = ""  # "" for a decision made outside a router (no status entry)
    canonical_hostname: str | None = None

    @property
    def ingress(self) -> RouteIngress | None:
        """The ``status.ingress[]`` entry this verdict asks for, built when asked.

        Only the status writer needs it, beside serving: building 10,000
        pydantic entries up front would delay the first configuration.
        """
        if not self.router_name:
            return None
        return RouteIngress(
            host=self.host or None,
            router_name=self.router_name,
            conditions=[_admitted_condition(self.reason, self.message)],
            wildcard_policy=self.wildcard_policy,
            router_canonical_hostname=self.canonical_hostname,
        )


@dataclass(frozen=True)
class AdmissionResult:
    """Decisions for the in-shard routes, and the admitted routes (sorted by key)."""

    decisions: dict[RouteKey, Decision]
    admitted: tuple[Route, ...]

    def decision(self, namespace: str, name: str) -> Decision | None:
        return self.decisions.get((namespace, name))


def route_key(route: Route) -> RouteKey:
    return (route.metadata.namespace or "", route.metadata.name)


def _age(route: Route) -> tuple[str, str, str, str]:
    # RFC 3339 UTC timestamps sort as strings; a route without one is newest.
    ts = route.metadata.creation_timestamp or "\uffff"
    return (ts, route.metadata.uid or "", route.metadata.namespace or "", route.metadata.name)


def in_shard(route: Route, namespace: Namespace | None, config: RouterConfig) -> bool:
    """Whether ``ROUTE_LABELS`` and ``NAMESPACE_LABELS`` select this route."""
    ns_labels = namespace.metadata.labels if namespace is not None else {}
    selectors = (config.route_labels, config.namespace_labels)
    return shard_selects(*selectors, route.metadata.labels, ns_labels)


def shard_selects(
    route_labels: Selector,
    namespace_labels: Selector,
    labels: Mapping[str, str] | None,
    namespace: Mapping[str, str] | None,
) -> bool:
    """:func:`in_shard` from the selectors and the labels alone (``diagnose`` has no config)."""
    return route_labels.matches(labels) and namespace_labels.matches(namespace)


def effective_host(route: Route, config: RouterConfig) -> str:
    """``spec.host``, else ``spec.subdomain`` + ROUTER_DOMAIN, else ROUTER_SUBDOMAIN's template."""
    if route.spec.host:
        return route.spec.host.lower()
    if route.spec.subdomain and config.router_domain:
        return f"{route.spec.subdomain}.{config.router_domain}".lower()
    if config.subdomain_template:
        return (
            config.subdomain_template.replace("${name}", route.metadata.name)
            .replace("${namespace}", route.metadata.namespace or "")
            .lower()
        )
    return ""


def parent_domain(host: str) -> str:
    """The domain a wildcard route for ``host`` serves: everything after the first label."""
    return host.split(".", 1)[1] if "." in host else ""


def _in_domain(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


def _policy_problem(route: Route, host: str, config: RouterConfig) -> str | None:
    wildcard = route.spec.wildcard_policy == "Subdomain"
    if wildcard and not config.allow_wildcard_routes:
        return "wildcard routes are not allowed by this router (ROUTER_ALLOW_WILDCARD_ROUTES)"
    for domain in config.denied_domains:
        if _in_domain(host, domain):
            return f'host "{host}" is in the denied domain "{domain}"'
    if config.allowed_domains and not any(_in_domain(host, d) for d in config.allowed_domains):
        return f'host "{host}" is not in an allowed domain'
    return None


def _check_route(route: Route, now: dt.datetime | None) -> tuple[str, str] | None:
    errors = route_standing_errors(route) or extended_tls_errors(route, now)
    if errors:
        first = errors[0]
        reason = INVALID_HOST if first.field == "spec.host" else EXTENDED_VALIDATION_FAILED
        return reason, f"{first.field}: {first.message}"
    path = route.spec.path
    if path and not _SERVED_PATH_RE.fullmatch(path):
        return EXTENDED_VALIDATION_FAILED, (
            f"spec.path: {path!r} must be visible ASCII without '?' or '#' to be served"
        )
    return None


@dataclass
class _Claims:
    """Granted claims while routes are visited oldest first."""

    by_host_path: dict[tuple[str, str], Route]
    host_namespace: dict[str, Route]  # exact host -> oldest admitted route
    domain_wildcard: dict[str, Route]  # parent domain -> oldest admitted wildcard route
    domain_hosts: dict[str, list[Route]]  # parent domain -> admitted exact routes in it
    tls_by_host: dict[str, list[Route]]  # claim host -> admitted TLS routes

    @classmethod
    def empty(cls) -> _Claims:
        return cls({}, {}, {}, {}, {})


def _name(route: Route) -> str:
    return f"{route.metadata.namespace}/{route.metadata.name}"


def _claim_problem(route: Route, host: str, claims: _Claims, config: RouterConfig) -> str | None:
    ns = route.metadata.namespace or ""
    wildcard = route.spec.wildcard_policy == "Subdomain"
    claim_host = "*." + parent_domain(host) if wildcard else host
    path = route.spec.path or ""
    holder = claims.by_host_path.get((claim_host, path))
    if holder is not None:
        where = f' path "{path}"' if path else ""
        return (
            f'host "{claim_host}"{where} is already claimed by route "{_name(holder)}", '
            "which is older"
        )
    if not config.disable_namespace_ownership_check:
        domain = parent_domain(host)
        rivals: list[Route] = []
        if wildcard:
            rivals += [r for r in claims.domain_hosts.get(domain, []) if r.metadata.namespace != ns]
        else:
            owner = claims.host_namespace.get(host)
            if owner is not None:
                rivals.append(owner)
        wild = claims.domain_wildcard.get(domain)
        if wild is not None:
            rivals.append(wild)
        rivals = [r for r in rivals if r.metadata.namespace != ns]
        if rivals:
            rivals.sort(key=_age)
            return (
                f'host "{claim_host}" is owned by namespace "{rivals[0].metadata.namespace}" '
                f'(route "{_name(rivals[0])}" is older)'
            )
    if route.spec.tls is not None:
        others = claims.tls_by_host.get(claim_host, [])
        mine = route.spec.tls.termination
        for other in others:
            theirs = other.spec.tls.termination if other.spec.tls else ""
            if mine == "passthrough" or theirs == "passthrough":
                return (
                    f'host "{claim_host}" already has the TLS route "{_name(other)}" ({theirs}), '
                    f"which is older; a passthrough route cannot share its host with another "
                    f"TLS route"
                )
    return None


def _grant(route: Route, host: str, claims: _Claims) -> None:
    wildcard = route.spec.wildcard_policy == "Subdomain"
    claim_host = "*." + parent_domain(host) if wildcard else host
    claims.by_host_path[(claim_host, route.spec.path or "")] = route
    if wildcard:
        claims.domain_wildcard.setdefault(parent_domain(host), route)
    else:
        claims.host_namespace.setdefault(host, route)
        claims.domain_hosts.setdefault(parent_domain(host), []).append(route)
    if route.spec.tls is not None:
        claims.tls_by_host.setdefault(claim_host, []).append(route)


@functools.lru_cache(maxsize=1024)
def _admitted_condition(reason: str | None, message: str | None) -> RouteIngressCondition:
    """The ``Admitted`` condition, one object per verdict (most routes share "admitted").

    Shared between entries, so it must never be changed in place: the status
    writer and the router copy an entry (``model_copy(deep=True)``) before
    they stamp or replace its conditions.
    """
    return RouteIngressCondition(
        type="Admitted",
        status="True" if reason is None else "False",
        reason=reason,
        message=message,
    )


def admit(
    routes: Iterable[Route],
    namespaces: Iterable[Namespace],
    config: RouterConfig,
    *,
    now: dt.datetime | None = None,
) -> AdmissionResult:
    """Decide every route; routes being deleted are skipped like absent ones.

    ``now`` is the caller's clock for certificate dates (None: dates not consulted).
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()  # thousands of short-lived acyclic objects: see haproxy.render.gc_paused
    try:
        return _admit(routes, namespaces, config, now)
    finally:
        if gc_was_enabled:
            gc.enable()


def _admit(
    routes: Iterable[Route],
    namespaces: Iterable[Namespace],
    config: RouterConfig,
    now: dt.datetime | None,
) -> AdmissionResult:
    ns_by_name = {n.metadata.name: n for n in namespaces}
    candidates: list[Candidate] = []
    decisions: dict[RouteKey, Decision] = {}
    for route in sorted(routes, key=route_key):
        verdict = precheck(route, ns_by_name.get(route.metadata.namespace or ""), config, now=now)
        if isinstance(verdict, Decision):
            decisions[verdict.key] = verdict
        elif verdict is not None:
            candidates.append(verdict)
    decisions.update(decide_claims(candidates, config))
    return AdmissionResult(
        decisions=dict(sorted(decisions.items())),
        admitted=tuple(
            sorted((c.route for c in candidates if decisions[c.key].admitted), key=route_key)
        ),
    )


@dataclass(slots=True)
class Candidate:
    """A route that passed every check of its own and now competes for its host."""

    route: Route
    key: RouteKey
    host: str
    domain: str  # parent_domain(host): claims never cross it
    wildcard: bool
    age: tuple[str, str, str, str]


def _rejection(
    route: Route, host: str, reason: str, message: str, config: RouterConfig
) -> Decision:
    return _decision(route_key(route), route, host, config, reason, message)


def _decision(
    key: RouteKey,
    route: Route,
    host: str,
    config: RouterConfig,
    reason: str | None,
    message: str | None,
) -> Decision:
    return Decision(
        key,
        reason is None,
        host,
        reason,
        message,
        route.spec.wildcard_policy or "None",
        config.name,
        config.canonical_hostname,
    )


def precheck(
    route: Route,
    namespace: Namespace | None,
    config: RouterConfig,
    refusal: tuple[str, str] | None = None,
    *,
    now: dt.datetime | None = None,
) -> Decision | Candidate | None:
    """Checks 1-4 of one route alone: None (not ours), a rejection, or a claim candidate.

    ``refusal`` (reason, message) is a verdict on the route's external
    certificate (``external_certs.py``), taken at check 4. ``now`` is the
    caller's clock for certificate dates (None: dates not consulted).
    """
    if route.metadata.deletion_timestamp:
        return None
    if not in_shard(route, namespace, config):
        return None
    host = effective_host(route, config)
    if not host:
        return _rejection(
            route, host, NO_HOST_VALUE, "no host value was defined for the route", config
        )
    if route.spec.host == "" and hostname_errors(host):
        return _rejection(
            route, host, INVALID_HOST, f'generated host "{host}" is not a valid DNS name', config
        )
    problem = refusal or _check_route(route, now)
    if problem is not None:
        return _rejection(route, host, problem[0], problem[1], config)
    if hostname_errors(host):
        return _rejection(
            route, host, INVALID_HOST, f'spec.host: "{host}" is not a valid DNS name', config
        )
    policy = _policy_problem(route, host, config)
    if policy is not None:
        return _rejection(route, host, ROUTE_NOT_ADMITTED, policy, config)
    return Candidate(
        route=route,
        key=route_key(route),
        host=host,
        domain=parent_domain(host),
        wildcard=route.spec.wildcard_policy == "Subdomain",
        age=_age(route),
    )


def decide_claims(
    candidates: Iterable[Candidate], config: RouterConfig
) -> dict[RouteKey, Decision]:
    """Check 5, host claims, over candidates that can only compete with each other.

    Oldest first; callers pass all candidates, or every candidate of one
    parent domain, or (when that domain has no wildcard candidate) every
    candidate of one host: claims never reach further.
    """
    claims = _Claims.empty()
    out: dict[RouteKey, Decision] = {}
    for c in sorted(candidates, key=lambda c: c.age):
        route, host = c.route, c.host
        claim = _claim_problem(route, host, claims, config)
        if claim is not None:
            out[c.key] = _rejection(route, host, HOST_ALREADY_CLAIMED, claim, config)
            continue
        _grant(route, host, claims)
        _, warnings = parse_route_options(route.metadata.annotations)
        message = "; ".join(warnings) if warnings else None
        out[c.key] = _decision(c.key, route, host, config, None, message)
    return out
