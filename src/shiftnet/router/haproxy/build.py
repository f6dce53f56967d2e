"""Build the description of one route (``description.RouteParts``) from its L7 policy.

Pure and deterministic. Every value from a route, a Service, Endpoints or
the configuration is checked here through :mod:`shiftnet.router.haproxy.escape`;
a route whose values cannot be written raises :class:`escape.UnsafeValue`
(the assembly leaves that route out, never the whole configuration).

Lookups do not grow with the route count. No ``map_reg``:

* a request's key is ``<host><path>/``: the Host header lowercased with its
  port cut, then the path (no query), then one ``/``;
* ``*_prefix.map`` holds ``<host><path>/`` for every route (its path without
  trailing ``/``; ``<host>/`` for a route without path) and is looked up
  with ``map_beg``, which HAProxy indexes in a prefix tree and answers with
  the longest matching key. The ``/`` the request key ends with makes one
  lookup serve both rules: ``/foo`` (key ``/foo/``) and ``/foo/...`` match
  the route ``/foo``, ``/foobar`` (``/foobar/``) does not, and the longest
  route path wins. Keys carry the host, so the paths of one host are only
  ever compared with each other;
* wildcard routes (``*.example.com``) live in ``*_wildcard_*.map`` keyed by
  the parent domain; they are consulted only when no exact host matched, with
  the request host's first label cut by one ``regsub``, looked up the same way.
"""

from __future__ import annotations

import dataclasses
import functools
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from shiftnet.api import tls as route_tls
from shiftnet.api.route_headers import (
    NO_HEADER_ACTIONS,
    REQUEST,
    RESPONSE,
    HeaderAction,
    HeaderActions,
)
from shiftnet.router.annotations import RouteOptions
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import escape
from shiftnet.router.haproxy.description import (
    Backend,
    BackendOptions,
    Cookie,
    CrtEntry,
    HeaderRule,
    MapEntry,
    Member,
    RouteParts,
    ServerOptions,
)
from shiftnet.router.haproxy.names import (
    BASE_DEFAULTS,
    CERT_DIR,
    FORWARDED_DEFAULTS,
    HTTP_PREFIX_MAP,
    HTTP_WILDCARD_PREFIX_MAP,
    REDIRECT_BACKEND,
    SNI_PASSTHROUGH_MAP,
    SNI_PASSTHROUGH_WILDCARD_MAP,
    SNI_TERMINATE_MAP,
    TLS_PREFIX_MAP,
    TLS_WILDCARD_PREFIX_MAP,
    backend_name,
    spare_name,
)
from shiftnet.router.model import (
    EDGE,
    HTTP,
    INSECURE_ALLOW,
    INSECURE_NONE,
    INSECURE_REDIRECT,
    PASSTHROUGH,
    REENCRYPT,
    L7Policy,
    Server,
)

MIN_SLOTS = 4
BALANCE_ALGORITHMS = ("roundrobin", "leastconn", "source", "random")


@dataclass(frozen=True)
class BackendDefaults:
    """The configuration values a backend's description depends on."""

    load_balance_algorithm: str
    tcp_balance_scheme: str
    set_forwarded_headers: str
    health_check_interval_ms: int

    @classmethod
    def of(cls, config: RouterConfig) -> BackendDefaults:
        return cls(
            config.load_balance_algorithm,
            config.tcp_balance_scheme,
            config.set_forwarded_headers,
            config.health_check_interval_ms,
        )


# ------------------------------------------------------------------ slots


def slot_count(members: int) -> int:
    """The smallest power of two above the member count, at least :data:`MIN_SLOTS`.

    Strictly above, so a backend always has a spare slot for one more pod.
    """
    count = MIN_SLOTS
    while count <= members:
        count *= 2
    return count


def home_slot(server: Server, count: int) -> int:
    """The slot a server's address hashes to (CRC-32: stable across processes and runs)."""
    return zlib.crc32(f"{server.ip}:{server.port}".encode()) % count


