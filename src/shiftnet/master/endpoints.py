"""Endpoints controller: the single writer of Endpoints for Services with a selector.

Every change of a Service, of a pod (labels, IP, readiness, deletion) or of an
Endpoints object marks the affected Service keys dirty in a
:class:`KeyedWorkQueue`; one sync per dirty key recomputes the Endpoints with
the pure :func:`desired_endpoints` from the informer caches and writes only
when the result differs. A burst of pod events for one Service therefore costs
one write, and a change shows up after one store round trip (tens of
milliseconds), not after a resync period.

Services without a selector keep the Endpoints their user wrote: this
controller never touches them, and does not delete them when the Service goes
away (it only deletes Endpoints it wrote).
"""

from __future__ import annotations

import logging

from shiftnet.api import Endpoints, Pod, Service
from shiftnet.client import Client
from shiftnet.errors import AlreadyExists, Conflict, NotFound
from shiftnet.informer import Informers
from shiftnet.master import metrics
from shiftnet.master.endpoints_model import (
    CONTROLLER,
    MANAGED_BY,
    desired_endpoints,
    has_selector,
    managed,
    same_content,
    selects,
)
from shiftnet.master.workqueue import KeyedWorkQueue

log = logging.getLogger(__name__)

Key = tuple[str, str]


class EndpointsController:
    def __init__(self, client: Client, informers: Informers) -> None:
        self.client = client
        self.services = informers.informer(Service)
        self.pods = informers.informer(Pod)
        self.endpoints = informers.informer(Endpoints)
        self.services.add_handler(self._on_service)
        self.pods.add_handler(self._on_pod)
        self.endpoints.add_handler(self._on_endpoints)
        self._managed: set[Key] = set()  # Services whose Endpoints we write
        self.queue: KeyedWorkQueue[Key] = KeyedWorkQueue(self._sync, workers=4, name="endpoints")
        self.writes = 0

    async def start(self) -> None:
        """Call after the informers synced."""
        for s in self.services.list():
            if has_selector(s):
                self._managed.add(s.key)
                self.queue.add(s.key)
        for ep in self.endpoints.list():
            if managed(ep) and self.services.get(*ep.key) is None:
                self._managed.add(ep.key)  # its Service went while we were down
                self.queue.add(ep.key)
        await self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    # ------------------------------------------------------------ events

    def _on_service(self, etype: str, old: Service | None, new: Service | None) -> None:
        svc = new or old
        if svc is None:
            return
        if (old is not None and has_selector(old)) or (new is not None and has_selector(new)):
            self._managed.add(svc.key)
        self.queue.add(svc.key)

    def _on_pod(self, etype: str, old: Pod | None, new: Pod | None) -> None:
        pod = new or old
        if pod is None:
            return
        ns = pod.namespace or ""
        for svc in self.services.list(ns):
            if (old is not None and selects(svc, old)) or (new is not None and selects(svc, new)):
                self.queue.add(svc.key)

    def _on_endpoints(self, etype: str, old: Endpoints | None, new: Endpoints | None) -> None:
        ep = new or old
        if ep is not None and ep.key in self._managed:
            self.queue.add(ep.key)  # someone else changed what we own: put it back

    # ------------------------------------------------------------ sync

    async def _sync(self, key: Key) -> None:
        ns, name = key
        svc = self.services.get(ns, name)
        if svc is None or not has_selector(svc):
            if key in self._managed:
                self._managed.discard(key)
                if svc is None:
                    try:
                        await self.client.delete(Endpoints, ns, name)
                        log.info("endpoints deleted service=%s/%s", ns, name)
                    except NotFound:
                        pass
            return
        self._managed.add(key)
        want = desired_endpoints(svc, self.pods.list(ns))
        have = self.endpoints.get(ns, name)
        if have is not None and same_content(have, want):
            return
        if have is None:
            try:
                await self.client.create(want)
                self._written(key, want)
                return
            except AlreadyExists:
                pass  # our cache lags: update below
        if have is not None:
            update = have.model_copy(deep=True)
            update.subsets = want.subsets
            update.metadata.labels = want.metadata.labels
            update.metadata.annotations[MANAGED_BY] = CONTROLLER
            try:
                await self.client.update(update)
                self._written(key, want)
                return
            except Conflict:
                pass

        def fn(ep: Endpoints) -> Endpoints:
            ep.subsets = want.subsets
            ep.metadata.labels = want.metadata.labels
            ep.metadata.annotations[MANAGED_BY] = CONTROLLER
            return ep

        if await self.client.mutate(Endpoints, ns, name, fn) is not None:
            self._written(key, want)

    def _written(self, key: Key, ep: Endpoints) -> None:
        self.writes += 1
        metrics.ENDPOINTS_WRITES.inc()
        ready = sum(len(s.addresses) for s in ep.subsets)
        not_ready = sum(len(s.not_ready_addresses) for s in ep.subsets)
        log.debug(
            "endpoints written service=%s/%s ready=%d not_ready=%d",
            key[0],
            key[1],
            ready,
            not_ready,
        )
