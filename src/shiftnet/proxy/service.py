"""ServiceProxy: the library entry of the service proxy (what `shiftnet proxy` runs).

Watches Services and their endpoints (EndpointSlices, or Endpoints where a Service
has none) through informers, marks changed services in a
:class:`ProxyChanges`, and lets a :class:`CoalescingRunner` turn any burst of
events into one sync of the chosen mode's driver. Every mode also serves
kube-proxy's health checks (:mod:`shiftnet.proxy.healthcheck`): one per
LoadBalancer Service with ``externalTrafficPolicy: Local`` on its
``healthCheckNodePort``, and the proxy's own ``/healthz``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from shiftnet.api import Service
from shiftnet.errors import ConfigError, ShiftnetError
from shiftnet.informer import Informers
from shiftnet.proxy import metrics
from shiftnet.proxy.changes import ProxyChanges
from shiftnet.proxy.healthcheck import ProxyHealth, ServiceHealthServers
from shiftnet.proxy.kernel import KernelConfig, KernelProxier
from shiftnet.proxy.mode_record import mode_record, write_mode_record
from shiftnet.proxy.model import ServiceTable, canonical_ipv4
from shiftnet.proxy.userspace import UserspaceConfig, UserspaceProxier
from shiftnet.runner import CoalescingRunner
from shiftnet.service_endpoints import ServiceEndpoints
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

FAILED_SYNC_RETRY = 1.0  # seconds before a failed sync is tried again (then 2, 4, ...)

MODES = ("userspace", "iptables", "nftables")


@dataclass(frozen=True)
class ProxyConfig:
    mode: str = "userspace"
    node_name: str | None = None  # this node: its endpoints serve the Local traffic policies
    min_sync_interval: float = 0.1
    resync_interval: float | None = 60.0
    userspace: UserspaceConfig = field(default_factory=UserspaceConfig)
    kernel: KernelConfig = field(default_factory=KernelConfig)
    # kube-proxy's --healthz-bind-address (/healthz, /livez); None: not served
    healthz_bind_address: str | None = None
    # where the proxy records its mode for `shiftnet diagnose` (mode_record); None: nowhere
    state_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"proxy mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.mode != "userspace" and self.kernel.mode != self.mode:
            object.__setattr__(self, "kernel", replace(self.kernel, mode=self.mode))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> ProxyConfig:
        """Flags win over environment (SHIFTNET_PROXY_MODE, ..._NETNS) over defaults."""
        env = os.environ if env is None else env
        mode = overrides.pop("mode", None) or env.get("SHIFTNET_PROXY_MODE") or "userspace"
        if mode not in MODES:
            raise ConfigError(f"proxy mode {mode!r} is not one of {', '.join(MODES)}")
        kernel = dict(overrides.pop("kernel", {}))
        if "netns" not in kernel and env.get("SHIFTNET_PROXY_NETNS"):
            kernel["netns"] = env["SHIFTNET_PROXY_NETNS"]
        kernel["mode"] = mode if mode != "userspace" else "nftables"
        if "userspace" not in overrides and env.get("SHIFTNET_PROXY_MAX_RELAYS"):
            overrides["userspace"] = UserspaceConfig(
                max_relays=parse_max_relays(env["SHIFTNET_PROXY_MAX_RELAYS"])
            )
        return cls(mode=mode, kernel=KernelConfig(**kernel), **overrides)


def parse_node_port_addresses(value: str) -> tuple[str, ...]:
    """--nodeport-addresses: comma-separated IPv4 addresses (user-space listeners)."""
    out = tuple(v.strip() for v in value.split(",") if v.strip())
    bad = [v for v in out if canonical_ipv4(v) is None]
    if bad or not out:
        raise ConfigError(
            "SHIFTNET_PROXY_NODEPORT_ADDRESSES (--nodeport-addresses) must be IPv4 addresses "
            f"separated by commas, not {value[:60]!r}"
        )
    return out


def parse_max_relays(value: str) -> int:
    """SHIFTNET_PROXY_MAX_RELAYS / --max-relays: a whole number of at least 1."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(
            f"SHIFTNET_PROXY_MAX_RELAYS (--max-relays) must be a whole number of at least 1, "
            f"not {value[:40]!r}"
        )
    return n


