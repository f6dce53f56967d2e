"""User-space mode against real sockets on loopback: Services and Endpoints written
through the Client to a sqlite store, read by the proxy through informers."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest
from tests.support.ports import free_port
from tests.support.proxy_cluster import backends_of, endpoints, put, service, wait_until
from tests.support.proxy_peers import NamedBackend, who, who_udp

from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.userspace import UserspaceConfig
from shiftnet.store import open_store

pytestmark = pytest.mark.integration


@pytest.fixture
async def env(tmp_path):  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    net = random.randint(1, 250)
    proxy = ServiceProxy(
        store,
        ProxyConfig(
            mode="userspace",
            min_sync_interval=0.0,
            userspace=UserspaceConfig(connect_timeout=1.0, udp_idle_timeout=0.5),
        ),
    )
    await proxy.start()
    backends: list[NamedBackend] = []

    async def backend(name: str, host: str) -> NamedBackend:
        b = await NamedBackend(name, host, free_port(host)).start()
        backends.append(b)
        return b

    state = {"store": store, "client": client, "proxy": proxy, "net": net, "backend": backend}
    try:
        yield state
    finally:
        await proxy.stop()
        for b in backends:
            await b.stop()
        await store.close()


def vip(env, host: int = 1) -> str:  # type: ignore[no-untyped-def]
    return f"127.30.{env['net']}.{host}"


async def three_backends(env):  # type: ignore[no-untyped-def]
    return [await env["backend"](f"b{i}", f"127.10.{env['net']}.{i}") for i in (1, 2, 3)]


async def serve(env, name, ip, port, bks, **kw):  # type: ignore[no-untyped-def]
    proxy = env["proxy"]
    await put(env["client"], service(name, ip, port, **kw))
    await put(
        env["client"],
        endpoints(name, [(b.host, b.port) for b in bks], protocol=kw.get("protocol", "TCP")),
    )
    want = {(b.host, b.port) for b in bks}
    await wait_until(lambda: backends_of(proxy, "default", name) == want, what="endpoints synced")
    await wait_until(lambda: proxy.userspace.services, what="listener")


async def test_round_robin_over_three_endpoints(env) -> None:  # type: ignore[no-untyped-def]
    bks = await three_backends(env)
    port = free_port()
    await serve(env, "web", vip(env), port, bks)
    counts = Counter([await who(vip(env), port) for _ in range(900)])
    assert set(counts) == {"b1", "b2", "b3"}
    for name, n in counts.items():
        assert abs(n - 300) <= 30, (name, counts)


async def test_client_ip_affinity_and_expiry(env) -> None:  # type: ignore[no-untyped-def]
    bks = await three_backends(env)
    port = free_port()
    await serve(env, "sticky", vip(env), port, bks, affinity_timeout=1)
    one = Counter([await who(vip(env), port, source="127.0.0.7") for _ in range(100)])
    assert len(one) == 1, one
    # another client is spread independently; it does not move the first one
    other = Counter([await who(vip(env), port, source="127.0.0.8") for _ in range(5)])
    assert len(other) == 1
    first = next(iter(one))
    # expiry: after timeoutSeconds without connections the client is balanced again
    seen = set()
    for _ in range(6):
        await asyncio.sleep(1.2)
        seen.add(await who(vip(env), port, source="127.0.0.7"))
    assert len(seen) > 1 or first not in seen, seen


async def test_retry_past_dead_endpoint_no_client_failures(env) -> None:  # type: ignore[no-untyped-def]
    bks = await three_backends(env)
    port = free_port()
    dead_port = free_port(f"127.10.{env['net']}.9")  # nothing listens here
    await put(env["client"], service("retry", vip(env), port))
    await put(
        env["client"],
        endpoints(
            "retry", [(b.host, b.port) for b in bks] + [(f"127.10.{env['net']}.9", dead_port)]
        ),
    )
    await wait_until(lambda: len(backends_of(env["proxy"], "default", "retry")) == 4)
    await wait_until(lambda: env["proxy"].userspace.services)
    results = [await who(vip(env), port) for _ in range(200)]  # raises on any failure
    assert Counter(results).keys() == {"b1", "b2", "b3"}
    # also with affinity pinned to the dead endpoint: retried, and the client re-pinned
    await bks[0].stop()
    await bks[1].stop()
    assert {await who(vip(env), port) for _ in range(50)} == {"b3"}


async def test_all_endpoints_dead_closes_client(env) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    host = f"127.10.{env['net']}.9"
    await put(env["client"], service("dead", vip(env), port))
    await put(env["client"], endpoints("dead", [(host, free_port(host))]))
    await wait_until(lambda: backends_of(env["proxy"], "default", "dead"))
    await wait_until(lambda: env["proxy"].userspace.services)
    with pytest.raises(ConnectionError):
        await who(vip(env), port)


async def test_udp_echo_through_service(env) -> None:  # type: ignore[no-untyped-def]
    bks = await three_backends(env)
    port = free_port(kind=__import__("socket").SOCK_DGRAM)
    await serve(env, "dns", vip(env), port, bks, protocol="UDP")
    replies = [await who_udp(vip(env), port, f"hello{i}".encode()) for i in range(9)]
    names = Counter(r.split(b":", 1)[0] for r in replies)
    assert set(names) == {b"b1", b"b2", b"b3"}  # a new client socket per query: round robin
    assert all(r.endswith(f"hello{i}".encode()) for i, r in enumerate(replies))
    svc = next(iter(env["proxy"].userspace.services.values()))
    # idle sessions are closed after udp_idle_timeout
    await wait_until(lambda: not svc.sessions, timeout=5, what="udp sessions expired")


async def test_endpoint_change_keeps_established_connection(env) -> None:  # type: ignore[no-untyped-def]
    bks = await three_backends(env)
    port = free_port()
    await serve(env, "long", vip(env), port, bks)
    reader, writer = await asyncio.open_connection(vip(env), port)
    name = (await reader.readline()).decode().strip()
    keep = next(b for b in bks if b.name == name)
    others = [b for b in bks if b is not keep]
    # drop the other two endpoints, then add a new one: the connection stays up
    await put(env["client"], endpoints("long", [(keep.host, keep.port)]))
    await wait_until(
        lambda: backends_of(env["proxy"], "default", "long") == {(keep.host, keep.port)}
    )
    writer.write(b"still there\n")
    assert await asyncio.wait_for(reader.readline(), 5) == b"still there\n"
    await put(env["client"], endpoints("long", [(b.host, b.port) for b in others]))
    await wait_until(
        lambda: (keep.host, keep.port) not in backends_of(env["proxy"], "default", "long")
    )
    writer.write(b"and now\n")
    assert await asyncio.wait_for(reader.readline(), 5) == b"and now\n"
    assert {await who(vip(env), port) for _ in range(10)} == {b.name for b in others}
    writer.close()


async def test_removed_service_closes_listener(env) -> None:  # type: ignore[no-untyped-def]
    bks = await three_backends(env)
    port = free_port()
    await serve(env, "gone", vip(env), port, bks)
    assert await who(vip(env), port) in {"b1", "b2", "b3"}
    from shiftnet.api import Service

    await env["client"].delete(Service, "default", "gone")
    await wait_until(lambda: not env["proxy"].userspace.services, what="listener closed")
    with pytest.raises(OSError):
        await who(vip(env), port, timeout=2)


async def test_bad_service_does_not_block_others(env) -> None:  # type: ignore[no-untyped-def]
    bks = await three_backends(env)
    port = free_port()
    # two services claim the same VIP:port; the second is reported, the first works
    await serve(env, "a-first", vip(env), port, bks)
    await put(env["client"], service("b-second", vip(env), port))
    await wait_until(lambda: any(p.name == "b-second" for p in env["proxy"].table.problems))
    assert await who(vip(env), port) in {"b1", "b2", "b3"}
