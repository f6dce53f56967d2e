"""A whole cluster in one process: store, master, service proxy, DNS, node agent, router.

``shiftnet up`` is a thin CLI over :class:`LocalCluster`. Components are
started in the order of :data:`COMPONENTS` and stopped in reverse; each is an
object with ``name``, ``async start()``, ``async stop()`` and ``summary()``,
and optionally ``hints()`` ("try next" lines for the user) and
``metrics_collectors()`` (its Prometheus series, served on a ``/metrics`` of
its own on a free port of ``extra["metrics_host"]``, loopback by default). Adding one (the
router, the proxy, DNS) is one line in :data:`COMPONENTS`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from shiftnet.errors import ConfigError, ShiftnetError
from shiftnet.private_files import ensure_private_dir
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

SUBNET_WAIT_SECONDS = 30.0


@dataclass
class ClusterConfig:
    state_dir: Path
    store_url: str
    node_name: str
    network: str = "local"
    # None: the network mode's default (shiftnet.master.config.DEFAULTS)
    cluster_network: str | None = None
    host_subnet_length: int | None = None
    service_network: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # options of later components


class Component(Protocol):
    name: str

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def summary(self) -> str: ...


class StoreComponent:
    """The cluster store every other component watches."""

    name = "store"

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.store: Store | None = None

    async def start(self) -> None:
        from shiftnet.store import open_store

        self.store = open_store(self.cluster.config.store_url)
        await self.store.revision()  # fail now, with the store's own error, if unreachable
        self.cluster.store = self.store

    async def stop(self) -> None:
        if self.store is not None:
            await self.store.close()

    def summary(self) -> str:
        return self.cluster.config.store_url


class MasterComponent:
    """ClusterIP allocator, endpoints controller, subnet allocator, scheduler."""

    name = "master"

    def __init__(self, cluster: LocalCluster) -> None:
        from shiftnet.master import Master
        from shiftnet.master.config import MasterConfig

        cfg = cluster.config
        self.config = MasterConfig.build(
            cfg.network,
            cluster_network=cfg.cluster_network,
            host_subnet_length=cfg.host_subnet_length,
            service_network=cfg.service_network,
            # as `shiftnet master` reads them (docs/master.md)
            node_port_range=os.environ.get("SHIFTNET_SERVICE_NODE_PORT_RANGE") or None,
            load_balancer_range=os.environ.get("SHIFTNET_LOAD_BALANCER_RANGE") or None,
            event_ttl=os.environ.get("SHIFTNET_EVENT_TTL") or None,
        )
        self.master = Master(cluster.require_store(), self.config)

    async def start(self) -> None:
        await self.master.start()

    async def stop(self) -> None:
        await self.master.stop()

    def metrics_collectors(self) -> list[Any]:
        from shiftnet.master.metrics import REGISTRY

        return [REGISTRY]

    def summary(self) -> str:
        return (
            f"service network {self.master.cluster_ips.range.cidr}, "
            f"cluster network {self.config.cluster_network}"
        )


class NodeComponent:
    """This machine's node agent; start returns once the node has its subnet."""

    name = "node"

    def __init__(self, cluster: LocalCluster) -> None:
        from shiftnet.sdn.agent import NodeAgent
        from shiftnet.sdn.config import NodeConfig

        cfg = cluster.config
        dns = cluster.component("dns")
        self.config = NodeConfig(
            node_name=cfg.node_name,
            state_dir=cfg.state_dir,
            network=cfg.network,
            dns_server=getattr(dns, "address", None),
            cluster_domain=getattr(dns, "domain", "cluster.local"),
        )
        self.agent = NodeAgent(cluster.require_store(), self.config)
        self.subnet = ""

    async def start(self) -> None:
        await self.agent.start()
        try:
            self.subnet = await self.agent.wait_for_subnet(SUBNET_WAIT_SECONDS)
        except TimeoutError:
            await self.agent.stop()
            raise ConfigError(
                f'node "{self.config.node_name}" got no HostSubnet within '
                f"{SUBNET_WAIT_SECONDS:g}s: is the master's cluster network full? "
                "(see shiftnet get nodes, shiftnet get hostsubnets)"
            ) from None

    async def stop(self) -> None:
        await self.agent.stop()

    def metrics_collectors(self) -> list[Any]:
        from shiftnet.sdn.metrics import REGISTRY

        return [REGISTRY]

    def summary(self) -> str:
        return (
            f"{self.config.node_name} ({self.config.network} network), pod subnet {self.subnet}, "
            f"logs under {self.config.node_dir / 'logs'}"
        )


