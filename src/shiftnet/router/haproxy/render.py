"""Render the L7 model into HAProxy's file set: ``haproxy.cfg``, map files, certificates.

Pure and deterministic: ``render_haproxy(model, config, paths)`` returns
``{relative file name: bytes}`` and equal inputs give byte-identical files.
The driver writes them (``files.write_file_set``), checks them with
``haproxy -c`` and reloads, or applies member-only changes through the
runtime API (see the contract in ``docs/router.md``).

Lookups do not grow with the route count (issue 5). No ``map_reg``:

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

Every value that comes from a route, a Service, Endpoints or the
configuration goes through :mod:`shiftnet.router.haproxy.escape`. A route
whose values cannot be written is left out (and reported in
:attr:`RenderResult.skipped`), never the whole configuration.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import logging
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from shiftnet.router.admission import RouteKey
from shiftnet.router.annotations import RouteOptions
from shiftnet.router.config import RouterConfig
from shiftnet.router.durations import format_duration_ms
from shiftnet.router.haproxy import escape
from shiftnet.router.haproxy.limits import MaxconnFit, fit_maxconn
from shiftnet.router.model import (
    EDGE,
    HTTP,
    INSECURE_ALLOW,
    INSECURE_NONE,
    INSECURE_REDIRECT,
    PASSTHROUGH,
    REENCRYPT,
    L7Model,
    L7Policy,
    Rule,
    Server,
)

log = logging.getLogger(__name__)

CONFIG_FILE = "haproxy.cfg"
ERROR_PAGE_503 = "error-page-503.http"
CRT_LIST = "crt-list.txt"

# HTTP port lookups (routes served in clear: plain HTTP, edge/reencrypt Allow or Redirect).
HTTP_PREFIX_MAP = "os_http_prefix.map"
HTTP_WILDCARD_PREFIX_MAP = "os_http_wildcard_prefix.map"
# Lookups after TLS termination (edge and reencrypt routes), in ``fe_sni``.
TLS_PREFIX_MAP = "os_tls_prefix.map"
TLS_WILDCARD_PREFIX_MAP = "os_tls_wildcard_prefix.map"
# SNI lookups on the HTTPS port.
SNI_PASSTHROUGH_MAP = "os_sni_passthrough.map"
SNI_PASSTHROUGH_WILDCARD_MAP = "os_sni_passthrough_wildcard.map"
SNI_TERMINATE_MAP = "os_sni_terminate.map"  # exact hosts of edge/reencrypt routes

HTTP_MAPS = (HTTP_PREFIX_MAP, HTTP_WILDCARD_PREFIX_MAP)
TLS_MAPS = (TLS_PREFIX_MAP, TLS_WILDCARD_PREFIX_MAP)
ALL_MAPS = (
    *HTTP_MAPS,
    *TLS_MAPS,
    SNI_PASSTHROUGH_MAP,
    SNI_PASSTHROUGH_WILDCARD_MAP,
    SNI_TERMINATE_MAP,
)

BASE_DEFAULTS = "base"
FORWARDED_DEFAULTS = {  # set-forwarded-headers -> the named defaults section with its rules
    "append": "fwd_append",
    "replace": "fwd_replace",
    "if-none": "fwd_if-none",
}  # "never": the base section, which sets no header
DEFAULT_BACKEND = "openshift_default"
REDIRECT_BACKEND = "openshift_redirect_https"
SNI_BACKEND = "be_sni"
SNI_FRONTEND = "fe_sni"
SNI_SOCKET = "fe_sni.sock"
ADMIN_SOCKET = "admin.sock"
PUBLIC_HEALTHZ = "/_______internal_router_healthz"
STATS_HEALTHZ = "/healthz"

BACKEND_PREFIX = {
    HTTP: "be_http",
    EDGE: "be_edge_http",
    REENCRYPT: "be_secure",
    PASSTHROUGH: "be_tcp",
}
MIN_SLOTS = 4
SPARE_ADDRESS = "127.0.0.1:1"
_UNIX_PATH_MAX = 107


@dataclass(frozen=True)
class RenderPaths:
    """Absolute paths the configuration needs that are not part of the rendered file set.

    ``run_dir`` holds the sockets (admin socket, the internal TLS hop);
    ``default_certificate`` is a PEM with certificate and key served when no
    route certificate matches (``DEFAULT_CERTIFICATE_PATH`` or the router's
    self-signed one).
    """

    run_dir: str
    default_certificate: str

    @property
    def admin_socket(self) -> str:
        return f"{self.run_dir.rstrip('/')}/{ADMIN_SOCKET}"

    @property
    def sni_socket(self) -> str:
        return f"{self.run_dir.rstrip('/')}/{SNI_SOCKET}"


class Slot(NamedTuple):
    """One ``server`` line of a backend: a member, or a disabled spare (``server`` is None)."""

    name: str
    server: Server | None
    cookie: str


@dataclass
class RenderResult:
    """The file set, which backend serves each route, and the routes left out (with why)."""

    files: dict[str, bytes]
    backends: dict[RouteKey, str] = field(default_factory=dict)
    skipped: dict[RouteKey, str] = field(default_factory=dict)
    fit: MaxconnFit | None = None  # maxconn as rendered, fitted to the checked servers


# ------------------------------------------------------------------ names and slots


def backend_name(policy: L7Policy) -> str:
    """OpenShift's naming: ``be_http``/``be_edge_http``/``be_secure``/``be_tcp`` + ``:ns:name``."""
    return f"{BACKEND_PREFIX[policy.termination]}:{escape.name(policy.namespace, policy.name)}"


