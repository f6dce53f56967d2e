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
from typing import Any

from shiftnet.api.names import hostname_errors
from shiftnet.api.route_headers import REQUEST, RESPONSE, HeaderAction, parse_router_actions
from shiftnet.api.selectors import Selector, parse_selector
from shiftnet.errors import ConfigError, InvalidInput
from shiftnet.router.durations import parse_duration_ms

BALANCE_ALGORITHMS = ("roundrobin", "leastconn", "source", "random")
FORWARDED_HEADER_POLICIES = ("append", "replace", "if-none", "never")
DEFAULT_HOME = "~/.shiftnet"


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
