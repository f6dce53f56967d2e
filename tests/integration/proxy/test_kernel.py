"""Kernel modes (iptables and nftables) inside network namespaces this test creates.

A client namespace connects to a ClusterIP routed through a node namespace
holding the proxy's rules; backends are processes in their own namespaces.
The proxy runs in the test's event loop and applies rules with
``ip netns exec``; the host's own tables are never touched.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest
from tests.support.proxy_cluster import backends_of, endpoints, put, service, wait_until
from tests.support.proxy_netns import Topology

from shiftnet.api import Service
from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy, iptables, nftables, nftnl
from shiftnet.proxy.kernel import KernelApplyError, KernelConfig
from shiftnet.proxy.libnft import LibnftSession
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed"),
]

PORT = 8080
VIP = "172.30.0.10"


@pytest.fixture(scope="module")
def topo():  # type: ignore[no-untyped-def]
    t = Topology().create()
    try:
        t.start_backends(PORT)
        yield t
    finally:
        t.destroy()


@pytest.fixture(params=["nftables", "iptables"])
async def kenv(request, topo, tmp_path):  # type: ignore[no-untyped-def]
    mode = request.param
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    proxies: list[ServiceProxy] = []

    async def start(spread: str = "random") -> ServiceProxy:
        cfg = ProxyConfig(
            mode=mode,
            min_sync_interval=0.0,
            kernel=KernelConfig(mode=mode, netns=topo.node, spread=spread),
        )
        proxy = ServiceProxy(store, cfg)
        await proxy.start()
        proxies.append(proxy)
        return proxy

    try:
        yield {"mode": mode, "client": client, "start": start, "topo": topo}
    finally:
        for p in proxies:
            await p.stop(cleanup=True)
        await store.close()


def all_backends(topo) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    return [(topo.backend_ip(i), PORT) for i in (1, 2, 3)]


async def serve(kenv, name: str = "web", vip: str = VIP, **kw) -> ServiceProxy:  # type: ignore[no-untyped-def]
    await put(kenv["client"], service(name, vip, 80, **kw))
    await put(
        kenv["client"],
        endpoints(name, all_backends(kenv["topo"]), protocol=kw.get("protocol", "TCP")),
    )
    proxy = await kenv["start"](kw.pop("spread", "random") if "spread" in kw else "random")
    await wait_until(lambda: len(backends_of(proxy, "default", name)) == 3)
    await wait_until(lambda: proxy.kernel.in_sync)
    return proxy


async def count(topo, n: int, udp: bool = False, vip: str = VIP) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return await asyncio.to_thread(topo.count, vip, 80, n, udp)


async def test_spread_random_over_three_endpoints(kenv) -> None:  # type: ignore[no-untyped-def]
    """Random spread (kube-proxy's default): each share of 900 within 1/3 +- 0.10."""
    await serve(kenv)
    counts = await count(kenv["topo"], 900)
    assert set(counts) == {"b1", "b2", "b3"}, counts
    for name, n in counts.items():
        assert abs(n / 900 - 1 / 3) <= 0.10, (name, counts)


async def test_spread_roundrobin_within_ten_percent(kenv) -> None:  # type: ignore[no-untyped-def]
    """--kernel-spread roundrobin: each of 900 connections within +-10% of 300."""
    await put(kenv["client"], service("rr", VIP, 80))
    await put(kenv["client"], endpoints("rr", all_backends(kenv["topo"])))
    proxy = await kenv["start"]("roundrobin")
    await wait_until(lambda: len(backends_of(proxy, "default", "rr")) == 3 and proxy.kernel.in_sync)
    counts = await count(kenv["topo"], 900)
    assert set(counts) == {"b1", "b2", "b3"}, counts
    for name, n in counts.items():
        assert abs(n - 300) <= 30, (name, counts)


async def test_client_ip_affinity_and_expiry(kenv) -> None:  # type: ignore[no-untyped-def]
    await serve(kenv, "sticky", affinity_timeout=2)
    counts = await count(kenv["topo"], 100)
    assert len(counts) == 1, counts
    first = next(iter(counts))
    # expiry: after timeoutSeconds of silence the client is spread again
    seen: set[str] = set()
    for _ in range(8):
        await asyncio.sleep(2.5)
        seen |= set(await count(kenv["topo"], 1))
        if seen - {first}:
            break
    assert seen - {first}, f"still pinned to {first} after expiry"


async def test_udp_echo_through_service(kenv) -> None:  # type: ignore[no-untyped-def]
    await serve(kenv, "dns", protocol="UDP")
    counts = await count(kenv["topo"], 30, udp=True)
    assert sum(counts.values()) == 30
    assert set(counts) <= {"b1", "b2", "b3"} and len(counts) >= 2, counts


async def test_endpoint_change_keeps_established_connection(kenv) -> None:  # type: ignore[no-untyped-def]
    topo = kenv["topo"]
    proxy = await serve(kenv, "long")
    hold = topo.python(topo.client, "hold", VIP, "80", stdin=True)
    assert hold.stdout is not None and hold.stdin is not None
    name = hold.stdout.readline().split()[1]
    keep = int(name[1:])
    others = [i for i in (1, 2, 3) if i != keep]
    await put(kenv["client"], endpoints("long", [(topo.backend_ip(i), PORT) for i in others]))
    await wait_until(
        lambda: (topo.backend_ip(keep), PORT) not in backends_of(proxy, "default", "long")
    )
    await wait_until(lambda: proxy.kernel.in_sync)
    await asyncio.sleep(0.2)
    hold.stdin.write("still there\n")
    hold.stdin.flush()
    assert hold.stdout.readline().strip() == "echo still there"
    counts = await count(topo, 30)
    assert set(counts) <= {f"b{i}" for i in others}, counts  # new connections avoid it
    hold.stdin.close()
    hold.wait(timeout=10)


async def test_removed_service_and_no_endpoints(kenv) -> None:  # type: ignore[no-untyped-def]
    proxy = await serve(kenv, "gone")
    assert sum((await count(kenv["topo"], 3)).values()) == 3
    await put(kenv["client"], endpoints("gone", []))
    await wait_until(lambda: not backends_of(proxy, "default", "gone"))
    await wait_until(lambda: proxy.kernel.in_sync)
    with pytest.raises(AssertionError):  # rejected, not black-holed
        await count(kenv["topo"], 1)
    await kenv["client"].delete(Service, "default", "gone")
    await wait_until(lambda: not proxy.table.entries)


async def test_failed_apply_keeps_old_rules_and_is_reported(kenv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A ruleset the kernel refuses (a jump loop) changes nothing and is reported."""
    proxy = await serve(kenv, "keep")
    assert sum((await count(kenv["topo"], 6)).values()) == 6
    kernel = proxy.kernel
    if kenv["mode"] == "nftables":
        real = nftables.render_swap

        def looping(*args):  # type: ignore[no-untyped-def]
            # the maps were filled under standby names; the transaction pointing the rules
            # at them is refused, so the live maps and rules stay
            return real(*args) + "add rule ip shiftnet-proxy services jump services\n"

        monkeypatch.setattr(nftables, "render_swap", looping)
    else:
        real_ipt = iptables.IptPlan.full_parts

        def looping_ipt(self, *args):  # type: ignore[no-untyped-def]
            *parts, last = real_ipt(self, *args)
            head, _, _ = last.rpartition("COMMIT")
            return [*parts, head + "-A KUBE-SERVICES -j KUBE-SERVICES\nCOMMIT\n"]

        monkeypatch.setattr(iptables.IptPlan, "full_parts", looping_ipt)
    with pytest.raises(KernelApplyError):
        await kernel.sync(proxy.table, None)
    assert kernel.last_error and not kernel.in_sync
    assert sum((await count(kenv["topo"], 6)).values()) == 6  # old rules still serve
    monkeypatch.undo()
    await kernel.sync(proxy.table, None)
    assert kernel.in_sync and kernel.last_error is None


def test_nothing_left_on_host() -> None:
    """The host namespace never gets our table or chains."""
    assert (
        "shiftnet-proxy"
        not in subprocess.run(
            ["nft", "list", "tables"], capture_output=True, text=True, check=False
        ).stdout
    )


def nft_in(topo, *args: str) -> str:  # type: ignore[no-untyped-def]
    return subprocess.run(
        ["ip", "netns", "exec", topo.node, "nft", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


async def test_nft_full_sync_flips_maps_and_survives_restart(topo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Fast full syncs fill the standby maps and flip the rules to them: after each,
    exactly one map set exists, traffic flows, affinity sets and a restarted proxier
    (which finds the live set in the kernel) keep working."""
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    await put(client, service("flip", VIP, 80))
    await put(client, endpoints("flip", all_backends(topo)))
    await put(client, service("sticky", "172.30.0.11", 80, affinity_timeout=60))
    await put(client, endpoints("sticky", all_backends(topo)))
    await put(client, service("empty", "172.30.0.12", 80))
    await put(client, endpoints("empty", []))
    proxies: list[ServiceProxy] = []
    try:
        seen = []
        for _ in range(3):  # start, full resync, then a new proxier over the same table
            cfg = ProxyConfig(
                mode="nftables",
                min_sync_interval=0.0,
                kernel=KernelConfig(mode="nftables", netns=topo.node),
            )
            proxy = ServiceProxy(store, cfg)
            await proxy.start()
            proxies.append(proxy)
            await wait_until(lambda p=proxy: p.kernel.in_sync and len(p.table.entries) == 3)
            seen.append(proxy.kernel.nft.maps_suffix)
            await proxy.kernel.sync(proxy.table, None)  # a second full sync: flips again
            assert proxy.kernel.nft.maps_suffix != seen[-1]
            listing = nft_in(topo, "-t", "list", "table", "ip", "shiftnet-proxy")
            maps = sorted(line.split()[1] for line in listing.splitlines() if "\tmap " in line)
            suffix = proxy.kernel.nft.maps_suffix
            assert maps == sorted(
                [
                    "node-ports",  # small, rewritten as text by every full sync: not flipped
                    *(
                        m + suffix
                        for m in (
                            "service-ips",
                            "no-endpoint-services",
                            "endpoints-tcp",
                            "endpoints-udp",
                        )
                    ),
                ]
            ), listing
            elements = nft_in(topo, "list", "map", "ip", "shiftnet-proxy", f"endpoints-tcp{suffix}")
            assert elements.count(" . 80 . ") == 3, elements  # the sticky one has chains
            counts = await count(topo, 30)
            assert set(counts) == {"b1", "b2", "b3"}, counts
            assert len(await count(topo, 10, vip="172.30.0.11")) == 1  # affinity
            with pytest.raises((AssertionError, OSError)):  # no endpoints: rejected
                await count(topo, 1, vip="172.30.0.12")
            await proxy.stop(cleanup=False)
            proxies.remove(proxy)
        assert seen == ["", "", ""], seen  # a new proxier flips away from the live set it finds
    finally:
        for p in proxies:
            await p.stop(cleanup=False)
        nft_in(topo, "delete", "table", "ip", "shiftnet-proxy")
        await store.close()


async def test_netlink_element_refusal_is_reported(topo) -> None:  # type: ignore[no-untyped-def]
    """A batch of elements the kernel refuses raises with the kernel's reason and adds
    nothing; the socket keeps working for the next request."""
    session = LibnftSession(topo.node)
    nl = None
    try:
        rc, err = await session.run(
            "add table ip sn-nl-test\nadd map ip sn-nl-test m { typeof ip daddr . tcp dport"
            " . numgen random mod 1 : ip daddr . tcp dport; }\n"
        )
        assert rc == 0, err
        nl = await session.call(nftnl.NftNetlink)
        sock = nl
        ok = nftnl.encode_endpoints(["172.30.9.1 . 80 . 0 : 10.1.0.1 . 8080"])
        assert await session.call(lambda: sock.add_elements("sn-nl-test", {"m": ok})) == 1
        clash = nftnl.encode_endpoints(
            ["172.30.9.2 . 80 . 0 : 10.1.0.3 . 8080", "172.30.9.1 . 80 . 0 : 10.1.0.2 . 8080"]
        )
        with pytest.raises(nftnl.NetlinkError, match="File exists"):
            await session.call(lambda: sock.add_elements("sn-nl-test", {"m": clash}))
        chains, sets = await session.call(lambda: sock.names("sn-nl-test"))
        assert (chains, sets) == (set(), {"m"})
        listing = nft_in(topo, "list", "map", "ip", "sn-nl-test", "m")
        assert "10.1.0.1 . 8080" in listing
        assert "10.1.0.2" not in listing and "10.1.0.3" not in listing  # whole batch undone
    finally:
        await session.run("delete table ip sn-nl-test\n")
        if nl is not None:
            await session.call(nl.close)
        session.close()
