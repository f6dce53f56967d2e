"""ProxyChanges: which services changed since the last sync, and the table they give.

Informer handlers only mark a service dirty (cheap, any number of times); the
coalesced sync then recomputes just the dirty services' entries and diffs only
their ports, so a one-service change costs one service's work, not the whole
table's. Address conflicts resolve as in :func:`build_service_table`: a
ClusterIP:port goes to the service whose ClusterIP it is before any that names
it as an external address, then to the service that sorts first by
namespace/name; a service that loses an address waits for it and is
recomputed when it is freed.
"""

from __future__ import annotations

from collections.abc import Callable

from shiftnet.api import Endpoints, Service
from shiftnet.proxy.model import (
    Problem,
    ServiceEntry,
    ServicePortName,
    ServiceTable,
    TableDiff,
    claim_field,
    claim_text,
    service_entries,
)

Key = tuple[str, str]
Vip = tuple[str, str, int]


class ProxyChanges:
    def __init__(self, node_name: str | None = None) -> None:
        self.node_name = node_name  # endpoints on this node are an entry's local_backends
        self._dirty: set[Key] = set()
        self._accepted: dict[Key, list[ServiceEntry]] = {}
        self._problems: dict[Key, list[Problem]] = {}
        self._entries: dict[ServicePortName, ServiceEntry] = {}
        self._owner: dict[Vip, ServicePortName] = {}
        self._waiting: dict[Vip, set[Key]] = {}
        self.table = ServiceTable()

    def mark(self, namespace: str | None, name: str) -> None:
        self._dirty.add((namespace or "default", name))

    @property
    def pending(self) -> bool:
        return bool(self._dirty)

    def _release(self, key: Key, queue: list[Key]) -> None:
        for entry in self._accepted.pop(key, []):
            self._entries.pop(entry.id, None)
            for claim in entry.claims:
                if self._owner.get(claim) == entry.id:
                    del self._owner[claim]
                    queue.extend(sorted(self._waiting.pop(claim, set()) - {key}))
        for waiters in self._waiting.values():
            waiters.discard(key)

    def take(
        self,
        get_service: Callable[[str, str], Service | None],
        get_endpoints: Callable[[str, str], Endpoints | None],
    ) -> tuple[ServiceTable, TableDiff]:
        """Recompute the dirty services; return the new table and what changed."""
        queue = sorted(self._dirty)
        self._dirty = set()
        before: dict[ServicePortName, ServiceEntry] = {}
        touched: set[Key] = set()
        while queue:
            key = queue.pop(0)
            if key not in touched:
                touched.add(key)
                for entry in self._accepted.get(key, []):
                    before[entry.id] = entry
            self._release(key, queue)
            svc = get_service(*key)
            if svc is None:
                self._problems.pop(key, None)
                continue
            entries, problems = service_entries(svc, get_endpoints(*key), self.node_name)
            accepted: list[ServiceEntry] = []
            for entry in entries:
                refused = False
                for claim in entry.claims:
                    holder = self._owner.get(claim)
                    if holder is None or holder.service == key:
                        continue
                    held = self._entries.get(holder)
                    theirs = (held is None or claim != held.vip, holder.service)
                    if (claim != entry.vip, key) < theirs:  # ours by rank: take it over
                        queue.append(holder.service)
                    else:
                        self._waiting.setdefault(claim, set()).add(key)
                        problems.append(
                            Problem(
                                key[0],
                                key[1],
                                claim_field(entry, claim),
                                f"{claim_text(claim)} is already used by {holder}",
                            )
                        )
                        refused = True
                        break
                if refused:
                    continue
                for claim in entry.claims:
                    self._owner[claim] = entry.id
                self._entries[entry.id] = entry
                accepted.append(entry)
            self._accepted[key] = accepted
            self._problems[key] = problems
        after = {e.id: e for key in touched for e in self._accepted.get(key, [])}
        added = tuple(after[k] for k in sorted(after.keys() - before.keys()))
        removed = tuple(before[k] for k in sorted(before.keys() - after.keys()))
        changed = tuple(
            (before[k], after[k])
            for k in sorted(before.keys() & after.keys())
            if before[k] != after[k]
        )
        all_problems = tuple(
            sorted(
                (p for ps in self._problems.values() for p in ps),
                key=lambda p: (p.namespace, p.name, p.field),
            )
        )
        self.table = ServiceTable(dict(self._entries), all_problems)
        return self.table, TableDiff(added, removed, changed)
