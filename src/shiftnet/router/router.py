"""The router process: informers -> admission -> L7 model -> render -> HAProxy driver.

``Router(store, config)`` is the library entry point (``shiftnet router`` and
``shiftnet up`` are thin wrappers). Every watch event is noted (which route, which
pool) and kicks one coalesced sync. The sync feeds only what changed through
three pure indices -- admission (:class:`AdmissionIndex`), the L7 model
(:class:`ModelIndex`) and the rendered file set (:class:`Assembly`) -- so a
change costs about one route, not 10,000; hands the file set to the driver
(runtime API at once, or a reload bounded by ``RELOAD_INTERVAL``); and writes
the ``status.ingress[]`` entry of each route it re-decided when it differs
other than in timestamps. A Namespace change (shard labels) re-decides all.
A failing sync is logged and retried on the next event; one bad route never
stops the others: admission rejects what it can judge, the renderer leaves
out what it cannot write, and a route HAProxy itself refuses is found by
bisection and left out (``refusals.py``), so the router always starts.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from shiftnet.api import (
    Endpoints,
    Namespace,
    Route,
    RouteIngress,
    RouteIngressCondition,
    Secret,
    Service,
)
from shiftnet.client import Client
from shiftnet.errors import ShiftnetError
from shiftnet.events.recorder import EventRecorder
from shiftnet.informer import Informers
from shiftnet.private_files import ensure_private_dir, ensure_private_tree
from shiftnet.router import metrics
from shiftnet.router.access_routes import RouteNames
from shiftnet.router.accesslog import AccessLog, log_path, record_destination
from shiftnet.router.admission import (
    EXTENDED_VALIDATION_FAILED,
    AdmissionResult,
    RouteKey,
    in_shard,
    route_key,
)
from shiftnet.router.admission_index import AdmissionIndex
from shiftnet.router.certs import default_certificate
from shiftnet.router.config import RouterConfig
from shiftnet.router.describe import BACKENDS_INDEX  # run/backends.json: route -> backends
from shiftnet.router.external_certs import SecretKey, resolve, secret_of
from shiftnet.router.haproxy.assembly import Assembly
from shiftnet.router.haproxy.description import Backend
from shiftnet.router.haproxy.driver import HAProxyDriver
from shiftnet.router.haproxy.names import LOG_SOCKET
from shiftnet.router.haproxy.process import (
    ConfigCheckFailed,
    HAProxyError,
    fit_limits,
    log_limits_once,
    log_maxconn_fit,
    socket_dir,
)
from shiftnet.router.haproxy.runtime import parse_show_stat
from shiftnet.router.haproxy.writer import RenderPaths
from shiftnet.router.listeners import record_listeners
from shiftnet.router.model import L7Model, L7Policy, PoolKey
from shiftnet.router.model_index import ModelIndex
from shiftnet.router.refusals import Refusals
from shiftnet.router.shard_record import record_shard
from shiftnet.router.stats_auth import StatsCredentials, stats_credentials
from shiftnet.router.status import clear_status, needs_write, write_status
from shiftnet.runner import CoalescingRunner
from shiftnet.service_endpoints import ServiceEndpoints
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

RESYNC_SECONDS = 30.0  # every runner runs at least this often: failed syncs retry on their own
BACKEND_STATS_QUERY = "show stat -1 2 -1"  # every proxy, backend rows (type 2), no servers


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Router:
    """One router: serves the admitted routes of its shard through one HAProxy."""

    def __init__(
        self,
        store: Store,
        config: RouterConfig,
        *,
        informers: Informers | None = None,
        sync_interval: float = 0.0,
        wall_clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.store = store
        # The time route certificates are judged at (their dates decide which checks run).
        self._wall_clock = wall_clock or _utc_now
        self.client = Client(store)
        self.events = EventRecorder(self.client, "router", host=config.name)
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
        # each Service's endpoints from its EndpointSlices (its Endpoints when it has none)
        self.endpoints = ServiceEndpoints(self.informers)
        self.namespaces = self.informers.informer(Namespace)
        # Certificates of routes with spec.tls.externalCertificate; read only through routes.
        self.secrets = self.informers.informer(Secret)
        self._secret_routes: dict[SecretKey, set[RouteKey]] = {}
        self._route_secret: dict[RouteKey, SecretKey] = {}
        self.driver = HAProxyDriver(
            self.work_dir, reload_interval=self.config.reload_interval_ms / 1000.0
        )
        ports = (self.config.http_port, self.config.https_port, self.config.stats_port)
        self.driver.process.listen_ports = ports  # never shared with a killed router's HAProxy
        self._runner = CoalescingRunner(
            self._sync, min_interval=sync_interval, max_interval=RESYNC_SECONDS, name="router-sync"
        )
        # Routes HAProxy refuses are found by bisection and left out; the rest is served.
        self.refusals = Refusals(self.driver)
        self.driver.on_rejected = self._on_rejected
        self.driver.on_applied = self.refusals.applied
        self._paths: RenderPaths | None = None
        # Endpoints changes first take the fast path: only their routes' backends.
        self._fast_runner = CoalescingRunner(
            self._sync_endpoints, max_interval=RESYNC_SECONDS, name="router-endpoints"
        )
        self._pending_pools: set[PoolKey] = set()  # for the endpoint fast path
        self._changed_routes: set[RouteKey] = set()
        self._changed_pools: set[PoolKey] = set()
        self._reset = True  # first sync, or a Namespace changed: re-decide every route
        self._index = AdmissionIndex(self.config)
        self._models = ModelIndex(self.endpoints.get, self.services.get)
        self._assembly: Assembly | None = None  # made at start, once the paths are known
        self._status_dirty: set[RouteKey] = set()
        self._last_index: dict[str, list[str]] | None = None
        # Status writes run beside the sync, so 10,000 of them never delay serving a change.
        self._status_runner = CoalescingRunner(
            self._write_latest_statuses, max_interval=RESYNC_SECONDS, name="router-status"
        )
        self._stats_known: dict[str, tuple[int, int]] = {}  # what the last stats poll published
        self._backend_series: set[str] = set()  # backends whose series this router published
        self._default_cert: Path | None = None
        self.stats_credentials: StatsCredentials | None = None  # known once started
        self.synced = False
        self.syncs = 0
        # route -> (resourceVersion, entry) known to be stored: skips re-checking 10k routes
        self._status_seen: dict[tuple[str, str], tuple[str | None, RouteIngress]] = {}
        # HAProxy's log, received here when no ROUTER_SYSLOG_ADDRESS is given (accesslog.py)
        self.access_log: AccessLog | None = None
        self._route_names = RouteNames()
        self._route_names_of: tuple[int, dict[str, str]] | None = None

    # -------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Adopt or start HAProxy, sync the caches, serve; returns once serving."""
        # Keys, certificates, the stats password and haproxy.cfg live here: 0700.
        ensure_private_tree(self.work_dir)
        for directory in (self.driver.process.conf_dir, socket_dir(self.work_dir)):
            ensure_private_dir(directory)
        self.stats_credentials = stats_credentials(self.config, self.work_dir)
        if self.stats_credentials is not None:
            self.config = self.config.replace(
                stats_username=self.stats_credentials.username,
                stats_password=self.stats_credentials.password,
            )
        self._default_cert = default_certificate(
            self.config.default_certificate_path,
            self.work_dir,
            self.config.canonical_hostname or f"{self.config.name}.shiftnet.local",
        )
        for inf in (self.routes, self.services, self.endpoints, self.namespaces, self.secrets):
            inf.add_handler(self._on_event)
        if self.config.own_access_log:
            self.access_log = AccessLog(
                socket_dir(self.work_dir) / LOG_SOCKET,
                log_path(self.work_dir),
                self.config.access_log_max_bytes,
                self.route_names,
                own_format=self.config.syslog_format is None,
            )
            await self.access_log.start()
        record_destination(self.work_dir, self.config)
        record_listeners(self.work_dir, self.config)
        record_shard(self.work_dir, self.config)
        await self.events.start()
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
        self.driver.on_stats = self._poll_stats  # every STATS_INTERVAL, by haproxy-watch
        log.info(
            "router started name=%s http_port=%d https_port=%d work_dir=%s",
            self.config.name,
            self.config.http_port,
            self.config.https_port,
            self.work_dir,
        )

    async def stop(self, stop_haproxy: bool = True) -> None:
        """Clean shutdown; HAProxy is stopped too unless ``stop_haproxy`` is False."""
        self.driver.on_stats = None
        await self._fast_runner.stop()
        await self._runner.stop()
        await self._status_runner.stop()
        await self.events.stop()
        if self._own_informers:
            await self.informers.stop()
        await self.driver.stop(stop_haproxy=stop_haproxy)
        # No more polls: this router's per-backend series leave the shared registry.
        metrics.remove_backend_series(self._backend_series)
        self._backend_series = set()
        self._stats_known = {}
        if self.access_log is not None:
            await self.access_log.stop()
            self.access_log = None

    async def sync_now(self) -> None:
        """Recompute and apply now, and finish any pending reload (tests, start-up).

        When HAProxy refuses the configuration, the routes it refuses are found
        and left out, and the rest is applied: a router always starts.
        """
        await self._sync()
        await self.driver.flush()
        if self.refusals.pending:
            await self._sync()
            await self.driver.flush()
        await self._status_runner.flush()

    def _on_event(self, event_type: str, old: Any, new: Any) -> None:
        if (
            isinstance(new, Route)
            and isinstance(old, Route)
            and _status_only(old, new)
            and self._entry_is_current(new)
            and secret_of(new) is None  # those are re-read with their Secret
        ):
            # Our own status writes (or another router's) change nothing we serve;
            # the indices drop the older copy of the route.
            key = route_key(new)
            if key not in self._changed_routes:
                self._index.refresh(new)
                self._models.refresh(key, new)
            return
        obj = new if new is not None else old
        key = (obj.metadata.namespace or "", obj.metadata.name)
        if isinstance(obj, Route):
            self._changed_routes.add(key)
        elif isinstance(obj, Secret):
            users = self._secret_routes.get(key)
            if not users:
                return  # no route serves this Secret
            self._changed_routes |= users
        elif isinstance(obj, Namespace):
            self._reset = True
        elif not self._uses_pool(key):
            return  # a Service or Endpoints no admitted route points at: nothing to render
        elif isinstance(obj, Endpoints) and self.synced:
            self._changed_pools.add(key)
            self._pending_pools.add(key)
            self._fast_runner.kick()  # it kicks the full sync when done
            return
        else:
            self._changed_pools.add(key)
        self._runner.kick()

    def _uses_pool(self, key: PoolKey) -> bool:
        """True when an admitted route points at this Service (or before the first sync)."""
        return not self.synced or key in self._models.pools

    @property
    def model(self) -> L7Model:
        """The whole L7 model as the last sync left it (tests and debugging)."""
        return self._models.model()

    @property
    def admission(self) -> AdmissionResult:
        """Every decision as the last sync left it (tests and debugging)."""
        return self._index.result()

    def route_names(self) -> RouteNames:
        """Which route each served backend stands for (the access log names routes with it);
        rebuilt only when a sync or the spares in use changed since the last call."""
        aliases = self.driver.aliases
        if self._route_names_of != (self.syncs, aliases) and self._assembly is not None:
            rules = {k: p.rule for k, p in self._models.policies.items()}
            self._route_names = RouteNames.build(self._assembly.backends, aliases, rules)
            self._route_names_of = (self.syncs, aliases)
        return self._route_names

    def served(self) -> tuple[dict[RouteKey, str], dict[RouteKey, L7Policy]] | None:
        """Each route's backend in the rendered configuration and the L7 policy behind it
        (the metrics' labels), or None before the first sync."""
        if self._assembly is None:
            return None
        return self._assembly.backends, self._models.policies

    @property
    def skipped(self) -> dict[RouteKey, str]:
        """Admitted routes the renderer had to leave out, with why."""
        return dict(self._assembly.skipped) if self._assembly is not None else {}

    async def _sync_endpoints(self) -> None:
        """The fast path for Endpoints: serve the new servers of their routes at once.

        A reload holds the driver's apply lock for seconds at 10,000 routes;
        new server slots of existing backends go to the runtime API without
        waiting for it. The pools are rebuilt here (the indices are shared
        with the full sync, which follows to write the files).
        """
        keys, self._pending_pools = self._pending_pools, set()
        try:
            backends = self._advance(pools=keys)
            if backends:
                await self.driver.apply_backends(backends)
        except (ShiftnetError, KeyError, ValueError) as err:
            log.info("endpoint fast path skipped error=%s", err)
        finally:
            self._runner.kick()

    def _advance(self, pools: Iterable[PoolKey] = ()) -> dict[str, Backend] | None:
        """Feed the noted changes through admission, model and description (pure, in memory).

        Returns the backends whose servers alone changed (what the runtime
        API can serve without the full plan), or None when something else
        changed too.
        """
        assembly = self._assembly
        assert assembly is not None
        routes, self._changed_routes = self._changed_routes, set()
        pools = set(pools) | self._changed_pools
        self._changed_pools = set()
        now = self._wall_clock()
        if self._reset:
            self._reset = False
            every_route = [self._resolved(r, now=now) for r in self.routes.list()]
            decided = self._index.reset(every_route, self.namespaces.list(), now=now)
            decided |= routes
            self._status_dirty |= {route_key(r) for r in every_route}
        else:
            namespaces = {n.metadata.name: n for n in self.namespaces.list()}
            changes = {k: self._resolve(self.routes.get(*k), k, now) for k in routes}
            decided = self._index.update(changes, namespaces, now=now)
        self._status_dirty |= decided
        lifted = self.refusals.lift(decided, self.routes.get, assembly)  # changed: try again
        admitted: dict[RouteKey, tuple[Route, str] | None] = {}
        for key in decided:
            route = self._index.admitted.get(key)
            admitted[key] = (route, self._index.host_of(key)) if route is not None else None
        policies = self._models.update(admitted, pools)
        for key in lifted - policies.keys():
            policies[key] = self._models.policies.get(key)
        assembly.update(policies)
        self._status_dirty |= set(policies)
        return assembly.runtime_backends()

    def _resolved(
        self, route: Route, key: RouteKey | None = None, *, now: dt.datetime | None = None
    ) -> Route:
        """``route`` as admission reads it: with its certificate Secret's content inline, or
        with a refusal noted when that Secret cannot be served (``external_certs.py``)."""
        return self._resolve(route, key or route_key(route), now) or route

    def _resolve(
        self, route: Route | None, key: RouteKey, now: dt.datetime | None = None
    ) -> Route | None:
        """:meth:`_resolved`, also for a deleted route (None), which forgets its Secret."""
        ref = secret_of(route) if route is not None else None
        old_ref = self._route_secret.pop(key, None)
        if old_ref is not None and old_ref != ref:
            users = self._secret_routes.get(old_ref, set())
            users.discard(key)
            if not users:
                self._secret_routes.pop(old_ref, None)
        self._index.refusals.pop(key, None)
        if route is None or ref is None:
            return route
        self._route_secret[key] = ref
        self._secret_routes.setdefault(ref, set()).add(key)
        resolved, refusal = resolve(route, self.secrets.get(*ref), now)
        if refusal is not None:
            self._index.refusals[key] = (refusal.reason, refusal.message)
        return resolved

    def _on_rejected(self, err: ConfigCheckFailed) -> None:
        """The driver's ``haproxy -c`` refused a file set: find the routes on the next sync."""
        self.refusals.rejected(err)
        self._runner.kick()

    def _desired_entry(self, key: tuple[str, str], admitted: RouteIngress) -> RouteIngress:
        """Admission's entry, unless the renderer had to leave the route out."""
        reason = self._assembly.skipped.get(key) if self._assembly is not None else None
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
        if not self.synced:
            return False
        decision = self._index.decisions.get(route_key(route))
        if decision is None or decision.ingress is None:
            return all(e.router_name != self.config.name for e in route.status.ingress)
        return not needs_write(route, self._desired_entry(decision.key, decision.ingress))

    # ------------------------------------------------------------------- sync
    async def _sync(self) -> None:
        self.syncs += 1
        if self._assembly is None:
            paths = RenderPaths(
                run_dir=str(socket_dir(self.work_dir)),
                default_certificate=str(self._default_cert),
            )
            self._assembly = Assembly(self.config, paths)
            self._paths = paths
        self._advance()
        self.synced = True
        if self.refusals.pending and self._paths is not None:
            found = await self.refusals.isolate(
                self._assembly, self._models.policies, self.routes.get, self._paths
            )
            self._status_dirty |= found.keys()
        files, description = self._assembly.snapshot()
        self.refusals.handed(files, self._assembly)
        log_maxconn_fit(self._assembly.fit)
        await self.driver.apply(files, description)
        self._write_index(
            {f"{ns}/{name}": [be] for (ns, name), be in self._assembly.backends.items()}
        )
        self._status_runner.kick()

    async def _write_latest_statuses(self) -> None:
        dirty, self._status_dirty = self._status_dirty, set()
        await self._write_statuses(dirty)

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

    async def _write_statuses(self, keys: set[RouteKey]) -> None:
        """Write (or clear) this router's status entry on the routes whose decision was redone."""
        for key in sorted(keys):
            route = self.routes.get(*key)
            if route is None:
                self._status_seen.pop(key, None)
                continue
            decision = self._index.decisions.get(key)
            try:
                if decision is not None and decision.ingress is not None:
                    desired = self._desired_entry(key, decision.ingress)
                    seen = self._status_seen.get(key)
                    version = route.metadata.resource_version
                    if seen is not None and seen[0] == version and seen[1] == desired:
                        continue  # this very route version already carries this entry
                    if needs_write(route, desired):
                        await write_status(self.client, route, desired, self.events)
                    else:
                        self._status_seen[key] = (version, desired)
                elif (
                    not route.metadata.deletion_timestamp
                    and not in_shard(
                        route,
                        self.namespaces.get(None, route.metadata.namespace or ""),
                        self.config,
                    )
                    and any(e.router_name == self.config.name for e in route.status.ingress)
                ):
                    await clear_status(self.client, route, self.config.name)
            except ShiftnetError as err:
                log.warning("route status not written route=%s/%s error=%s", *key, err)

    # ------------------------------------------------------------------ stats
    async def _poll_stats(self) -> None:
        self._stats_known = await self.update_backend_metrics(self._stats_known)

    async def update_backend_metrics(
        self, known: dict[str, tuple[int, int]] | None = None
    ) -> dict[str, tuple[int, int]]:
        """Copy per-backend request and error counts from HAProxy's stats into metrics.

        Asks for the backend rows only (``show stat -1 2 -1``): at 10,000 routes
        the whole table has 51,000 rows (every server slot), and producing and
        parsing it cost the serving HAProxy 0.5 s and this process about 2 s of
        CPU per poll, taken from the traffic (measured by the lookup benchmark).
        ``known`` is what the last call published: unchanged gauges are skipped.
        """
        rows = parse_show_stat(await self.driver.runtime.query(BACKEND_STATS_QUERY))
        counts = {r.proxy: (r.requests_total, r.errors) for r in rows if r.is_backend}
        known = known or {}
        for name, (requests, errors) in counts.items():
            if known.get(name) != (requests, errors):
                metrics.BACKEND_REQUESTS.labels(backend=name).set(requests)
                metrics.BACKEND_ERRORS.labels(backend=name).set(errors)
        gone = (known.keys() | self._backend_series) - counts.keys()
        metrics.remove_backend_series(gone)
        self._backend_series = set(counts)
        return counts


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
