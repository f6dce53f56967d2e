"""The router's configuration: OpenShift's router environment variables, each also a flag.

Why a frozen dataclass built in one place: every other router module (admission,
model, renderer, driver) reads parsed, typed values from here and never looks
at the environment itself, so a bad value is refused once, at start-up, with
the name of the variable (or flag) that carried it.

Precedence: a command-line flag, then the environment variable, then the
default. Defaults follow the OpenShift 3.11 router template (for example
``ROUTER_LOAD_BALANCE_ALGORITHM=leastconn`` and ``ROUTER_TCP_BALANCE_SCHEME=source``);
``docs/router.md`` lists them.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from shiftnet.api.names import hostname_errors
from shiftnet.api.route_headers import (
    NAME_RE,
    REQUEST,
    RESPONSE,
    HeaderAction,
    parse_router_actions,
)
from shiftnet.api.selectors import Selector, parse_selector
from shiftnet.errors import ConfigError, InvalidInput
from shiftnet.router.durations import parse_duration_ms
from shiftnet.router.haproxy import escape
from shiftnet.router.haproxy.escape import UnsafeValue

BALANCE_ALGORITHMS = ("roundrobin", "leastconn", "source", "random")
LOG_LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
LOG_FACILITIES = (
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron",
    "auth2", "ftp", "ntp", "audit", "alert", "cron2",
    *(f"local{i}" for i in range(8)),
)  # fmt: skip
# What OpenShift's ingress operator uses when only ROUTER_UNIQUE_ID_HEADER_NAME is given.
DEFAULT_UNIQUE_ID_FORMAT = "%{+X}o %ci:%cp_%fi:%fp_%Ts_%rt:%pid"
MAX_CAPTURE_LENGTH = 1024
# Headers the unique ID may not be written into: HAProxy adds it, so these would be doubled.
UNIQUE_ID_RESERVED = (
    "strict-transport-security",
    "proxy",
    "cookie",
    "set-cookie",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
)
FORWARDED_HEADER_POLICIES = ("append", "replace", "if-none", "never")
DEFAULT_HOME = "~/.shiftnet"


class HeaderCapture(NamedTuple):
    """A header HAProxy captures for the access log, at most ``max_length`` bytes of it."""

    name: str
    max_length: int


class CookieCapture(NamedTuple):
    """The cookie HAProxy captures: the first whose name is ``name`` (exact) or starts with it."""

    name: str
    max_length: int
    exact: bool


@dataclass(frozen=True)
class RouterConfig:
    """Everything one router process is told from outside; immutable once built."""

    name: str = "router"
    http_port: int = 80
    https_port: int = 443
    bind_address: str = "127.0.0.1"  # HTTP, HTTPS and stats; "" = every address (ask for it)
    load_balance_algorithm: str = "leastconn"
    tcp_balance_scheme: str = "source"
    max_connections: int = 50000
    file_descriptor_limit: int = 0  # RLIMIT_NOFILE for HAProxy; 0 = unknown (the router sets it)
    threads: int = 0  # 0 = let the driver choose from the CPU count
    connect_timeout_ms: int = 5_000
    client_timeout_ms: int = 30_000
    server_timeout_ms: int = 30_000
    tunnel_timeout_ms: int = 3_600_000
    client_fin_timeout_ms: int = 1_000
    server_fin_timeout_ms: int = 1_000
    http_request_timeout_ms: int = 10_000
    http_keep_alive_timeout_ms: int = 300_000
    health_check_interval_ms: int = 5_000
    spare_backends: int = 64  # per kind: new routes served through the runtime API
    share_backends: bool = True  # routes with identical backend sections share one
    hard_stop_after_ms: int = 30_000
    reload_interval_ms: int = 5_000
    stats_port: int = 1936  # 0 = no stats listener
    stats_username: str = ""
    stats_password: str = ""
    default_certificate_path: str | None = None
    allow_wildcard_routes: bool = False
    disable_namespace_ownership_check: bool = False
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    route_labels: Selector = field(default_factory=Selector.everything)
    namespace_labels: Selector = field(default_factory=Selector.everything)
    set_forwarded_headers: str = "append"
    # Router-wide header actions (the IngressController's spec.httpHeaders.actions)
    http_request_headers: tuple[HeaderAction, ...] = ()
    http_response_headers: tuple[HeaderAction, ...] = ()
    errorfile_503: str | None = None
    errorfile_404: str | None = None
    canonical_hostname: str | None = None
    subdomain_template: str | None = None  # ROUTER_SUBDOMAIN, "${name}-${namespace}.apps..."
    router_domain: str | None = None  # ROUTER_DOMAIN: spec.subdomain + "." + this
    # Access logs (docs/router.md, "Access logs"): with no syslog address the router
    # receives HAProxy's log itself and writes <work_dir>/logs/access.log.
    syslog_address: str | None = None  # "udp@host:port", "host:port", "unix@/path", "/path"
    log_level: str | None = None  # None: warning toward a syslog address, info toward our own
    log_facility: str = "local1"
    log_max_length: int = 1024  # ROUTER_LOG_MAX_LENGTH; the router's own receiver takes 8192
    syslog_format: str | None = None  # a log-format string (checked by escape.log_format_string)
    capture_request_headers: tuple[HeaderCapture, ...] = ()
    capture_response_headers: tuple[HeaderCapture, ...] = ()
    capture_cookie: CookieCapture | None = None
    unique_id_header_name: str | None = None
    unique_id_format: str | None = None  # None with a header name: DEFAULT_UNIQUE_ID_FORMAT
    dont_log_null: bool = False
    http_ignore_probes: bool = False
    access_log_max_bytes: int = 10 * 1024 * 1024  # per file, two files kept; 0 = no access log
    work_dir: str = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RouterConfig:
        """Build from environment variables alone (no flags)."""
        return cls.from_args(None, environ)

    @classmethod
    def from_args(
        cls, ns: argparse.Namespace | None, environ: Mapping[str, str] | None = None
    ) -> RouterConfig:
        """Build from parsed flags (see :func:`add_router_flags`) over the environment."""
        env = dict(os.environ if environ is None else environ)
        values: dict[str, Any] = {}
        for opt in OPTIONS:
            raw, source = None, opt.env
            flag_value = getattr(ns, opt.dest, None) if ns is not None else None
            if flag_value is not None:
                raw, source = str(flag_value), opt.flag
            elif env.get(opt.env, "") != "":
                raw = env[opt.env]
            if raw is None:
                continue
            try:
                values[opt.dest] = opt.parse(raw)
            except ValueError as err:
                raise ConfigError(f"{source}={raw!r} is invalid: {err}") from None
        if "work_dir" not in values:
            home = env.get("SHIFTNET_HOME") or DEFAULT_HOME
            if home.startswith("~"):
                home = env.get("HOME", os.path.expanduser("~")) + home[1:]
            values["work_dir"] = os.path.join(home, "router-" + values.get("name", "router"))
        config = cls(**values)
        config.check()
        return config

    def check(self) -> None:
        """Cross-field checks that no single variable can make."""
        if self.http_port == self.https_port:
            raise ConfigError(
                f"ROUTER_SERVICE_HTTP_PORT and ROUTER_SERVICE_HTTPS_PORT are both {self.http_port}"
            )
        if self.stats_port and self.stats_port in (self.http_port, self.https_port):
            raise ConfigError(f"STATS_PORT={self.stats_port} is already the HTTP or HTTPS port")
        if bool(self.stats_username) != bool(self.stats_password):
            raise ConfigError("STATS_USERNAME and STATS_PASSWORD must be given together")
        if self.unique_id_format is not None and self.unique_id_header_name is None:
            raise ConfigError(
                "ROUTER_UNIQUE_ID_FORMAT is set but ROUTER_UNIQUE_ID_HEADER_NAME is not:"
                " the unique ID needs the header that carries it"
            )

    @property
    def own_access_log(self) -> bool:
        """True when the router receives HAProxy's log itself (no syslog address given)."""
        return self.syslog_address is None and self.access_log_max_bytes > 0

    def replace(self, **changes: Any) -> RouterConfig:
        """A copy with some fields changed (the driver sizes ``max_connections`` this way)."""
        current = {f.name: getattr(self, f.name) for f in fields(self)}
        current.update(changes)
        return RouterConfig(**current)