class ServiceProxy:
    """Start/stop the service proxy against a store (or a shared Informers)."""

    def __init__(
        self, store: Store, config: ProxyConfig | None = None, informers: Informers | None = None
    ) -> None:
        self.config = config or ProxyConfig()
        self.informers = informers or Informers(store)
        self._own_informers = informers is None
        self.services = self.informers.informer(Service)
        # each Service's endpoints from its EndpointSlices (its Endpoints when it has none);
        # a port with no ready endpoint falls back to serving+terminating ones (kube-proxy)
        self.endpoints = ServiceEndpoints(self.informers, terminating_fallback=True)
        # health checks count ready endpoints only: a node whose pods all terminate drains
        self.ready_endpoints = ServiceEndpoints(self.informers)
        self.changes = ProxyChanges(self.config.node_name)
        self.userspace: UserspaceProxier | None = None
        self.kernel: KernelProxier | None = None
        if self.config.mode == "userspace":
            self.userspace = UserspaceProxier(self.config.userspace)
        else:
            self.kernel = KernelProxier(self.config.kernel)
        min_interval, max_interval = self.config.min_sync_interval, self.config.resync_interval
        if self.config.mode == "iptables":  # kube-proxy's --iptables-(min-)sync-period
            min_interval = self.config.kernel.iptables_min_sync_period
            max_interval = self.config.kernel.iptables_sync_period
        # A failed sync (a restore refused, a command that died) is tried again within
        # seconds, backing off to the sync period: kube-proxy waits a whole sync period.
        self.runner = CoalescingRunner(
            self.sync,
            min_interval=min_interval,
            max_interval=max_interval,
            name=f"proxy-{self.config.mode}",
            failure_retry=max(min_interval, FAILED_SYNC_RETRY),
        )
        # kube-proxy: unhealthy when a change waits longer than twice the sync period
        self.health = ProxyHealth(timeout=2 * (max_interval or 30.0))
        self.health_checks = ServiceHealthServers(
            self.config.userspace.node_port_addresses,
            self.config.node_name,
            self.health.healthy,
            netns=self.config.kernel.netns if self.kernel is not None else None,
            # user-space refuses externalTrafficPolicy: Local (its node port stays closed)
            serves_local_traffic=self.kernel is not None,
        )
        self.services.add_handler(self._on_event)
        self.endpoints.add_handler(self._on_event)
        self.syncs = 0
        # services changed since the last sync, and when the first change was seen (metrics)
        self._changed_at: dict[tuple[str, str], float] = {}
        self._pending: dict[str, set[tuple[str, str]]] = {"service": set(), "endpoints": set()}

    @property
    def table(self) -> ServiceTable:
        return self.changes.table

    def _on_event(self, etype: str, old: Any, new: Any) -> None:
        obj = new or old
        self.changes.mark(obj.metadata.namespace, obj.metadata.name)
        self.health_checks.mark(obj.metadata.namespace, obj.metadata.name)
        self.health.queued()
        self._count_change(obj)
        self.runner.kick()

    def _count_change(self, obj: Any) -> None:
        """kube-proxy's change counters: a Service event, or an endpoints one (any source)."""
        key = (obj.metadata.namespace or "default", obj.metadata.name)
        self._changed_at.setdefault(key, time.monotonic())
        if isinstance(obj, Service):
            metrics.SERVICE_CHANGES.inc()
            self._pending["service"].add(key)
            metrics.SERVICE_CHANGES_PENDING.set(len(self._pending["service"]))
        else:
            metrics.ENDPOINT_CHANGES.inc()
            self._pending["endpoints"].add(key)
            metrics.ENDPOINT_CHANGES_PENDING.set(len(self._pending["endpoints"]))
        metrics.LAST_QUEUED_TIMESTAMP.set(time.time())

    async def sync(self) -> None:
        """Bring the driver in line with the informers' caches (the runner calls this)."""
        start = time.perf_counter()
        started = time.monotonic()
        changed, self._changed_at = self._changed_at, {}
        for pending in self._pending.values():
            pending.clear()
        metrics.SERVICE_CHANGES_PENDING.set(0)
        metrics.ENDPOINT_CHANGES_PENDING.set(0)
        full = self.kernel is not None and not self.kernel.in_sync
        try:
            table, diff = self.changes.take(self.services.get, self.endpoints.get)
            for problem in table.problems:
                log.warning("%s", problem)
            if self.userspace is not None:
                await self.userspace.sync(table)
            elif self.kernel is not None:
                await self.kernel.sync(table, None if full else diff)
        except Exception:
            metrics.SYNC_FAILURES.inc()
            for key, seen in changed.items():  # not programmed: counted when a sync succeeds
                self._changed_at.setdefault(key, seen)
            raise
        await self.health_checks.sync(self.services.get, self.ready_endpoints.get)
        self.health.synced(started)
        if self.config.healthz_bind_address:
            await self.health.serve(self.config.healthz_bind_address)  # retried if unbound
        self.syncs += 1
        self._observe_sync(start, full, changed)

    def _observe_sync(self, start: float, full: bool, changed: dict[Any, float]) -> None:
        elapsed = time.perf_counter() - start
        metrics.SYNC_PROXY_RULES_SECONDS.observe(elapsed)
        if self.kernel is not None:
            partial = not full and (
                self.config.mode == "nftables" or self.kernel.last_kind == "partial"
            )
            kind = (
                metrics.SYNC_PARTIAL_PROXY_RULES_SECONDS
                if partial
                else metrics.SYNC_FULL_PROXY_RULES_SECONDS
            )
            kind.observe(elapsed)
        metrics.LAST_SYNC_TIMESTAMP.set(time.time())
        done = time.monotonic()
        for seen in changed.values():
            metrics.NETWORK_PROGRAMMING_SECONDS.observe(done - seen)

    async def start(self) -> None:
        """Sync once (errors reported, not fatal), then follow changes."""
        if self._own_informers:
            await self.informers.start()
        else:
            await self.informers.start()  # idempotent: starts our informers if not yet
        if self.config.healthz_bind_address:  # unhealthy (503) until the first sync
            await self.health.serve(self.config.healthz_bind_address)
        await self.runner.flush()
        self._record_mode()
        await self.runner.start()

    def _record_mode(self) -> None:
        """Tell ``diagnose`` this proxy's mode and where its rules live (after the first
        sync, which resolves the iptables tools); a failed write is logged, not fatal."""
        if self.config.state_dir is None:
            return
        kernel = self.config.kernel
        record = mode_record(
            self.config.mode,
            kernel.netns,
            kernel.nft_table,
            self.kernel.iptables_backend if self.kernel is not None else None,
        )
        try:
            path = write_mode_record(self.config.state_dir, record)
        except (OSError, ShiftnetError) as err:
            log.warning("proxy mode record not written error=%s", err)
            return
        log.info("proxy mode recorded mode=%s path=%s", self.config.mode, path)

    async def stop(self, cleanup: bool = False) -> None:
        await self.runner.stop()
        await self.health_checks.close()
        await self.health.close()
        if self._own_informers:
            await self.informers.stop()
        if self.userspace is not None:
            await self.userspace.stop()
        if self.kernel is not None:
            if cleanup:
                await self.kernel.cleanup()
            self.kernel.close()
