"""A memo for the router's pure steps, so a sync after one change redoes about one route.

Why not ``functools.lru_cache``: every sync visits all routes in the same
order, and an LRU smaller than the route count then evicts each entry just
before it is needed again (no hit at all). Here entries are kept per round:
whatever a round used survives, and entries no round used are dropped once
they outnumber the live ones. Two routers in one process (tests, shards)
share a memo without evicting each other.

Keys must capture everything the value depends on. Cluster objects are
keyed by ``(uid, resourceVersion)`` (the store changes the version on every
write); objects without a version (built in tests) are never memoised.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

from shiftnet.api.base import Resource

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

SLACK = 4096

ObjectVersion = tuple[str, str, str, str]  # (namespace, name, uid, resourceVersion)


def object_version(obj: Resource) -> ObjectVersion | None:
    """The identity of one stored version of ``obj``; None when it has no resourceVersion."""
    meta = obj.metadata
    if not meta.resource_version:
        return None
    return (meta.namespace or "", meta.name, meta.uid or "", meta.resource_version)


class RoundMemo(Generic[K, V]):
    """``get``/``put`` a value per key; ``end_round()`` forgets what recent rounds did not use."""

    def __init__(self, slack: int = SLACK) -> None:
        self._values: dict[K, V] = {}
        self._used: set[K] = set()
        self._slack = slack

    def get(self, key: K) -> V | None:
        value = self._values.get(key)
        if value is not None:
            self._used.add(key)
        return value

    def put(self, key: K, value: V) -> V:
        self._values[key] = value
        self._used.add(key)
        return value

    def end_round(self) -> None:
        used, self._used = self._used, set()
        if len(self._values) > 2 * len(used) + self._slack:
            # list() copies atomically, so a render in another thread cannot break this.
            self._values = {k: v for k, v in list(self._values.items()) if k in used}

    def clear(self) -> None:
        self._values.clear()
        self._used.clear()

    def __len__(self) -> int:
        return len(self._values)