def _server_order(s: Server) -> tuple[str, int, str]:
    return (s.ip, s.port, s.pool)


def slot_servers(servers: Iterable[Server]) -> list[Server | None]:
    """Which slot each server takes: its address hashed into the slots, probing onwards.

    While the slot count stays, a member in its home slot keeps it whatever
    other members come and go (only members pushed along by a collision can
    move), so sticky cookies mostly survive and the runtime API touches few
    slots. The cookie value belongs to the slot, not to the pod.
    """
    ordered: tuple[Server, ...] | list[Server]
    if isinstance(servers, tuple) and len(servers) < 2:
        ordered = servers  # nothing to sort (most routes have one pod)
    else:
        ordered = sorted(servers, key=_server_order)
    count = slot_count(len(ordered))
    taken: list[Server | None] = [None] * count
    for server in ordered:
        index = home_slot(server, count)
        while taken[index] is not None:
            index = (index + 1) % count
        taken[index] = server
    return taken


def member(server: Server) -> Member:
    weight = max(0, min(256, int(server.weight)))
    return Member(server.ip, server.port, weight, escape.server_address(server.ip, server.port))


def _slots(servers: tuple[Server, ...]) -> tuple[Member | None, ...]:
    if not servers:
        return (None,) * MIN_SLOTS
    if len(servers) == 1:
        only = servers[0]
        home = home_slot(only, MIN_SLOTS)
        return (None,) * home + (member(only),) + (None,) * (MIN_SLOTS - 1 - home)
    return tuple(None if s is None else member(s) for s in slot_servers(servers))


# ------------------------------------------------------------------ lookup keys


def norm_path(path: str) -> str:
    """The route path without trailing ``/`` (``/`` and "" both become "")."""
    return path.rstrip("/")


def lookup_key(host_or_domain: str, path: str) -> str:
    """A rule's map key, ``<host><path>/``; see the module docstring."""
    return escape.map_key(host_or_domain + norm_path(path) + "/")


# ------------------------------------------------------------------ the two predicates


def names_its_route(opts: RouteOptions) -> bool:
    """Options that name their route's own allowlist file or path: not shared by others."""
    return opts.ip_allowlist is not None or bool(opts.rewrite_target)


def route_options(policy: L7Policy) -> RouteOptions:
    """The route's options with OpenShift's balance switch: without a ``balance``
    annotation, a route with more than one service of non-zero weight is
    balanced ``roundrobin`` (whether or not those services have pods yet)."""
    opts = policy.options
    if (
        opts.balance is None
        and len(policy.targets) > 1
        and sum(1 for t in policy.targets if t.weight > 0) > 1
    ):
        return dataclasses.replace(opts, balance="roundrobin")
    return opts


def section_key(policy: L7Policy) -> tuple[object, ...] | None:
    """What the route's backend says apart from its name; None: a backend of its own.

    Routes with equal keys have equal descriptions but for the backend name
    (and the cookie values derived from it), so one HAProxy backend can
    serve them all. An allowlist file, a rewritten path or a destination CA
    file belongs to one route, so those routes keep a backend of their own.
    So does a route without pods: its first pod then fills a slot of its own
    backend through the runtime API, instead of moving the route to another
    backend.
    """
    opts = route_options(policy)
    servers = policy.servers
    if not servers or names_its_route(opts) or _destination_ca(policy):
        return None
    if len(servers) == 1:
        only = servers[0]
        members: tuple[tuple[str, int, int], ...] = ((only.ip, only.port, only.weight),)
    else:
        members = tuple((s.ip, s.port, s.weight) for s in sorted(servers, key=_server_order))
    return (policy.termination, policy.insecure_policy, opts, policy.headers, members)


def _destination_ca(policy: L7Policy) -> str | None:
    if policy.termination != REENCRYPT or policy.tls is None:
        return None
    return policy.tls.destination_ca_certificate or None


