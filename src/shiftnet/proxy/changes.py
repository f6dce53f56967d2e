"""ProxyChanges: which services changed since the last sync, and the table they give.

Informer handlers only mark a service dirty (cheap, any number of times); the
coalesced sync then recomputes just the dirty services' entries and diffs them,
so a one-service change costs one service's work, not the whole table's.
"""

from __future__ import annotations

from collections.abc import Callable

from shiftnet.api import Endpoints, Service
from shiftnet.proxy.model import (
    Problem,
    ServiceEntry,
    ServiceTable,
    TableDiff,
    diff_tables,
    merge_entries,
    service_entries,
)

Key = tuple[str, str]


class ProxyChanges:
    def __init__(self) -> None:
        self._dirty: set[Key] = set()
        self._per_service: dict[Key, tuple[list[ServiceEntry], list[Problem]]] = {}
        self.table = ServiceTable()

    def mark(self, namespace: str | None, name: str) -> None:
        self._dirty.add((namespace or "default", name))

    @property
    def pending(self) -> bool:
        return bool(self._dirty)

    def take(
        self,
        get_service: Callable[[str, str], Service | None],
        get_endpoints: Callable[[str, str], Endpoints | None],
    ) -> tuple[ServiceTable, TableDiff]:
        """Recompute the dirty services; return the new table and what changed."""
        dirty, self._dirty = self._dirty, set()
        for key in sorted(dirty):
            svc = get_service(*key)
            if svc is None:
                self._per_service.pop(key, None)
            else:
                self._per_service[key] = service_entries(svc, get_endpoints(*key))
        new = merge_entries(self._per_service[k] for k in sorted(self._per_service))
        diff = diff_tables(self.table, new)
        self.table = new
        return new, diff
