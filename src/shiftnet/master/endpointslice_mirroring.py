"""EndpointSlice mirroring: the single writer of the slices copied from user-written Endpoints.

A Service without a selector has the endpoints its user writes into an
Endpoints object; slice readers (``kubectl get endpointslices``, clients
that follow Kubernetes' lead) would see nothing for it. This controller keeps
the slices Kubernetes' EndpointSliceMirroring controller keeps, planned by
:func:`plan_mirror`. Built as the EndpointSlice controller: a change of the
Endpoints, of its Service or of a slice this controller wrote marks the key
(namespace, name) dirty in a :class:`KeyedWorkQueue`; one sync per dirty key
writes only what differs, and waits while the slice cache lags its own
writes (:class:`OwnWrites`). Slices it did not write are never touched.
"""

from __future__ import annotations

import logging
import time

from shiftnet.api import Endpoints, Service
from shiftnet.api.discovery import EndpointSlice
from shiftnet.client import Client
from shiftnet.errors import AlreadyExists, Conflict, NotFound
from shiftnet.events.recorder import DISCARD, EventSink
from shiftnet.informer import Informers
from shiftnet.master import metrics
from shiftnet.master.endpoints_model import has_selector
from shiftnet.master.endpointslice_mirroring_model import (
    MAX_ENDPOINTS_PER_SUBSET,
    MirrorPlan,
    mirrored_slice,
    plan_mirror,
)
from shiftnet.master.endpointslices import NAME_ATTEMPTS, generated_name
from shiftnet.master.own_writes import OwnWrites
from shiftnet.master.owned_slices import OwnedSlices
from shiftnet.master.workqueue import KeyedWorkQueue

log = logging.getLogger(__name__)

Key = tuple[str, str]


class EndpointSliceMirroringController:
    def __init__(
        self,
        client: Client,
        informers: Informers,
        *,
        max_per_subset: int = MAX_ENDPOINTS_PER_SUBSET,
        workers: int = 4,
    ) -> None:
        self.client = client
        self.max_per_subset = max_per_subset
        self.events: EventSink = DISCARD
        self.services = informers.informer(Service)
        self.endpoints = informers.informer(Endpoints)
        self.slices = informers.informer(EndpointSlice)
        self.services.add_handler(self._on_service)
        self.endpoints.add_handler(self._on_endpoints)
        self.slices.add_handler(self._on_slice)
        # (namespace, endpoints name) -> names of the slices this controller wrote
        self._owned = OwnedSlices(mirrored_slice)
        self._own_writes = OwnWrites(time.monotonic)
        # the Endpoints resourceVersion last warned about, so one version warns once
        self._warned: dict[Key, str | None] = {}
        self.queue: KeyedWorkQueue[Key] = KeyedWorkQueue(
            self._sync, workers=workers, name="endpointslice-mirroring"
        )
        self.writes = 0

    async def start(self) -> None:
        """Call after the informers synced: mirrors what is there, drops what is stale."""
        for es in self.slices.list():
            self._on_slice("ADDED", None, es)
        for s in self.services.list():
            if not has_selector(s):
                self.queue.add(s.key)
        await self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    # ------------------------------------------------------------ events

    def _on_service(self, etype: str, old: Service | None, new: Service | None) -> None:
        # only a Service without a selector, or one that gains or loses it, matters
        if any(s is not None and not has_selector(s) for s in (old, new)):
            svc = new or old
            if svc is not None:
                self.queue.add(svc.key)

    def _on_endpoints(self, etype: str, old: Endpoints | None, new: Endpoints | None) -> None:
        ep = new or old
        if ep is None:
            return
        key = (ep.namespace or "", ep.name)
        svc = self.services.get(*key)
        # the Endpoints controller's own (a Service with a selector) are none of ours
        if key in self._owned or (svc is not None and not has_selector(svc)):
            self.queue.add(key)

    def _on_slice(self, etype: str, old: EndpointSlice | None, new: EndpointSlice | None) -> None:
        for key in self._owned.observe(etype, old, new):
            self.queue.add(key)

    # ------------------------------------------------------------ sync

    def _existing(self, key: Key) -> list[EndpointSlice]:
        found = (self.slices.get(key[0], n) for n in self._owned.names(key))
        return [es for es in found if es is not None]

    async def _sync(self, key: Key) -> None:
        existing = self._existing(key)
        cached = {es.name: es.metadata.resource_version for es in existing}
        if self._own_writes.stale(key, cached):
            self.queue.retry_later(key)  # the slice event that catches the cache up also requeues
            return
        ep = self.endpoints.get(*key)
        plan = plan_mirror(self.services.get(*key), ep, existing, self.max_per_subset)
        if ep is not None and plan.groups:
            self._warn(key, ep, plan)
        else:
            self._warned.pop(key, None)
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
            await self._delete(key, gone)

    def _warn(self, key: Key, ep: Endpoints, plan: MirrorPlan) -> None:
        """Upstream's Warning Events on the Endpoints, once per version of it."""
        version = ep.metadata.resource_version
        if self._warned.get(key, "") == version:
            return
        self._warned[key] = version
        if plan.invalid:
            self.events.warning(
                ep,
                "InvalidIPAddress",
                f"Skipped {plan.invalid} invalid IP addresses when mirroring to EndpointSlices",
            )
        if plan.over_capacity:
            log.warning(
                "endpoints not fully mirrored endpoints=%s/%s skipped=%d max_per_subset=%d",
                key[0],
                key[1],
                plan.over_capacity,
                self.max_per_subset,
            )
            self.events.warning(
                ep,
                "TooManyAddressesToMirror",
                f"A max of {self.max_per_subset} addresses can be mirrored to EndpointSlices "
                f"per Endpoints subset. {plan.over_capacity} addresses were skipped",
            )

    async def _create(self, key: Key, es: EndpointSlice) -> None:
        prefix = es.metadata.generate_name or f"{key[1]}-"
        for _ in range(NAME_ATTEMPTS):
            es.metadata.name = generated_name(prefix)
            try:
                done = await self.client.create(es)
            except AlreadyExists:
                continue
            self._written(key, "created", done)
            return
        log.warning("endpointslice not created endpoints=%s/%s reason=names-taken", *key)

    async def _delete(self, key: Key, name: str) -> None:
        try:
            await self.client.delete(EndpointSlice, key[0], name)
            log.debug("mirrored endpointslice deleted slice=%s/%s", key[0], name)
        except NotFound:
            pass
        self._own_writes.deleted(key, name)

    def _written(self, key: Key, how: str, es: EndpointSlice) -> None:
        self.writes += 1
        self._own_writes.wrote(key, es.name, es.metadata.resource_version)
        metrics.ENDPOINTSLICE_MIRRORING_WRITES.inc()
        log.debug(
            "mirrored endpointslice %s endpoints=%s/%s slice=%s addresses=%d",
            how,
            key[0],
            key[1],
            es.name,
            len(es.endpoints),
        )
