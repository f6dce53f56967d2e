"""Backends and clients for service proxy tests, usable in-process or as a process.

A backend answers every TCP connection with its name (``b1\\n``) then echoes;
its UDP socket answers each datagram with ``name:data``. As a process (run in
a network namespace with ``ip netns exec``)::

    python -m tests.support.proxy_peers serve NAME HOST PORT
    python -m tests.support.proxy_peers count HOST PORT N [--udp]   # prints JSON {name: n}
    python -m tests.support.proxy_peers hold HOST PORT              # long-lived connection
"""

from __future__ import annotations

import asyncio
import collections
import json
import socket
import sys
import time


class NamedBackend:
    """TCP + UDP echo server that says who it is."""

    def __init__(self, name: str, host: str, port: int) -> None:
        self.name, self.host, self.port = name, host, port
        self.server: asyncio.AbstractServer | None = None
        self.udp: asyncio.DatagramTransport | None = None
        self.accepted = 0

    async def start(self) -> NamedBackend:
        loop = asyncio.get_running_loop()
        self.server = await asyncio.start_server(
            self._handle, self.host, self.port, reuse_address=True
        )
        name = self.name.encode()

        class Echo(asyncio.DatagramProtocol):
            def connection_made(self, transport):  # type: ignore[no-untyped-def]
                self.t = transport

            def datagram_received(self, data, addr):  # type: ignore[no-untyped-def]
                self.t.sendto(name + b":" + data, addr)

        self.udp, _ = await loop.create_datagram_endpoint(Echo, local_addr=(self.host, self.port))
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            writer.write(self.name.encode() + b"\n")
            await writer.drain()
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        if self.udp is not None:
            self.udp.close()
            self.udp = None


async def who(host: str, port: int, source: str | None = None, timeout: float = 5) -> str:
    """Connect, read the backend's name, close."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(host, port, local_addr=(source, 0) if source else None), timeout
    )
    try:
        line = await asyncio.wait_for(reader.readline(), timeout)
        if not line:
            raise ConnectionError("closed before the backend answered")
        return line.decode().strip()
    finally:
        writer.close()


async def who_udp(host: str, port: int, payload: bytes = b"ping", timeout: float = 5) -> bytes:
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[bytes] = loop.create_future()

    class P(asyncio.DatagramProtocol):
        def datagram_received(self, data, addr):  # type: ignore[no-untyped-def]
            if not fut.done():
                fut.set_result(data)

    transport, _ = await loop.create_datagram_endpoint(P, remote_addr=(host, port))
    try:
        for _ in range(int(timeout / 0.5)):
            transport.sendto(payload)
            try:
                return await asyncio.wait_for(asyncio.shield(fut), 0.5)
            except TimeoutError:
                continue
        raise TimeoutError("no UDP answer")
    finally:
        transport.close()


async def count(host: str, port: int, n: int, udp: bool = False) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()
    for i in range(n):
        if udp:
            reply = await who_udp(host, port, f"x{i}".encode())
            counts[reply.split(b":", 1)[0].decode()] += 1
        else:
            counts[await who(host, port)] += 1
    return dict(counts)


async def hold(host: str, port: int) -> None:
    """Open one connection; on each stdin line send it and print the echo."""
    reader, writer = await asyncio.open_connection(host, port)
    print("backend", (await reader.readline()).decode().strip(), flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        writer.write(line.encode())
        await writer.drain()
        echo = await asyncio.wait_for(reader.readline(), 5)
        print("echo", echo.decode().strip(), flush=True)
    writer.close()


async def latency(host: str, port: int, n: int) -> list[float]:
    """Connect-and-read-greeting times in milliseconds (connection setup through the rules)."""
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await who(host, port)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def _serve(name: str, host: str, port: int) -> None:
    await NamedBackend(name, host, port).start()
    print("ready", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str]) -> None:
    cmd, *rest = argv
    if cmd == "serve":
        asyncio.run(_serve(rest[0], rest[1], int(rest[2])))
    elif cmd == "count":
        res = asyncio.run(count(rest[0], int(rest[1]), int(rest[2]), "--udp" in rest))
        print(json.dumps(res))
    elif cmd == "latency":
        print(json.dumps(asyncio.run(latency(rest[0], int(rest[1]), int(rest[2])))))
    elif cmd == "hold":
        asyncio.run(hold(rest[0], int(rest[1])))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    socket.setdefaulttimeout(10)
    main(sys.argv[1:])