ComponentFactory = Callable[["LocalCluster"], Component]


def _claims(cluster: LocalCluster) -> Component:
    from shiftnet.claims.component import ClaimsComponent

    return ClaimsComponent(cluster)


def _dns(cluster: LocalCluster) -> Component:
    from shiftnet.dns.component import DNSComponent

    return DNSComponent(cluster)


def _proxy(cluster: LocalCluster) -> Component:
    from shiftnet.proxy.component import ProxyComponent

    return ProxyComponent(cluster)


def _router(cluster: LocalCluster) -> Component:
    from shiftnet.router.component import RouterComponent

    return RouterComponent(cluster)


def _apiserver(cluster: LocalCluster) -> Component:
    from shiftnet.apiserver.component import APIServerComponent

    return APIServerComponent(cluster)


# Start order; stopped in reverse. The claims step reads the store and settles this
# cluster's loopback networks and ports (shiftnet.claims) before anything binds them;
# DNS comes before the node so pods get its address.
COMPONENTS: list[ComponentFactory] = [
    StoreComponent,
    _claims,
    MasterComponent,
    _proxy,
    _dns,
    NodeComponent,
    _router,
    _apiserver,
]


class LocalCluster:
    """Start every component in order, stop them in reverse, even after a failed start."""

    def __init__(
        self,
        config: ClusterConfig,
        components: list[ComponentFactory] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.factories = list(COMPONENTS if components is None else components)
        self.progress = progress or (lambda line: None)
        self.store: Store | None = None
        self.started: list[Component] = []
        self.metrics: dict[str, Any] = {}  # component name -> its MetricsEndpoint
        self._lock: IO[str] | None = None

    def require_store(self) -> Store:
        if self.store is None:
            raise ConfigError("the store component must come first in the component list")
        return self.store

    def hints(self) -> list[str]:
        """ "Try next" lines from components that offer a ``hints()`` method (router, DNS, ...)."""
        lines: list[str] = []
        for comp in self.started:
            fn = getattr(comp, "hints", None)
            if callable(fn):
                lines.extend(str(line) for line in fn())
        return lines

    def reserved_ports(self) -> frozenset[int]:
        """The ports claimed for this cluster's listeners (router, DNS, API): free until
        their component binds them, so no port-0 endpoint may take one meanwhile."""
        return frozenset(int(p) for p in self.config.extra.get("reserved_ports", ()))

    def component(self, name: str) -> Component | None:
        return next((c for c in self.started if c.name == name), None)

    def _take_lock(self) -> None:
        """One ``up`` per state directory: two would fight over pods and pid files."""
        ensure_private_dir(self.config.state_dir)  # the store and router keys live here
        path = self.config.state_dir / "up.lock"
        f = open(path, "a+")  # noqa: SIM115 - held open for the cluster's lifetime
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "unknown"
            f.close()
            raise ConfigError(
                f'another "shiftnet up" (pid {holder}) is running with state directory '
                f"{self.config.state_dir}: stop it first or use --state-dir"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        self._lock = f

    def _release_lock(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    async def start(self) -> None:
        self._take_lock()
        try:
            for factory in self.factories:
                comp = factory(self)
                self.progress(f"starting {comp.name} ...")
                await comp.start()
                self.started.append(comp)
                url = self._serve_metrics(comp)
                where = f"; metrics on {url}" if url else ""
                self.progress(f"  {comp.name:<7} ready: {comp.summary()}{where}")
        except BaseException:
            await self.stop()
            raise

    def _serve_metrics(self, comp: Component) -> str | None:
        """Serve ``comp``'s series on a free port of the metrics host (None: it has none)."""
        collectors = getattr(comp, "metrics_collectors", None)
        host = str(self.config.extra.get("metrics_host") or "127.0.0.1")
        if not callable(collectors) or host == "off":
            return None
        from shiftnet.metrics_endpoint import MetricsEndpoint

        endpoint = MetricsEndpoint(f"{host}:0", collectors(), self.reserved_ports())
        self.metrics[comp.name] = endpoint
        return endpoint.url

    async def stop(self) -> None:
        """Stop started components in reverse order; one failing stop does not skip the rest."""
        try:
            while self.started:
                comp = self.started.pop()
                endpoint = self.metrics.pop(comp.name, None)
                if endpoint is not None:
                    endpoint.stop()
                self.progress(f"stopping {comp.name} ...")
                try:
                    await comp.stop()
                except (ShiftnetError, OSError) as err:
                    log.error("stop failed component=%s error=%s", comp.name, err)
        finally:
            self._release_lock()

    async def __aenter__(self) -> LocalCluster:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
