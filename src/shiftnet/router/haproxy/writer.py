"""Write HAProxy syntax from the description: the one place a ``server`` line is formatted.

Why one module: the description (``description.py``) says what HAProxy
should serve; this says how HAProxy spells it. A backend section is written
from a %-template made once per shape (options, server options, which slots
hold a pod) and filled with the backend name, its cookie values and the
members; the templates are cached by that shape, so 10,000 routes of a few
shapes cost a few templates. The fixed part (global, defaults, frontends,
fixed backends) depends on the configuration alone.

Values from users arrive checked (``build.py``) and, where HAProxy reads a
free-form word, already escaped; paths and addresses from the configuration
go through :mod:`shiftnet.router.haproxy.escape` here. Pure: no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shiftnet.api.route_headers import REQUEST, RESPONSE, ROUTER_RESERVED_NAMES, HeaderAction
from shiftnet.router.config import RouterConfig
from shiftnet.router.durations import format_duration_ms
from shiftnet.router.haproxy import escape, log_format
from shiftnet.router.haproxy.description import (
    Backend,
    BackendOptions,
    CrtEntry,
    HeaderRule,
    ServerOptions,
)
from shiftnet.router.haproxy.limits import MaxconnFit
from shiftnet.router.haproxy.names import (
    ADMIN_SOCKET,
    BASE_DEFAULTS,
    CONFIG_IDENTITY,
    CRT_LIST,
    DEFAULT_BACKEND,
    ERROR_PAGE_503,
    FORWARDED_DEFAULTS,
    HTTP_FRONTEND,
    HTTP_MAPS,
    HTTPS_FRONTEND,
    LOG_SOCKET,
    PUBLIC_HEALTHZ,
    REDIRECT_BACKEND,
    SNI_BACKEND,
    SNI_FRONTEND,
    SNI_PASSTHROUGH_MAP,
    SNI_PASSTHROUGH_WILDCARD_MAP,
    SNI_SOCKET,
    SNI_TERMINATE_MAP,
    SPARE_ADDRESS,
    STATS_HEALTHZ,
    TLS_MAPS,
    backend_digest,
)

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

    @property
    def log_socket(self) -> str:
        return f"{self.run_dir.rstrip('/')}/{LOG_SOCKET}"


def _ms(value: int) -> str:
    return format_duration_ms(int(value))


# ------------------------------------------------------------------ backend sections


def backend_text(backend: Backend) -> str:
    """The backend's section as ``haproxy.cfg`` holds it (with the blank line after it)."""
    options = backend.options
    slots = backend.slots
    cookies = options.cookie is not None
    args: list[str | int] = [backend.name]
    if cookies:
        digest = backend_digest(backend.name)
        base = digest[32:60]
        if options.cookie is not None and options.cookie.name_word is None:
            args.append(digest[:32])
        for slot in slots:
            if slot is None:
                args.append(base)
            else:
                args += (slot.address, base, slot.weight)
    else:
        for slot in slots:
            if slot is not None:
                args += (slot.address, slot.weight)
    filled = tuple(i for i, slot in enumerate(slots) if slot is not None)
    return _template(options, backend.servers, len(slots), filled) % tuple(args)


@functools.lru_cache(maxsize=4096)
def _template(
    options: BackendOptions, servers: ServerOptions, count: int, filled: tuple[int, ...]
) -> str:
    """A backend section as a %-template: name, default cookie name, then per slot a
    member's address, cookie prefix and weight (an empty slot: its cookie prefix)."""
    lines = [f"backend %s from {options.parent}"]
    lines += [line.replace("%", "%%") for line in _option_lines(options)]
    cookie = options.cookie
    if cookie is not None:
        name = "%s" if cookie.name_word is None else cookie.name_word.replace("%", "%%")
        secure = " secure" if cookie.secure else ""
        lines.append(f"  cookie {name} insert indirect nocache httponly{secure}")
    tail = _server_tail(servers).replace("%", "%%")
    for i in range(count):
        tag = f" cookie %s{i:04x}" if cookie is not None else ""
        if i in filled:
            lines.append(f"  server s{i} %s{tag}{tail} weight %d")
        else:
            lines.append(f"  server s{i} {SPARE_ADDRESS}{tag}{tail} weight 0 disabled")
    return "\n".join(lines) + "\n\n"


def _server_tail(servers: ServerOptions) -> str:
    """The options every ``server`` line of a backend shares, each with its leading space."""
    tail = ""
    if servers.check_inter_ms is not None:
        tail += f" check inter {_ms(servers.check_inter_ms)}"
    if servers.maxconn:
        tail += f" maxconn {int(servers.maxconn)}"
    if servers.ssl:
        if servers.ca_file_word is not None:
            tail += f" ssl verify required ca-file {servers.ca_file_word}"
        else:
            tail += " ssl verify none"
    return tail


def _option_lines(options: BackendOptions) -> list[str]:
    """The section's lines from ``mode`` through the HSTS header."""
    http = options.http
    lines = [f"  mode {'http' if http else 'tcp'}", f"  balance {options.balance}"]
    if options.balance == "source":
        lines.append("  hash-type consistent")
    if options.timeout_server_ms:
        lines.append(f"  timeout server {_ms(options.timeout_server_ms)}")
    if options.timeout_tunnel_ms:
        lines.append(f"  timeout tunnel {_ms(options.timeout_tunnel_ms)}")
    if options.allowlist_word is not None:
        acl = f"!{{ src -f {options.allowlist_word} }}"
        if http:
            lines.append(f"  http-request deny if {acl}")
        else:
            lines.append(f"  tcp-request content reject if {acl}")
    limit = options.rate_limit
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
        if limit.rate_http and http:
            lines.append(
                f"  http-request deny deny_status 429 if {{ sc_http_req_rate(2) gt "
                f"{int(limit.rate_http)} }}"
            )
    if options.rewrite_words is not None:
        pattern, replacement = options.rewrite_words
        lines.append(f"  http-request replace-path {pattern} {replacement}")
    if options.hsts_word is not None:
        lines.append(
            f"  http-response set-header Strict-Transport-Security {options.hsts_word}"
            " if { ssl_fc }"
        )
    lines += header_lines("http-request", options.request_headers)
    lines += header_lines("http-response", options.response_headers)
    return lines


