"""User-space mode: an asyncio listener per service port on its ClusterIP:port.

TCP: accept, pick an endpoint (round robin, ClientIP affinity), connect; a
failed connect is retried on the next endpoint, so a dead pod costs the client
nothing as long as one endpoint answers. Bytes are relayed between the two
plain non-blocking sockets by :class:`~shiftnet.proxy.splice.SpliceRelay`
(loop reader/writer callbacks; small reads copied, bulk spliced through one
shared pipe; flow control and half-close).

UDP: one backend socket per client address, closed after ``udp_idle_timeout``
without traffic; replies are relayed back from the service address.

Endpoint changes only update the balancer: established connections keep their
sockets. A removed service closes its listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from prometheus_client import Counter

from shiftnet.proxy.balancer import Balancer
from shiftnet.proxy.listeners import (
    ListenerKey,
    cluster_listeners,
    external_listeners,
    refusal,
)
from shiftnet.proxy.model import Backend, ServiceEntry, ServicePortName, ServiceTable
from shiftnet.proxy.relay_budget import RelayBudget, default_relay_limit
from shiftnet.proxy.splice import SharedPipe, SpliceRelay

log = logging.getLogger(__name__)

CONNECT_ERRORS = Counter(
    "shiftnet_proxy_userspace_connect_failures_total",
    "Connects to an endpoint that failed (each is retried on the next endpoint)",
)
RELAYS_REFUSED = Counter(
    "shiftnet_proxy_userspace_relays_refused_total",
    "New TCP connections reset and new UDP clients dropped because the relay budget was spent",
)
CLIENT_FAILURES = Counter(
    "shiftnet_proxy_userspace_client_failures_total",
    "Client connections closed because no endpoint could be reached",
)


@dataclass(frozen=True)
class UserspaceConfig:
    connect_timeout: float = 2.0
    udp_idle_timeout: float = 30.0
    # relayed TCP connections + UDP clients at once; None: a quarter of the descriptor limit
    max_relays: int | None = None
    bind_override: str | None = None  # listen here instead of the ClusterIP (tests, debugging)
    # where node ports listen (kube-proxy's --nodeport-addresses); loopback unless asked
    node_port_addresses: tuple[str, ...] = ("127.0.0.1",)


def relay_limit(config: UserspaceConfig) -> int:
    """``config.max_relays``, or a quarter of this process's descriptor limit."""
    if config.max_relays is not None:
        return config.max_relays
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return default_relay_limit(soft if soft != resource.RLIM_INFINITY else 1 << 20)


def _refused(entry: ServiceEntry, budget: RelayBudget, protocol: str) -> None:
    RELAYS_REFUSED.inc()
    if budget.time_to_tell(time.monotonic()):
        log.warning(
            "relay budget spent: new clients refused service=%s protocol=%s limit=%d refused=%d",
            entry.id,
            protocol,
            budget.limit,
            budget.refused,
        )


# ------------------------------------------------------------------ TCP relay

ACCEPTS_PER_WAKEUP = 64  # accept() calls per readable listener, before other work runs


