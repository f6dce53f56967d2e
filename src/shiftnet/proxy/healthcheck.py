"""The proxy's HTTP health checks: per-Service health check node ports and its own /healthz.

Why here and not in the drivers: every mode serves them the same way (kube-proxy's
``pkg/proxy/healthcheck``), as small asyncio listeners in the proxy's event loop.
Each connection gets one answer and is closed, and one that sends no complete
request head within :data:`READ_TIMEOUT` or sends more than :data:`MAX_HEAD` bytes
is closed too, so no client can hold a descriptor for long. Answers are built by
:mod:`shiftnet.proxy.healthcheck_model` (pure).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import socket
import time
from collections.abc import Callable, Collection
from typing import cast

from shiftnet.api import Endpoints, Service
from shiftnet.api.names import is_digits
from shiftnet.errors import ConfigError
from shiftnet.free_ports import bind_avoiding
from shiftnet.proxy import healthcheck_model as model
from shiftnet.proxy.healthcheck_model import HealthCheckTarget

log = logging.getLogger(__name__)

READ_TIMEOUT = 5.0  # seconds a client has to send its request head
MAX_HEAD = 8192  # bytes of request head read at most
DEFAULT_HEALTHZ_PORT = 10256  # kube-proxy's --healthz-bind-address port

Key = tuple[str, str]
Answer = Callable[[str, str], tuple[int, bytes]]  # (method, path) -> (status, body)


class _OneRequest(asyncio.Protocol):
    """Read one request head, answer it, close."""

    def __init__(self, answer: Answer, live: set[asyncio.Transport]) -> None:
        self._answer = answer
        self._live = live
        self._buffer = b""
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport
        self._transport = stream
        self._live.add(stream)
        self._timer = asyncio.get_running_loop().call_later(READ_TIMEOUT, stream.abort)

    def data_received(self, data: bytes) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        self._buffer += data
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            end = self._buffer.find(b"\n\n")
        if end < 0 and len(self._buffer) <= MAX_HEAD:
            return
        request = model.request_line(self._buffer[:MAX_HEAD]) if end >= 0 else None
        if request is None:
            transport.write(model.http_response(400, b'{"error":"bad request"}'))
        else:
            method, path = request
            status, body = self._answer(method, path)
            transport.write(model.http_response(status, body, head=method == "HEAD"))
        transport.close()  # after the response is flushed

    def eof_received(self) -> bool:
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._transport is not None:
            self._live.discard(self._transport)
        self._transport = None


def _listening_socket(host: str, port: int, netns: str | None) -> socket.socket:
    """A bound, listening TCP socket (made inside ``netns`` when given: run in a thread)."""

    def make() -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(128)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        return sock

    if netns is None:
        return make()
    from shiftnet.sdn.threadns import entered

    with entered(netns):
        return make()


class HttpListener:
    """One listening address:port answering every request with ``answer``."""

    def __init__(
        self, server: asyncio.AbstractServer, live: set[asyncio.Transport], port: int
    ) -> None:
        self._server = server
        self._live = live
        self.port = port

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        answer: Answer,
        netns: str | None = None,
        avoid: Collection[int] = (),
    ) -> HttpListener:
        """Raises OSError when the address cannot be bound. ``avoid``: ports a port 0
        must not get (those the cluster claimed for its other listeners)."""
        if netns is None and port == 0 and avoid:
            sock = bind_avoiding(
                lambda: _listening_socket(host, 0, None),
                lambda s: int(s.getsockname()[1]),
                lambda s: s.close(),
                avoid,
            )
        elif netns is None:
            sock = _listening_socket(host, port, None)
        else:
            sock = await asyncio.to_thread(_listening_socket, host, port, netns)
        live: set[asyncio.Transport] = set()
        bound = int(sock.getsockname()[1])
        loop = asyncio.get_running_loop()
        try:
            server = await loop.create_server(lambda: _OneRequest(answer, live), sock=sock)
        except BaseException:
            sock.close()
            raise
        return cls(server, live, bound)

    async def close(self) -> None:
        self._server.close()
        for transport in list(self._live):
            transport.abort()
        await self._server.wait_closed()


class ServiceHealthServers:
    """kube-proxy's service health server: for every Service of ``type: LoadBalancer``
    with ``externalTrafficPolicy: Local``, a listener on each node address at its
    ``spec.healthCheckNodePort`` answering 200 while this node has a ready endpoint
    of it, 503 otherwise (always 503 when ``serves_local_traffic`` is false: a mode
    that does not open such a Service's outside addresses must not attract traffic).

    :meth:`mark` notes a changed Service (cheap, from the informer handlers);
    :meth:`sync` (the proxy's sync) recomputes only those, opens and closes
    listeners, and retries addresses that could not be bound before."""

    def __init__(
        self,
        addresses: tuple[str, ...],
        node_name: str | None,
        proxy_healthy: Callable[[], bool],
        netns: str | None = None,
        *,
        serves_local_traffic: bool,
    ) -> None:
        self.addresses = addresses
        self.node_name = node_name
        self.netns = netns
        self.serves_local_traffic = serves_local_traffic
        self._proxy_healthy = proxy_healthy
        self._dirty: set[Key] = set()
        self.targets: dict[Key, HealthCheckTarget] = {}
        self._listeners: dict[tuple[Key, str], tuple[int, HttpListener]] = {}
        self.unbound: dict[Key, str] = {}  # service -> why its port is not (fully) served

    def mark(self, namespace: str | None, name: str) -> None:
        self._dirty.add((namespace or "default", name))

    def answer(self, key: Key) -> Answer:
        def respond(method: str, path: str) -> tuple[int, bytes]:
            found = self.targets.get(key)
            if found is None:  # closed under the request's feet
                found = HealthCheckTarget(key[0], key[1], 0, 0)
            return model.service_answer(found, self._proxy_healthy())

        return respond

    async def sync(
        self,
        get_service: Callable[[str, str], Service | None],
        get_endpoints: Callable[[str, str], Endpoints | None],
    ) -> None:
        dirty, self._dirty = self._dirty, set()
        for key in sorted(dirty):
            svc = get_service(*key)
            if svc is None or not model.health_check_port(svc):
                self.targets.pop(key, None)  # the endpoints of most Services are never read
                continue
            self.targets[key] = model.target(
                svc,
                get_endpoints(*key),
                self.node_name,
                serves_local_traffic=self.serves_local_traffic,
            )
        await self._apply()

    async def _apply(self) -> None:
        for (key, address), (port, listener) in list(self._listeners.items()):
            found = self.targets.get(key)
            if found is None or found.port != port or address not in self.addresses:
                del self._listeners[(key, address)]
                await listener.close()
                log.info(
                    "health check closed service=%s/%s address=%s port=%d",
                    key[0],
                    key[1],
                    address,
                    port,
                )
        self.unbound = {}
        for key, found in sorted(self.targets.items()):
            for address in self.addresses:
                if (key, address) in self._listeners:
                    continue
                try:
                    listener = await HttpListener.open(
                        address, found.port, self.answer(key), self.netns
                    )
                except OSError as err:
                    why = f"{address}:{found.port}: {err.strerror or err}"
                    self.unbound[key] = why
                    log.warning(
                        "health check port not bound service=%s/%s address=%s port=%d error=%s",
                        key[0],
                        key[1],
                        address,
                        found.port,
                        err.strerror or err,
                    )
                    continue
                self._listeners[(key, address)] = (found.port, listener)
                log.info(
                    "health check serving service=%s/%s address=%s port=%d",
                    key[0],
                    key[1],
                    address,
                    found.port,
                )

    @property
    def listening(self) -> dict[Key, list[tuple[str, int]]]:
        out: dict[Key, list[tuple[str, int]]] = {}
        for (key, address), (port, _) in sorted(self._listeners.items()):
            out.setdefault(key, []).append((address, port))
        return out

    async def close(self) -> None:
        listeners, self._listeners = self._listeners, {}
        for _, listener in listeners.values():
            await listener.close()


def _iso(unix: float | None) -> str:
    if unix is None:
        return ""
    return datetime.datetime.fromtimestamp(unix, datetime.UTC).isoformat()


class ProxyHealth:
    """kube-proxy's ``/healthz`` and ``/livez`` (``--healthz-bind-address``): 200 once a
    sync succeeded and while no change waits longer than ``timeout`` for one."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._last_synced: float | None = None  # monotonic
        self._last_synced_unix: float | None = None
        self._oldest_queued: float | None = None
        self._latest_queued: float | None = None
        self.listener: HttpListener | None = None
        self.host = "127.0.0.1"
        self.avoid: frozenset[int] = frozenset()  # claimed ports a port 0 must not take

    def queued(self) -> None:
        now = time.monotonic()
        self._latest_queued = now
        if self._oldest_queued is None:
            self._oldest_queued = now

    def synced(self, started: float) -> None:
        """A sync that started at monotonic ``started`` succeeded: changes queued
        before it are programmed (one queued while it ran waits for the next)."""
        self._last_synced = time.monotonic()
        self._last_synced_unix = time.time()
        if self._oldest_queued is not None and self._oldest_queued <= started:
            late = self._latest_queued
            self._oldest_queued = late if late is not None and late > started else None

    def healthy(self) -> bool:
        return model.proxy_healthy(
            time.monotonic(), self._last_synced, self._oldest_queued, self.timeout
        )

    def answer(self, method: str, path: str) -> tuple[int, bytes]:
        if path not in ("/healthz", "/livez"):
            return 404, b'{"error":"not found"}'
        return model.proxy_answer(self.healthy(), _iso(self._last_synced_unix), _iso(time.time()))

    async def serve(self, listen: str) -> None:
        """Start ``/healthz`` on ``listen`` (ADDR:PORT); a port that cannot be bound is
        logged, and tried again on the next call."""
        if self.listener is not None:
            return
        host, port = healthz_address(listen)
        self.host = host
        try:
            self.listener = await HttpListener.open(host, port, self.answer, avoid=self.avoid)
        except OSError as err:
            log.warning("healthz not served address=%s error=%s", listen, err.strerror or err)
            return
        log.info("healthz serving url=%s", self.url)

    @property
    def url(self) -> str | None:
        if self.listener is None:
            return None
        return f"http://{self.host}:{self.listener.port}/healthz"

    async def close(self) -> None:
        if self.listener is not None:
            listener, self.listener = self.listener, None
            await listener.close()


def healthz_address(text: str) -> tuple[str, int]:
    """``--healthz-bind-address ADDR:PORT`` (``:PORT`` and a bare ADDR as kube-proxy:
    127.0.0.1 and 10256), IPv4 only."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = text, str(DEFAULT_HEALTHZ_PORT)
    port = int(port_text) if is_digits(port_text) else -1
    host = host or "127.0.0.1"
    try:
        socket.inet_pton(socket.AF_INET, host)
    except OSError:
        port = -1
    if not 0 <= port < 65536:
        raise ConfigError(
            "--healthz-bind-address (SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS) must be an IPv4 "
            f"ADDR:PORT, not {text[:60]!r}"
        )
    return host, port