# ------------------------------------------------------------------ backend options


@functools.lru_cache(maxsize=1024)
def _shared_options(
    termination: str,
    insecure_policy: str,
    opts: RouteOptions,
    defaults: BackendDefaults,
    headers: HeaderActions = NO_HEADER_ACTIONS,
) -> BackendOptions:
    """:func:`_options` of options that name no file or path of their route."""
    return _options(termination, insecure_policy, opts, defaults, None, {}, headers)


def header_rules(actions: tuple[HeaderAction, ...], direction: str) -> tuple[HeaderRule, ...]:
    """Header actions as escaped words (:func:`escape.header_name`, :func:`escape.header_value`);
    raises :class:`escape.UnsafeValue` for one the grammar of ``direction`` refuses."""
    return tuple(
        HeaderRule(
            escape.header_name(a.name, f"{direction} header name"),
            None if a.value is None else escape.header_value(a.value, direction),
        )
        for a in actions
    )


def _rewrite_words(path: str, target: str) -> tuple[str, str]:
    """``rewrite-target``: the route path prefix replaced by ``target`` (OpenShift's table).

    ``/foo`` -> ``/bar``: ``/foo`` -> ``/bar``, ``/foo/x`` -> ``/bar/x``;
    a target ending in ``/`` swallows the ``/`` after the prefix:
    ``/foo`` -> ``/``: ``/foo/x`` -> ``/x``.
    """
    prefix = escape.regex_literal(norm_path(path), "spec.path") if norm_path(path) else ""
    escape.url_path(target, "rewrite-target")
    pattern = f"^{prefix}/?(.*)$" if target.endswith("/") else f"^{prefix}(.*)$"
    # log_format doubles "%"; quoted() turns the backslash of the group reference
    # into "\\\\" so that HAProxy reads back "\\1". The target holds no backslash.
    replacement = escape.log_format(target + "\\1", "rewrite-target")
    return escape.quoted(pattern, "rewrite pattern"), replacement


def _options(
    termination: str,
    insecure_policy: str,
    opts: RouteOptions,
    defaults: BackendDefaults,
    policy: L7Policy | None,
    files: dict[str, bytes],
    headers: HeaderActions = NO_HEADER_ACTIONS,
) -> BackendOptions:
    """The backend's options; ``policy`` and ``files`` serve ``ip_allowlist`` and
    ``rewrite-target`` (see :func:`names_its_route`)."""
    http = termination != PASSTHROUGH
    forwarded = opts.set_forwarded_headers or defaults.set_forwarded_headers
    parent = FORWARDED_DEFAULTS.get(forwarded, BASE_DEFAULTS) if http else BASE_DEFAULTS
    default_balance = defaults.load_balance_algorithm if http else defaults.tcp_balance_scheme
    balance = opts.balance or default_balance
    if balance not in BALANCE_ALGORITHMS:
        raise escape.UnsafeValue(f"balance {balance!r} is not an HAProxy algorithm")
    tunnel = opts.timeout_tunnel_ms or (opts.timeout_ms if not http else None)
    allowlist_word: str | None = None
    if opts.ip_allowlist is not None:  # () too: an empty file admits no client
        assert policy is not None  # names_its_route: the route comes along
        allow_file = "allowlists/" + escape.file_name(policy.namespace, policy.name, suffix=".txt")
        files[allow_file] = "".join(escape.ip_network(n) + "\n" for n in opts.ip_allowlist).encode()
        allowlist_word = escape.quoted(allow_file)
    rewrite: tuple[str, str] | None = None
    hsts: str | None = None
    cookie: Cookie | None = None
    request_headers: tuple[HeaderRule, ...] = ()
    response_headers: tuple[HeaderRule, ...] = ()
    if http:
        if headers.request:
            request_headers = header_rules(headers.request, REQUEST)
        if headers.response:
            response_headers = header_rules(headers.response, RESPONSE)
        if opts.rewrite_target:
            assert policy is not None  # names_its_route: the route comes along
            rewrite = _rewrite_words(policy.rule.path, opts.rewrite_target)
        if opts.hsts_header and termination in (EDGE, REENCRYPT):
            hsts = escape.log_format(opts.hsts_header, "hsts_header")
        if not opts.disable_cookies:
            name = escape.quoted(opts.cookie_name, "cookie_name") if opts.cookie_name else None
            secure = termination in (EDGE, REENCRYPT) and insecure_policy != INSECURE_ALLOW
            cookie = Cookie(name, secure)
    return BackendOptions(
        parent=parent,
        http=http,
        balance=balance,
        timeout_server_ms=int(opts.timeout_ms) if opts.timeout_ms else None,
        timeout_tunnel_ms=int(tunnel) if tunnel else None,
        allowlist_word=allowlist_word,
        rate_limit=opts.rate_limit,
        rewrite_words=rewrite,
        hsts_word=hsts,
        cookie=cookie,
        request_headers=request_headers,
        response_headers=response_headers,
    )