class TCPService:
    """The listener of one TCP service port and its balancer.

    A non-blocking listening socket watched with ``add_reader``; each accepted
    client holds a unit of the relay budget (or is reset at once), is connected
    to an endpoint, and is relayed by a :class:`SpliceRelay`. While connecting,
    nothing reads the client, so TCP holds its bytes.
    """

    def __init__(
        self,
        entry: ServiceEntry,
        config: UserspaceConfig,
        budget: RelayBudget | None = None,
    ) -> None:
        self.entry = entry
        self.config = config
        self.budget = budget or RelayBudget(relay_limit(config))
        self.balancer = Balancer(entry.backends, entry.affinity, entry.affinity_timeout)
        self.listener: socket.socket | None = None
        self.connections: set[SpliceRelay] = set()
        self.pipe: SharedPipe | None = None  # while listening
        self._connecting: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        host = self.config.bind_override or self.entry.cluster_ip
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, self.entry.port))
            sock.listen(1024)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.listener = sock
        self.pipe = SharedPipe.acquire(loop)
        loop.add_reader(sock.fileno(), self._accept, loop, sock, self.pipe)

    def update(self, entry: ServiceEntry) -> None:
        self.entry = entry
        self.balancer.update(entry.backends, entry.affinity, entry.affinity_timeout)

    def refuse(self, protocol: str) -> None:
        _refused(self.entry, self.budget, protocol)

    def _accept(
        self, loop: asyncio.AbstractEventLoop, listener: socket.socket, pipe: SharedPipe
    ) -> None:
        for _ in range(ACCEPTS_PER_WAKEUP):
            try:
                client, addr = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE, ENOBUFS...: the next wake-up tries again
                log.warning("accept failed service=%s error=%s", self.entry.id, exc.strerror)
                return
            if not self.budget.take():
                self.refuse("tcp")
                client.close()  # the client learns at once (EOF before any byte)
                continue
            client.setblocking(False)
            relay = SpliceRelay(loop, pipe, client, self._relay_closed)
            self.connections.add(relay)
            task = loop.create_task(self.connect(relay, str(addr[0])))
            self._connecting.add(task)
            task.add_done_callback(self._connect_done)

    def _relay_closed(self, relay: SpliceRelay) -> None:
        if relay in self.connections:
            self.connections.discard(relay)
            self.budget.give()

    def _connect_done(self, task: asyncio.Task[None]) -> None:
        """A connect that ended in an error we did not expect must not leave a client behind."""
        self._connecting.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        log.error("relay setup failed service=%s error=%r", self.entry.id, task.exception())

    async def connect(self, relay: SpliceRelay, client_ip: str) -> None:
        """Connect ``relay``'s client to an endpoint, trying each one at most once."""
        try:
            endpoint = await self._connect_endpoint(client_ip)
        except BaseException:
            relay.close()
            raise
        if endpoint is None:
            CLIENT_FAILURES.inc()
            relay.close()
        elif relay.closed:  # the proxy stopped while we connected
            endpoint.close()
        else:
            relay.start(endpoint)

    async def _connect_endpoint(self, client_ip: str) -> socket.socket | None:
        loop = asyncio.get_running_loop()
        backend = self.balancer.pick(client_ip, time.monotonic())
        tried: set[Backend] = set()
        while backend is not None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                await asyncio.wait_for(
                    loop.sock_connect(sock, (backend.ip, backend.port)), self.config.connect_timeout
                )
            except (OSError, TimeoutError) as exc:
                sock.close()
                CONNECT_ERRORS.inc()
                log.info(
                    "endpoint connect failed service=%s endpoint=%s error=%s",
                    self.entry.id,
                    backend,
                    exc.__class__.__name__,
                )
                tried.add(backend)
                backend = self._next_untried(client_ip, backend, tried)
                continue
            except BaseException:
                sock.close()
                raise
            return sock
        log.warning("no endpoint reachable service=%s tried=%d", self.entry.id, len(tried))
        return None

    def _next_untried(self, client_ip: str, failed: Backend, tried: set[Backend]) -> Backend | None:
        for _ in range(len(self.balancer.backends)):
            candidate = self.balancer.retry(client_ip, failed, time.monotonic())
            if candidate not in tried:
                return candidate
        return None

    def close_connections(self) -> None:
        """Close every relayed connection (the proxy is stopping)."""
        for task in list(self._connecting):
            task.cancel()
        for relay in list(self.connections):
            relay.close()

    async def close(self) -> None:
        """Stop accepting; connections already relayed keep going."""
        if self.listener is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                asyncio.get_running_loop().remove_reader(self.listener.fileno())
            self.listener.close()
            self.listener = None
        if self.pipe is not None:
            self.pipe.release()
            self.pipe = None


