"""Routes HAProxy refused: found by bisection, left out and reported, retried when they change.

Why: one tenant's route that HAProxy cannot load (a certificate its TLS
library refuses, say) makes ``haproxy -c`` refuse the whole configuration;
without this every later change (a new route elsewhere, a deleted one) would
wait behind it, and a restarted router would not start. When the driver
reports a refused check, :meth:`Refusals.isolate` renders candidate route
sets into a scratch directory and lets ``isolation.find_refused`` narrow the
refusal down to the routes that cause it. Those stay out of the configuration
(``Assembly.refused``; their status says why) until their spec or annotations
change; everything else is applied.

The search starts from the routes that changed since a configuration last
passed the check and loaded (``likely``), so the usual case -- one new bad
route -- costs two or three checks; after a restart it bisects all routes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from shiftnet.api import Route
from shiftnet.router.admission import RouteKey
from shiftnet.router.haproxy.assembly import Assembly
from shiftnet.router.haproxy.driver import HAProxyDriver
from shiftnet.router.haproxy.isolation import find_refused
from shiftnet.router.haproxy.process import ConfigCheckFailed
from shiftnet.router.haproxy.writer import RenderPaths
from shiftnet.router.model import L7Policy

log = logging.getLogger(__name__)

REASON_MAX = 300


def _identity(route: Route) -> tuple[Any, ...]:
    """What the route's owner controls: a change to it lifts a refusal."""
    return (route.metadata.uid, route.spec, dict(route.metadata.annotations or {}))


class Refusals:
    """The routes HAProxy refused and what is needed to find more."""

    def __init__(self, driver: HAProxyDriver) -> None:
        self.driver = driver
        self.pending = False  # the driver reported a refused check: isolate on the next sync
        self.checks = 0  # haproxy -c runs made by searches (tests and logs)
        self._identity: dict[RouteKey, tuple[Any, ...]] = {}
        self._handed: tuple[dict[str, bytes], dict[RouteKey, object]] | None = None
        self._good: dict[RouteKey, object] = {}  # route parts of the last loaded file set
        self._lock = asyncio.Lock()  # one search at a time: they share the scratch directory

    def rejected(self, err: ConfigCheckFailed) -> None:
        """The driver's ``on_rejected``: remember to search on the next sync."""
        self.pending = True

    def handed(self, files: dict[str, bytes], assembly: Assembly) -> None:
        """The router gave ``files`` (rendered from ``assembly``) to the driver."""
        self._handed = (files, dict(assembly.parts))

    def applied(self, files: dict[str, bytes]) -> None:
        """The driver's ``on_applied``: ``files`` passed the check and HAProxy loaded them."""
        if self._handed is not None and self._handed[0] == files:
            self._good = self._handed[1]

    def lift(
        self, keys: set[RouteKey], route_of: Callable[[str, str], Route | None], assembly: Assembly
    ) -> set[RouteKey]:
        """Forget the refusals of routes among ``keys`` that changed or are gone; returns them."""
        lifted: set[RouteKey] = set()
        for key in keys & self._identity.keys():
            route = route_of(*key)
            if route is None or _identity(route) != self._identity[key]:
                del self._identity[key]
                assembly.refused.pop(key, None)
                lifted.add(key)
        return lifted

    async def isolate(
        self,
        assembly: Assembly,
        policies: Mapping[RouteKey, L7Policy],
        route_of: Callable[[str, str], Route | None],
        paths: RenderPaths,
    ) -> dict[RouteKey, str]:
        """Find the routes HAProxy refuses, leave them out of ``assembly``; returns them."""
        async with self._lock:
            return await self._isolate(assembly, policies, route_of, paths)

    async def _isolate(
        self,
        assembly: Assembly,
        policies: Mapping[RouteKey, L7Policy],
        route_of: Callable[[str, str], Route | None],
        paths: RenderPaths,
    ) -> dict[RouteKey, str]:
        self.pending = False
        snapshot = dict(policies)
        keys = sorted(k for k in assembly.parts if k in snapshot)
        likely = [k for k in keys if self._good.get(k) is not assembly.parts[k]]

        async def check(subset: Sequence[RouteKey]) -> str | None:
            trial = Assembly(assembly.config, paths)
            trial.update({k: snapshot[k] for k in subset})
            err = await self.driver.check_files(trial.files())
            return None if err is None else self._reason(err)

        try:
            found, checks = await find_refused(keys, check, likely=likely)
        finally:
            self.driver.clear_scratch()
        self.checks += checks
        log.info(
            "haproxy refusal searched routes=%d likely=%d checks=%d refused=%d",
            len(keys),
            len(likely),
            checks,
            len(found),
        )
        for key, reason in sorted(found.items()):
            route = route_of(*key)
            if route is None:
                continue
            self._identity[key] = _identity(route)
            assembly.refused[key] = reason
            log.warning("route left out: haproxy refuses it route=%s/%s reason=%r", *key, reason)
        assembly.update({k: policies.get(k) for k in found})
        return found

    def _reason(self, err: ConfigCheckFailed) -> str:
        """The last part of HAProxy's first alert: what it could not load, without the
        router's own paths and sockets (the route's owner reads this on its status)."""
        alert = str(err).split(" is invalid: ", 1)[-1]
        text = alert.rsplit(" : ", 1)[-1].strip()
        text = text.replace(str(self.driver.scratch_dir) + "/", "")
        return "HAProxy refused it: " + text[:REASON_MAX]