def listen_address(config: RouterConfig, port: int) -> str:
    """``addr:port`` as a user would type it (``*:port`` for every address)."""
    address = config.bind_address or "*"
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def stats_address(config: RouterConfig) -> str:
    """Where a browser reaches the stats page (loopback when it listens everywhere)."""
    address = config.bind_address
    if address in ("", "0.0.0.0"):
        address = "127.0.0.1"
    elif address == "::":
        address = "::1"
    host = f"[{address}]" if ":" in address else address
    return f"{host}:{config.stats_port}"


# ---------------------------------------------------------------- value parsers


def _int(text: str) -> int:
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise ValueError("must be a whole number") from None


def _port(text: str) -> int:
    port = _int(text)
    if not 0 <= port <= 65535:
        raise ValueError("must be a port number between 0 and 65535")
    return port


def _positive(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def _non_negative(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise ValueError("must not be negative")
    return value


def _bool(text: str) -> bool:
    # Go's strconv.ParseBool, which the OpenShift router uses.
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError("must be true or false")


def _choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip()
        if value not in options:
            raise ValueError("must be one of " + ", ".join(options))
        return value

    return parse


def _duration(bare_unit: str, minimum: int = 0) -> Callable[[str], int]:
    def parse(text: str) -> int:
        ms = parse_duration_ms(text, bare_unit)
        if ms is None:
            raise ValueError("must be a duration such as 500ms, 30s, 5m or 1h")
        if ms < minimum:
            raise ValueError("must be longer than zero")
        return ms

    return parse


def _domains(text: str) -> tuple[str, ...]:
    out: set[str] = set()
    for item in text.split(","):
        name = item.strip().lower()
        if not name:
            continue
        errs = hostname_errors(name)
        if errs:
            raise ValueError(f"{name!r}: {errs[0]}")
        out.add(name)
    return tuple(sorted(out))


def _selector(text: str) -> Selector:
    try:
        return parse_selector(text)
    except InvalidInput as err:
        raise ValueError(str(err)) from None


def _text(text: str) -> str:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise ValueError("must not contain control characters")
    return text


def _credential(text: str) -> str:
    value = _text(text)
    if any(c.isspace() for c in value):
        raise ValueError("must not contain spaces")
    return value


def _username(text: str) -> str:
    value = _credential(text)
    if ":" in value:
        raise ValueError("must not contain ':'")
    return value


def _router_name(text: str) -> str:
    name = text.strip()
    if hostname_errors(name) or "." in name:
        raise ValueError("must be a lowercase DNS label (letters, digits and '-')")
    return name


def _hostname(text: str) -> str:
    name = text.strip().lower()
    errs = hostname_errors(name)
    if errs:
        raise ValueError(errs[0])
    return name


def _bind_address(text: str) -> str:
    """An IP address to listen on; ``*`` is every address (IPv4 and IPv6)."""
    value = text.strip()
    if value == "*":
        return ""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(
            "must be an IP address (such as 127.0.0.1, 0.0.0.0 or ::), or * for every address"
        ) from None


def _path(text: str) -> str:
    value = _text(text.strip())
    if not value.startswith("/"):
        raise ValueError("must be an absolute path")
    return value


def _template(text: str) -> str:
    value = text.strip()
    probe = value.replace("${name}", "a").replace("${namespace}", "b")
    if hostname_errors(probe):
        raise ValueError("must be a host name template using ${name} and ${namespace}")
    return value


def _header_actions(direction: str) -> Callable[[str], tuple[HeaderAction, ...]]:
    def parse(text: str) -> tuple[HeaderAction, ...]:
        return parse_router_actions(text.strip(), direction)

    return parse


def _log_level(text: str) -> str:
    return _choice(LOG_LEVELS)(text.strip().lower())


def _log_facility(text: str) -> str:
    return _choice(LOG_FACILITIES)(text.strip().lower())


def _log_length(text: str) -> int:
    value = _int(text)
    if not 80 <= value <= 65535:
        raise ValueError("must be between 80 and 65535")
    return value


def _syslog_address(text: str) -> str:
    """Where HAProxy sends its log, as HAProxy's ``log`` directive takes it."""
    value = text.strip()
    try:
        escape.syslog_target(value)
    except UnsafeValue as err:
        raise ValueError(str(err)) from None
    return value


def _log_format(text: str) -> str:
    value = text.strip()
    try:
        escape.log_format_string(value)
    except UnsafeValue as err:
        raise ValueError(str(err)) from None
    return value


def _capture_length(text: str) -> int:
    value = _int(text)
    if not 1 <= value <= MAX_CAPTURE_LENGTH:
        raise ValueError(f"the maximum length must be between 1 and {MAX_CAPTURE_LENGTH}")
    return value


def _token(name: str, what: str) -> str:
    if not NAME_RE.fullmatch(name):
        raise ValueError(f"{what} {name!r} is not an HTTP token")
    return name


def _header_captures(text: str) -> tuple[HeaderCapture, ...]:
    """OpenShift's ``name:maxLength,name:maxLength`` (each name an HTTP token)."""
    out: list[HeaderCapture] = []
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) != 2:
            raise ValueError(f"{item.strip()!r} is not of the form name:maxLength")
        out.append(HeaderCapture(_token(parts[0], "header name"), _capture_length(parts[1])))
    return tuple(out)


def _cookie_capture(text: str) -> CookieCapture:
    """OpenShift's ``name:maxLength`` (prefix match) or ``name=:maxLength`` (exact match)."""
    parts = text.strip().split(":")
    if len(parts) != 2:
        raise ValueError("must be of the form name:maxLength or name=:maxLength")
    name, exact = parts[0], parts[0].endswith("=")
    name = name.removesuffix("=")
    return CookieCapture(_token(name, "cookie name"), _capture_length(parts[1]), exact)


def _unique_id_header(text: str) -> str:
    value = text.strip()
    try:
        escape.header_name(value, "header name", UNIQUE_ID_RESERVED)
    except UnsafeValue as err:
        raise ValueError(str(err)) from None
    return value


@dataclass(frozen=True)
class Option:
    """One setting: its dataclass field, environment variable, flag, parser and help."""

    dest: str
    env: str
    flag: str
    parse: Callable[[str], Any]
    help: str


_MS = _duration("ms", 1)

# One option per entry, as a table: easier to read than one argument per line.
# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("name", "ROUTER_SERVICE_NAME", "--name", _router_name,
           "router name written in route status (default router)"),
    Option("http_port", "ROUTER_SERVICE_HTTP_PORT", "--http-port", _port, "HTTP port (80)"),
    Option("https_port", "ROUTER_SERVICE_HTTPS_PORT", "--https-port", _port, "HTTPS port (443)"),
    Option("bind_address", "ROUTER_BIND_ADDRESS", "--bind-address", _bind_address,
           "address the HTTP, HTTPS and stats ports listen on (127.0.0.1; 0.0.0.0, :: or *"
           " exposes the router to the network)"),
    Option("load_balance_algorithm", "ROUTER_LOAD_BALANCE_ALGORITHM", "--load-balance-algorithm",
           _choice(BALANCE_ALGORITHMS), "balance for HTTP, edge and reencrypt routes (leastconn)"),
    Option("tcp_balance_scheme", "ROUTER_TCP_BALANCE_SCHEME", "--tcp-balance-scheme",
           _choice(BALANCE_ALGORITHMS), "balance for passthrough routes (source)"),
    Option("max_connections", "ROUTER_MAX_CONNECTIONS", "--max-connections", _positive,
           "HAProxy maxconn (50000; lowered to fit the file descriptor limit)"),
    Option("threads", "ROUTER_THREADS", "--threads", _non_negative,
           "HAProxy threads (0 = one per CPU)"),
    Option("spare_backends", "ROUTER_SPARE_BACKENDS", "--spare-backends", _non_negative,
           "spare backends per kind, so new routes need no reload (64)"),
    Option("share_backends", "ROUTER_SHARE_BACKENDS", "--share-backends", _bool,
           "routes with the same pods and options share one HAProxy backend (true)"),
    Option("connect_timeout_ms", "ROUTER_DEFAULT_CONNECT_TIMEOUT", "--connect-timeout", _MS,
           "timeout connect (5s)"),
    Option("client_timeout_ms", "ROUTER_DEFAULT_CLIENT_TIMEOUT", "--client-timeout", _MS,
           "timeout client (30s)"),
    Option("server_timeout_ms", "ROUTER_DEFAULT_SERVER_TIMEOUT", "--server-timeout", _MS,
           "timeout server (30s)"),
    Option("tunnel_timeout_ms", "ROUTER_DEFAULT_TUNNEL_TIMEOUT", "--tunnel-timeout", _MS,
           "timeout tunnel (1h)"),
    Option("client_fin_timeout_ms", "ROUTER_CLIENT_FIN_TIMEOUT", "--client-fin-timeout", _MS,
           "timeout client-fin (1s)"),
    Option("server_fin_timeout_ms", "ROUTER_DEFAULT_SERVER_FIN_TIMEOUT", "--server-fin-timeout",
           _MS, "timeout server-fin (1s)"),
    Option("http_request_timeout_ms", "ROUTER_SLOWLORIS_TIMEOUT", "--http-request-timeout", _MS,
           "timeout http-request (10s)"),
    Option("http_keep_alive_timeout_ms", "ROUTER_SLOWLORIS_HTTP_KEEPALIVE",
           "--http-keep-alive-timeout", _MS, "timeout http-keep-alive (300s)"),
    Option("health_check_interval_ms", "ROUTER_BACKEND_CHECK_INTERVAL", "--health-check-interval",
           _MS, "default health check interval (5s)"),
    Option("hard_stop_after_ms", "ROUTER_HARD_STOP_AFTER", "--hard-stop-after", _MS,
           "old HAProxy processes end after this (30s)"),
    Option("reload_interval_ms", "RELOAD_INTERVAL", "--reload-interval", _duration("s"),
           "minimum time between reloads (5s; a bare number is seconds)"),
    Option("stats_port", "STATS_PORT", "--stats-port", _port, "stats page port (1936; 0 = none)"),
    Option("stats_username", "STATS_USERNAME", "--stats-username", _username,
           "stats user (default: admin, with a generated password kept in the work dir)"),
    Option("stats_password", "STATS_PASSWORD", "--stats-password", _credential,
           "stats password (default: generated once)"),
    Option("default_certificate_path", "DEFAULT_CERTIFICATE_PATH", "--default-certificate",
           _path, "PEM with certificate and key (default: a self-signed one)"),
    Option("allow_wildcard_routes", "ROUTER_ALLOW_WILDCARD_ROUTES", "--allow-wildcard-routes",
           _bool, "admit wildcardPolicy: Subdomain routes (false)"),
    Option("disable_namespace_ownership_check", "ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK",
           "--disable-namespace-ownership-check", _bool,
           "let routes of several namespaces share a host (false)"),
    Option("allowed_domains", "ROUTER_ALLOWED_DOMAINS", "--allowed-domains", _domains,
           "comma-separated domains route hosts must be in"),
    Option("denied_domains", "ROUTER_DENIED_DOMAINS", "--denied-domains", _domains,
           "comma-separated domains route hosts must not be in"),
    Option("route_labels", "ROUTE_LABELS", "--route-labels", _selector,
           "label selector: the routes this router serves"),
    Option("namespace_labels", "NAMESPACE_LABELS", "--namespace-labels", _selector,
           "label selector: the namespaces whose routes this router serves"),
    Option("set_forwarded_headers", "ROUTER_SET_FORWARDED_HEADERS", "--set-forwarded-headers",
           _choice(FORWARDED_HEADER_POLICIES), "X-Forwarded-*/Forwarded policy (append)"),
    Option("http_request_headers", "ROUTER_HTTP_REQUEST_HEADERS",
           "--set-delete-http-request-header", _header_actions(REQUEST),
           "request header actions of every route, before the route's own: "
           "name:value:Set or name:Delete, comma-separated, parts percent-encoded"),
    Option("http_response_headers", "ROUTER_HTTP_RESPONSE_HEADERS",
           "--set-delete-http-response-header", _header_actions(RESPONSE),
           "response header actions of every route, after the route's own "
           "(same form)"),
    Option("errorfile_503", "ROUTER_ERRORFILE_503", "--errorfile-503", _path,
           "HTTP response file served when no pod can answer"),
    Option("errorfile_404", "ROUTER_ERRORFILE_404", "--errorfile-404", _path,
           "HTTP response file served for unknown hosts (default: the 503 page)"),
    Option("canonical_hostname", "ROUTER_CANONICAL_HOSTNAME", "--canonical-hostname", _hostname,
           "routerCanonicalHostname written in route status"),
    Option("subdomain_template", "ROUTER_SUBDOMAIN", "--subdomain", _template,
           "host for routes without one, e.g. ${name}-${namespace}.apps.example.com"),
    Option("router_domain", "ROUTER_DOMAIN", "--router-domain", _hostname,
           "domain appended to spec.subdomain"),
    Option("syslog_address", "ROUTER_SYSLOG_ADDRESS", "--syslog-address", _syslog_address,
           "send HAProxy's log there (host:port, udp@host:port, unix@/path or /path) instead of"
           " the router's own access log"),
    Option("log_level", "ROUTER_LOG_LEVEL", "--log-level", _log_level,
           "HAProxy log level (warning toward a syslog address; info for the own access log)"),
    Option("log_facility", "ROUTER_LOG_FACILITY", "--log-facility", _log_facility,
           "syslog facility (local1)"),
    Option("log_max_length", "ROUTER_LOG_MAX_LENGTH", "--log-max-length", _log_length,
           "longest log line sent to a syslog address, in bytes (1024)"),
    Option("syslog_format", "ROUTER_SYSLOG_FORMAT", "--syslog-format", _log_format,
           "HAProxy log-format of HTTP requests (default: option httplog)"),
    Option("capture_request_headers", "ROUTER_CAPTURE_HTTP_REQUEST_HEADERS",
           "--capture-http-request-headers", _header_captures,
           "request headers to log: name:maxLength, comma-separated"),
    Option("capture_response_headers", "ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS",
           "--capture-http-response-headers", _header_captures,
           "response headers to log: name:maxLength, comma-separated"),
    Option("capture_cookie", "ROUTER_CAPTURE_HTTP_COOKIE", "--capture-http-cookie",
           _cookie_capture, "cookie to log: name:maxLength (prefix) or name=:maxLength (exact)"),
    Option("unique_id_header_name", "ROUTER_UNIQUE_ID_HEADER_NAME", "--unique-id-header-name",
           _unique_id_header, "request header that carries a unique ID to the pod (and the log)"),
    Option("unique_id_format", "ROUTER_UNIQUE_ID_FORMAT", "--unique-id-format", _log_format,
           f"log-format of the unique ID ({DEFAULT_UNIQUE_ID_FORMAT})"),
    Option("dont_log_null", "ROUTER_DONT_LOG_NULL", "--dont-log-null", _bool,
           "do not log connections that sent no data (false)"),
    Option("http_ignore_probes", "ROUTER_HTTP_IGNORE_PROBES", "--http-ignore-probes", _bool,
           "do not log connections closed before a request (false)"),
    Option("access_log_max_bytes", "ROUTER_ACCESS_LOG_MAX_BYTES", "--access-log-max-bytes",
           _non_negative, "size of the own access log before it rotates (10485760; 0 = off)"),
    Option("work_dir", "ROUTER_WORK_DIR", "--router-work-dir", _path,
           "directory for HAProxy files (default $SHIFTNET_HOME/router-<name>)"),
)
# fmt: on


def add_router_flags(parser: argparse.ArgumentParser) -> None:
    """Add one flag per option; each defaults to None so the environment shows through."""
    group = parser.add_argument_group("router", "each flag overrides its environment variable")
    for opt in OPTIONS:
        group.add_argument(
            opt.flag,
            dest=opt.dest,
            default=None,
            metavar=opt.env.lower(),
            help=f"{opt.help} [{opt.env}]",
        )
