"""Gather the facts of ``diagnose route`` / ``diagnose URL`` from their sources.

The store gives the route, its admission status (each router's own entry),
the services, endpoints and pods; the router's files and HAProxy's runtime
API what is rendered and what runs (``router_view``); the system resolver,
a TCP connection and a real request what a client meets (``probes``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from shiftnet.api import Endpoints, Event, Namespace, Pod, Route, Service
from shiftnet.api.names import is_digits
from shiftnet.client import Client
from shiftnet.diagnose import probes
from shiftnet.diagnose.access_entry import marked_path
from shiftnet.diagnose.access_view import answered_by
from shiftnet.diagnose.probe_events import last_probe_failures
from shiftnet.diagnose.route_checks import client_address, serving_routers
from shiftnet.diagnose.route_facts import (
    Admission,
    BackendService,
    ClientTarget,
    Member,
    PodView,
    RequestResult,
    RouteFacts,
)
from shiftnet.diagnose.route_lookup import find_route, lookup_map, route_host
from shiftnet.diagnose.router_view import router_dirs, router_view
from shiftnet.errors import InvalidInput, ShiftnetError, shorten
from shiftnet.router.model import pool_from_endpoints, resolve_members


class NoRouteForURL(ShiftnetError):
    """No route in the store serves the URL's host and path."""


def parse_url(text: str) -> ClientTarget:
    """``http(s)://host[:port]/path`` as a client would use it; one clear error otherwise."""
    try:
        parts = urlsplit(text)
    except ValueError as err:
        raise InvalidInput(f"URL {shorten(text)!r} is invalid: {err}") from err
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"URL {shorten(text)!r} is invalid: expected http(s)://host[:port]/path")
    try:
        port = parts.port
    except ValueError as err:
        raise InvalidInput(f"URL {shorten(text)!r} is invalid: port: {err}") from err
    return ClientTarget(parts.scheme, parts.hostname.lower(), port, parts.path or "/", True)


def parse_resolve(text: str | None, target: ClientTarget) -> ClientTarget:
    """curl's ``--resolve HOST:PORT:ADDR``: the client skips DNS for that host."""
    if not text:
        return target
    host, sep, rest = text.partition(":")
    port, sep2, address = rest.partition(":")
    if not sep or not sep2 or not is_digits(port) or not address:
        raise InvalidInput(f"--resolve {shorten(text)!r} is invalid: expected HOST:PORT:ADDR")
    if host.lower() != target.host:
        return target
    return ClientTarget(
        target.scheme, target.host, target.port, target.path, target.from_url, address.strip("[]")
    )


def _termination(route: Route) -> tuple[str, str]:
    tls = route.spec.tls
    if tls is None:
        return "http", ""
    return tls.termination, tls.insecure_edge_termination_policy or ""


def _admissions(route: Route) -> tuple[Admission, ...]:
    out: list[Admission] = []
    for entry in route.status.ingress:
        cond = next((c for c in entry.conditions if c.type == "Admitted"), None)
        out.append(
            Admission(
                router=entry.router_name,
                admitted=cond is not None and cond.status == "True",
                reason=(cond.reason or "") if cond else "NoCondition",
                message=(cond.message or "") if cond else "",
                host=entry.host or "",
            )
        )
    return tuple(sorted(out, key=lambda a: a.router))


async def probe_failures(client: Client, namespace: str) -> dict[str, str]:
    """:func:`last_probe_failures` of the namespace's Events."""
    return last_probe_failures(await client.list(Event, namespace))


def pod_view(pod: Pod, last_probe: dict[str, str] | None = None) -> PodView:
    ready = next((c for c in pod.status.conditions if c.type == "Ready"), None)
    ok = ready is not None and ready.status == "True"
    if ok:
        message = "ready"
    elif ready is not None and (ready.message or ready.reason):
        message = ready.message or ready.reason or ""
    else:
        message = f"phase {pod.status.phase}"
    probe = "" if ok else (last_probe or {}).get(pod.metadata.name, "")
    return PodView(pod.metadata.name, ok, message, probe)