# ------------------------------------------------------------------ UDP relay


class _UDPSession(asyncio.DatagramProtocol):
    """The backend socket of one client: replies go back through the listener."""

    def __init__(self, service: UDPService, client: tuple[str, int]) -> None:
        self.service = service
        self.client = client
        self.transport: asyncio.DatagramTransport | None = None
        self.last = time.monotonic()
        self.queue: list[bytes] = []
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)
        if self.closed:  # dropped (idle, error, service closed) while its socket was opening
            self.transport.close()
            return
        for data in self.queue:
            self.transport.sendto(data)
        self.queue.clear()

    def send(self, data: bytes) -> None:
        self.last = time.monotonic()
        if self.transport is None:
            self.queue.append(data)
        else:
            self.transport.sendto(data)

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.last = time.monotonic()
        if self.service.transport is not None:
            self.service.transport.sendto(data, self.client)

    def error_received(self, exc: Exception) -> None:
        log.info("udp endpoint error service=%s error=%s", self.service.entry.id, exc)
        self.service.drop(self.client)

    def close(self) -> None:
        self.closed = True
        self.queue.clear()
        if self.transport is not None:
            self.transport.close()


class UDPService(asyncio.DatagramProtocol):
    """The socket of one UDP service port, with a backend socket per client."""

    def __init__(
        self, entry: ServiceEntry, config: UserspaceConfig, budget: RelayBudget | None = None
    ) -> None:
        self.entry = entry
        self.config = config
        self.budget = budget or RelayBudget(relay_limit(config))
        self.balancer = Balancer(entry.backends, entry.affinity, entry.affinity_timeout)
        self.transport: asyncio.DatagramTransport | None = None
        self.sessions: dict[tuple[str, int], _UDPSession] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._opening: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        host = self.config.bind_override or self.entry.cluster_ip
        await loop.create_datagram_endpoint(lambda: self, local_addr=(host, self.entry.port))
        self._sweeper = loop.create_task(self._sweep())

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def update(self, entry: ServiceEntry) -> None:
        self.entry = entry
        self.balancer.update(entry.backends, entry.affinity, entry.affinity_timeout)

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        client = (str(addr[0]), int(addr[1]))
        session = self.sessions.get(client)
        if session is None:
            backend = self.balancer.pick(client[0], time.monotonic())
            if backend is None:
                return
            if not self.budget.take():
                _refused(self.entry, self.budget, "udp")
                return
            session = _UDPSession(self, client)
            self.sessions[client] = session
            task = asyncio.get_running_loop().create_task(self._open(session, backend))
            self._opening.add(task)
            task.add_done_callback(self._opening.discard)
        session.send(data)

    async def _open(self, session: _UDPSession, backend: Backend) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.create_datagram_endpoint(
                lambda: session, remote_addr=(backend.ip, backend.port)
            )
        except OSError as exc:
            log.info(
                "udp endpoint failed service=%s endpoint=%s error=%s", self.entry.id, backend, exc
            )
            self.drop(session.client)

    def drop(self, client: tuple[str, int]) -> None:
        session = self.sessions.pop(client, None)
        if session is not None:
            self.budget.give()
            session.close()

    async def _sweep(self) -> None:
        period = max(0.05, self.config.udp_idle_timeout / 2)
        while True:
            await asyncio.sleep(period)
            cutoff = time.monotonic() - self.config.udp_idle_timeout
            for client in [c for c, s in self.sessions.items() if s.last < cutoff]:
                self.drop(client)

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        for client in list(self.sessions):
            self.drop(client)
        if self.transport is not None:
            self.transport.close()
            self.transport = None


# ------------------------------------------------------------------ the proxier


