"""Every way a relayed connection can end leaves no socket behind in the proxy.

The proxy runs in the test's process (``ServiceProxy``, user-space mode, real
sockets on loopback), so the descriptors measured are the test's own: every
client and backend the test opens is closed before the comparison, and what
remains above the baseline is the proxy's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from tests.support.leaks import LeakProbe
from tests.support.ports import free_port
from tests.support.proxy_cluster import backends_of, endpoints, put, service, wait_until
from tests.support.proxy_peers import NamedBackend

from shiftnet.api import Service
from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.model import Backend, ServiceEntry, ServicePortName
from shiftnet.proxy.userspace import UDPService, UserspaceConfig
from shiftnet.store import open_store

pytestmark = pytest.mark.integration

BIG = 4 * 1024 * 1024


class Env:
    def __init__(self, client: Client, proxy: ServiceProxy, net: int) -> None:
        self.client, self.proxy, self.net = client, proxy, net
        self.vip = f"127.30.{net}.1"

    async def serve(self, name: str, port: int, backend: tuple[str, int]) -> None:
        await put(self.client, service(name, self.vip, port))
        await put(self.client, endpoints(name, [backend]))
        await wait_until(lambda: backends_of(self.proxy, "default", name) == {backend})
        await wait_until(lambda: self.listening(port), what="listener")

    def listening(self, port: int) -> bool:
        return any(s.entry.port == port for s in self.proxy.userspace.services.values())  # type: ignore[union-attr]

    def relayed(self) -> int:
        return sum(
            len(getattr(s, "connections", ())) for s in self.proxy.userspace.services.values()
        )  # type: ignore[union-attr]


@pytest.fixture
async def env(tmp_path) -> AsyncIterator[Env]:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    proxy = ServiceProxy(
        store,
        ProxyConfig(
            mode="userspace",
            min_sync_interval=0.0,
            userspace=UserspaceConfig(connect_timeout=0.5, udp_idle_timeout=0.3),
        ),
    )
    await proxy.start()
    try:
        yield Env(Client(store), proxy, random.randint(1, 250))
    finally:
        await proxy.stop()
        await store.close()


@contextlib.asynccontextmanager
async def backend(
    host: str, handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
) -> AsyncIterator[tuple[str, int]]:
    """A TCP server whose connections run ``handle`` and are then closed."""
    writers: set[asyncio.StreamWriter] = set()

    async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.add(writer)
        try:
            await handle(reader, writer)
        except (ConnectionError, OSError):
            pass
        finally:
            writers.discard(writer)
            writer.close()

    port = free_port(host)
    server = await asyncio.start_server(run, host, port, reuse_address=True)
    try:
        yield host, port
    finally:
        server.close()
        for w in list(writers):
            w.close()
        await server.wait_closed()


def fd_probe() -> LeakProbe:
    """Descriptors only: the test's own buffers share this process's RSS."""
    return LeakProbe(
        os.getpid(), name="test process with the proxy", fd_slack=2, rss_growth_kib=None
    )


async def read_all(reader: asyncio.StreamReader, slow: bool = False) -> bytes:
    got = bytearray()
    while chunk := await asyncio.wait_for(reader.read(65536), 10):
        got += chunk
        if slow and len(got) < BIG // 2:
            await asyncio.sleep(0.001)  # a slow reader: the proxy's buffers fill, flow control
    return bytes(got)


async def test_half_close_client_still_gets_the_whole_reply(env: Env) -> None:
    """The client shuts its write side after the request; the backend answers after that FIN."""

    async def answer_after_eof(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.read()  # to EOF: the client's FIN came through the proxy
        writer.write(struct.pack("!I", len(request)) + b"x" * BIG)
        await writer.drain()

    async with backend(f"127.10.{env.net}.1", answer_after_eof) as be:
        port = free_port(env.vip)
        await env.serve("half", port, be)
        probe = fd_probe()
        for _ in range(20):
            reader, writer = await asyncio.open_connection(env.vip, port)
            writer.write(b"request body")
            writer.write_eof()
            reply = await read_all(reader)
            writer.close()
            await writer.wait_closed()
            assert struct.unpack("!I", reply[:4])[0] == len(b"request body")
            assert len(reply) == 4 + BIG
        await wait_until(lambda: env.relayed() == 0, what="relayed connections closed")
        await probe.settled(5)


async def test_backend_closes_first_after_a_big_reply_to_a_slow_client(env: Env) -> None:
    async def big_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"y" * BIG)
        await writer.drain()

    async with backend(f"127.10.{env.net}.2", big_then_close) as be:
        port = free_port(env.vip)
        await env.serve("big", port, be)
        probe = fd_probe()
        for _ in range(5):
            reader, writer = await asyncio.open_connection(env.vip, port)
            writer.write(b"GET\n")
            assert len(await read_all(reader, slow=True)) == BIG
            writer.close()
            await writer.wait_closed()
        await wait_until(lambda: env.relayed() == 0, what="relayed connections closed")
        await probe.settled(5)


async def test_refused_endpoint_closes_the_client_and_its_sockets(env: Env) -> None:
    host = f"127.10.{env.net}.3"
    port = free_port(env.vip)
    await env.serve("refused", port, (host, free_port(host)))  # nothing listens there
    probe = fd_probe()
    for _ in range(100):
        reader, writer = await asyncio.open_connection(env.vip, port)
        with contextlib.suppress(ConnectionError):
            assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    await wait_until(lambda: env.relayed() == 0, what="clients closed")
    await probe.settled(5)


async def test_client_that_leaves_while_the_proxy_connects(env: Env) -> None:
    """The endpoint never completes the handshake (its accept queue is full): every
    connect times out, and the clients that already left are closed."""
    host = f"127.10.{env.net}.4"
    full = socket.socket()
    full.bind((host, 0))
    full.listen(0)
    filler = socket.create_connection(full.getsockname(), 1)  # takes the one queue slot
    try:
        port = free_port(env.vip)
        await env.serve("stuck", port, full.getsockname())
        probe = fd_probe()
        for _ in range(20):
            _, writer = await asyncio.open_connection(env.vip, port)
            writer.close()  # gone before the proxy's connect can finish
            await writer.wait_closed()
        await wait_until(lambda: env.relayed() == 0, timeout=10, what="clients closed")
    finally:
        filler.close()
        full.close()
    await probe.settled(5)


async def test_backend_reset_closes_the_client(env: Env) -> None:
    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # RST

    async with backend(f"127.10.{env.net}.5", reset) as be:
        port = free_port(env.vip)
        await env.serve("reset", port, be)
        probe = fd_probe()
        for _ in range(100):
            reader, writer = await asyncio.open_connection(env.vip, port)
            writer.write(b"GET\n")
            with contextlib.suppress(ConnectionError):
                assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        await wait_until(lambda: env.relayed() == 0, what="relayed connections closed")
        await probe.settled(5)


async def test_removed_service_keeps_its_connections_until_they_end(env: Env) -> None:
    echo = await NamedBackend("e1", f"127.10.{env.net}.6", free_port(f"127.10.{env.net}.6")).start()
    try:
        port = free_port(env.vip)
        await env.serve("gone", port, (echo.host, echo.port))
        service_obj = env.proxy.userspace.services  # type: ignore[union-attr]
        tcp = next(s for s in service_obj.values() if s.entry.port == port)
        probe = fd_probe()
        conns = [await asyncio.open_connection(env.vip, port) for _ in range(10)]
        for reader, _ in conns:
            assert await reader.readline() == b"e1\n"
        await env.client.delete(Service, "default", "gone")
        await wait_until(lambda: not env.listening(port), what="listener closed")
        for reader, writer in conns:  # still relayed after the service is gone
            writer.write(b"ping\n")
            assert await asyncio.wait_for(reader.readline(), 5) == b"ping\n"
        for _, writer in conns:
            writer.close()
            await writer.wait_closed()
        await wait_until(lambda: not tcp.connections, what="connections of the removed service")
        await probe.settled(5)
    finally:
        await echo.stop()


async def test_stop_closes_relayed_connections(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    net = random.randint(1, 250)
    echo = await NamedBackend("e2", f"127.10.{net}.7", free_port(f"127.10.{net}.7")).start()
    proxy = ServiceProxy(store, ProxyConfig(mode="userspace", min_sync_interval=0.0))
    await proxy.start()
    env = Env(Client(store), proxy, net)
    try:
        port = free_port(env.vip)
        await env.serve("held", port, (echo.host, echo.port))
        readers = []
        for _ in range(5):
            reader, writer = await asyncio.open_connection(env.vip, port)
            assert await reader.readline() == b"e2\n"
            readers.append((reader, writer))
        await proxy.stop()
        for reader, writer in readers:
            assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
    finally:
        await proxy.stop()
        await echo.stop()
        await store.close()


async def test_udp_sessions_closed_before_their_sockets_open(env: Env) -> None:
    """Sessions dropped before their backend socket exists (here: the service closes
    right after their first datagram) must not leave that socket open when it arrives."""
    host = f"127.10.{env.net}.8"
    entry = ServiceEntry(
        id=ServicePortName("default", "udp", "main", "UDP"),
        cluster_ip=env.vip,
        port=free_port(env.vip, socket.SOCK_DGRAM),
        protocol="UDP",
        backends=(Backend(host, free_port(host, socket.SOCK_DGRAM)),),
        affinity=False,
        affinity_timeout=0,
    )
    udp = UDPService(entry, UserspaceConfig())
    await udp.start()
    probe = fd_probe()
    for i in range(50):
        udp.datagram_received(b"query", ("127.0.0.1", 40000 + i))
    await udp.close()
    await asyncio.sleep(0.2)  # the backend sockets that were opening arrive now
    await probe.settled(5)
