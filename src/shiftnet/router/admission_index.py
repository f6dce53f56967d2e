"""Admission kept up to date one route at a time, so a Route event never costs 10,000.

Why it can be incremental: host claims only compete inside one parent
domain. An exact route competes with the other routes of its host and with
the wildcard routes of its domain; a wildcard route competes with every
route of its domain. So when routes change, only the candidates of their
hosts are decided again (all candidates of their domain while that domain
has, or had, a wildcard candidate), oldest first, with the very functions
:func:`shiftnet.router.admission.admit` uses for everything at once. The
decisions therefore always equal ``admit()`` over the same routes
(``tests/unit/router/test_incremental.py`` checks it after random
changes).

Pure: no I/O, no clocks (the caller passes the time certificates are judged at).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping

from shiftnet.api import Namespace, Route
from shiftnet.router.admission import (
    AdmissionResult,
    Candidate,
    Decision,
    RouteKey,
    decide_claims,
    precheck,
    route_key,
)
from shiftnet.router.config import RouterConfig


class AdmissionIndex:
    """This router's decisions on the routes it has seen, and what a change re-decides."""

    def __init__(self, config: RouterConfig) -> None:
        self.config = config
        self.decisions: dict[RouteKey, Decision] = {}
        self.admitted: dict[RouteKey, Route] = {}
        self._candidates: dict[RouteKey, Candidate] = {}
        self._by_host: dict[str, set[RouteKey]] = {}  # exact candidates
        self._by_domain: dict[str, set[RouteKey]] = {}  # every candidate
        self._wildcards: dict[str, int] = {}  # domain -> wildcard candidates
        # Routes whose certificate Secret cannot be served: (reason, message), set by the caller.
        self.refusals: dict[RouteKey, tuple[str, str]] = {}

    def reset(
        self,
        routes: Iterable[Route],
        namespaces: Iterable[Namespace],
        *,
        now: dt.datetime | None = None,
    ) -> set[RouteKey]:
        """Decide every route afresh (start-up, a Namespace change); returns the changed keys."""
        before = self.decisions
        self.decisions, self.admitted = {}, {}
        self._candidates, self._by_host, self._by_domain, self._wildcards = {}, {}, {}, {}
        ns_by_name = {n.metadata.name: n for n in namespaces}
        self.update({route_key(r): r for r in routes}, ns_by_name, now=now)
        changed = {
            k
            for k in before.keys() | self.decisions.keys()
            if before.get(k) != self.decisions.get(k)
        }
        return changed

    def update(
        self,
        changes: Mapping[RouteKey, Route | None],
        namespaces: Mapping[str, Namespace],
        *,
        now: dt.datetime | None = None,
    ) -> set[RouteKey]:
        """Apply added/changed (Route) and deleted (None) routes; returns keys decided anew.

        The returned keys include every route whose decision may have moved;
        callers compare decisions when they need to know which really did.
        ``now`` is the caller's clock for certificate dates (None: not consulted).
        """
        touched_hosts: dict[str, set[str]] = {}  # domain -> hosts
        whole_domains: set[str] = set()
        decided: set[RouteKey] = set()
        for key, route in changes.items():
            old = self._candidates.pop(key, None)
            if old is not None:
                self._unindex(old)
                self._note(old, touched_hosts, whole_domains)
            self.decisions.pop(key, None)
            self.admitted.pop(key, None)
            decided.add(key)
            if route is None:
                continue
            namespace = namespaces.get(route.metadata.namespace or "")
            verdict = precheck(route, namespace, self.config, self.refusals.get(key), now=now)
            if isinstance(verdict, Decision):
                self.decisions[key] = verdict
            elif verdict is not None:
                self._candidates[key] = verdict
                self._index(verdict)
                self._note(verdict, touched_hosts, whole_domains)
        for domain, hosts in sorted(touched_hosts.items()):
            if domain in whole_domains or self._wildcards.get(domain):
                group = self._by_domain.get(domain, set())
            else:
                group = set().union(*(self._by_host.get(h, set()) for h in hosts))
            decided |= self._decide(group)
        return decided

    def result(self) -> AdmissionResult:
        """Everything, in :func:`admit`'s form (sorted)."""
        return AdmissionResult(
            decisions=dict(sorted(self.decisions.items())),
            admitted=tuple(self.admitted[k] for k in sorted(self.admitted)),
        )

    def refresh(self, route: Route) -> None:
        """Hold ``route`` instead of an older version that differs only in status.

        Status writes (ours, at 10,000 routes) give every route a new version
        that decides nothing; keeping the old object would hold a second copy
        of each route next to the informer's.
        """
        key = route_key(route)
        candidate = self._candidates.get(key)
        if candidate is not None:
            self._candidates[key] = dataclasses.replace(candidate, route=route)
        if key in self.admitted:
            self.admitted[key] = route

    def host_of(self, key: RouteKey) -> str:
        decision = self.decisions.get(key)
        return decision.host if decision is not None else ""

    # ------------------------------------------------------------ internals
    def _decide(self, group: set[RouteKey]) -> set[RouteKey]:
        verdicts = decide_claims((self._candidates[k] for k in group), self.config)
        for key, decision in verdicts.items():
            self.decisions[key] = decision
            if decision.admitted:
                self.admitted[key] = self._candidates[key].route
            else:
                self.admitted.pop(key, None)
        return set(verdicts)

    @staticmethod
    def _note(c: Candidate, hosts: dict[str, set[str]], whole: set[str]) -> None:
        hosts.setdefault(c.domain, set()).add(c.host)
        if c.wildcard:
            whole.add(c.domain)

    def _index(self, c: Candidate) -> None:
        self._by_domain.setdefault(c.domain, set()).add(c.key)
        if c.wildcard:
            self._wildcards[c.domain] = self._wildcards.get(c.domain, 0) + 1
        else:
            self._by_host.setdefault(c.host, set()).add(c.key)

    def _unindex(self, c: Candidate) -> None:
        _discard(self._by_domain, c.domain, c.key)
        if c.wildcard:
            left = self._wildcards.get(c.domain, 0) - 1
            if left > 0:
                self._wildcards[c.domain] = left
            else:
                self._wildcards.pop(c.domain, None)
        else:
            _discard(self._by_host, c.host, c.key)


def _discard(index: dict[str, set[RouteKey]], name: str, key: RouteKey) -> None:
    keys = index.get(name)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[name]
