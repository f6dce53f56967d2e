"""Which route a request reaches, found the way the router's HAProxy finds it.

Why reuse the router's keys: the router keys its maps with
``build.lookup_key(host, path)`` and HAProxy answers with the longest key
that begins the request's key (``<host><path>/``), exact hosts before a
wildcard's parent domain. Doing the same lookup over the store's routes, the
rendered map files and HAProxy's running maps makes the three comparable.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from shiftnet.api import Route
from shiftnet.router.admission import parent_domain
from shiftnet.router.haproxy import names
from shiftnet.router.haproxy.build import lookup_key


def request_key(host: str, path: str) -> str:
    """The key HAProxy builds for a request: host lowercased without port, the path, ``/``."""
    return host.split(":", 1)[0].lower() + (path or "/").split("?", 1)[0] + "/"


def longest_prefix(entries: Mapping[str, str], key: str) -> str:
    """``map_beg``: the value of the longest entry key that begins ``key`` ("" if none)."""
    best = ""
    value = ""
    for entry, answer in entries.items():
        if key.startswith(entry) and len(entry) > len(best):
            best, value = entry, answer
    return value


def lookup_map(termination: str, scheme: str, wildcard: bool) -> str:
    """The map HAProxy consults for a request of ``scheme`` to a route of ``termination``."""
    if scheme == "https":
        if termination == "passthrough":
            return names.SNI_PASSTHROUGH_WILDCARD_MAP if wildcard else names.SNI_PASSTHROUGH_MAP
        return names.TLS_WILDCARD_PREFIX_MAP if wildcard else names.TLS_PREFIX_MAP
    return names.HTTP_WILDCARD_PREFIX_MAP if wildcard else names.HTTP_PREFIX_MAP


def map_lookup(map_name: str, entries: Mapping[str, str], host: str, path: str) -> str:
    """What HAProxy answers from one map for a request (SNI maps: the host alone)."""
    wildcard = "wildcard" in map_name
    where = parent_domain(host) if wildcard else host.lower()
    if map_name in (names.SNI_PASSTHROUGH_MAP, names.SNI_PASSTHROUGH_WILDCARD_MAP):
        return entries.get(where, "")
    return longest_prefix(entries, request_key(where, path))


def lookup_text(map_name: str, host: str, path: str) -> str:
    """The key a request is looked up with in ``map_name``, for messages."""
    wildcard = "wildcard" in map_name
    where = parent_domain(host) if wildcard else host.lower()
    if map_name in (names.SNI_PASSTHROUGH_MAP, names.SNI_PASSTHROUGH_WILDCARD_MAP):
        return where
    return request_key(where, path)


def route_host(route: Route) -> str:
    """The host the route is served on: ``spec.host``, else the one a router admitted it on."""
    if route.spec.host:
        return route.spec.host.lower()
    return next((e.host.lower() for e in route.status.ingress if e.host), "")


def find_route(routes: Iterable[Route], host: str, path: str) -> Route | None:
    """The route a request for ``host`` and ``path`` reaches: the longest key wins, exact
    hosts before wildcards, and among equal keys the oldest route (the one admitted)."""
    key = request_key(host, path)
    wild_key = request_key(parent_domain(host), path)
    candidates: list[tuple[int, int, str, str, Route]] = []
    for route in routes:
        rhost = route_host(route)
        if not rhost:
            continue
        wildcard = route.spec.wildcard_policy == "Subdomain"
        entry = lookup_key(parent_domain(rhost) if wildcard else rhost, route.spec.path or "")
        if not (wild_key if wildcard else key).startswith(entry):
            continue
        candidates.append(
            (
                1 if wildcard else 0,
                -len(entry),
                route.metadata.creation_timestamp or "",
                f"{route.metadata.namespace}/{route.metadata.name}",
                route,
            )
        )
    candidates.sort(key=lambda c: c[:4])
    return candidates[0][4] if candidates else None
