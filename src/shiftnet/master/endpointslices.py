"""EndpointSlice controller: the single writer of the slices of Services with a selector.

Beside the Endpoints controller and driven the same way: a change of a
Service, of a selected pod or of a slice this controller owns marks the
Service dirty in a :class:`KeyedWorkQueue`; one sync per dirty key computes
the :func:`plan_slices` from the informer caches and writes only what
differs. Slices it did not write (another ``managed-by``) are never touched;
its own slices of a Service that is gone or lost its selector are deleted.
"""

from __future__ import annotations

import logging
import secrets
import time

from shiftnet.api import Pod, Service
from shiftnet.api.discovery import EndpointSlice
from shiftnet.client import Client
from shiftnet.errors import AlreadyExists, Conflict, NotFound
from shiftnet.informer import Informers
from shiftnet.master import metrics
from shiftnet.master.endpoints_model import has_selector, selects
from shiftnet.master.endpointslices_model import managed_slice, plan_slices
from shiftnet.master.own_writes import OwnWrites
from shiftnet.master.owned_slices import OwnedSlices
from shiftnet.master.workqueue import KeyedWorkQueue

log = logging.getLogger(__name__)

Key = tuple[str, str]

# generateName's suffix: 5 characters without vowels or look-alikes, as upstream
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
NAME_ATTEMPTS = 5


def generated_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


class EndpointSliceController:
    def __init__(self, client: Client, informers: Informers) -> None:
        self.client = client
        self.services = informers.informer(Service)
        self.pods = informers.informer(Pod)
        self.slices = informers.informer(EndpointSlice)
        self.services.add_handler(self._on_service)
        self.pods.add_handler(self._on_pod)
        self.slices.add_handler(self._on_slice)
        # (namespace, service) -> names of the slices this controller owns
        self._owned = OwnedSlices(managed_slice)
        # our writes the slice cache does not show yet: no sync plans from it until it does
        self._own_writes = OwnWrites(time.monotonic)
        self.queue: KeyedWorkQueue[Key] = KeyedWorkQueue(
            self._sync, workers=4, name="endpointslices"
        )
        self.writes = 0

    async def start(self) -> None:
        """Call after the informers synced."""
        for es in self.slices.list():
            self._on_slice("ADDED", None, es)
        for s in self.services.list():
            if has_selector(s):
                self.queue.add(s.key)
        await self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    # ------------------------------------------------------------ events

    def _on_service(self, etype: str, old: Service | None, new: Service | None) -> None:
        svc = new or old
        if svc is not None:
            self.queue.add(svc.key)

    def _on_pod(self, etype: str, old: Pod | None, new: Pod | None) -> None:
        pod = new or old
        if pod is None:
            return
        for svc in self.services.list(pod.namespace or ""):
            if (old is not None and selects(svc, old)) or (new is not None and selects(svc, new)):
                self.queue.add(svc.key)

    def _on_slice(self, etype: str, old: EndpointSlice | None, new: EndpointSlice | None) -> None:
        for key in self._owned.observe(etype, old, new):
            self.queue.add(key)

    # ------------------------------------------------------------ sync

    def _existing(self, key: Key) -> list[EndpointSlice]:
        ns = key[0]
        found = (self.slices.get(ns, n) for n in self._owned.names(key))
        return [es for es in found if es is not None]

    async def _sync(self, key: Key) -> None:
        ns, name = key
        svc = self.services.get(ns, name)
        existing = self._existing(key)
        cached = {es.name: es.metadata.resource_version for es in existing}
        if self._own_writes.stale(key, cached):
            self.queue.retry_later(key)  # the slice event that catches the cache up also requeues
            return
        if svc is None or not has_selector(svc):
            for es in existing:
                await self._delete(ns, es.name, key)
            return
        plan = plan_slices(svc, self.pods.list(ns), existing)
        for es in plan.update:
            try:
                done = await self.client.update(es)
            except (Conflict, NotFound):
                self.queue.add(key)  # our cache lags: the rest of the plan is stale too
                return
            self._written(key, "updated", done)
        for es in plan.create:
            await self._create(key, es)
        for gone in plan.delete:
            await self._delete(ns, gone, key)

    async def _create(self, key: Key, es: EndpointSlice) -> None:
        prefix = es.metadata.generate_name or f"{key[1]}-"
        for _ in range(NAME_ATTEMPTS):
            es.metadata.name = generated_name(prefix)
            try:
                done = await self.client.create(es)
                self._written(key, "created", done)
                return
            except AlreadyExists:
                continue
        log.warning("endpointslice not created service=%s/%s reason=names-taken", *key)

    async def _delete(self, ns: str, name: str, key: Key) -> None:
        try:
            await self.client.delete(EndpointSlice, ns, name)
            log.debug("endpointslice deleted slice=%s/%s", ns, name)
        except NotFound:
            pass
        self._own_writes.deleted(key, name)

    def _written(self, key: Key, how: str, es: EndpointSlice) -> None:
        self.writes += 1
        self._own_writes.wrote(key, es.name, es.metadata.resource_version)
        metrics.ENDPOINTSLICE_WRITES.inc()
        log.debug(
            "endpointslice %s service=%s/%s slice=%s endpoints=%d",
            how,
            key[0],
            key[1],
            es.name,
            len(es.endpoints),
        )
