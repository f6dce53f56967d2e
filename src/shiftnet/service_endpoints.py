"""Each Service's endpoints as the proxy, router and DNS read them: from its EndpointSlices.

A Service that has slices is read from them (joined by the pure
:func:`shiftnet.api.slice_view.endpoints_from_slices`); one that has none is
read from its Endpoints object. Slices the mirroring controller copied from
an Endpoints (``managed-by: endpointslicemirroring-controller.k8s.io``) count
as none: the Endpoints they copy is read instead, so a user-written Endpoints
serves the same before, while and after its slices are written (several
slices appear one by one), beyond the 1000 addresses a subset they hold.

Components ask :meth:`ServiceEndpoints.get` in place of the Endpoints
informer and register their handler here: it is called with the Service's
new view (an Endpoints named as the Service) whenever that view may have
changed, and not at all for an Endpoints change that slices hide.
"""

from __future__ import annotations

import inspect
import logging

from shiftnet.api import Endpoints, EndpointSlice
from shiftnet.api.base import ObjectMeta
from shiftnet.api.discovery import MANAGED_BY_LABEL, MIRRORING_CONTROLLER
from shiftnet.api.slice_view import endpoints_from_slices
from shiftnet.informer import Handler, Informer, Informers

log = logging.getLogger(__name__)

Key = tuple[str, str]


def _read(es: EndpointSlice | None) -> EndpointSlice | None:
    """``es``, or None when it only mirrors an Endpoints (that one is read)."""
    if es is None or es.metadata.labels.get(MANAGED_BY_LABEL) == MIRRORING_CONTROLLER:
        return None
    return es


class ServiceEndpoints:
    def __init__(self, informers: Informers, *, terminating_fallback: bool = False) -> None:
        self.terminating_fallback = terminating_fallback
        self.endpoints: Informer[Endpoints] = informers.informer(Endpoints)
        self.slices: Informer[EndpointSlice] = informers.informer(EndpointSlice)
        self._by_service: dict[Key, dict[str, EndpointSlice]] = {}
        self._views: dict[Key, Endpoints] = {}  # joined slices, memoised until they change
        self._handlers: list[Handler] = []
        self.endpoints.add_handler(self._on_endpoints)
        self.slices.add_handler(self._on_slice)

    @property
    def revision(self) -> int:
        return max(self.endpoints.revision, self.slices.revision)

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def get(self, namespace: str | None, name: str) -> Endpoints | None:
        key = (namespace or "", name)
        parts = self._by_service.get(key)
        if not parts:
            return self.endpoints.get(*key)
        view = self._views.get(key)
        if view is None:
            view = endpoints_from_slices(
                key[0], name, parts.values(), terminating_fallback=self.terminating_fallback
            )
            self._views[key] = view
        return view

    def list(self) -> list[Endpoints]:
        keys = sorted(
            {*self._by_service, *((e.namespace or "", e.name) for e in self.endpoints.list())}
        )
        found = (self.get(*k) for k in keys)
        return [e for e in found if e is not None]

    # ------------------------------------------------------------ events

    async def _notify(self, etype: str, key: Key) -> None:
        view = self.get(*key)
        if view is None:  # neither slices nor Endpoints: name the Service all the same
            view = Endpoints(metadata=ObjectMeta(name=key[1], namespace=key[0]))
        for h in self._handlers:
            res = h(etype, None, view)
            if inspect.isawaitable(res):
                await res

    async def _on_endpoints(self, etype: str, old: Endpoints | None, new: Endpoints | None) -> None:
        ep = new or old
        if ep is None:
            return
        key = (ep.namespace or "", ep.name)
        if self._by_service.get(key):
            return  # the Service is read from its slices
        await self._notify(etype, key)

    async def _on_slice(
        self, etype: str, old: EndpointSlice | None, new: EndpointSlice | None
    ) -> None:
        old, new = _read(old), _read(new)
        touched: set[Key] = set()
        if old is not None and old.service_name:
            key = (old.namespace or "", old.service_name)
            parts = self._by_service.get(key, {})
            parts.pop(old.name, None)
            if not parts:
                self._by_service.pop(key, None)
            touched.add(key)
        if new is not None and new.service_name and etype != "DELETED":
            key = (new.namespace or "", new.service_name)
            self._by_service.setdefault(key, {})[new.name] = new
            touched.add(key)
        for key in sorted(touched):
            self._views.pop(key, None)
            await self._notify("MODIFIED", key)
