"""Route annotations the router honours, parsed strictly into typed options.

Why here and not in the renderer: an annotation value is user input. Each one
is parsed into numbers, enumerations or canonical strings, so the renderer only
ever writes what this module produced. As in OpenShift, an invalid value is
ignored (the router default applies) and a warning naming the annotation is
attached to the route instead of failing it or any other route.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from shiftnet.api.names import is_digits
from shiftnet.router.allowlist import dropped_warning, has_entries, parse_allowlist
from shiftnet.router.timeouts import MAX_MS, parse_haproxy_time

HAPROXY = "haproxy.router.openshift.io/"
ROUTER = "router.openshift.io/"

BALANCE = HAPROXY + "balance"
DISABLE_COOKIES = HAPROXY + "disable_cookies"
COOKIE_NAME = ROUTER + "cookie_name"
HEALTH_CHECK_INTERVAL = ROUTER + "haproxy.health.check.interval"
TIMEOUT = HAPROXY + "timeout"
TIMEOUT_TUNNEL = HAPROXY + "timeout-tunnel"
IP_ALLOWLIST = HAPROXY + "ip_allowlist"
IP_WHITELIST = HAPROXY + "ip_whitelist"
HSTS_HEADER = HAPROXY + "hsts_header"
REWRITE_TARGET = HAPROXY + "rewrite-target"
SET_FORWARDED_HEADERS = HAPROXY + "set-forwarded-headers"
RATE_LIMIT = HAPROXY + "rate-limit-connections"
RATE_LIMIT_CONCURRENT_TCP = RATE_LIMIT + ".concurrent-tcp"
RATE_LIMIT_RATE_TCP = RATE_LIMIT + ".rate-tcp"
RATE_LIMIT_RATE_HTTP = RATE_LIMIT + ".rate-http"
POD_CONCURRENT_CONNECTIONS = HAPROXY + "pod-concurrent-connections"

BALANCE_VALUES = ("roundrobin", "leastconn", "source", "random")
FORWARDED_VALUES = ("append", "replace", "if-none", "never")
MAX_COUNT = 1_000_000

_COOKIE_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_REWRITE_RE = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]{0,2047}")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


@dataclass(frozen=True)
class RateLimit:
    """Per client IP limits; None means that limit is not set."""

    concurrent_tcp: int | None = None
    rate_tcp: int | None = None
    rate_http: int | None = None


@dataclass(frozen=True)
class RouteOptions:
    """What a route's annotations ask for; None means "the router default"."""

    balance: str | None = None
    disable_cookies: bool = False
    cookie_name: str | None = None
    health_check_interval_ms: int | None = None
    timeout_ms: int | None = None
    timeout_tunnel_ms: int | None = None
    # canonical networks, sorted; () admits no client (an allowlist without a valid entry)
    ip_allowlist: tuple[str, ...] | None = None
    hsts_header: str | None = None  # canonical header value
    rewrite_target: str | None = None
    set_forwarded_headers: str | None = None
    rate_limit: RateLimit | None = None
    pod_concurrent_connections: int | None = None


def _count(value: str) -> int | None:
    text = value.strip()
    if not is_digits(text) or len(text) > 9:
        return None
    n = int(text)
    return n if 0 < n <= MAX_COUNT else None


def _hsts(value: str) -> str | None:
    """``max-age=N`` (required), ``includeSubDomains``, ``preload``: RFC 6797, rebuilt."""
    max_age: int | None = None
    flags: list[str] = []
    for raw in value.split(";"):
        part = raw.strip()
        if not part:
            continue
        lower = part.lower().replace(" ", "")
        if lower.startswith("max-age="):
            digits = lower[len("max-age=") :].strip('"')
            if max_age is not None or not is_digits(digits) or len(digits) > 10:
                return None
            max_age = int(digits)
        elif lower == "includesubdomains" and "includeSubDomains" not in flags:
            flags.append("includeSubDomains")
        elif lower == "preload" and "preload" not in flags:
            flags.append("preload")
        else:
            return None
    if max_age is None:
        return None
    order = {"includeSubDomains": 0, "preload": 1}
    return ";".join([f"max-age={max_age}", *sorted(flags, key=order.__getitem__)])


_NO_OPTIONS = (RouteOptions(), ())


def parse_route_options(annotations: Mapping[str, str]) -> tuple[RouteOptions, tuple[str, ...]]:
    """The options ``annotations`` ask for, and one warning per ignored (invalid) value.

    Memoised on the router's own annotations: with thousands of routes most
    share none or the same few, and admission and the model both ask.
    """
    if not annotations:
        return _NO_OPTIONS
    relevant = tuple(
        sorted((k, v) for k, v in annotations.items() if k.startswith((HAPROXY, ROUTER)))
    )
    if not relevant:
        return _NO_OPTIONS
    return _parse_cached(relevant)


