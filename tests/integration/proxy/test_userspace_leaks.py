"""Thousands of short connections through a real ``shiftnet proxy`` (user space):
the proxy process's descriptors and RSS come back to where they started, on
every kind of listener it opens: the ClusterIP, and the node port (on
127.0.0.1, the default node port address), the external IP and the
load-balancer address of a LoadBalancer Service, TCP and UDP.

Every connection ends gracefully (FIN both ways), half of them closed by the
backend first (HTTP/1.0 style), half by the client first (it shuts its write
side after the request and reads the reply to EOF). UDP: one client socket
per query, so each query is a new session the proxy must expire.
"""

from __future__ import annotations

import asyncio
import random
import socket
from pathlib import Path
from typing import Any

import pytest
from tests.support.leaks import LeakProbe
from tests.support.ports import free_port
from tests.support.proxy_cluster import endpoints, service
from tests.support.proxy_process import (
    REPLY,
    ClosingBackend,
    proxy_process,
    random_vip,
    seed_store,
)

from shiftnet.api import Service
from shiftnet.client import Client
from shiftnet.store import open_store

pytestmark = pytest.mark.integration

CONNECTIONS = 3000
CONCURRENCY = 16
UDP_QUERIES = 2000
# Bound on RSS growth after the warm-up: a leak of the per-connection objects of
# 3,000 connections (two transports, two protocols, buffers) is far above it.
RSS_GROWTH_KIB = 8 * 1024


async def one_request(host: str, port: int, client_closes_first: bool) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"GET\n")
        if client_closes_first:
            writer.write_eof()
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()
        await writer.wait_closed()


async def many_requests(host: str, port: int, count: int) -> int:
    """``count`` short connections, ``CONCURRENCY`` at a time; returns how many got the reply."""
    ok = 0
    queue = iter(range(count))

    async def worker() -> None:
        nonlocal ok
        for i in queue:
            if await one_request(host, port, client_closes_first=i % 2 == 1) == REPLY:
                ok += 1

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return ok


def udp_query(host: str, port: int, data: bytes) -> bytes:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.sendto(data, (host, port))
        return s.recv(2048)


async def many_udp(host: str, port: int, count: int) -> int:
    def run() -> int:
        return sum(udp_query(host, port, b"q%d" % i) == b"q%d" % i for i in range(count))

    return await asyncio.to_thread(run)


@pytest.fixture
async def proxied(tmp_path: Path):  # type: ignore[no-untyped-def]
    vip = random_vip()
    tcp_port = free_port(vip)
    udp_port = free_port(vip, socket.SOCK_DGRAM)
    backend = await ClosingBackend("127.0.0.1").start()
    await seed_store(
        f"sqlite:///{tmp_path}/state.db", vip, tcp_port, udp_port, backend.host, backend.port
    )
    try:
        with proxy_process(tmp_path, vip, tcp_port, "--udp-idle-timeout", "0.3") as pid:
            yield pid, vip, tcp_port, udp_port
    finally:
        await backend.stop()


async def test_tcp_connections_leave_no_descriptors(proxied) -> None:  # type: ignore[no-untyped-def]
    pid, vip, port, _ = proxied
    assert await many_requests(vip, port, 200) == 200  # warm-up: first-use allocations
    probe = LeakProbe(pid, name="shiftnet proxy", rss_growth_kib=RSS_GROWTH_KIB)
    assert await many_requests(vip, port, CONNECTIONS) == CONNECTIONS
    await probe.settled()
    print(probe.summary())


async def test_udp_sessions_leave_no_descriptors(proxied) -> None:  # type: ignore[no-untyped-def]
    pid, vip, _, port = proxied
    assert await many_udp(vip, port, 100) == 100
    await asyncio.sleep(1)  # the warm-up's sessions expire
    probe = LeakProbe(pid, name="shiftnet proxy", rss_growth_kib=RSS_GROWTH_KIB)
    assert await many_udp(vip, port, UDP_QUERIES) == UDP_QUERIES
    await probe.settled()
    print(probe.summary())


def exposed_service(name: str, vip: str, port: int, node_port: int, **spec: Any) -> Service:
    """A LoadBalancer Service on ``vip``: node port ``node_port``, and ``port`` on the
    external IP and the LB address of ``spec``/``status`` (no master runs to set them)."""
    status = spec.pop("status")
    data = service(name, vip, port, protocol=str(spec.pop("protocol", "TCP"))).to_dict()
    data["spec"].update(type="LoadBalancer", **spec)
    data["spec"]["ports"][0]["nodePort"] = node_port
    data["status"] = status
    return Service.model_validate(data)


@pytest.fixture
async def exposed(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The proxy serving one TCP and one UDP LoadBalancer Service: yields its pid and
    the addresses of each kind of external listener, as ``(kind, host, port)``."""
    net = random.randint(1, 250)
    vip, external_ip, lb_ip = f"127.30.{net}.1", f"127.50.{net}.5", f"127.51.{net}.6"
    tcp_port, udp_port = free_port(vip), free_port(vip, socket.SOCK_DGRAM)
    tcp_node_port, udp_node_port = free_port(), free_port(kind=socket.SOCK_DGRAM)
    addresses = {"externalIPs": [external_ip]}
    status = {"loadBalancer": {"ingress": [{"ip": lb_ip}]}}
    backend = await ClosingBackend("127.0.0.1").start()
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    try:
        web = exposed_service("web", vip, tcp_port, tcp_node_port, status=status, **addresses)
        await client.create(web)
        await client.create(endpoints("web", [(backend.host, backend.port)]))
        echo = exposed_service(
            "echo", vip, udp_port, udp_node_port, protocol="UDP", status=status, **addresses
        )
        await client.create(echo)
        await client.create(endpoints("echo", [(backend.host, backend.port)], protocol="UDP"))
    finally:
        await store.close()
    tcp = [("node port", "127.0.0.1", tcp_node_port), ("external IP", external_ip, tcp_port),
           ("LB address", lb_ip, tcp_port)]  # fmt: skip
    udp = [("node port", "127.0.0.1", udp_node_port), ("external IP", external_ip, udp_port),
           ("LB address", lb_ip, udp_port)]  # fmt: skip
    try:
        with proxy_process(tmp_path, lb_ip, tcp_port, "--udp-idle-timeout", "0.3") as pid:
            yield pid, tcp, udp
    finally:
        await backend.stop()


async def test_external_tcp_listeners_leave_no_descriptors(exposed) -> None:  # type: ignore[no-untyped-def]
    pid, listeners, _ = exposed
    each = CONNECTIONS // len(listeners)
    for _, host, port in listeners:  # warm-up, and each listener serves
        assert await many_requests(host, port, 100) == 100
    probe = LeakProbe(pid, name="shiftnet proxy", rss_growth_kib=RSS_GROWTH_KIB)
    for kind, host, port in listeners:
        assert await many_requests(host, port, each) == each, kind
    await probe.settled()
    print(probe.summary())


async def test_external_udp_listeners_leave_no_descriptors(exposed) -> None:  # type: ignore[no-untyped-def]
    pid, _, listeners = exposed
    each = UDP_QUERIES // len(listeners)
    for _, host, port in listeners:
        assert await many_udp(host, port, 50) == 50
    await asyncio.sleep(1)  # the warm-up's sessions expire
    probe = LeakProbe(pid, name="shiftnet proxy", rss_growth_kib=RSS_GROWTH_KIB)
    for kind, host, port in listeners:
        assert await many_udp(host, port, each) == each, kind
    await probe.settled()
    print(probe.summary())