def slot_count(members: int) -> int:
    """The smallest power of two above the member count, at least :data:`MIN_SLOTS`.

    Strictly above, so a backend always has a spare slot for one more pod.
    """
    count = MIN_SLOTS
    while count <= members:
        count *= 2
    return count


@functools.lru_cache(maxsize=32768)
def _backend_digest(backend: str) -> str:
    """64 hex digits from the backend name: the default cookie name and the slot cookies."""
    return hashlib.sha256(backend.encode()).hexdigest()


def home_slot(server: Server, count: int) -> int:
    """The slot a server's address hashes to (CRC-32: stable across processes and runs)."""
    return zlib.crc32(f"{server.ip}:{server.port}".encode()) % count


def _slot_servers(servers: Iterable[Server]) -> list[Server | None]:
    """The member of each slot (None: a spare), as :func:`slot_layout` places them."""
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


def _server_order(s: Server) -> tuple[str, int, str]:
    return (s.ip, s.port, s.pool)


def _weight(server: Server) -> int:
    """The server's weight as HAProxy takes it (0-256)."""
    return max(0, min(256, int(server.weight)))


def slot_layout(backend: str, servers: Iterable[Server]) -> tuple[Slot, ...]:
    """Which slot each server takes: its address hashed into the slots, probing onwards.

    While the slot count stays, a member in its home slot keeps it whatever
    other members come and go (only members pushed along by a collision can
    move), so sticky cookies mostly survive and the runtime API touches few
    slots. The cookie value belongs to the slot, not to the pod.
    """
    base = _backend_digest(backend)[32:60]
    return tuple(
        Slot(name=f"s{i}", server=s, cookie=f"{base}{i:04x}")
        for i, s in enumerate(_slot_servers(servers))
    )


# ------------------------------------------------------------------ lookup keys


def _norm_path(path: str) -> str:
    """The route path without trailing ``/`` (``/`` and "" both become "")."""
    return path.rstrip("/")


def lookup_key(host_or_domain: str, path: str) -> str:
    """A rule's map key, ``<host><path>/``; see the module docstring."""
    return escape.map_key(host_or_domain + _norm_path(path) + "/")


_Rank = tuple[int, int, str]  # (-len(normalized path), -len(path), "ns/name"): smaller wins


