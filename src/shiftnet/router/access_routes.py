"""Which route an access-log line belongs to: from the backend HAProxy names, the host and path.

Why not the backend name alone: routes with equal backends share one
(``ROUTER_SHARE_BACKENDS``) and a new route may be served by a spare
backend through the runtime API; the router's structured description knows
both (route -> backend it is served by, backend -> spare). Among the routes
of one backend the request's host and path pick the route the way HAProxy's
lookup did: the same host (or a wildcard's parent domain), the longest path
prefix. Never reads the rendered configuration. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from shiftnet.router.admission import RouteKey
from shiftnet.router.model import Rule

NO_ROUTE = "-"


class _Candidate(NamedTuple):
    name: str  # "namespace:name"
    rule: Rule


def _path_matches(route_path: str, path: str) -> bool:
    prefix = route_path.rstrip("/")
    return not prefix or path == prefix or path.startswith(prefix + "/")


def _host_matches(rule: Rule, host: str) -> bool:
    if rule.wildcard:
        return host.split(".", 1)[-1] == rule.domain and "." in host
    return host == rule.host


class RouteNames:
    """An index from served backend names to the routes behind them."""

    def __init__(self, by_backend: Mapping[str, tuple[_Candidate, ...]] | None = None) -> None:
        self._by_backend = dict(by_backend or {})

    @classmethod
    def build(
        cls,
        served: Mapping[RouteKey, str],
        aliases: Mapping[str, str],
        rules: Mapping[RouteKey, Rule],
    ) -> RouteNames:
        """``served``: route -> its backend; ``aliases``: backend -> the spare serving it."""
        index: dict[str, list[_Candidate]] = {}
        for key, backend in served.items():
            rule = rules.get(key)
            if rule is None:
                continue
            name = aliases.get(backend, backend)
            index.setdefault(name, []).append(_Candidate(f"{key[0]}:{key[1]}", rule))
        return cls({b: tuple(sorted(c, key=lambda c: c.name)) for b, c in index.items()})

    def route(self, backend: str, host: str, path: str) -> str:
        """``namespace:name`` of the route a request to ``backend`` was for (``-``: none)."""
        candidates = self._by_backend.get(backend)
        if not candidates:
            return NO_ROUTE
        if len(candidates) == 1:
            return candidates[0].name
        best: _Candidate | None = None
        for candidate in candidates:
            rule = candidate.rule
            if not _host_matches(rule, host) or not _path_matches(rule.path, path):
                continue
            if best is None or len(rule.path.rstrip("/")) > len(best.rule.path.rstrip("/")):
                best = candidate
        return best.name if best is not None else NO_ROUTE  # none of them: do not guess
