"""Ingress-to-route controller: the single writer of the Routes that stand for Ingresses.

Driven like the other master controllers: a change of an Ingress, of a Route
it controls, of an IngressClass, or of a Service or Secret in its namespace
marks the Ingress dirty in a :class:`KeyedWorkQueue`; one sync per dirty key
computes :func:`plan_ingress` from the informer caches and writes only what
differs (so a hand edit of a generated Route is put back at once). Routes
whose Ingress is gone (or was re-created under the same name) are deleted:
shiftnet has no garbage collector, so this controller does its part of one.

An Ingress path that gets no Route is reported as OpenShift's controller
reports it: an Event ``IncompleteIngressToRouteRules`` (type Normal, as
OpenShift records it) on the Ingress naming each rule and path and why, and a
warning line in the master's log. Both are written when the set of reasons
changes, not on every resync, so a steady Ingress does not grow its Event.
An Ingress stored around validation, whose status therefore cannot be written
back, is reported the same way and not retried: it is synced again when it
changes.
"""

from __future__ import annotations

import logging
import secrets as random_names
import time

from shiftnet.api import Ingress, IngressClass, Route, Secret, Service
from shiftnet.api.base import ObjectMeta
from shiftnet.api.event import NORMAL
from shiftnet.api.ingress import IngressClassSpec, IngressLoadBalancerIngress
from shiftnet.client import Client
from shiftnet.errors import AlreadyExists, Conflict, InvalidObject, NotFound
from shiftnet.events.recorder import DISCARD, EventSink
from shiftnet.informer import Informers
from shiftnet.master.ingress_model import (
    CONTROLLER,
    DEFAULT_CLASS,
    manages,
    owner_ingress,
    plan_ingress,
)
from shiftnet.master.own_writes import OwnWrites
from shiftnet.master.workqueue import KeyedWorkQueue

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, ingress name)

# generateName's suffix alphabet (no vowels, no look-alikes), as upstream's
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
NAME_ATTEMPTS = 3  # OpenShift retries a name collision three times
INCOMPLETE = "IncompleteIngressToRouteRules"  # OpenShift's reason


def route_name(prefix: str) -> str:
    return prefix + "".join(random_names.choice(_SUFFIX_ALPHABET) for _ in range(5))


