"""How the user-space proxy moves bytes: bulk through the shared pipe (splice),
small messages by copy, and no descriptor per relay beyond its two sockets.

The proxy runs in the test's process (``ServiceProxy``, user-space mode, real
sockets on loopback), so its relays can be inspected and its descriptors are
the test's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import random
import socket
from collections.abc import AsyncIterator
from typing import cast

import pytest
from tests.support.ports import free_port
from tests.support.proxy_cluster import backends_of, endpoints, put, service, wait_until

from shiftnet.api import Service
from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.userspace import TCPService
from shiftnet.store import open_store

pytestmark = pytest.mark.integration

BULK = 16 * 1024 * 1024


class Env:
    def __init__(self, client: Client, proxy: ServiceProxy, net: int) -> None:
        self.client, self.proxy, self.net = client, proxy, net
        self.vip = f"127.30.{net}.1"

    async def serve(self, name: str, port: int, backend: tuple[str, int]) -> TCPService:
        await put(self.client, service(name, self.vip, port))
        await put(self.client, endpoints(name, [backend]))
        await wait_until(lambda: backends_of(self.proxy, "default", name) == {backend})
        assert self.proxy.userspace is not None
        services = self.proxy.userspace.services
        await wait_until(lambda: any(s.entry.port == port for s in services.values()))
        found = next(s for s in services.values() if s.entry.port == port)
        assert isinstance(found, TCPService)
        return found


@pytest.fixture
async def env(tmp_path) -> AsyncIterator[Env]:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    proxy = ServiceProxy(store, ProxyConfig(mode="userspace", min_sync_interval=0.0))
    await proxy.start()
    try:
        yield Env(Client(store), proxy, random.randint(1, 250))
    finally:
        await proxy.stop()
        await store.close()


@contextlib.asynccontextmanager
async def echo_backend(host: str) -> AsyncIterator[tuple[str, int]]:
    writers: set[asyncio.StreamWriter] = set()

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.add(writer)
        try:
            while data := await reader.read(256 * 1024):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writers.discard(writer)
            writer.close()

    port = free_port(host)
    server = await asyncio.start_server(echo, host, port, reuse_address=True)
    try:
        yield host, port
    finally:
        server.close()
        for w in list(writers):
            w.close()
        await server.wait_closed()


async def test_bulk_is_spliced_and_small_messages_are_copied(env: Env) -> None:
    async with echo_backend(f"127.10.{env.net}.9") as be:
        tcp = await env.serve("bulk", free_port(env.vip), be)
        reader, writer = await asyncio.open_connection(env.vip, tcp.entry.port)
        payload = os.urandom(BULK)

        async def send() -> None:
            for i in range(0, BULK, 256 * 1024):
                writer.write(payload[i : i + 256 * 1024])
                await writer.drain()

        async def receive() -> bytes:
            return await asyncio.wait_for(reader.readexactly(BULK), 30)

        _, echoed = await asyncio.gather(send(), receive())
        assert hashlib.sha256(echoed).digest() == hashlib.sha256(payload).digest()
        (relay,) = tcp.connections
        up, down = relay.directions
        assert up.spliced + up.copied == BULK and down.spliced + down.copied == BULK
        assert up.spliced > BULK * 0.9, (up.spliced, up.copied)
        assert down.spliced > BULK * 0.9, (down.spliced, down.copied)

        copied = (up.copied, down.copied)
        for i in range(20):  # request/response sized: back to copying
            writer.write(b"ping %d\n" % i)
            assert await asyncio.wait_for(reader.readline(), 5) == b"ping %d\n" % i
        small = sum(len(b"ping %d\n" % i) for i in range(20))
        assert up.spliced + up.copied == BULK + small
        # after at most one small splice each direction copies again
        assert up.copied - copied[0] >= small - 16
        assert down.copied - copied[1] >= small - 16
        writer.close()
        await writer.wait_closed()
        await wait_until(lambda: not tcp.connections, what="relay closed")


class NeverReads(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        cast(asyncio.ReadTransport, transport).pause_reading()


STORE_FILES = ("state.db", "state.db-wal", "state.db-shm")


def fd_count() -> int:
    """The test process's descriptors, not counting the SQLite store's files: the store
    opens a second connection (its worker's) only when another connection holds the
    write lock, which on a loaded machine may happen at any moment of a test."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the descriptor listdir itself used, already closed
        count += not target.endswith(STORE_FILES)
    return count


async def test_a_relay_holds_only_its_two_sockets_even_when_blocked(env: Env) -> None:
    """20 connections whose clients do not read a 4 MiB echo: every relay has a
    backlog and a full destination, and still only its two sockets (the pipe is
    shared). Per connection the test process gains exactly 4 descriptors: the
    client's socket, the proxy's two, the backend's accepted one."""
    async with echo_backend(f"127.10.{env.net}.10") as be:
        tcp = await env.serve("held", free_port(env.vip), be)
        reader, writer = await asyncio.open_connection(env.vip, tcp.entry.port)
        writer.write(b"warm\n")
        assert await reader.readline() == b"warm\n"
        writer.close()
        await writer.wait_closed()
        await wait_until(lambda: not tcp.connections, what="warm-up relay closed")
        before = fd_count()
        loop = asyncio.get_running_loop()
        transports: list[asyncio.BaseTransport] = []
        try:
            for _ in range(20):
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once
                sock.setblocking(False)
                await loop.sock_connect(sock, (env.vip, tcp.entry.port))
                transport, _ = await loop.create_connection(NeverReads, sock=sock)
                transports.append(transport)
                # the echo comes back to a client that never reads
                cast(asyncio.WriteTransport, transport).write(b"y" * (4 * 1024 * 1024))
            await wait_until(
                lambda: (
                    len(tcp.connections) == 20
                    and all(  # a relay still connecting has no directions yet
                        len(r.directions) == 2 and r.directions[1].writing for r in tcp.connections
                    )
                ),
                timeout=20,
                what="every relay holding a backlog for a full client",
            )
            assert fd_count() - before == 4 * 20
        finally:
            for t in transports:
                t.abort()
        await wait_until(lambda: not tcp.connections, timeout=10, what="relays closed")
        await wait_until(lambda: fd_count() == before, timeout=10, what="descriptors back")


async def test_the_shared_pipe_closes_with_its_last_user(env: Env) -> None:
    """Opened with the first TCP listener; a removed service's relay that is still
    running keeps it; closed when that relay ends (no descriptor left behind)."""
    async with echo_backend(f"127.10.{env.net}.11") as be:
        before = fd_count()
        tcp = await env.serve("piped", free_port(env.vip), be)
        assert tcp.pipe is not None and fd_count() == before + 3  # listener + the pipe's two
        pipe = tcp.pipe
        reader, writer = await asyncio.open_connection(env.vip, tcp.entry.port)
        writer.write(b"a" * (1 << 20))  # large enough to go through the pipe
        assert await asyncio.wait_for(reader.readexactly(1 << 20), 10) == b"a" * (1 << 20)
        await env.client.delete(Service, "default", "piped")
        await wait_until(lambda: tcp.listener is None, what="listener closed")
        assert pipe.users == 1 and pipe.r >= 0  # the running relay holds it
        writer.write(b"still\n")
        assert await asyncio.wait_for(reader.readline(), 5) == b"still\n"
        writer.close()
        await writer.wait_closed()
        await wait_until(lambda: pipe.users == 0, what="the last relay ended")
        assert pipe.r == -1
        await wait_until(lambda: fd_count() == before, timeout=5, what="descriptors back")