@functools.lru_cache(maxsize=8192)
def _parse_cached(relevant: tuple[tuple[str, str], ...]) -> tuple[RouteOptions, tuple[str, ...]]:
    return _parse(dict(relevant))


def _parse(annotations: Mapping[str, str]) -> tuple[RouteOptions, tuple[str, ...]]:
    warnings: list[str] = []
    opts: dict[str, object] = {}

    def bad(key: str, why: str) -> None:
        warnings.append(f"annotation {key}={annotations[key]!r} ignored: {why}")

    def get(key: str) -> str | None:
        return annotations.get(key)

    if (v := get(BALANCE)) is not None:
        if v.strip() in BALANCE_VALUES:
            opts["balance"] = v.strip()
        else:
            bad(BALANCE, "must be one of " + ", ".join(BALANCE_VALUES))
    if (v := get(DISABLE_COOKIES)) is not None:
        if v.strip() in _TRUE:
            opts["disable_cookies"] = True
        elif v.strip() not in _FALSE:
            bad(DISABLE_COOKIES, "must be true or false")
    if (v := get(COOKIE_NAME)) is not None:
        if _COOKIE_NAME_RE.fullmatch(v):
            opts["cookie_name"] = v
        else:
            bad(COOKIE_NAME, "must be 1 to 64 letters, digits, '_', '.' or '-'")
    for key, field in (
        (HEALTH_CHECK_INTERVAL, "health_check_interval_ms"),
        (TIMEOUT, "timeout_ms"),
        (TIMEOUT_TUNNEL, "timeout_tunnel_ms"),
    ):
        if (v := get(key)) is not None:
            time = parse_haproxy_time(v)
            if time is None:
                bad(
                    key,
                    "must be a whole number without leading zeros and at most one unit "
                    "(us, ms, s, m, h or d), such as 500ms, 30s, 5m or 1h",
                )
            else:
                opts[field] = time.ms
                if time.clipped:
                    warnings.append(
                        f"annotation {key}={v[:40]!r} clipped to HAProxy's largest time, {MAX_MS}ms"
                    )
    # ip_allowlist when it names anything, else ip_whitelist (OpenShift's firstMatch).
    for allow_key in (IP_ALLOWLIST, IP_WHITELIST):
        if (v := get(allow_key)) is not None and has_entries(v):
            allowed = parse_allowlist(v)
            opts["ip_allowlist"] = allowed.networks
            if (note := dropped_warning(allow_key, allowed)) is not None:
                warnings.append(note)
            break
    if (v := get(HSTS_HEADER)) is not None:
        hsts = _hsts(v)
        if hsts is None:
            bad(HSTS_HEADER, "must be max-age=<seconds>[;includeSubDomains][;preload]")
        else:
            opts["hsts_header"] = hsts
    if (v := get(REWRITE_TARGET)) is not None:
        if _REWRITE_RE.fullmatch(v):
            opts["rewrite_target"] = v
        else:
            bad(REWRITE_TARGET, "must be a path of RFC 3986 characters starting with /")
    if (v := get(SET_FORWARDED_HEADERS)) is not None:
        if v.strip() in FORWARDED_VALUES:
            opts["set_forwarded_headers"] = v.strip()
        else:
            bad(SET_FORWARDED_HEADERS, "must be one of " + ", ".join(FORWARDED_VALUES))
    if (v := get(RATE_LIMIT)) is not None:
        if v.strip() in _TRUE:
            limits: dict[str, int] = {}
            for key, field in (
                (RATE_LIMIT_CONCURRENT_TCP, "concurrent_tcp"),
                (RATE_LIMIT_RATE_TCP, "rate_tcp"),
                (RATE_LIMIT_RATE_HTTP, "rate_http"),
            ):
                if (lv := get(key)) is not None:
                    n = _count(lv)
                    if n is None:
                        bad(key, f"must be a whole number from 1 to {MAX_COUNT}")
                    else:
                        limits[field] = n
            if limits:
                opts["rate_limit"] = RateLimit(**limits)
        elif v.strip() not in _FALSE:
            bad(RATE_LIMIT, "must be true or false")
    if (v := get(POD_CONCURRENT_CONNECTIONS)) is not None:
        n = _count(v)
        if n is None:
            bad(POD_CONCURRENT_CONNECTIONS, f"must be a whole number from 1 to {MAX_COUNT}")
        else:
            opts["pod_concurrent_connections"] = n
    return RouteOptions(**opts), tuple(warnings)  # type: ignore[arg-type]