class IngressToRouteController:
    def __init__(self, client: Client, informers: Informers, *, workers: int = 4) -> None:
        self.client = client
        self.ingresses = informers.informer(Ingress)
        self.classes = informers.informer(IngressClass)
        self.services = informers.informer(Service)
        self.secrets = informers.informer(Secret)
        self.routes = informers.informer(Route)
        self.ingresses.add_handler(self._on_ingress)
        self.classes.add_handler(self._on_class)
        self.services.add_handler(self._on_namespaced)
        self.secrets.add_handler(self._on_namespaced)
        self.routes.add_handler(self._on_route)
        self._owned: dict[Key, set[str]] = {}
        # our Route writes the route cache does not show yet: no sync plans from it until it does
        self._own_writes = OwnWrites(time.monotonic)
        # per Ingress: (uid, reasons) last reported, so a re-created Ingress is told again
        self._reported: dict[Key, tuple[str, tuple[str, ...]]] = {}
        self.events: EventSink = DISCARD
        self.queue: KeyedWorkQueue[Key] = KeyedWorkQueue(
            self._sync, workers=workers, name="ingress-to-route"
        )
        self.writes = 0

    async def start(self) -> None:
        """Call after the informers synced."""
        await self.ensure_default_class()
        for route in self.routes.list():
            self._on_route("ADDED", None, route)
        for ing in self.ingresses.list():
            self.queue.add(ing.key)
        await self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    async def ensure_default_class(self) -> None:
        """IngressClass ``openshift-default`` (controller ``openshift.io/ingress-to-route``),
        as OpenShift's ingress operator provides it; an existing one is never changed."""
        if self.classes.get(None, DEFAULT_CLASS) is not None:
            return
        wanted = IngressClass(
            metadata=ObjectMeta(name=DEFAULT_CLASS), spec=IngressClassSpec(controller=CONTROLLER)
        )
        try:
            await self.client.create(wanted)
            log.info("ingressclass created name=%s controller=%s", DEFAULT_CLASS, CONTROLLER)
        except AlreadyExists:
            pass

    # ------------------------------------------------------------ events

    def _on_ingress(self, etype: str, old: Ingress | None, new: Ingress | None) -> None:
        ing = new or old
        if ing is not None:
            self.queue.add(ing.key)

    def _on_class(self, etype: str, old: IngressClass | None, new: IngressClass | None) -> None:
        for ing in self.ingresses.list():
            self.queue.add(ing.key)

    def _on_namespaced(
        self, etype: str, old: Service | Secret | None, new: Service | Secret | None
    ) -> None:
        obj = new or old
        if obj is not None:
            for ing in self.ingresses.list(obj.namespace or ""):
                self.queue.add(ing.key)

    def _on_route(self, etype: str, old: Route | None, new: Route | None) -> None:
        for route in (old, new):
            owner = owner_ingress(route) if route is not None else None
            if route is None or owner is None:
                continue
            key = (route.namespace or "", owner)
            names = self._owned.setdefault(key, set())
            if route is new and etype != "DELETED":
                names.add(route.name)
            else:
                names.discard(route.name)
            if not names:
                del self._owned[key]
            self.queue.add(key)

    # ------------------------------------------------------------ sync

    def _owned_routes(self, key: Key) -> list[Route]:
        found = (self.routes.get(key[0], n) for n in sorted(self._owned.get(key, ())))
        return [r for r in found if r is not None and owner_ingress(r) == key[1]]

    async def _sync(self, key: Key) -> None:
        ns, name = key
        ing = self.ingresses.get(ns, name)
        owned = self._owned_routes(key)
        if self._own_writes.stale(key, {r.name: r.metadata.resource_version for r in owned}):
            self.queue.retry_later(key)  # the route event that catches the cache up also requeues
            return
        if ing is None:
            self._reported.pop(key, None)
            for route in owned:
                await self._delete(key, route.name, "ingress-deleted")
            return
        uid = ing.metadata.uid
        mine: list[Route] = []
        for route in owned:
            ref_uid = next(
                (r.uid for r in route.metadata.owner_references or () if r.kind == "Ingress"), ""
            )
            if uid and ref_uid and ref_uid != uid:
                await self._delete(key, route.name, "owner-replaced")
            else:
                mine.append(route)
        classes = {c.name: c for c in self.classes.list()}
        if not manages(ing, classes):
            return
        services = {s.name: s for s in self.services.list(ns)}
        secrets = {s.name: s for s in self.secrets.list(ns)}
        plan = plan_ingress(ing, services, secrets, mine)
        current = {r.name: r for r in mine}
        notes = list(plan.incomplete)
        for route in plan.create:
            problem = await self._create(key, route)
            if problem:
                notes.append(problem)
        for route in plan.update:
            try:
                done = await self.client.update(route, current[route.name])
            except (Conflict, NotFound):
                self.queue.add(key)  # our cache lags: plan again from the newer state
                continue
            except InvalidObject as exc:
                notes.append(str(exc))
                continue
            self._written("updated", key, done)
        for gone in plan.delete:
            await self._delete(key, gone, "not-wanted")
        if plan.load_balancer is not None:
            problem = await self._write_status(key, plan.load_balancer)
            if problem:
                notes.append(problem)
        for warning in plan.warnings:
            log.info("ingress annotation ignored ingress=%s/%s reason=%s", ns, name, warning)
        self._report(ing, tuple(notes))

    async def _create(self, key: Key, route: Route) -> str | None:
        prefix = route.metadata.generate_name or f"{key[1]}-"
        route.metadata.generate_name = None
        for _ in range(NAME_ATTEMPTS):
            route.metadata.name = route_name(prefix)
            try:
                done = await self.client.create(route)
            except AlreadyExists:
                continue
            except InvalidObject as exc:
                # e.g. a path on a passthrough route: Route validation says why. Named by its
                # host and path, not the random name it was given, so a resync that meets the
                # same refusal reports nothing new.
                where = f"{exc.field}: " if exc.field else ""
                return (
                    f"the route for host {route.spec.host!r} path {route.spec.path!r} "
                    f"is invalid: {where}{exc.message}"
                )
            self._written("created", key, done)
            return None
        return f"no free name for a route of host {route.spec.host!r}"

    async def _delete(self, key: Key, name: str, why: str) -> None:
        try:
            await self.client.delete(Route, key[0], name)
            log.info("route deleted route=%s/%s reason=%s", key[0], name, why)
        except NotFound:
            pass
        self._own_writes.deleted(key, name)

    async def _write_status(
        self, key: Key, entries: list[IngressLoadBalancerIngress]
    ) -> str | None:
        """Write status.loadBalancer; a reason when the stored Ingress itself is invalid.

        An Ingress stored around validation fails validation however often its
        status is written back, so that is a note to report, not an error for the
        queue to retry; its next change re-adds the key. Conflicts and store
        errors still raise, and the queue retries them."""

        def record(ing: Ingress) -> Ingress:
            ing.status.load_balancer.ingress = list(entries)
            return ing

        try:
            await self.client.mutate(Ingress, key[0], key[1], record)
        except InvalidObject as exc:
            return f"status not written: {exc}"
        log.info(
            "ingress status ingress=%s/%s hostnames=%s",
            *key,
            ",".join(e.hostname or "" for e in entries) or "none",
        )
        return None

    def _report(self, ing: Ingress, notes: tuple[str, ...]) -> None:
        key = ing.key
        seen = (ing.metadata.uid or "", notes)
        if self._reported.get(key, ("", ())) == seen:
            return
        self._reported[key] = seen
        if notes:
            message = "Incomplete ingress to route rules detected: " + "; ".join(notes)
            self.events.record(ing, NORMAL, INCOMPLETE, message)
            log.warning(
                "ingress incomplete ingress=%s/%s reason=%s message=%r", *key, INCOMPLETE, message
            )

    def _written(self, how: str, key: Key, route: Route) -> None:
        self.writes += 1
        self._own_writes.wrote(key, route.name, route.metadata.resource_version)
        log.info("route %s route=%s/%s ingress=%s", how, key[0], route.name, key[1])
