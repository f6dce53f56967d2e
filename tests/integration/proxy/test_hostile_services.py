"""A hostile tenant against the kernel service proxy (nftables and iptables).

A good Service serves a client that keeps connecting through its ClusterIP
(from a namespace this test creates) while a tenant writes Services,
Endpoints and EndpointSlices with hostile values in every field that reaches
a ruleset (tests/support/hostile_services.py): names, namespaces, ports, node
ports, protocols, addresses, external and load-balancer addresses (the good
Service's own ClusterIP among them), traffic policies, session affinity, and
every field of an EndpointSlice. The good Service is read from an
EndpointSlice, as the components read them first. Each
goes first through the validating client (refused with one clear sentence, or
accepted as valid), then, when refused, straight into the store around
validation, as a broken writer could. The good Service must lose no request,
no hostile text may reach the ruleset, and a new proxy starts cleanly on the
result.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.support.hostile_services import cases, write_cases
from tests.support.proxy_cluster import (
    backends_of,
    endpoint_slice,
    endpoints,
    put,
    service,
    wait_until,
)
from tests.support.proxy_netns import Topology, sh
from tests.support.steady_client import SteadyClient

from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.kernel import KernelConfig
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.timeout(600),
    pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed"),
]

PORT = 8080
VIP = "172.30.0.10"
# Text of the hostile payloads that must never appear in a ruleset (a DROP of its
# own, for a Local traffic policy without local endpoints, may).
MARKERS = ("-A KUBE-SERVICES -j DROP", "flush ruleset", "table ip evil", "reboot", "COMMIT\nCOMMIT")


@pytest.fixture(scope="module")
def topo() -> Any:
    t = Topology().create()
    try:
        t.start_backends(PORT)
        yield t
    finally:
        t.destroy()


def ruleset(topo: Topology, mode: str) -> str:
    if mode == "nftables":
        return sh("ip", "netns", "exec", topo.node, "nft", "list", "ruleset")
    return sh("ip", "netns", "exec", topo.node, "iptables-save")


@pytest.mark.parametrize("mode", ["nftables", "iptables"])
async def test_hostile_tenant_services_do_not_disturb_a_good_one(
    topo: Topology, mode: str, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    proxies: list[ServiceProxy] = []

    async def start() -> ServiceProxy:
        cfg = ProxyConfig(
            mode=mode, min_sync_interval=0.0, kernel=KernelConfig(mode=mode, netns=topo.node)
        )
        proxy = ServiceProxy(store, cfg)
        await proxy.start()
        proxies.append(proxy)
        return proxy

    steady: SteadyClient | None = None
    try:
        await put(client, service("web", VIP, 80))
        backends = [(topo.backend_ip(i), PORT) for i in (1, 2, 3)]
        await put(client, endpoints("web", backends[:1]))  # hidden by the slice
        await put(client, endpoint_slice("web", backends))
        proxy = await start()
        await wait_until(lambda: len(backends_of(proxy, "default", "web")) == 3, what="web")
        steady = await asyncio.to_thread(SteadyClient, topo.client, "tcp", VIP, "80", "300")

        written = await write_cases(client, store, cases(topo.backend_ip(1), PORT, good_vip=VIP))
        assert written.refused > written.accepted, written  # most hostile values are invalid
        assert written.raw > 0
        syncs = proxy.syncs
        await wait_until(lambda: proxy.syncs > syncs, what="a sync after the last write")
        await asyncio.sleep(1.0)  # a few more coalesced syncs under the client

        result = await asyncio.to_thread(steady.finish)
        steady = None
        assert result["failed"] == 0, result
        assert result["ok"] > 50, result
        assert backends_of(proxy, "default", "web") == set(backends)
        text = ruleset(topo, mode)
        assert VIP in text
        for marker in MARKERS:
            assert marker not in text, f"{marker!r} reached the {mode} ruleset"
        assert all(ch.isprintable() or ch in "\n\t" for ch in text)
        assert proxy.table.problems, "the skipped services are reported"

        # A proxy restarted on this store starts cleanly and serves the good Service.
        await proxy.stop()
        proxies.remove(proxy)
        again = await start()
        assert backends_of(again, "default", "web") == set(backends)
        counts = await asyncio.to_thread(topo.count, VIP, 80, 30)
        assert sum(counts.values()) == 30, counts
    finally:
        if steady is not None:
            steady.kill()
        for p in proxies:
            await p.stop(cleanup=True)
        await store.close()
