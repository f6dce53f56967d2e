"""A live DNSServer on a free loopback port, fed by a tmp SQLite store through the Client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import dns.asyncquery
import dns.message
import dns.rdatatype

from shiftnet.client import Client
from shiftnet.dns import DNSConfig, DNSServer
from shiftnet.store import open_store


@dataclass
class Cluster:
    client: Client
    server: DNSServer

    @property
    def port(self) -> int:
        return self.server.address[1]

    async def ask(
        self, name: str, rdtype: str = "A", *, tcp: bool = False, **kw: object
    ) -> dns.message.Message:
        q = dns.message.make_query(name, dns.rdatatype.from_text(rdtype), **kw)  # type: ignore[arg-type]
        if tcp:
            return await dns.asyncquery.tcp(q, "127.0.0.1", port=self.port, timeout=3)
        return await dns.asyncquery.udp(q, "127.0.0.1", port=self.port, timeout=3)

    async def until(
        self,
        name: str,
        rdtype: str,
        check: Callable[[dns.message.Message], bool],
        within: float = 1.0,
    ) -> float:
        """Seconds until the answer for ``name`` satisfies ``check``; fails after ``within``."""
        start = time.monotonic()
        while True:
            m = await self.ask(name, rdtype)
            if check(m):
                return time.monotonic() - start
            if time.monotonic() - start > within:
                raise AssertionError(f"{name} {rdtype} still {m.to_text()!r} after {within}s")
            await asyncio.sleep(0.02)


def make_cluster_fixture(**config: object):  # type: ignore[no-untyped-def]
    async def fixture(tmp_path) -> AsyncIterator[Cluster]:  # type: ignore[no-untyped-def]
        store = open_store(f"sqlite:///{tmp_path}/state.db")
        server = DNSServer(store, DNSConfig(listen_port=0, **config))  # type: ignore[arg-type]
        await server.start()
        try:
            yield Cluster(Client(store), server)
        finally:
            await server.stop()
            await store.close()

    return fixture