@functools.lru_cache(maxsize=1024)
def _server_options(
    checks: int | None, maxconn: int | None, ssl: bool, ca_word: str | None
) -> ServerOptions:
    return ServerOptions(checks, maxconn, ssl, ca_word)


_PLAIN_SERVERS = ServerOptions()


def _servers(policy: L7Policy, defaults: BackendDefaults, files: dict[str, bytes]) -> ServerOptions:
    opts = policy.options
    plain = policy.termination != REENCRYPT and not opts.pod_concurrent_connections
    if plain and len(policy.servers) < 2:
        return _PLAIN_SERVERS  # most routes: one pod, nothing on the server lines
    checks: int | None = None
    # OpenShift's rule: health checks only when the route has more than one pod.
    # (Each checked server line costs HAProxy a file descriptor even while in
    # maintenance, so checking every slot would not fit 10,000 routes.)
    if len(policy.servers) > 1:
        checks = int(opts.health_check_interval_ms or defaults.health_check_interval_ms)
    maxconn = int(opts.pod_concurrent_connections) if opts.pod_concurrent_connections else None
    ssl = policy.termination == REENCRYPT
    ca_word: str | None = None
    dest_ca = _destination_ca(policy)
    if dest_ca:
        ca_name = "cacerts/" + escape.file_name(policy.namespace, policy.name, suffix=".pem")
        files[ca_name] = escape.pem(dest_ca, what="destinationCACertificate", max_keys=0)
        ca_word = escape.quoted(ca_name)
    return _server_options(checks, maxconn, ssl, ca_word)


# ------------------------------------------------------------------ one route


def route_parts(policy: L7Policy, defaults: BackendDefaults) -> RouteParts:
    """Describe one route. Raises :class:`escape.UnsafeValue` when a value cannot be written."""
    name = backend_name(policy)
    files: dict[str, bytes] = {}
    opts = route_options(policy)
    if names_its_route(opts):
        options = _options(
            policy.termination,
            policy.insecure_policy,
            opts,
            defaults,
            policy,
            files,
            policy.headers,
        )
    else:  # the same for every route of this kind with these options: made once
        options = _shared_options(
            policy.termination, policy.insecure_policy, opts, defaults, policy.headers
        )
    servers = _servers(policy, defaults, files)
    backend = Backend(name, options, servers, _slots(policy.servers))
    crt = _certificate(policy, files) if policy.termination != HTTP else None
    members = len(policy.servers)
    return RouteParts(
        name=name,
        backend=backend,
        entries=_map_entries(policy, name),
        crt=crt,
        files=tuple(sorted(files.items())) if files else (),
        # Every slot line has ``check`` when the route has more than one pod, and only then.
        checked=slot_count(members) if members > 1 else 0,
    )


