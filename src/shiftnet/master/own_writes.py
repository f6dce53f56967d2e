"""The objects a controller wrote that its informer cache does not show yet.

A sync planned from a cache that lags the controller's own writes repeats
them: an EndpointSlice created a moment ago is not seen, so its endpoints
look new and land in a second slice; a Route made for an Ingress rule is not
seen, so a second one is made. Upstream's EndpointSlice controller keeps the
same record (its slice tracker) and skips a sync until the cache caught up;
the EndpointSlice and Ingress-to-Route controllers here do. Pure: the clock
is injected, nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from shiftnet.api.names import is_digits

Key = tuple[str, str]

# An expectation the cache never meets (an object someone else deleted while the
# watch was down and the relist never showed it) stops blocking after this long.
EXPECTATION_TTL = 30.0


@dataclass(frozen=True)
class _Expected:
    resource_version: str | None  # None: the object was deleted
    since: float


def _caught_up(cached: str | None, written: str | None) -> bool:
    if written is None:
        return cached is None
    if cached is None:
        return False
    if is_digits(cached) and is_digits(written):
        return int(cached) >= int(written)
    return cached == written


class OwnWrites:
    """Per key (the object a controller syncs): name -> the resourceVersion written,
    or its deletion."""

    def __init__(self, clock: Callable[[], float], ttl: float = EXPECTATION_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._expected: dict[Key, dict[str, _Expected]] = {}

    def wrote(self, key: Key, name: str, resource_version: str | None) -> None:
        """A create or update of ``name`` returned ``resource_version``."""
        self._expected.setdefault(key, {})[name] = _Expected(resource_version, self._clock())

    def deleted(self, key: Key, name: str) -> None:
        self._expected.setdefault(key, {})[name] = _Expected(None, self._clock())

    def stale(self, key: Key, cached: Mapping[str, str | None]) -> bool:
        """True while the cache (name -> resourceVersion) lags a write of ours.

        Met and expired expectations are dropped as a side effect."""
        mine = self._expected.get(key)
        if not mine:
            return False
        now = self._clock()
        for name, exp in list(mine.items()):
            if now - exp.since > self._ttl or _caught_up(cached.get(name), exp.resource_version):
                del mine[name]
        if not mine:
            del self._expected[key]
            return False
        return True
