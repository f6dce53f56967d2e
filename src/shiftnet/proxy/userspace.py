"""User-space mode: an asyncio listener per service port on its ClusterIP:port.

TCP: accept, pick an endpoint (round robin, ClientIP affinity), connect; a
failed connect is retried on the next endpoint, so a dead pod costs the client
nothing as long as one endpoint answers. Bytes are relayed by two
``asyncio.Protocol`` halves with flow control (no per-chunk task or copy).

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

HIGH_WATER = 256 * 1024


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


class _Half(asyncio.Protocol):
    """One side of a relayed connection; writes what it reads to its peer.

    A FIN from one side becomes a ``write_eof`` on the other (half-close: the
    other direction keeps flowing). Once both sides have sent their FIN the
    connection is over and both transports are closed; a reset or error on
    one side closes the other. Nothing else owns these sockets, so a path
    that forgets to close them leaks two descriptors per connection.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: _Half | None = None
        self.pending: list[bytes] = []
        self.eof = False  # our socket has sent its FIN
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        self.transport.set_write_buffer_limits(high=HIGH_WATER)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None or peer.transport is None:
            self.pending.append(data)
            return
        if not peer.transport.is_closing():
            peer.transport.write(data)

    def eof_received(self) -> bool:
        self.eof = True
        if self.peer is not None and self.peer.transport is not None:
            self._pass_eof(self.peer)
        return True  # keep our write side open: half-close

    def _pass_eof(self, peer: _Half) -> None:
        """Forward our FIN to ``peer``; when it has sent its own, the connection is over."""
        assert peer.transport is not None and self.transport is not None
        if peer.transport.can_write_eof() and not peer.transport.is_closing():
            peer.transport.write_eof()
        if peer.eof:
            self.transport.close()  # both flush what they still buffer, then close
            peer.transport.close()

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            with contextlib.suppress(RuntimeError):
                self.peer.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pending.clear()
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()

    def attach(self, peer: _Half) -> None:
        """Pair with ``peer`` and flush what arrived before it existed."""
        self.peer = peer
        assert peer.transport is not None
        for chunk in self.pending:
            peer.transport.write(chunk)
        self.pending.clear()
        if self.eof:
            self._pass_eof(peer)


class _ClientSide(_Half):
    def __init__(self, service: TCPService) -> None:
        super().__init__()
        self.service = service
        self.counted = False  # holds a unit of the relay budget

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if not self.service.budget.take():
            self.service.refuse("tcp")
            cast(asyncio.Transport, transport).abort()  # a reset: the client learns at once
            return
        self.counted = True
        self.service.connections.add(self)
        self.connecting = asyncio.get_running_loop().create_task(self.service.connect(self))
        self.connecting.add_done_callback(self._connect_done)

    def _connect_done(self, task: asyncio.Task[None]) -> None:
        """A connect that ended in an error we did not expect must not leave a paused client."""
        if task.cancelled() or task.exception() is None:
            return
        log.error("relay setup failed service=%s error=%r", self.service.entry.id, task.exception())
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.counted:
            self.counted = False
            self.service.budget.give()
        self.service.connections.discard(self)
        super().connection_lost(exc)


class TCPService:
    """The listener of one TCP service port and its balancer."""

    def __init__(
        self, entry: ServiceEntry, config: UserspaceConfig, budget: RelayBudget | None = None
    ) -> None:
        self.entry = entry
        self.config = config
        self.budget = budget or RelayBudget(relay_limit(config))
        self.balancer = Balancer(entry.backends, entry.affinity, entry.affinity_timeout)
        self.server: asyncio.AbstractServer | None = None
        self.connections: set[_ClientSide] = set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        host = self.config.bind_override or self.entry.cluster_ip
        self.server = await loop.create_server(
            lambda: _ClientSide(self), host, self.entry.port, reuse_address=True, backlog=1024
        )

    def update(self, entry: ServiceEntry) -> None:
        self.entry = entry
        self.balancer.update(entry.backends, entry.affinity, entry.affinity_timeout)

    def refuse(self, protocol: str) -> None:
        _refused(self.entry, self.budget, protocol)

    async def connect(self, client: _ClientSide) -> None:
        """Connect ``client`` to an endpoint, trying each one at most once."""
        assert client.transport is not None
        peer = client.transport.get_extra_info("peername")
        client_ip = peer[0] if peer else ""
        loop = asyncio.get_running_loop()
        client.transport.pause_reading()  # nothing to relay to yet: let TCP hold the bytes
        now = time.monotonic()
        backend = self.balancer.pick(client_ip, now)
        tried: set[Backend] = set()
        while backend is not None and not client.closed:
            try:
                _, half = await asyncio.wait_for(
                    loop.create_connection(_Half, backend.ip, backend.port),
                    self.config.connect_timeout,
                )
            except (OSError, TimeoutError) as exc:
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
            if client.closed:  # the client left while we connected
                assert half.transport is not None
                half.transport.close()
                return
            half.attach(client)
            client.attach(half)
            if not client.transport.is_closing():
                client.transport.resume_reading()
            return
        if not client.closed:
            CLIENT_FAILURES.inc()
            log.warning("no endpoint reachable service=%s tried=%d", self.entry.id, len(tried))
            client.transport.close()

    def _next_untried(self, client_ip: str, failed: Backend, tried: set[Backend]) -> Backend | None:
        for _ in range(len(self.balancer.backends)):
            candidate = self.balancer.retry(client_ip, failed, time.monotonic())
            if candidate not in tried:
                return candidate
        return None

    def close_connections(self) -> None:
        """Close every relayed connection (the proxy is stopping)."""
        for client in list(self.connections):
            if client.transport is not None:
                client.transport.close()
            if client.peer is not None and client.peer.transport is not None:
                client.peer.transport.close()

    async def close(self) -> None:
        """Stop accepting; connections already relayed keep going."""
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 0.1)
            self.server = None


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
        await self._sync_listeners(self.services, cluster_listeners(table))
        await self._sync_listeners(self.external, self._external_listeners(table))

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
