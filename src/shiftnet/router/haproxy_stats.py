"""HAProxy's ``show stat`` as OpenShift's ``haproxy_*`` series, labelled from the description.

Why here and pure: the labels (route, namespace, service, pod) come from what
the router decided to serve (the L7 policies and the backends HAProxy runs,
spares included), never from parsing names or the configuration text; and the
join is a plain function of those inputs, so it is tested without HAProxy.
The series, their HAProxy fields and the label sets are OpenShift's
(``pkg/router/metrics/haproxy``): frontends ``{frontend}``, backends
``{backend, namespace, route}`` with ``backend`` the route's kind (http,
https-edge, https, tcp), servers ``{server, namespace, route, pod, service}``
with ``server`` the pod's ``ip:port``. Values are gauges, as OpenShift's.
The series are plain values here; ``metrics.py`` hands them to
``prometheus_client``. Pure: no I/O.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from shiftnet.router.haproxy.description import Backend
from shiftnet.router.haproxy.names import is_spare, server_name
from shiftnet.router.model import EDGE, HTTP, PASSTHROUGH, REENCRYPT, L7Policy

RouteKey = tuple[str, str]

# Every proxy (-1), frontends + backends + servers (1|2|4), every server (-1).
STAT_QUERY = "show stat -1 7 -1"

KIND_LABEL = {HTTP: "http", EDGE: "https-edge", REENCRYPT: "https", PASSTHROUGH: "tcp"}
FRONTEND_LABELS = ("frontend",)
BACKEND_LABELS = ("backend", "namespace", "route")
SERVER_LABELS = ("server", "namespace", "route", "pod", "service")
_RESPONSE_CODES = ("1xx", "2xx", "3xx", "4xx", "5xx", "other")

# (series suffix, show stat column, help): OpenShift's default selection.
_FRONTEND_FIELDS = (
    ("current_sessions", "scur", "Current number of active sessions."),
    ("max_sessions", "smax", "Maximum observed number of active sessions."),
    ("bytes_in_total", "bin", "Current total of incoming bytes."),
    ("bytes_out_total", "bout", "Current total of outgoing bytes."),
    ("current_session_rate", "rate", "Current number of sessions per second over last second."),
    ("max_session_rate", "rate_max", "Maximum observed number of sessions per second."),
    ("connections_total", "conn_tot", "Total number of connections."),
    ("http_requests_total", "req_tot", "Total HTTP requests."),
)
_PROXY_FIELDS = (
    ("current_queue", "qcur", "Current number of queued requests."),
    ("current_sessions", "scur", "Current number of active sessions."),
    ("max_sessions", "smax", "Maximum observed number of active sessions."),
    ("connections_total", "stot", "Total number of connections."),
    ("bytes_in_total", "bin", "Current total of incoming bytes."),
    ("bytes_out_total", "bout", "Current total of outgoing bytes."),
    ("connection_errors_total", "econ", "Total of connection errors."),
    ("response_errors_total", "eresp", "Total of response errors."),
    ("current_session_rate", "rate", "Current number of sessions per second over last second."),
    ("max_session_rate", "rate_max", "Maximum observed number of sessions per second."),
    ("http_average_queue_latency_milliseconds", "qtime", "Average queue time, last 1024 requests."),
    ("http_average_connect_latency_milliseconds", "ctime", "Average connect time, last 1024."),
    ("http_average_response_latency_milliseconds", "rtime", "Average response time, last 1024."),
    ("connections_reused_total", "reuse", "Total number of connections reused."),
)
_SERVER_ONLY_FIELDS = (
    ("check_failures_total", "chkfail", "Total number of failed health checks."),
    ("downtime_seconds_total", "downtime", "Total downtime in seconds."),
)
_UP = {"UP", "UP 1/3", "UP 2/3", "OPEN", "no check"}


@dataclass(frozen=True)
class StatLabels:
    """Which route, service and pod each HAProxy proxy and server row stands for."""

    backends: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)
    servers: Mapping[tuple[str, str], tuple[str, str, str, str, str]] = field(default_factory=dict)


def stat_labels(
    route_backends: Mapping[RouteKey, str],
    policies: Mapping[RouteKey, L7Policy],
    live: Mapping[str, Backend],
    aliases: Mapping[str, str],
) -> StatLabels:
    """Join what HAProxy runs (``live``, by proxy name) with the routes that own it.

    ``route_backends`` is each admitted route's backend, ``aliases`` the spare
    serving a backend until the next reload. A backend shared by several
    routes is labelled with the first of them (in sorted order).
    """
    backends: dict[str, tuple[str, str, str]] = {}
    servers: dict[tuple[str, str], tuple[str, str, str, str, str]] = {}
    for key in sorted(route_backends):
        policy = policies.get(key)
        if policy is None:
            continue
        proxy = aliases.get(route_backends[key], route_backends[key])
        if proxy in backends:
            continue
        namespace, route = key
        backends[proxy] = (KIND_LABEL.get(policy.termination, "other"), namespace, route)
        service_of = {t.pool: t.service for t in policy.targets}
        owners = {(s.ip, s.port): (s.pod, service_of.get(s.pool, "")) for s in policy.servers}
        running = live.get(proxy)
        for slot, member in enumerate(running.slots if running is not None else ()):
            if member is None:
                continue
            pod, service = owners.get((member.ip, member.port), ("", ""))
            servers[(proxy, server_name(slot))] = (member.address, namespace, route, pod, service)
    return StatLabels(backends, servers)


def parse_stat_csv(text: str) -> list[dict[str, str]]:
    """The rows of a CSV ``show stat`` answer, by column name."""
    body = text.lstrip()
    if body.startswith("# "):
        body = body[2:]
    return [row for row in csv.DictReader(io.StringIO(body)) if row.get("pxname")]


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


class Sample(NamedTuple):
    labels: dict[str, str]
    value: float


@dataclass
class GaugeSeries:
    """One gauge family: its name, help, label names and samples."""

    name: str
    documentation: str
    label_names: tuple[str, ...]
    samples: list[Sample] = field(default_factory=list)


class _Families:
    """Gauge families by name, created on first use, yielded in creation order."""

    def __init__(self) -> None:
        self.by_name: dict[str, GaugeSeries] = {}

    def add(
        self, name: str, doc: str, labels: tuple[str, ...], values: list[str], v: float
    ) -> None:
        family = self.by_name.get(name)
        if family is None:
            family = self.by_name[name] = GaugeSeries(name, doc, labels)
        family.samples.append(Sample(dict(zip(labels, values, strict=True)), v))


def _add_fields(
    out: _Families,
    prefix: str,
    fields: tuple[tuple[str, str, str], ...],
    row: Mapping[str, str],
    labels: tuple[str, ...],
    values: list[str],
) -> None:
    for suffix, column, doc in fields:
        value = _number(row.get(column))
        if value is not None:
            out.add(f"{prefix}_{suffix}", doc, labels, values, value)


def _add_common(
    out: _Families, prefix: str, row: Mapping[str, str], labels: tuple[str, ...], values: list[str]
) -> None:
    """``up``, ``weight`` and the per-class HTTP answers of a backend or server row."""
    status = row.get("status", "")
    what = "backend" if prefix.endswith("backend") else "server"
    out.add(f"{prefix}_up", f"Current health of the {what} (1 = UP).", labels, values,
            1.0 if status in _UP else 0.0)  # fmt: skip
    weight = _number(row.get("weight"))
    if weight is not None:
        out.add(f"{prefix}_weight", f"Weight of the {what}.", labels, values, weight)
    _add_responses(out, prefix, row, labels, values)


def _add_responses(
    out: _Families, prefix: str, row: Mapping[str, str], labels: tuple[str, ...], values: list[str]
) -> None:
    if row.get("mode", "http") != "http":
        return
    for code in _RESPONSE_CODES:
        value = _number(row.get(f"hrsp_{code}"))
        if value is not None:
            out.add(f"{prefix}_http_responses_total", "Total of HTTP responses.",
                    (*labels, "code"), [*values, code], value)  # fmt: skip


def families(rows: list[dict[str, str]], labels: StatLabels) -> Iterator[GaugeSeries]:
    """OpenShift's ``haproxy_frontend_*``, ``haproxy_backend_*`` and ``haproxy_server_*``.

    Spare backends not serving a route, and empty server slots, are left out:
    they are the router's reserve, not traffic.
    """
    out = _Families()
    for row in rows:
        proxy, name = row["pxname"], row.get("svname", "")
        if name == "FRONTEND":
            values = [proxy]
            _add_fields(out, "haproxy_frontend", _FRONTEND_FIELDS, row, FRONTEND_LABELS, values)
            _add_responses(out, "haproxy_frontend", row, FRONTEND_LABELS, values)
        elif name == "BACKEND":
            owner = labels.backends.get(proxy)
            if owner is None and is_spare(proxy):
                continue
            values = list(owner) if owner else [f"other/{proxy}", "", ""]
            _add_fields(out, "haproxy_backend", _PROXY_FIELDS, row, BACKEND_LABELS, values)
            _add_common(out, "haproxy_backend", row, BACKEND_LABELS, values)
        else:
            server = labels.servers.get((proxy, name))
            if server is None and (is_spare(proxy) or proxy in labels.backends):
                continue  # an empty slot
            values = list(server) if server else [name, "", "", "", ""]
            fields = _PROXY_FIELDS + _SERVER_ONLY_FIELDS
            _add_fields(out, "haproxy_server", fields, row, SERVER_LABELS, values)
            _add_common(out, "haproxy_server", row, SERVER_LABELS, values)
    yield from out.by_name.values()
