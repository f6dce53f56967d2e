"""A flood of held connections runs into the user-space proxy's relay budget, never into
its process's descriptor limit (which the DNS, probes and router share in `shiftnet up`).

The proxy runs with a 256-file limit, so its default budget is 64 relays (128
descriptors). 200 clients connect and hold: 64 are relayed, the rest are reset
at once; the process never reaches its limit (no EMFILE in its log), and when
the clients leave it serves again with its descriptors back at the baseline.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

import pytest
from tests.support.leaks import LeakProbe
from tests.support.ports import free_port
from tests.support.proxy_process import (
    REPLY,
    ClosingBackend,
    proxy_process,
    random_vip,
    seed_store,
)

from shiftnet.proxy.relay_budget import default_relay_limit

pytestmark = pytest.mark.integration

NOFILE = 256
CLIENTS = 200


def fd_count(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


async def one_request(host: str, port: int) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"GET\n")
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def reset_or_closed(sock: socket.socket) -> bool:
    """Whether the proxy turned this client away (reset, or EOF with no data)."""
    sock.settimeout(0.05)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False  # still held open: relayed to the endpoint


async def test_a_flood_spends_the_budget_not_the_descriptor_limit(tmp_path: Path) -> None:
    vip = random_vip()
    tcp_port, udp_port = free_port(), free_port()
    backend = await ClosingBackend("127.0.0.1").start()
    await seed_store(
        f"sqlite:///{tmp_path}/state.db", vip, tcp_port, udp_port, "127.0.0.1", backend.port
    )
    budget = default_relay_limit(NOFILE)
    try:
        with proxy_process(tmp_path, vip, tcp_port, nofile=NOFILE) as pid:
            assert await one_request(vip, tcp_port) == REPLY
            await asyncio.sleep(0.3)
            probe = LeakProbe(pid, name="shiftnet proxy", rss_growth_kib=None)
            clients = []
            try:
                for _ in range(CLIENTS):
                    s = socket.create_connection((vip, tcp_port), timeout=5)
                    clients.append(s)
                await asyncio.sleep(1.0)  # let the proxy accept, connect or refuse each one
                peak = fd_count(pid)
                turned_away = sum(reset_or_closed(s) for s in clients)
            finally:
                for s in clients:
                    s.close()
            log = (tmp_path / "proxy.log").read_text()
            assert "Too many open files" not in log, log[-2000:]
            assert peak < NOFILE - 32, f"the proxy held {peak} of its {NOFILE} descriptors"
            assert turned_away == CLIENTS - budget, (turned_away, budget)
            assert "relay budget spent" in log
            await probe.settled()  # every relay and refusal released its descriptors
            assert await one_request(vip, tcp_port) == REPLY
    finally:
        await backend.stop()