def header_lines(keyword: str, rules: tuple[HeaderRule, ...]) -> list[str]:
    """``set-header``/``del-header`` lines of ``keyword`` (http-request or http-response)."""
    return [
        f"  {keyword} del-header {r.name_word}"
        if r.value_word is None
        else f"  {keyword} set-header {r.name_word} {r.value_word}"
        for r in rules
    ]


def _router_header_lines(config: RouterConfig) -> list[str]:
    """The router-wide header actions, as OpenShift's IngressController places them: in the
    frontends, so HAProxy runs request actions before the route's and response actions after."""
    lines: list[str] = []
    wanted: tuple[tuple[str, str, str, tuple[HeaderAction, ...]], ...] = (
        ("http-request", REQUEST, "ROUTER_HTTP_REQUEST_HEADERS", config.http_request_headers),
        ("http-response", RESPONSE, "ROUTER_HTTP_RESPONSE_HEADERS", config.http_response_headers),
    )
    for keyword, direction, source, actions in wanted:
        rules = tuple(
            HeaderRule(
                escape.header_name(a.name, source, ROUTER_RESERVED_NAMES),
                None if a.value is None else escape.header_value(a.value, direction, source),
            )
            for a in actions
        )
        lines += header_lines(keyword, rules)
    return lines


@functools.lru_cache(maxsize=64)
def spares_text(spares: tuple[Backend, ...]) -> str:
    """The spare backends' sections, written once per set of spares."""
    return "".join(backend_text(b) for b in spares)


# ------------------------------------------------------------------ maps and crt-list


def map_line(key: str, value: str) -> str:
    """One map file line (key and value are checked where they are described)."""
    return f"{key} {value}\n"


def map_lines(values: Mapping[str, str]) -> dict[str, str]:
    """:func:`map_line` of every entry (a whole map at once)."""
    return {k: f"{k} {v}\n" for k, v in values.items()}


def map_file(keys: Iterable[str], lines: Mapping[str, str]) -> bytes:
    """A map file: each key's line (:func:`map_line`), in the order given (sorted)."""
    return "".join([lines[k] for k in keys]).encode()


def crt_line(entry: CrtEntry) -> str:
    """A crt-list line: the certificate file and the SNI filter it serves."""
    return f"{entry.file} {entry.sni}\n"


# ------------------------------------------------------------------ the fixed part


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


def _bind(address: str, port: int) -> str:
    return escape.bind_address(address, port, "ROUTER_BIND_ADDRESS")


def public_binds(config: RouterConfig) -> dict[str, tuple[str, int]]:
    """Frontend -> the (address, port) of its ``bind`` line; "" is every address.

    The router records these for ``shiftnet diagnose`` (``router/listeners.py``),
    so nothing reads them back out of ``haproxy.cfg``.
    """
    return {
        HTTP_FRONTEND: (config.bind_address, config.http_port),
        HTTPS_FRONTEND: (config.bind_address, config.https_port),
    }


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
        # every request while hashing and inserting each key.
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
        *log_format.global_lines(config, paths.log_socket),
        "",
        f"defaults {BASE_DEFAULTS}",
        "  mode http",
        f"  maxconn {int(maxconn)}",
        *log_format.defaults_lines(config),
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
    binds = public_binds(config)
    lines = [
        f"frontend {HTTP_FRONTEND} from {BASE_DEFAULTS}",
        f"  bind {_bind(*binds[HTTP_FRONTEND])}",
        "  mode http",
        f"  monitor-uri {PUBLIC_HEALTHZ}",
        *log_format.http_frontend_lines(config),
        *_header_hygiene(),
        *_router_header_lines(config),
        *_lookup_block(HTTP_MAPS),
        "",
        f"frontend {HTTPS_FRONTEND} from {BASE_DEFAULTS}",
        f"  bind {_bind(*binds[HTTPS_FRONTEND])}",
        "  mode tcp",
        "  tcp-request inspect-delay 5s",
        *log_format.tcp_frontend_lines(config),  # before the accept: it ends the rules
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
        *log_format.http_frontend_lines(config),
        *_header_hygiene(),
        *_router_header_lines(config),
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
            f"  bind {_bind(config.bind_address, config.stats_port)}",
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


def identity_value(digest: str) -> str:
    """A configuration's identity as HAProxy's ``show info`` reports it: ``config-sha256:<hex>``."""
    return escape.name(CONFIG_IDENTITY, digest)


def identity_line(digest: str) -> str:
    """The global section's ``description`` line naming the configuration's identity
    (``router/haproxy/identity.py`` says what ``digest`` covers)."""
    return f"  description {identity_value(digest)}\n"


def head_text(config: RouterConfig, paths: RenderPaths, fit: MaxconnFit | None) -> str:
    """The text before the first route backend, ``maxconn`` as fitted (None: as configured)."""
    return "\n".join(_global_and_defaults(config, paths, fit) + _frontends(config, paths)) + "\n"