class UserspaceProxier:
    """Keeps one listener per service port in line with the service table."""

    def __init__(self, config: UserspaceConfig | None = None) -> None:
        self.config = config or UserspaceConfig()
        self.budget = RelayBudget(relay_limit(self.config))  # one for every service port
        self.services: dict[ServicePortName, TCPService | UDPService] = {}
        self.external: dict[ListenerKey, TCPService | UDPService] = {}
        self.errors: dict[Any, str] = {}
        self.refused: dict[ServicePortName, str] = {}  # fields this mode cannot honour

    async def sync(self, table: ServiceTable) -> None:
        """Open, update and close listeners; a port that cannot be bound is retried next sync."""
        self.errors = {}
        self._unshare_affinity()
        await self._sync_listeners(self.services, cluster_listeners(table))
        await self._sync_listeners(self.external, self._external_listeners(table))
        self._share_affinity()

    def _unshare_affinity(self) -> None:
        """Each external listener has a balancer of its own while listeners are updated:
        updating one that shares the ClusterIP's would hand it its own endpoints (all of
        them, where the ClusterIP sends to this node's only: internalTrafficPolicy)."""
        for (key, _, _), listener in self.external.items():
            cluster = self.services.get(key)
            if cluster is not None and listener.balancer is cluster.balancer:
                entry = listener.entry
                listener.balancer = Balancer(entry.backends, entry.affinity, entry.affinity_timeout)

    def _share_affinity(self) -> None:
        """External listeners that send where the ClusterIP sends use its balancer, so a
        client keeps one endpoint across the ClusterIP and every external address (one
        affinity per service port, as the kernel modes and kube-proxy)."""
        for (key, _, _), listener in self.external.items():
            cluster = self.services.get(key)
            if cluster is not None and cluster.entry.backends == listener.entry.backends:
                listener.balancer = cluster.balancer

    def _external_listeners(self, table: ServiceTable) -> dict[ListenerKey, ServiceEntry]:
        """Node port, external IP and LB address listeners, and the refused policies."""
        refused: dict[ServicePortName, str] = {}
        wanted: dict[ListenerKey, ServiceEntry] = {}
        for key, entry in table.entries.items():
            if not entry.external_vips:
                continue
            if entry.external_local:
                refused[key] = refusal(entry)
                continue
            wanted.update(external_listeners(entry, self.config.node_port_addresses))
        for key in sorted(refused.keys() - self.refused.keys()):
            log.error("%s", refused[key])
        self.refused = refused
        return wanted

    async def _sync_listeners(
        self,
        services: dict[Any, TCPService | UDPService],
        wanted: Mapping[Any, ServiceEntry],
    ) -> None:
        for key in [k for k in services if k not in wanted]:
            await self._close(key, services)
        for key, entry in wanted.items():
            current = services.get(key)
            if current is not None and current.entry.vip != entry.vip:
                await self._close(key, services)
                current = None
            if current is not None:
                current.update(entry)
                continue
            service: TCPService | UDPService = (
                TCPService(entry, self.config, self.budget)
                if entry.protocol == "TCP"
                else UDPService(entry, self.config, self.budget)
            )
            try:
                await service.start()
            except OSError as exc:
                self.errors[key] = (
                    f"cannot listen on {entry.cluster_ip}:{entry.port}: {exc.strerror}"
                )
                log.error(
                    "listen failed service=%s address=%s:%d error=%s",
                    key,
                    entry.cluster_ip,
                    entry.port,
                    exc.strerror,
                )
                continue
            log.info(
                "listening service=%s address=%s:%d/%s",
                key,
                entry.cluster_ip,
                entry.port,
                entry.protocol,
            )
            services[key] = service

    async def _close(self, key: Any, services: dict[Any, TCPService | UDPService]) -> None:
        service = services.pop(key)
        await service.close()
        log.info("closed service=%s", key)

    async def stop(self) -> None:
        """Close every listener and every connection relayed through them."""
        groups: list[dict[Any, TCPService | UDPService]] = [self.services, self.external]
        for services in groups:
            for key in list(services):
                service = services[key]
                await self._close(key, services)
                if isinstance(service, TCPService):
                    service.close_connections()