def _certificate(policy: L7Policy, files: dict[str, bytes]) -> CrtEntry | None:
    """The crt-list entry of an edge/reencrypt route that brings its own certificate."""
    tls = policy.tls
    if tls is None or not tls.certificate:
        return None  # served with the default certificate
    name = f"{CERT_DIR}/" + escape.file_name(policy.namespace, policy.name, suffix=".pem")
    # Certificates, the first key (inside the certificate field first), the CA
    # bundle: what OpenShift's router serves. escape.pem writes it, one key at most.
    what = f"route {policy.namespace}/{policy.name} certificate"
    try:
        text = route_tls.serving_pem(tls.certificate, tls.key, tls.ca_certificate)
    except route_tls.CertificateError as err:
        raise escape.UnsafeValue(f"{what}: {err}") from None
    files[name] = escape.pem(text, what=what)
    if policy.rule.wildcard:
        return CrtEntry(name, escape.sni_filter(policy.rule.domain, wildcard=True), True)
    return CrtEntry(name, escape.sni_filter(policy.rule.host), False)


def _map_entries(policy: L7Policy, backend: str) -> tuple[MapEntry, ...]:
    """One route's map entries, in map order: HTTP port, TLS, then SNI."""
    rule = policy.rule
    termination = policy.termination
    norm = norm_path(rule.path)
    rank = (-len(norm), -len(rule.path), f"{policy.namespace}/{policy.name}")
    wildcard = rule.wildcard
    where = (
        escape.hostname(rule.domain, "wildcard domain")
        if wildcard
        else escape.hostname(rule.host, "spec.host")
    )
    # A passthrough route has no path: where + "/". The backend name (a map value)
    # needs no check: escape.name made it.
    key = where + norm + "/"
    entries: list[MapEntry] = []
    # The HTTP port: plain routes and Allow are served, Redirect answers 302, None is absent.
    insecure = policy.insecure_policy
    if insecure != INSECURE_NONE and (termination != PASSTHROUGH or insecure == INSECURE_REDIRECT):
        value = REDIRECT_BACKEND if insecure == INSECURE_REDIRECT else backend
        http_map = HTTP_WILDCARD_PREFIX_MAP if wildcard else HTTP_PREFIX_MAP
        entries.append(MapEntry(http_map, escape.map_key(key), value, rank))
    if termination in (EDGE, REENCRYPT):
        tls_map = TLS_WILDCARD_PREFIX_MAP if wildcard else TLS_PREFIX_MAP
        entries.append(MapEntry(tls_map, escape.map_key(key), backend, rank))
        if not wildcard:
            entries.append(MapEntry(SNI_TERMINATE_MAP, escape.map_key(where), "1", rank))
    elif termination == PASSTHROUGH:
        sni_map = SNI_PASSTHROUGH_WILDCARD_MAP if wildcard else SNI_PASSTHROUGH_MAP
        entries.append(MapEntry(sni_map, escape.map_key(where), backend, rank))
    return tuple(entries)


# ------------------------------------------------------------------ spares


def spare_backends(count: int, defaults: BackendDefaults) -> tuple[Backend, ...]:
    """``count`` spares per kind, shaped like a route without annotations or own CA.

    An edge spare has the ``secure`` cookie (insecure policy None or Redirect);
    a reencrypt spare verifies nothing (no ``destinationCACertificate``). A new
    route of another shape is served by a reload instead (counted as a fallback).
    """
    spares: list[Backend] = []
    for termination in (HTTP, EDGE, REENCRYPT, PASSTHROUGH):
        options = _shared_options(termination, INSECURE_NONE, RouteOptions(), defaults)
        servers = _server_options(None, None, termination == REENCRYPT, None)
        for index in range(count):
            spares.append(
                Backend(spare_name(termination, index), options, servers, (None,) * MIN_SLOTS)
            )
    return tuple(spares)
