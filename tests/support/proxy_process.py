"""A real ``shiftnet proxy`` process (user-space mode) and a closing backend, for leak tests.

The proxy runs as its own process so that what a test measures in
``/proc/<pid>`` is the proxy alone, never the test's clients and backends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from shiftnet.client import Client
from shiftnet.store import open_store
from tests.support.ports import free_port
from tests.support.proxy_cluster import endpoints, service

REPLY = b"ok\n"


class ClosingBackend:
    """TCP: read one line (or up to EOF), answer, close. UDP: echo each datagram."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.port = free_port(host)
        self.served = 0
        self._server: asyncio.AbstractServer | None = None
        self._udp: asyncio.DatagramTransport | None = None

    async def start(self) -> ClosingBackend:
        self._server = await asyncio.start_server(
            self._handle, self.host, self.port, reuse_address=True, backlog=1024
        )

        class Echo(asyncio.DatagramProtocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                self.t: asyncio.DatagramTransport = transport  # type: ignore[assignment]

            def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
                self.t.sendto(data, addr)

        loop = asyncio.get_running_loop()
        self._udp, _ = await loop.create_datagram_endpoint(Echo, local_addr=(self.host, self.port))
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readline()
            writer.write(REPLY)
            await writer.drain()
            self.served += 1
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._udp is not None:
            self._udp.close()


def random_vip() -> str:
    return f"127.30.{random.randint(1, 250)}.{random.randint(2, 250)}"


async def seed_store(
    url: str, vip: str, tcp_port: int, udp_port: int, backend: str, bport: int
) -> None:
    store = open_store(url)
    client = Client(store)
    try:
        await client.create(service("web", vip, tcp_port))
        await client.create(endpoints("web", [(backend, bport)]))
        await client.create(service("echo", vip, udp_port, protocol="UDP"))
        await client.create(endpoints("echo", [(backend, bport)], protocol="UDP"))
    finally:
        await store.close()


def wait_listening(host: str, port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection((host, port), 0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"proxy did not listen: {log.read_text()[-2000:]}") from None
            time.sleep(0.05)


@contextlib.contextmanager
def proxy_process(
    tmp: Path, vip: str, tcp_port: int, *args: str, nofile: int | None = None
) -> Iterator[int]:
    """``shiftnet proxy --mode userspace`` on the store in ``tmp``; yields its pid.
    ``nofile``: the process's open-file limit (RLIMIT_NOFILE), as a small host's would be."""

    def limit_files() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    log = tmp / "proxy.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(tmp)
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "shiftnet.cli.main", "--store", f"sqlite:///{tmp}/state.db",
             "proxy", "--mode", "userspace", "--min-sync-interval", "0", *args],
            env=env, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=limit_files,
        )  # fmt: skip
    try:
        wait_listening(vip, tcp_port, proc, log)
        yield proc.pid
        assert proc.poll() is None, f"proxy died: {log.read_text()[-2000:]}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
