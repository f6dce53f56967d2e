"""iptables mode partial syncs, with the legacy and the nft-based tools, in namespaces
this test creates (tests/support/proxy_netns.py): a change to one service leaves the
others' traffic alone, stale chains go, a refused restore is followed by a full sync,
the sync period brings a full sync that repairs drift, and the tools are detected.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from collections.abc import Awaitable

import pytest
from tests.support.proxy_cluster import backends_of, endpoints, put, service, wait_until
from tests.support.proxy_netns import Topology, sh

from shiftnet.api import Service
from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy, iptables
from shiftnet.proxy.iptables_tools import detect_backend
from shiftnet.proxy.kernel import KernelApplyError, KernelConfig, KernelProxier
from shiftnet.proxy.model import build_service_table, diff_tables
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(
        shutil.which("iptables-legacy-restore") is None
        or shutil.which("iptables-nft-restore") is None,
        reason="needs both iptables flavours",
    ),
]

PORT = 8080
VIP_A = "172.30.0.30"
VIP_B = "172.30.0.31"


class HandClock:
    """A clock the test moves (the proxier only reads it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> Awaitable[None]:
        return asyncio.sleep(0)


@pytest.fixture(scope="module")
def topo():  # type: ignore[no-untyped-def]
    t = Topology().create()
    try:
        t.start_backends(PORT)
        yield t
    finally:
        t.destroy()


def save(topo: Topology, backend: str) -> str:
    return sh("ip", "netns", "exec", topo.node, f"iptables-{backend}-save")


def backends(topo: Topology, *which: int) -> list[tuple[str, int]]:
    return [(topo.backend_ip(i), PORT) for i in which]


@pytest.fixture(params=["legacy", "nft"])
async def env(request, topo, tmp_path):  # type: ignore[no-untyped-def]
    backend = request.param
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    await put(client, service("a", VIP_A, 80))
    await put(client, endpoints("a", backends(topo, 1, 2, 3)))
    await put(client, service("b", VIP_B, 80))
    await put(client, endpoints("b", backends(topo, 1, 2, 3)))
    cfg = ProxyConfig(
        mode="iptables",
        kernel=KernelConfig(
            mode="iptables",
            netns=topo.node,
            iptables_backend=backend,
            iptables_min_sync_period=0.0,
        ),
    )
    proxy = ServiceProxy(store, cfg)
    await proxy.start()
    try:
        await wait_until(lambda: proxy.kernel.in_sync and len(proxy.table.entries) == 2)
        yield {"backend": backend, "client": client, "proxy": proxy, "topo": topo}
    finally:
        await proxy.stop(cleanup=True)
        await store.close()
        left = save(topo, backend)
        assert "KUBE-" not in left, left  # cleanup removed every chain and jump


async def applied(proxy: ServiceProxy, before: int) -> None:
    await wait_until(lambda: proxy.syncs > before and proxy.kernel.in_sync, what="a sync")


async def test_partial_sync_leaves_other_services_traffic_alone(env) -> None:  # type: ignore[no-untyped-def]
    """A client connects to A non-stop while B's endpoints change 20 times: every
    connection succeeds and every change is a partial restore."""
    topo, proxy = env["topo"], env["proxy"]
    done = asyncio.Event()

    async def connect_to_a() -> int:
        total = 0
        while not done.is_set():  # rounds of 100 connections; a failure raises
            total += sum((await asyncio.to_thread(topo.count, VIP_A, 80, 100)).values())
        return total

    client = asyncio.create_task(connect_to_a())
    await asyncio.sleep(0.3)  # the client is connecting
    kinds = []
    for i in range(20):
        which = [(1,), (2, 3), (1, 3), (2,)][i % 4]
        before = proxy.syncs
        await put(env["client"], endpoints("b", backends(topo, *which)))
        await applied(proxy, before)
        kinds.append(proxy.kernel.last_kind)
        await asyncio.sleep(0.05)
    assert not client.done(), "the client stopped before the changes did"
    done.set()
    assert await client >= 100
    assert kinds == ["partial"] * 20, kinds
    counts = await asyncio.to_thread(topo.count, VIP_B, 80, 20)
    assert counts == {"b2": 20}, counts  # B follows its last change


async def test_stale_chains_are_deleted(env) -> None:  # type: ignore[no-untyped-def]
    topo, proxy, backend = env["topo"], env["proxy"], env["backend"]
    before = proxy.syncs
    await put(env["client"], service("b", VIP_B, 80, affinity_timeout=60))  # chains per endpoint
    await applied(proxy, before)
    entry = proxy.table.for_service("default", "b")[0]
    assert entry.affinity
    svc = iptables.svc_chain(entry)
    seps = {b.ip: iptables.sep_chain(entry, b) for b in entry.backends}
    before = proxy.syncs
    await put(env["client"], endpoints("b", backends(topo, 2, 3)))
    await applied(proxy, before)
    listing = save(topo, backend)
    assert f":{seps[topo.backend_ip(1)]} " not in listing  # the removed endpoint's chain
    assert f":{seps[topo.backend_ip(2)]} " in listing and f":{svc} " in listing
    before = proxy.syncs
    await env["client"].delete(Service, "default", "b")
    await applied(proxy, before)
    listing = save(topo, backend)
    assert svc not in listing and not any(s in listing for s in seps.values())
    assert VIP_B not in listing and VIP_A in listing
    assert proxy.kernel.last_kind == "partial"
    assert set(await asyncio.to_thread(topo.count, VIP_A, 80, 30)) == {"b1", "b2", "b3"}


async def test_refused_restore_is_followed_by_a_full_sync(env, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    topo, proxy = env["topo"], env["proxy"]
    real = iptables.IptPlan.partial

    def looping(self, diff):  # type: ignore[no-untyped-def]
        head, _, _ = real(self, diff).rpartition("COMMIT")
        return head + "-A KUBE-SERVICES -j KUBE-SERVICES\nCOMMIT\n"  # a jump loop

    monkeypatch.setattr(iptables.IptPlan, "partial", looping)
    await put(env["client"], endpoints("b", backends(topo, 3)))
    await wait_until(lambda: not proxy.kernel.in_sync, what="the refused restore")
    assert "KUBE-SERVICES" in (proxy.kernel.last_error or "") or proxy.kernel.last_error
    # nothing changed: A and B still have their three endpoints
    assert set(await asyncio.to_thread(topo.count, VIP_A, 80, 30)) == {"b1", "b2", "b3"}
    assert set(await asyncio.to_thread(topo.count, VIP_B, 80, 30)) == {"b1", "b2", "b3"}
    monkeypatch.undo()
    before = proxy.syncs
    await put(env["client"], endpoints("a", backends(topo, 1)))
    await applied(proxy, before)
    assert proxy.kernel.last_kind == "full"
    assert await asyncio.to_thread(topo.count, VIP_B, 80, 10) == {"b3": 10}
    assert await asyncio.to_thread(topo.count, VIP_A, 80, 10) == {"b1": 10}


async def test_sync_period_brings_a_full_sync_that_repairs_drift(topo) -> None:  # type: ignore[no-untyped-def]
    """A partial sync trusts the kernel; the periodic full sync (30 s by default)
    rewrites everything, so a chain someone flushed serves again."""
    clock = HandClock()
    kernel = KernelProxier(
        KernelConfig(mode="iptables", netns=topo.node, iptables_backend="nft"), clock=clock
    )
    svcs = [service("a", VIP_A, 80), service("b", VIP_B, 80)]
    eps = [endpoints("a", backends(topo, 1, 2, 3)), endpoints("b", backends(topo, 1, 2, 3))]
    table = build_service_table(svcs, eps)
    try:
        await kernel.sync(table, None)
        assert kernel.last_kind == "full"
        chain = iptables.svc_chain(table.for_service("default", "a")[0])
        sh("ip", "netns", "exec", topo.node, "iptables-nft", "-t", "nat", "-F", chain)
        with pytest.raises(AssertionError):  # drift: A no longer reaches an endpoint
            await asyncio.to_thread(topo.count, VIP_A, 80, 1)
        for step, advance in enumerate((10.0, 19.0, 1.5)):
            clock.now += advance
            eps[1] = endpoints("b", backends(topo, 1 + step % 3))
            new = build_service_table(svcs, eps)
            await kernel.sync(new, diff_tables(table, new))
            table = new
            if step < 2:
                assert kernel.last_kind == "partial"
        assert kernel.last_kind == "full"  # 30.5 s after the last full sync
        assert set(await asyncio.to_thread(topo.count, VIP_A, 80, 30)) == {"b1", "b2", "b3"}
        assert await asyncio.to_thread(topo.count, VIP_B, 80, 5) == {"b3": 5}
    finally:
        await kernel.cleanup()
        kernel.close()


async def test_min_sync_period_coalesces_changes(topo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    await put(client, service("c", VIP_A, 80))
    cfg = ProxyConfig(
        mode="iptables",
        kernel=KernelConfig(
            mode="iptables",
            netns=topo.node,
            iptables_backend="legacy",
            iptables_min_sync_period=1.0,
        ),
    )
    proxy = ServiceProxy(store, cfg)
    await proxy.start()
    try:
        start = proxy.syncs
        for i in range(10):  # ten changes in well under a second
            await put(client, endpoints("c", backends(topo, 1 + i % 3)))
        last = backends(topo, 1 + 9 % 3)
        await wait_until(
            lambda: set(backends_of(proxy, "default", "c")) == set(last) and proxy.kernel.in_sync,
            what="the last change",
        )
        await asyncio.sleep(1.2)
        assert 1 <= proxy.syncs - start <= 3, proxy.syncs - start
    finally:
        await proxy.stop(cleanup=True)
        await store.close()


@pytest.mark.parametrize("flavour", ["legacy", "nft"])
async def test_backend_detected_from_the_rules_present(flavour: str) -> None:
    ns = f"sn-ipt{uuid.uuid4().hex[:6]}"
    sh("ip", "netns", "add", ns)
    try:
        argv = ["ip", "netns", "exec", ns, f"iptables-{flavour}"]
        subprocess.run(
            [*argv, "-A", "INPUT", "-p", "tcp", "--dport", "9", "-j", "DROP"], check=True
        )
        assert await detect_backend(ns) == flavour
    finally:
        sh("ip", "netns", "del", ns, check=False)


async def test_unknown_backend_is_refused() -> None:
    with pytest.raises(Exception, match="iptables backend 'xt' is not one of auto, nft, legacy"):
        KernelConfig(mode="iptables", iptables_backend="xt")
    with pytest.raises(KernelApplyError.__mro__[1], match="iptables-sync-period"):
        KernelConfig(mode="iptables", iptables_sync_period=-1)


async def own_service_counts(topo: Topology) -> dict[str, int]:
    """60 connections from b1 to a service it is an endpoint of."""
    proc = topo.python(topo.backends[0], "count", VIP_A, "80", "60")
    out, _ = await asyncio.to_thread(proc.communicate, timeout=120)
    assert proc.returncode == 0, "a connection from b1 to its own service failed"
    counts: dict[str, int] = json.loads(out)
    return counts


async def test_endpoint_reaching_its_own_service_hairpin(env) -> None:  # type: ignore[no-untyped-def]
    """An endpoint connecting to its own service is masqueraded when it lands on
    itself, so those connections work too: one rule in KUBE-POSTROUTING for every
    service, no rule per endpoint (the kernel here has xt_bpf)."""
    assert env["proxy"].kernel.hairpin_rule is True
    nat = sh(
        "ip", "netns", "exec", env["topo"].node, f"iptables-{env['backend']}-save", "-t", "nat"
    )
    assert "-j KUBE-MARK-MASQ" in nat and "-s 10." not in nat  # no per-endpoint mark
    hairpin = [line for line in nat.splitlines() if "-m bpf" in line]
    assert len(hairpin) == 1 and hairpin[0].startswith("-A KUBE-POSTROUTING "), hairpin
    counts = await own_service_counts(env["topo"])
    assert sum(counts.values()) == 60 and counts.get("b1", 0) > 0, counts


@pytest.mark.parametrize("flavour", ["legacy", "nft"])
async def test_hairpin_without_the_bpf_rule_marks_per_endpoint(topo, flavour: str) -> None:  # type: ignore[no-untyped-def]
    """The layout for a kernel without xt_bpf (the probe said no): each service chain
    marks traffic from its own endpoints, and hairpin works the same."""
    kernel = KernelProxier(
        KernelConfig(mode="iptables", netns=topo.node, iptables_backend=flavour),
        clock=HandClock(),
    )
    kernel.hairpin_rule = False
    try:
        await kernel.sync(
            build_service_table(
                [service("a", VIP_A, 80)], [endpoints("a", backends(topo, 1, 2, 3))]
            ),
            None,
        )
        nat = sh("ip", "netns", "exec", topo.node, f"iptables-{flavour}-save", "-t", "nat")
        assert "-m bpf" not in nat
        assert f"-s {topo.backend_ip(1)}/32 -j KUBE-MARK-MASQ" in nat
        counts = await own_service_counts(topo)
        assert sum(counts.values()) == 60 and counts.get("b1", 0) > 0, counts
    finally:
        await kernel.cleanup()
        kernel.close()


@pytest.mark.parametrize("flavour", ["legacy", "nft"])
async def test_a_burst_of_changes_is_a_full_sync_with_the_nft_tools(topo, flavour: str) -> None:  # type: ignore[no-untyped-def]
    """600 new services at once: with iptables-nft one restore that size would be slow
    (its cost grows faster than its size), so it becomes a full sync in parts; the
    legacy tools take it as a partial restore. Either way all of them answer."""
    kernel = KernelProxier(
        KernelConfig(mode="iptables", netns=topo.node, iptables_backend=flavour),
        clock=HandClock(),
    )
    svcs = [service("a", VIP_A, 80)]
    eps = [endpoints("a", backends(topo, 1, 2, 3))]
    table = build_service_table(svcs, eps)
    try:
        await kernel.sync(table, None)
        for i in range(600):
            svcs.append(service(f"s{i}", f"172.30.{10 + i // 200}.{i % 200 + 1}", 80))
            eps.append(endpoints(f"s{i}", backends(topo, 1 + i % 3)))
        new = build_service_table(svcs, eps)
        await kernel.sync(new, diff_tables(table, new))
        assert kernel.last_kind == ("full" if flavour == "nft" else "partial")
        table = new
        eps[0] = endpoints("a", backends(topo, 2))
        new = build_service_table(svcs, eps)
        await kernel.sync(new, diff_tables(table, new))
        assert kernel.last_kind == "partial"
        assert await asyncio.to_thread(topo.count, VIP_A, 80, 5) == {"b2": 5}
        assert await asyncio.to_thread(topo.count, "172.30.12.200", 80, 3) == {"b3": 3}
    finally:
        await kernel.cleanup()
        kernel.close()