async def pod_views(client: Client, namespace: str, selector: str) -> list[PodView]:
    """The pods ``selector`` picks; an unready one with its last probe failure (from Events)."""
    found = await client.list(Pod, namespace, selector=selector)
    unready = any(not pod_view(p).ready for p in found)
    failures = await probe_failures(client, namespace) if unready else {}
    return [pod_view(p, failures) for p in found]


async def _service(client: Client, route: Route, name: str) -> BackendService:
    ns = route.metadata.namespace or ""
    svc = await client.try_get(Service, ns, name)
    if svc is None:
        return BackendService(name, False, {}, (), ())
    selector = dict(svc.spec.selector or {})
    pods: list[PodView] = []
    if selector:
        text = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        pods = await pod_views(client, ns, text)
    endpoints = await client.try_get(Endpoints, ns, name)
    target = route.spec.port.target_port if route.spec.port is not None else None
    if isinstance(target, str) and is_digits(target):
        target = int(target)
    members = resolve_members(pool_from_endpoints(ns, name, endpoints), target, svc)
    errors = await asyncio.gather(*(probes.connect(m.ip, m.port) for m in members))
    return BackendService(
        name,
        True,
        selector,
        tuple(
            Member(m.pod, m.ip, m.port, True, err or None)
            for m, err in zip(members, errors, strict=True)
        ),
        tuple(sorted(pods, key=lambda p: p.name)),
    )


async def find_by_url(client: Client, target: ClientTarget) -> Route:
    routes = await client.list(Route)
    route = find_route(routes, target.host, target.path)
    if route is None:
        raise NoRouteForURL(
            f"no route serves host {shorten(target.host)} and path {shorten(target.path)}: "
            "see `shiftnet get routes -A`"
        )
    return route


def route_target(route: Route, scheme_port: int | None = None) -> ClientTarget:
    """The URL a client of ``route`` uses when the user named the route, not a URL."""
    termination, _ = _termination(route)
    scheme = "http" if termination == "http" else "https"
    return ClientTarget(scheme, route_host(route), scheme_port, route.spec.path or "/", False)


async def gather_route(
    client: Client, route: Route, target: ClientTarget, state_dir: Path
) -> RouteFacts:
    ns = route.metadata.namespace or ""
    key = f"{ns}/{route.metadata.name}"
    termination, insecure = _termination(route)
    wildcard = route.spec.wildcard_policy == "Subdomain"
    map_name = lookup_map(termination, target.scheme, wildcard)
    router_work = router_dirs(Path(state_dir))
    views = [
        await router_view(name, work, key, map_name, target.host, target.path)
        for name, work in router_work.items()
    ]
    resolved: tuple[str, ...] | None = None
    resolve_error = ""
    if target.resolve is None:
        resolved, resolve_error = await probes.resolve(target.host)
    services = [await _service(client, route, b.name) for b in route.backends()]
    namespace = await client.try_get(Namespace, None, ns)
    facts = RouteFacts(
        namespace=ns,
        name=route.metadata.name,
        host=route_host(route),
        path=route.spec.path or "",
        termination=termination,
        insecure_policy=insecure,
        target=target,
        resolved=resolved,
        resolve_error=resolve_error,
        reachable={},
        admissions=_admissions(route),
        routers=tuple(views),
        route_labels=dict(route.metadata.labels or {}),
        services=tuple(services),
        request=None,
        namespace_labels=dict(namespace.metadata.labels or {}) if namespace else {},
    )
    routers = serving_routers(facts)
    bind = None
    if routers:
        bind = routers[0].https_bind if target.scheme == "https" else routers[0].http_bind
    if bind is None:
        return facts
    if not target.from_url:
        target = dataclasses.replace(target, port=bind[1])
        facts = dataclasses.replace(facts, target=target)
    port = target.effective_port
    address = client_address(facts)
    where = f"{address}:{port}"
    reachable = {where: await probes.connect(address, port)}
    token = secrets.token_hex(8)
    path = marked_path(target.path, token)
    status, error, local = await probes.request(target.scheme, address, port, target.host, path)
    who = ""
    if status is not None:
        members = [m for svc in facts.services for m in svc.members]
        who = await answered_by(router_work[routers[0].name], token, local, members)
    return dataclasses.replace(
        facts, reachable=reachable, request=RequestResult(status, error, who)
    )