@dataclass
class _Maps:
    """Map entries being collected; on a key two routes share, the longer route path wins."""

    entries: dict[str, dict[str, tuple[_Rank, str]]] = field(
        default_factory=lambda: {m: {} for m in ALL_MAPS}
    )

    def put(self, map_name: str, key: str, value: str, rank: _Rank) -> None:
        """Add an entry, checking key and value (every entry enters through here once)."""
        self.merge(map_name, escape.map_key(key), escape.map_value(value), rank)

    def merge(self, map_name: str, key: str, value: str, rank: _Rank) -> None:
        """Add an entry that :meth:`put` already checked (a route's cached parts)."""
        by_key = self.entries[map_name]
        current = by_key.get(key)
        if current is None or rank < current[0]:
            by_key[key] = (rank, value)

    def render(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for map_name, entries in self.entries.items():
            out[map_name] = "".join(f"{k} {entries[k][1]}\n" for k in sorted(entries)).encode()
        return out


# ------------------------------------------------------------------ per-route backend


@dataclass(frozen=True)
class _BackendDefaults:
    """The configuration values a backend's text depends on (part of the cache key)."""

    load_balance_algorithm: str
    tcp_balance_scheme: str
    set_forwarded_headers: str
    health_check_interval_ms: int

    @classmethod
    def of(cls, config: RouterConfig) -> _BackendDefaults:
        return cls(
            config.load_balance_algorithm,
            config.tcp_balance_scheme,
            config.set_forwarded_headers,
            config.health_check_interval_ms,
        )


def _ms(value: int) -> str:
    return format_duration_ms(int(value))


def _forwarded_lines(policy_name: str) -> list[str]:
    fwd_for = "for=%[src];host=%[req.hdr(host)];proto=%[req.hdr(X-Forwarded-Proto)]"
    xfp = [
        "  http-request set-header X-Forwarded-Proto http if !{ ssl_fc }",
        "  http-request set-header X-Forwarded-Proto https if { ssl_fc }",
    ]
    if policy_name == "never":
        return []
    if policy_name == "replace":
        return [
            "  http-request del-header X-Forwarded-For",
            "  http-request del-header Forwarded",
            "  option forwardfor",
            "  http-request set-header X-Forwarded-Host %[req.hdr(host)]",
            "  http-request set-header X-Forwarded-Port %[dst_port]",
            *xfp,
            f"  http-request set-header Forwarded {fwd_for}",
        ]
    if policy_name == "if-none":
        return [
            "  option forwardfor if-none",
            "  http-request set-header X-Forwarded-Host %[req.hdr(host)]"
            " if !{ req.hdr(X-Forwarded-Host) -m found }",
            "  http-request set-header X-Forwarded-Port %[dst_port]"
            " if !{ req.hdr(X-Forwarded-Port) -m found }",
            "  http-request set-header X-Forwarded-Proto http"
            " if !{ ssl_fc } !{ req.hdr(X-Forwarded-Proto) -m found }",
            "  http-request set-header X-Forwarded-Proto https"
            " if { ssl_fc } !{ req.hdr(X-Forwarded-Proto) -m found }",
            f"  http-request add-header Forwarded {fwd_for} if !{{ req.hdr(Forwarded) -m found }}",
        ]
    return [  # append (OpenShift's default)
        "  option forwardfor",
        "  http-request set-header X-Forwarded-Host %[req.hdr(host)]",
        "  http-request set-header X-Forwarded-Port %[dst_port]",
        *xfp,
        f"  http-request add-header Forwarded {fwd_for}",
    ]


def _rewrite_line(path: str, target: str) -> str:
    """``rewrite-target``: the route path prefix replaced by ``target`` (OpenShift's table).

    ``/foo`` -> ``/bar``: ``/foo`` -> ``/bar``, ``/foo/x`` -> ``/bar/x``;
    a target ending in ``/`` swallows the ``/`` after the prefix:
    ``/foo`` -> ``/``: ``/foo/x`` -> ``/x``.
    """
    prefix = escape.regex_literal(_norm_path(path), "spec.path") if _norm_path(path) else ""
    escape.url_path(target, "rewrite-target")
    pattern = f"^{prefix}/?(.*)$" if target.endswith("/") else f"^{prefix}(.*)$"
    # log_format doubles "%"; quoted() turns the backslash of the group reference
    # into "\\\\" so that HAProxy reads back "\\1". The target holds no backslash.
    replacement = escape.log_format(target + "\\1", "rewrite-target")
    return f"  http-request replace-path {escape.quoted(pattern, 'rewrite pattern')} {replacement}"


def _server_lines(
    policy: L7Policy, backend: str, config: _BackendDefaults, files: dict[str, bytes]
) -> list[str]:
    """The backend's ``server`` lines (the usual four as one newline-joined item)."""
    opts = policy.options
    termination = policy.termination
    servers = policy.servers
    tail = ""  # the options every slot line shares, each with its leading space
    # OpenShift's rule: health checks only when the route has more than one pod.
    # (Each checked server line costs HAProxy a file descriptor even while in
    # maintenance, so checking every slot would not fit 10,000 routes.)
    if len(servers) > 1:
        interval = opts.health_check_interval_ms or config.health_check_interval_ms
        tail += f" check inter {_ms(interval)}"
    if opts.pod_concurrent_connections:
        tail += f" maxconn {int(opts.pod_concurrent_connections)}"
    own_tail = False  # the tail names this route's own file
    if termination == REENCRYPT:
        dest_ca = policy.tls.destination_ca_certificate if policy.tls else None
        if dest_ca:
            own_tail = True
            ca_name = "cacerts/" + escape.file_name(policy.namespace, policy.name, suffix=".pem")
            files[ca_name] = escape.pem(dest_ca, what="destinationCACertificate", max_keys=0)
            tail += f" ssl verify required ca-file {escape.quoted(ca_name)}"
        else:
            tail += " ssl verify none"
    cookies = termination != PASSTHROUGH and not opts.disable_cookies
    if len(servers) < 2 and not own_tail and isinstance(servers, tuple):
        # Most routes: one pod (or none yet) in four slots, as _slot_servers places it.
        base = _backend_digest(backend)[32:60] if cookies else ""
        spare: tuple[str, ...] = (base,) if cookies else ()
        if not servers:
            return [_slot_block((), cookies, tail) % (spare * MIN_SLOTS)]
        only = servers[0]
        home = home_slot(only, MIN_SLOTS)
        member = (escape.server_address(only.ip, only.port), *spare, _weight(only))
        args = spare * home + member + spare * (MIN_SLOTS - 1 - home)
        return [_slot_block((home,), cookies, tail) % args]
    slots = _slot_servers(servers)
    if len(slots) == MIN_SLOTS and not own_tail:
        # The common case: a %-template per (filled slots, cookies, tail), filled at once.
        base = _backend_digest(backend)[32:60] if cookies else ""
        slot_args: list[str | int] = []
        filled: list[int] = []
        for i, slot in enumerate(slots):
            if slot is not None:
                filled.append(i)
                slot_args.append(escape.server_address(slot.ip, slot.port))
            if cookies:
                slot_args.append(base)
            if slot is not None:
                slot_args.append(_weight(slot))
        return [_slot_block(tuple(filled), cookies, tail) % tuple(slot_args)]
    spare_tail = f"{tail} weight 0 disabled"
    prefix = " cookie " + _backend_digest(backend)[32:60] if cookies else ""
    lines: list[str] = []
    for i, server in enumerate(slots):
        cookie = f"{prefix}{i:04x}" if cookies else ""
        if server is None:
            lines.append(f"  server s{i} {SPARE_ADDRESS}{cookie}{spare_tail}")
        else:
            addr = escape.server_address(server.ip, server.port)
            lines.append(f"  server s{i} {addr}{cookie}{tail} weight {_weight(server)}")
    return lines


@functools.lru_cache(maxsize=512)
def _slot_block(filled: tuple[int, ...], cookies: bool, tail: str) -> str:
    """:data:`MIN_SLOTS` server lines as a %-template, exactly as the loop in _server_lines.

    Arguments in line order: a member's address, the cookie prefix (when
    cookies are on) and the member's weight; a spare's cookie prefix.
    """
    tail = tail.replace("%", "%%")
    cookie = " cookie %s" if cookies else ""
    lines: list[str] = []
    for i in range(MIN_SLOTS):
        tag = f"{i:04x}" if cookies else ""
        if i in filled:
            lines.append(f"  server s{i} %s{cookie}{tag}{tail} weight %d")
        else:
            lines.append(f"  server s{i} {SPARE_ADDRESS}{cookie}{tag}{tail} weight 0 disabled")
    return "\n".join(lines)


def _backend(
    policy: L7Policy, backend: str, config: _BackendDefaults, files: dict[str, bytes]
) -> list[str]:
    opts = policy.options
    if opts.ip_allowlist or opts.rewrite_target:  # lines that name this route's file or path
        shape = _backend_shape(
            policy.termination, policy.insecure_policy, opts, config, policy, files
        )
    else:  # the same for every route of this kind with these options: computed once
        shape = _shared_backend_shape(policy.termination, policy.insecure_policy, opts, config)
    lines = [f"backend {backend} from {shape.parent}", *shape.lines]
    if shape.cookie_tail is not None:
        cookie = shape.cookie_name or _backend_digest(backend)[:32]
        lines.append(f"  cookie {cookie}{shape.cookie_tail}")
    lines += _server_lines(policy, backend, config, files)
    return lines


class _BackendShape:
    """A backend section apart from its name, default cookie name and servers."""

    __slots__ = ("cookie_name", "cookie_tail", "lines", "parent", "sections")

    def __init__(
        self,
        parent: str,
        lines: tuple[str, ...],
        cookie_name: str | None,
        cookie_tail: str | None,
    ) -> None:
        self.parent = parent  # the defaults section it is ``from``
        self.lines = lines  # from ``mode`` through the HSTS header
        self.cookie_name = cookie_name  # escaped; None: derived from the backend name
        self.cookie_tail = cookie_tail  # after the cookie name; None: no sticky cookie
        # Whole-section %-templates by the one pod's slot (None: no pod), see _section_text.
        self.sections: dict[int | None, str] = {}


@functools.lru_cache(maxsize=1024)
def _shared_backend_shape(
    termination: str, insecure_policy: str, opts: RouteOptions, config: _BackendDefaults
) -> _BackendShape:
    """:func:`_backend_shape` of options that name no file or path of their route."""
    return _backend_shape(termination, insecure_policy, opts, config, None, {})


def _backend_shape(
    termination: str,
    insecure_policy: str,
    opts: RouteOptions,
    config: _BackendDefaults,
    policy: L7Policy | None,
    files: dict[str, bytes],
) -> _BackendShape:
    """The option lines; ``policy`` and ``files`` serve ``ip_allowlist`` and ``rewrite-target``."""
    http_mode = termination != PASSTHROUGH
    forwarded = opts.set_forwarded_headers or config.set_forwarded_headers
    parent = FORWARDED_DEFAULTS.get(forwarded, BASE_DEFAULTS) if http_mode else BASE_DEFAULTS
    lines = [f"  mode {'http' if http_mode else 'tcp'}"]
    default_balance = config.load_balance_algorithm if http_mode else config.tcp_balance_scheme
    balance = opts.balance or default_balance
    if balance not in ("roundrobin", "leastconn", "source", "random"):
        raise escape.UnsafeValue(f"balance {balance!r} is not an HAProxy algorithm")
    lines.append(f"  balance {balance}")
    if balance == "source":
        lines.append("  hash-type consistent")
    if opts.timeout_ms:
        lines.append(f"  timeout server {_ms(opts.timeout_ms)}")
    tunnel = opts.timeout_tunnel_ms or (opts.timeout_ms if not http_mode else None)
    if tunnel:
        lines.append(f"  timeout tunnel {_ms(tunnel)}")
    if opts.ip_allowlist:
        assert policy is not None  # _backend passes the route along with an allowlist
        allow_file = "allowlists/" + escape.file_name(policy.namespace, policy.name, suffix=".txt")
        files[allow_file] = "".join(escape.ip_network(n) + "\n" for n in opts.ip_allowlist).encode()
        acl = f"!{{ src -f {escape.quoted(allow_file)} }}"
        if http_mode:
            lines.append(f"  http-request deny if {acl}")
        else:
            lines.append(f"  tcp-request content reject if {acl}")
    limit = opts.rate_limit
    if limit is not None:
        lines.append(
            "  stick-table type ip size 100k expire 30s"
            " store conn_cur,conn_rate(3s),http_req_rate(10s)"
        )
        lines.append("  tcp-request content track-sc2 src")
        if limit.concurrent_tcp:
            lines.append(
                f"  tcp-request content reject if {{ sc_conn_cur(2) gt "
                f"{int(limit.concurrent_tcp)} }}"
            )
        if limit.rate_tcp:
            lines.append(
                f"  tcp-request content reject if {{ sc_conn_rate(2) gt {int(limit.rate_tcp)} }}"
            )
        if limit.rate_http and http_mode:
            lines.append(
                f"  http-request deny deny_status 429 if {{ sc_http_req_rate(2) gt "
                f"{int(limit.rate_http)} }}"
            )
    cookie_name: str | None = None
    cookie_tail: str | None = None
    if http_mode:
        if opts.rewrite_target:
            assert policy is not None  # _backend passes the route along with a rewrite
            lines.append(_rewrite_line(policy.rule.path, opts.rewrite_target))
        if opts.hsts_header and termination in (EDGE, REENCRYPT):
            value = escape.log_format(opts.hsts_header, "hsts_header")
            lines.append(
                f"  http-response set-header Strict-Transport-Security {value} if {{ ssl_fc }}"
            )
        if not opts.disable_cookies:
            if opts.cookie_name:
                cookie_name = escape.quoted(opts.cookie_name, "cookie_name")
            secure = (
                " secure"
                if termination in (EDGE, REENCRYPT) and insecure_policy != INSECURE_ALLOW
                else ""
            )
            cookie_tail = f" insert indirect nocache httponly{secure}"
    return _BackendShape(parent, tuple(lines), cookie_name, cookie_tail)


def _section_text(
    policy: L7Policy, backend: str, config: _BackendDefaults, files: dict[str, bytes]
) -> str:
    """``"\\n".join(_backend(...)) + "\\n\\n"``: the backend section as the config holds it.

    The usual route (at most one pod, options naming no file or path of its
    own, not reencrypt) is one cached %-template of its shape filled with the
    backend name, the cookie name and the pod; every other goes through
    :func:`_backend`. The template is built from the same shape and slot
    lines, so both give the same text (``tests/unit/router/test_fast_paths.py``).
    """
    opts = policy.options
    servers = policy.servers
    termination = policy.termination
    if (
        len(servers) > 1
        or termination == REENCRYPT
        or opts.ip_allowlist
        or opts.rewrite_target
        or opts.pod_concurrent_connections
        or not isinstance(servers, tuple)
    ):
        return "\n".join(_backend(policy, backend, config, files)) + "\n\n"
    shape = _shared_backend_shape(termination, policy.insecure_policy, opts, config)
    cookies = shape.cookie_tail is not None  # http mode and cookies not disabled
    home: int | None = None
    args: tuple[str | int, ...] = (backend,)
    if cookies:
        digest = _backend_digest(backend)
        base = digest[32:60]
        if shape.cookie_name is None:
            args += (digest[:32],)
        if servers:
            only = servers[0]
            slot = home_slot(only, MIN_SLOTS)
            member: tuple[str | int, ...] = (
                escape.server_address(only.ip, only.port), base, _weight(only)
            )
            args += (base,) * slot + member + (base,) * (MIN_SLOTS - 1 - slot)
            home = slot
        else:
            args += (base,) * MIN_SLOTS
    elif servers:
        only = servers[0]
        home = home_slot(only, MIN_SLOTS)
        args += (escape.server_address(only.ip, only.port), _weight(only))
    template = shape.sections.get(home)
    if template is None:
        template = shape.sections[home] = _section_template(shape, home)
    return template % args


def _section_template(shape: _BackendShape, home: int | None) -> str:
    """The %-template :func:`_section_text` fills: name, cookie name, then the slot lines."""
    lines = [f"backend %s from {shape.parent}"]
    lines += [line.replace("%", "%%") for line in shape.lines]
    if shape.cookie_tail is not None:
        name = "%s" if shape.cookie_name is None else shape.cookie_name.replace("%", "%%")
        lines.append(f"  cookie {name}{shape.cookie_tail.replace('%', '%%')}")
    filled = () if home is None else (home,)
    lines.append(_slot_block(filled, shape.cookie_tail is not None, ""))
    return "\n".join(lines) + "\n\n"


def _route_certificate(policy: L7Policy, files: dict[str, bytes]) -> str | None:
    """The crt-list line of an edge/reencrypt route that brings its own certificate."""
    tls = policy.tls
    if tls is None or not tls.certificate:
        return None  # served with the default certificate
    name = "certs/" + escape.file_name(policy.namespace, policy.name, suffix=".pem")
    # The key may come inside the certificate field; escape.pem refuses a second one.
    texts = [tls.certificate, tls.key or ""] + ([tls.ca_certificate] if tls.ca_certificate else [])
    files[name] = escape.pem(*texts, what=f"route {policy.namespace}/{policy.name} certificate")
    if policy.rule.wildcard:
        sni = escape.sni_filter(policy.rule.domain, wildcard=True)
    else:
        sni = escape.sni_filter(policy.rule.host)
    return f"{name} {sni}\n"


class _EntrySink(Protocol):
    """What :func:`_route_maps` writes to: a :class:`_Maps`, or one route's entry list."""

    def put(self, map_name: str, key: str, value: str, rank: _Rank) -> None: ...


class _RouteEntries:
    """One route's map entries, checked on the way in, in the order they were put."""

    __slots__ = ("_checked_value", "items")

    def __init__(self) -> None:
        self.items: list[tuple[str, str, str, _Rank]] = []
        self._checked_value = ""

    def put(self, map_name: str, key: str, value: str, rank: _Rank) -> None:
        if value != self._checked_value:  # a route writes one or two distinct values
            escape.map_value(value)
            self._checked_value = value
        self.items.append((map_name, escape.map_key(key), value, rank))


def _route_maps(policy: L7Policy, backend: str, maps: _EntrySink) -> None:
    """Put one route's map entries, in :data:`ALL_MAPS` order: HTTP port, TLS, then SNI.

    A route writes each map at most once, so the order is the only thing a
    caller collecting one route's entries has to rely on.
    """
    rule = policy.rule
    termination = policy.termination
    norm = _norm_path(rule.path)
    rank = (-len(norm), -len(rule.path), f"{policy.namespace}/{policy.name}")
    wildcard = rule.wildcard
    where = (
        escape.hostname(rule.domain, "wildcard domain")
        if wildcard
        else escape.hostname(rule.host, "spec.host")
    )
    tls_terminated = termination in (EDGE, REENCRYPT)
    key = where + norm + "/"  # a passthrough route has no path: where + "/"
    # The HTTP port: plain routes and Allow are served, Redirect answers 302, None is absent.
    insecure = policy.insecure_policy
    if insecure != INSECURE_NONE and (
        termination != PASSTHROUGH or insecure == INSECURE_REDIRECT
    ):
        value = REDIRECT_BACKEND if insecure == INSECURE_REDIRECT else backend
        maps.put(HTTP_WILDCARD_PREFIX_MAP if wildcard else HTTP_PREFIX_MAP, key, value, rank)
    if tls_terminated:
        maps.put(TLS_WILDCARD_PREFIX_MAP if wildcard else TLS_PREFIX_MAP, key, backend, rank)
        if not wildcard:
            maps.put(SNI_TERMINATE_MAP, where, "1", rank)
    elif termination == PASSTHROUGH:
        maps.put(SNI_PASSTHROUGH_WILDCARD_MAP if wildcard else SNI_PASSTHROUGH_MAP, where,
                 backend, rank)


# ------------------------------------------------------------------ fixed sections


def _bind(config: RouterConfig, port: int) -> str:
    return escape.bind_address(config.bind_address, port, "ROUTER_BIND_ADDRESS")


def _lookup_block(maps: tuple[str, str]) -> list[str]:
    """One longest-prefix lookup by host and path, then one by parent domain (wildcards)."""
    prefix, wild_prefix = (escape.quoted(m) for m in maps)
    return [
        "  http-request set-var(txn.host) req.hdr(host),field(1,:),lower",
        "  http-request set-var(txn.path) path",
        "  http-request set-var(txn.key) var(txn.host),concat(,txn.path,/)",
        f"  http-request set-var(txn.be) var(txn.key),map_beg({prefix})",
        "  http-request set-var(txn.wkey) var(txn.host),regsub(^[^.]*[.],),concat(,txn.path,/)"
        " if !{ var(txn.be) -m found } { var(txn.host) -m sub . }",
        f"  http-request set-var(txn.be) var(txn.wkey),map_beg({wild_prefix})"
        " if !{ var(txn.be) -m found } { var(txn.wkey) -m found }",
        "  use_backend %[var(txn.be)] if { var(txn.be) -m found }",
        f"  default_backend {DEFAULT_BACKEND}",
    ]


def _header_hygiene() -> list[str]:
    return [
        "  http-request del-header Proxy",
        "  http-request set-header Host %[req.hdr(Host),lower]",
    ]


def _global_and_defaults(
    config: RouterConfig, paths: RenderPaths, fit: MaxconnFit | None = None
) -> list[str]:
    maxconn = fit.maxconn if fit is not None else config.max_connections
    lines = [
        "global",
        f"  maxconn {int(maxconn)}",
    ]
    if fit is not None and not fit.strict:
        lines.append("  no strict-limits")  # checks alone exceed the limit (see limits.py)
    if config.threads > 0:
        lines.append(f"  nbthread {int(config.threads)}")
    lines += [
        f"  hard-stop-after {_ms(config.hard_stop_after_ms)}",
        f"  stats socket {escape.path(paths.admin_socket, 'admin socket')}"
        " mode 600 level admin expose-fd listeners",
        "  stats timeout 2m",
        # Lookups are tree searches; the pattern cache only serves list matches and,
        # with more distinct request keys than its 10,000 slots, missed on nearly
        # every request while hashing and inserting each key (issue 5).
        "  tune.pattern.cache-size 0",
        # Idle server connections are kept per server. HAProxy stops keeping them
        # at 20 % of its descriptors in use (25 %: closes them), sized for maxconn
        # far above the server count; here maxconn is capped by RLIMIT_NOFILE and a
        # router has a server per route, so at 10,000 routes most requests opened a
        # new connection to the pod. These ratios leave one per busy route.
        "  tune.pool-low-fd-ratio 50",
        "  tune.pool-high-fd-ratio 60",
        "  tune.ssl.default-dh-param 2048",
        "  ssl-default-bind-options ssl-min-ver TLSv1.2",
        "",
        f"defaults {BASE_DEFAULTS}",
        "  mode http",
        f"  maxconn {int(maxconn)}",
        "  option redispatch",
        "  retries 3",
        f"  timeout connect {_ms(config.connect_timeout_ms)}",
        f"  timeout client {_ms(config.client_timeout_ms)}",
        f"  timeout client-fin {_ms(config.client_fin_timeout_ms)}",
        f"  timeout server {_ms(config.server_timeout_ms)}",
        f"  timeout server-fin {_ms(config.server_fin_timeout_ms)}",
        f"  timeout http-request {_ms(config.http_request_timeout_ms)}",
        f"  timeout http-keep-alive {_ms(config.http_keep_alive_timeout_ms)}",
        f"  timeout tunnel {_ms(config.tunnel_timeout_ms)}",
    ]
    if config.errorfile_503:
        lines.append(f"  errorfile 503 {escape.path(config.errorfile_503, 'ROUTER_ERRORFILE_503')}")
    else:
        lines.append(f"  errorfile 503 {ERROR_PAGE_503}")
    lines.append("")
    # The X-Forwarded-*/Forwarded rules live once in a named defaults section per
    # policy instead of in each of thousands of backends: HAProxy then parses them
    # once (they were two thirds of the parse time at 10,000 routes), and runs
    # them before the backend's own rules.
    for policy_name, section in FORWARDED_DEFAULTS.items():
        lines += [f"defaults {section} from {BASE_DEFAULTS}", *_forwarded_lines(policy_name), ""]
    return lines


def _frontends(config: RouterConfig, paths: RenderPaths) -> list[str]:
    sni_socket = paths.sni_socket
    if len(sni_socket) > _UNIX_PATH_MAX:
        raise escape.UnsafeValue(f"socket path {sni_socket!r} is longer than a UNIX socket allows")
    unix = escape.quoted("unix@" + sni_socket, "socket path")
    default_cert = escape.path(paths.default_certificate, "default certificate")
    lines = [
        f"frontend public from {BASE_DEFAULTS}",
        f"  bind {_bind(config, config.http_port)}",
        "  mode http",
        f"  monitor-uri {PUBLIC_HEALTHZ}",
        *_header_hygiene(),
        *_lookup_block(HTTP_MAPS),
        "",
        f"frontend public_ssl from {BASE_DEFAULTS}",
        f"  bind {_bind(config, config.https_port)}",
        "  mode tcp",
        "  tcp-request inspect-delay 5s",
        "  tcp-request content accept if { req_ssl_hello_type 1 }",
        f"  acl sni_passthrough req.ssl_sni,lower,map_str({escape.quoted(SNI_PASSTHROUGH_MAP)})"
        " -m found",
        f"  acl sni_terminate req.ssl_sni,lower,map_str({escape.quoted(SNI_TERMINATE_MAP)})"
        " -m found",
        "  acl sni_dotted req.ssl_sni -m sub .",
        "  acl sni_passthrough_wildcard req.ssl_sni,lower,regsub(^[^.]*[.],),"
        f"map_str({escape.quoted(SNI_PASSTHROUGH_WILDCARD_MAP)}) -m found",
        f"  use_backend %[req.ssl_sni,lower,map_str({escape.quoted(SNI_PASSTHROUGH_MAP)})]"
        " if sni_passthrough",
        "  use_backend %[req.ssl_sni,lower,regsub(^[^.]*[.],),"
        f"map_str({escape.quoted(SNI_PASSTHROUGH_WILDCARD_MAP)})]"
        " if !sni_terminate sni_dotted sni_passthrough_wildcard",
        f"  default_backend {SNI_BACKEND}",
        "",
        f"backend {SNI_BACKEND} from {BASE_DEFAULTS}",
        "  mode tcp",
        f"  server {SNI_FRONTEND} {unix} send-proxy-v2",
        "",
        f"frontend {SNI_FRONTEND} from {BASE_DEFAULTS}",
        f"  bind {unix} mode 600 accept-proxy ssl crt {default_cert}"
        f" crt-list {escape.quoted(CRT_LIST)}",
        "  mode http",
        *_header_hygiene(),
        *_lookup_block(TLS_MAPS),
        "",
        f"backend {DEFAULT_BACKEND} from {BASE_DEFAULTS}",
        "  mode http",
    ]
    if config.errorfile_404:
        lines += [
            f"  errorfile 404 {escape.path(config.errorfile_404, 'ROUTER_ERRORFILE_404')}",
            "  http-request deny deny_status 404",
        ]
    lines += [
        "",
        f"backend {REDIRECT_BACKEND} from {BASE_DEFAULTS}",
        "  mode http",
        "  http-request redirect location https://%[var(txn.host)]"
        + (f":{int(config.https_port)}" if config.https_port != 443 else "")
        + "%[capture.req.uri] code 302",
        "",
    ]
    if config.stats_port:
        lines += [
            f"listen stats from {BASE_DEFAULTS}",
            f"  bind {_bind(config, config.stats_port)}",
            "  mode http",
            f"  monitor-uri {STATS_HEALTHZ}",
            "  stats enable",
            "  stats uri /",
            "  stats refresh 5s",
            "  stats show-legends",
            "  stats hide-version",
        ]
        if config.stats_username:
            creds = f"{config.stats_username}:{config.stats_password}"
            lines.append(f"  stats auth {escape.quoted(creds, 'STATS_USERNAME/STATS_PASSWORD')}")
        lines.append("")
    return lines


DEFAULT_503_PAGE = (
    b"HTTP/1.0 503 Service Unavailable\r\n"
    b"Pragma: no-cache\r\n"
    b"Cache-Control: private, max-age=0, no-cache, no-store\r\n"
    b"Connection: close\r\n"
    b"Content-Type: text/html\r\n"
    b"\r\n"
    b"<html><head><title>Application is not available</title></head><body>\n"
    b"<h1>Application is not available</h1>\n"
    b"<p>The application is currently not serving requests at this endpoint. "
    b"It may not have been started or is still starting.</p>\n"
    b"</body></html>\n"
)


# ------------------------------------------------------------------ entry points


@dataclass(frozen=True)
class _PolicyParts:
    """Everything one route contributes: backend text, map entries, crt-list line, files."""

    backend: str
    text: str
    entries: tuple[tuple[str, str, str, _Rank], ...]  # (map, key, value, rank)
    crt_line: str | None
    files: tuple[tuple[str, bytes], ...]
    checked: int = 0  # server lines with ``check``: each costs HAProxy a descriptor


# ------------------------------------------------------------------ spare backends

# Spare backends, per kind, let the driver serve a new route without a reload
# (HAProxy 2.6 cannot add a backend at run time): it points the route's map
# entries at a free spare and fills the spare's slots with ``set server``.
SPARE_PREFIX = {
    HTTP: "be_spare_http",
    EDGE: "be_spare_edge",
    REENCRYPT: "be_spare_secure",
    PASSTHROUGH: "be_spare_tcp",
}
SPARE_OF_PREFIX = {BACKEND_PREFIX[t]: SPARE_PREFIX[t] for t in BACKEND_PREFIX}


def spare_name(termination: str, index: int) -> str:
    return f"{SPARE_PREFIX[termination]}:{index}"


def _spare_backends(count: int, defaults: _BackendDefaults) -> list[str]:
    """``count`` spares per kind, shaped like a route without annotations or own CA.

    An edge spare has the ``secure`` cookie (insecure policy None or Redirect);
    a reencrypt spare verifies nothing (no ``destinationCACertificate``). A new
    route of another shape is served by a reload instead (counted as a fallback).
    """
    texts: list[str] = []
    for termination in (HTTP, EDGE, REENCRYPT, PASSTHROUGH):
        policy = L7Policy(
            namespace="",
            name="",
            rule=Rule("", "", False),
            termination=termination,
            insecure_policy=INSECURE_NONE,
            tls=None,
            options=RouteOptions(),
            target_port=None,
            targets=(),
            servers=(),
            warnings=(),
        )
        for index in range(count):
            texts.append(
                "\n".join(_backend(policy, spare_name(termination, index), defaults, {})) + "\n\n"
            )
    return texts


_SPARES: dict[tuple[int, _BackendDefaults], str] = {}


def _spares_text(count: int, defaults: _BackendDefaults) -> str:
    key = (count, defaults)
    text = _SPARES.get(key)
    if text is None:
        text = _SPARES[key] = "".join(_spare_backends(count, defaults))
    return text


SectionKey = tuple[str, str, RouteOptions, tuple[tuple[str, int, int], ...]]


def section_key(policy: L7Policy) -> SectionKey | None:
    """What the route's backend section says apart from its name; None: it names its route.

    Routes with equal keys render byte-identical sections but for the backend
    name and the cookie names derived from it (:func:`_backend_shape`,
    :func:`_server_lines`), so one HAProxy backend can serve them all. An
    allowlist file, a rewritten path or a destination CA file belongs to one
    route, so those routes keep a backend of their own. So does a route
    without pods: its first pod then fills a slot of its own backend through
    the runtime API, instead of moving the route to another backend.
    """
    opts = policy.options
    servers = policy.servers
    if not servers or opts.ip_allowlist or opts.rewrite_target:
        return None
    tls = policy.tls
    if policy.termination == REENCRYPT and tls is not None and tls.destination_ca_certificate:
        return None
    if len(servers) == 1:
        only = servers[0]
        members: tuple[tuple[str, int, int], ...] = ((only.ip, only.port, only.weight),)
    else:
        members = tuple((s.ip, s.port, s.weight) for s in sorted(servers, key=_server_order))
    return (policy.termination, policy.insecure_policy, opts, members)


# One route's parts are rendered again only when the route (or its defaults) changed.
def _policy_parts(policy: L7Policy, defaults: _BackendDefaults) -> _PolicyParts:
    """Render one route. Raises :class:`escape.UnsafeValue` when a value cannot be written."""
    backend = backend_name(policy)
    own_files: dict[str, bytes] = {}
    text = _section_text(policy, backend, defaults, own_files)
    crt = _route_certificate(policy, own_files) if policy.termination != HTTP else None
    staged = _RouteEntries()
    _route_maps(policy, backend, staged)
    members = len(policy.servers)
    return _PolicyParts(
        backend=backend,
        text=text,
        entries=tuple(staged.items),
        crt_line=crt,
        files=tuple(sorted(own_files.items())) if own_files else (),
        # Every slot line has ``check`` when the route has more than one pod
        # (_server_lines), and only then.
        checked=slot_count(members) if members > 1 else 0,
    )


def render(model: L7Model, config: RouterConfig, paths: RenderPaths) -> RenderResult:
    """Render everything; routes that cannot be written safely are skipped and reported."""
    with gc_paused():
        return _render(model, config, paths)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic collector around a burst of short-lived, acyclic objects.

    Rendering 10,000 routes allocates a few hundred thousand strings and
    tuples; each generation-2 pass would rescan the router's whole heap (the
    informer caches included), which roughly doubled render time. Nothing
    here creates reference cycles, so reference counting frees it all anyway.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _render(model: L7Model, config: RouterConfig, paths: RenderPaths) -> RenderResult:
    # One code path for full and incremental renders: an Assembly fed everything.
    from shiftnet.router.haproxy.assembly import Assembly

    assembly = Assembly(config, paths)
    assembly.update({policy.key: policy for policy in model.policies})
    return RenderResult(
        files=assembly.files(), backends=assembly.backends, skipped=dict(assembly.skipped),
        fit=assembly.fit,
    )


def fit_head(
    config: RouterConfig, paths: RenderPaths, checked: int
) -> tuple[str, MaxconnFit]:
    """The text before the first backend, with ``maxconn`` fitted to ``checked`` servers.

    ``config.file_descriptor_limit`` is the descriptor budget (0: unknown, keep
    ``config.max_connections``); ``checked`` is the sum of the rendered parts'
    ``checked`` counts.
    """
    fit = fit_maxconn(
        config.max_connections, config.file_descriptor_limit, checked, max(1, config.threads)
    )
    head = _global_and_defaults(config, paths, fit) + _frontends(config, paths)
    return "\n".join(head) + "\n", fit


def render_haproxy(model: L7Model, config: RouterConfig, paths: RenderPaths) -> dict[str, bytes]:
    """The complete file set ``{relative name: bytes}`` for one HAProxy configuration."""
    return render(model, config, paths).files
