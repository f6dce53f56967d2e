"""Which EndpointSlices a slice controller owns, per Service, kept from slice events.

Both slice controllers (the selector one and the mirroring one) need the same
index: the informer holds every slice, a sync needs only the slices of one
Service that carry its own ``managed-by``. Pure: fed the informer's events.
"""

from __future__ import annotations

from collections.abc import Callable

from shiftnet.api.discovery import EndpointSlice

Key = tuple[str, str]  # (namespace, service name)


class OwnedSlices:
    def __init__(self, mine: Callable[[EndpointSlice], bool]) -> None:
        self._mine = mine
        self._names: dict[Key, set[str]] = {}

    def observe(
        self, etype: str, old: EndpointSlice | None, new: EndpointSlice | None
    ) -> list[Key]:
        """Follow one slice event; the Services whose owned slices it touched."""
        touched: list[Key] = []
        for es in (old, new):
            if es is None or not self._mine(es) or not es.service_name:
                continue
            key = (es.namespace or "", es.service_name)
            names = self._names.setdefault(key, set())
            if es is new and etype != "DELETED":
                names.add(es.name)
            else:
                names.discard(es.name)
            if not names:
                del self._names[key]
            touched.append(key)
        return touched

    def names(self, key: Key) -> list[str]:
        return sorted(self._names.get(key, ()))

    def __contains__(self, key: Key) -> bool:
        return key in self._names
