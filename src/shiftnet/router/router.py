"""The router process: informers -> admission -> L7 model -> render -> HAProxy driver.

``Router(store, config)`` is the library entry point (``shiftnet router`` and
``shiftnet up`` are thin wrappers). Every watch event kicks one coalesced sync:
the sync recomputes admission and the model from the informer caches (pure,
deterministic), renders the file set, hands it to the driver (runtime API at
once, or a reload bounded by ``RELOAD_INTERVAL``), and writes each in-shard
route's ``status.ingress[]`` entry for this router's name when it differs
other than in timestamps. A failing sync is logged and retried on the next
event; one bad route never stops the others (admission rejects it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path
from typing import Any

from shiftnet.api import Endpoints, Namespace, Route, RouteIngress, RouteIngressCondition, Service
from shiftnet.client import Client
from shiftnet.errors import ShiftnetError
from shiftnet.informer import Informers
from shiftnet.router import metrics
from shiftnet.router.admission import (
    EXTENDED_VALIDATION_FAILED,
    AdmissionResult,
    admit,
    in_shard,
    route_key,
)
from shiftnet.router.certs import default_certificate
from shiftnet.router.config import RouterConfig
from shiftnet.router.describe import BACKENDS_INDEX  # run/backends.json: route -> backends
from shiftnet.router.haproxy.driver import HAProxyDriver
from shiftnet.router.haproxy.process import (
    HAProxyError,
    fit_limits,
    log_limits_once,
    log_maxconn_fit,
    socket_dir,
)
from shiftnet.router.haproxy.render import RenderPaths, render, render_backend
from shiftnet.router.haproxy.runtime import RuntimeAPIError
from shiftnet.router.model import build_model, policy_of, pool_of
from shiftnet.router.status import clear_status, needs_write, write_status
from shiftnet.runner import CoalescingRunner
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

STATS_POLL_SECONDS = 10.0


class Router:
    """One router: serves the admitted routes of its shard through one HAProxy."""

    def __init__(
        self,
        store: Store,
        config: RouterConfig,
        *,
        informers: Informers | None = None,
        sync_interval: float = 0.0,
    ) -> None:
        self.store = store
        self.client = Client(store)
        limits = fit_limits(config.max_connections)
        log_limits_once(limits)
        self.limits = limits
        self.config = config.replace(
            max_connections=limits.maxconn,
            threads=config.threads or limits.nbthread,
            file_descriptor_limit=limits.nofile,  # render fits maxconn to the checked servers
        )
        self.work_dir = Path(self.config.work_dir)
        self.informers = informers or Informers(store)
        self._own_informers = informers is None
        self.routes = self.informers.informer(Route)
        self.services = self.informers.informer(Service)
        self.endpoints = self.informers.informer(Endpoints)
        self.namespaces = self.informers.informer(Namespace)
        self.driver = HAProxyDriver(
            self.work_dir, reload_interval=self.config.reload_interval_ms / 1000.0
        )
        self._runner = CoalescingRunner(self._sync, min_interval=sync_interval, name="router-sync")
        # Endpoints changes first take the fast path: only their routes' backends.
        self._fast_runner = CoalescingRunner(self._sync_endpoints, name="router-endpoints")
        self._pending_pools: set[tuple[str, str]] = set()
        self._admission_dirty = True  # a Route or Namespace changed since the last admission
        self._policies_by_pool: dict[tuple[str, str], list[Any]] = {}
        self._pool_keys: set[tuple[str, str]] = set()
        self._last_index: dict[str, list[str]] | None = None
        # Status writes run beside the sync, so 10,000 of them never delay serving a change.
        self._status_runner = CoalescingRunner(self._write_latest_statuses, name="router-status")
        self._stats_task: asyncio.Task[None] | None = None
        self._default_cert: Path | None = None
        self.admission: AdmissionResult | None = None
        self.model: Any = None
        self.skipped: dict[tuple[str, str], str] = {}
        self.syncs = 0
        # route -> (resourceVersion, entry) known to be stored: skips re-checking 10k routes
        self._status_seen: dict[tuple[str, str], tuple[str | None, RouteIngress]] = {}

    # -------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Adopt or start HAProxy, sync the caches, serve; returns once serving."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._default_cert = default_certificate(
            self.config.default_certificate_path,
            self.work_dir,
            self.config.canonical_hostname or f"{self.config.name}.shiftnet.local",
        )
        for inf in (self.routes, self.services, self.endpoints, self.namespaces):
            inf.add_handler(self._on_event)
        await self.driver.start()
        await self.informers.start()
        await self.sync_now()
        if self.driver.last_error is not None and not self.driver.process.alive():
            # Nothing is serving and the first configuration was refused: say why.
            error = self.driver.last_error
            await self.stop()
            if isinstance(error, ShiftnetError):
                raise error
            raise HAProxyError(str(error))
        await self._runner.start()
        await self._fast_runner.start()
        await self._status_runner.start()
        self._stats_task = asyncio.get_running_loop().create_task(
            self._poll_stats(), name="router-stats"
        )
        log.info(
            "router started name=%s http_port=%d https_port=%d work_dir=%s",
            self.config.name,
            self.config.http_port,
            self.config.https_port,
            self.work_dir,
        )

    async def stop(self, stop_haproxy: bool = True) -> None:
        """Clean shutdown; HAProxy is stopped too unless ``stop_haproxy`` is False."""
        if self._stats_task is not None:
            self._stats_task.cancel()
            await asyncio.gather(self._stats_task, return_exceptions=True)
            self._stats_task = None
        await self._fast_runner.stop()
        await self._runner.stop()
        await self._status_runner.stop()
        if self._own_informers:
            await self.informers.stop()
        await self.driver.stop(stop_haproxy=stop_haproxy)

    async def sync_now(self) -> None:
        """Recompute and apply now, and finish any pending reload (tests, start-up)."""
        await self._sync()
        await self.driver.flush()
        await self._status_runner.flush()

    def _on_event(self, event_type: str, old: Any, new: Any) -> None:
        if (
            isinstance(new, Route)
            and isinstance(old, Route)
            and _status_only(old, new)
            and self._entry_is_current(new)
        ):
            return  # our own status writes (or another router's) change nothing we serve
        obj = new if new is not None else old
        if isinstance(obj, Endpoints) and self.model is not None:
            self._pending_pools.add((obj.metadata.namespace or "", obj.metadata.name))
            self._fast_runner.kick()  # it kicks the full sync when done
            return
        if isinstance(obj, (Route, Namespace)):
            self._admission_dirty = True
        elif isinstance(obj, Service) and not self._uses_pool(obj):
            return  # no admitted route points at it: nothing to render
        self._runner.kick()

    def _uses_pool(self, obj: Service | Endpoints) -> bool:
        """True when an admitted route points at this Service (or before the first sync)."""
        if self.model is None:
            return True
        key = (obj.metadata.namespace or "", obj.metadata.name)
        return key in self._policies_by_pool or key in self._pool_keys

    async def _sync_endpoints(self) -> None:
        """The fast path for Endpoints: re-render only the affected routes' backends.

        Admission does not depend on Endpoints, and a backend's map entries do
        not depend on its servers, so the new server slots go straight to the
        runtime API (well under a millisecond of work per route) instead of
        waiting for a whole sync (a few hundred ms at 10,000 routes). The full
        sync still follows, to write the files and catch anything else.
        """
        keys, self._pending_pools = self._pending_pools, set()
        if self.model is not None and not any(
            k in self._pool_keys or k in self._policies_by_pool for k in keys
        ):
            return  # Endpoints of Services no admitted route points at: nothing to render
        try:
            sections = self._endpoint_sections(keys)
            if sections:
                await self.driver.apply_sections(sections)
        except (ShiftnetError, KeyError, ValueError) as err:
            log.info("endpoint fast path skipped error=%s", err)
        finally:
            self._runner.kick()

    def _endpoint_sections(self, keys: set[tuple[str, str]]) -> dict[str, str] | None:
        model, result = self.model, self.admission
        if model is None or result is None:
            return None
        pools = {p.key: p for p in model.pools}
        changed = [k for k in sorted(keys) if k in pools]
        for key in changed:
            pools[key] = pool_of(key, self.endpoints.get(*key))
        sections: dict[str, str] = {}
        for key in changed:
            for old in self._policies_by_pool.get(key, []):
                route = self.routes.get(old.namespace, old.name)
                decision = result.decisions.get((old.namespace, old.name))
                if route is None or decision is None:
                    return None
                services = {
                    (old.namespace, ref.name): svc
                    for ref in route.backends()
                    if (svc := self.services.get(old.namespace, ref.name)) is not None
                }
                policy = policy_of(route, decision.host, pools, services)
                before = render_backend(old, self.config)
                after = render_backend(policy, self.config)
                if after[0] != before[0] or after[2:] != before[2:]:
                    return None  # maps, certificates or files changed: the full sync
                sections[after[0]] = after[1]
        return sections

    def _desired_entry(self, key: tuple[str, str], admitted: RouteIngress) -> RouteIngress:
        """Admission's entry, unless the renderer had to leave the route out."""
        reason = self.skipped.get(key)
        if reason is None:
            return admitted
        entry = admitted.model_copy(deep=True)
        entry.conditions = [
            RouteIngressCondition(
                type="Admitted",
                status="False",
                reason=EXTENDED_VALIDATION_FAILED,
                message=f"the route cannot be written into the HAProxy configuration: {reason}",
            )
        ]
        return entry

    def _entry_is_current(self, route: Route) -> bool:
        """This router's status entry on ``route`` is what the last sync decided."""
        if self.admission is None:
            return False
        decision = self.admission.decisions.get(route_key(route))
        if decision is None or decision.ingress is None:
            return all(e.router_name != self.config.name for e in route.status.ingress)
        return not needs_write(route, self._desired_entry(decision.key, decision.ingress))

    # ------------------------------------------------------------------- sync
    def _render(self, result: AdmissionResult) -> tuple[dict[str, bytes], dict[str, list[str]]]:
        """Model and render (pure); returns the file set and route -> backend names."""
        model = build_model(result, self.endpoints.list(), self.services.list())
        self.model = model
        by_name = {p.name: p.key for p in model.pools}
        by_pool: dict[tuple[str, str], list[Any]] = {}
        for policy in model.policies:
            for pool in set(policy.pools):
                if pool in by_name:
                    by_pool.setdefault(by_name[pool], []).append(policy)
        self._policies_by_pool = by_pool
        self._pool_keys = set(by_name.values())
        paths = RenderPaths(
            run_dir=str(socket_dir(self.work_dir)),
            default_certificate=str(self._default_cert),
        )
        rendered = render(model, self.config, paths)
        log_maxconn_fit(rendered.fit)
        self.skipped = dict(rendered.skipped)
        index = {f"{ns}/{name}": [be] for (ns, name), be in sorted(rendered.backends.items())}
        return rendered.files, index

    async def _sync(self) -> None:
        self.syncs += 1
        result = self.admission
        if result is None or self._admission_dirty:
            self._admission_dirty = False
            result = admit(self.routes.list(), self.namespaces.list(), self.config)
        self.admission = result
        files, index = self._render(result)
        await self.driver.apply(files)
        self._write_index(index)
        self._status_runner.kick()

    async def _write_latest_statuses(self) -> None:
        if self.admission is not None:
            await self._write_statuses(self.admission)

    def _write_index(self, index: dict[str, list[str]]) -> None:
        if index == self._last_index:
            return  # a dict comparison is far cheaper than dumping 10,000 entries
        self._last_index = index
        run = self.work_dir / "run"
        run.mkdir(parents=True, exist_ok=True)
        data = json.dumps(index, sort_keys=True, indent=1).encode()
        path = run / BACKENDS_INDEX
        with contextlib.suppress(OSError):
            if path.read_bytes() == data:
                return
        tmp = run / (BACKENDS_INDEX + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)

    async def _write_statuses(self, result: AdmissionResult) -> None:
        ns_by_name = {n.metadata.name: n for n in self.namespaces.list()}
        routes = self.routes.list()
        for gone in set(self._status_seen) - {route_key(r) for r in routes}:
            del self._status_seen[gone]
        for route in routes:
            key = route_key(route)
            decision = result.decisions.get(key)
            try:
                if decision is not None and decision.ingress is not None:
                    desired = self._desired_entry(key, decision.ingress)
                    seen = self._status_seen.get(key)
                    version = route.metadata.resource_version
                    if seen is not None and seen[0] == version and seen[1] == desired:
                        continue  # this very route version already carries this entry
                    if needs_write(route, desired):
                        await write_status(self.client, route, desired)
                    else:
                        self._status_seen[key] = (version, desired)
                elif (
                    not route.metadata.deletion_timestamp
                    and not in_shard(
                        route, ns_by_name.get(route.metadata.namespace or ""), self.config
                    )
                    and any(e.router_name == self.config.name for e in route.status.ingress)
                ):
                    await clear_status(self.client, route, self.config.name)
            except ShiftnetError as err:
                log.warning("route status not written route=%s/%s error=%s", *key, err)

    # ------------------------------------------------------------------ stats
    async def _poll_stats(self) -> None:
        known: set[str] = set()
        while True:
            await asyncio.sleep(STATS_POLL_SECONDS)
            with contextlib.suppress(RuntimeAPIError):
                known = await self.update_backend_metrics(known)

    async def update_backend_metrics(self, known: set[str] | None = None) -> set[str]:
        """Copy per-backend request and error counts from ``show stat`` into metrics."""
        counts = await self.driver.runtime.backend_counts()
        for name, (requests, errors) in counts.items():
            metrics.BACKEND_REQUESTS.labels(backend=name).set(requests)
            metrics.BACKEND_ERRORS.labels(backend=name).set(errors)
        for gone in (known or set()) - set(counts):
            with contextlib.suppress(KeyError):
                metrics.BACKEND_REQUESTS.remove(gone)
                metrics.BACKEND_ERRORS.remove(gone)
        return set(counts)


def _status_only(old: Route, new: Route) -> bool:
    """True when only ``status`` (or bookkeeping metadata) changed between two versions."""
    return (
        old.spec == new.spec
        and old.metadata.labels == new.metadata.labels
        and old.metadata.annotations == new.metadata.annotations
        and old.metadata.deletion_timestamp == new.metadata.deletion_timestamp
        and old.metadata.creation_timestamp == new.metadata.creation_timestamp
        and old.metadata.uid == new.metadata.uid
    )
