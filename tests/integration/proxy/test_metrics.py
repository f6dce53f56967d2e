"""The proxy's /metrics: kube-proxy's series after known Service and endpoint changes,
with real iptables partial syncs (and one refused restore) in a namespace this test creates.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
import urllib.request

import pytest
from tests.support.leaks import LeakProbe
from tests.support.proxy_cluster import endpoints, put, service, wait_until
from tests.support.proxy_netns import Topology
from tests.support.scrape import Scrape, scrape

from shiftnet.client import Client
from shiftnet.metrics_endpoint import MetricsEndpoint
from shiftnet.proxy import ProxyConfig, ServiceProxy, iptables, metrics
from shiftnet.proxy.kernel import KernelConfig
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(
        shutil.which("iptables-legacy-restore") is None, reason="needs iptables-legacy"
    ),
]

PORT = 8080
VIP_A, VIP_B = "172.30.0.40", "172.30.0.41"


# the series every scrape must hold, as it starts a line of the text format
SYNC_COUNT = b"\nkubeproxy_sync_proxy_rules_duration_seconds_count "


@pytest.fixture(scope="module")
def topo():  # type: ignore[no-untyped-def]
    t = Topology().create()
    try:
        t.start_backends(PORT)
        yield t
    finally:
        t.destroy()


def _delta(before: Scrape, after: Scrape, name: str) -> float:
    return (after.value(name) or 0.0) - (before.value(name) or 0.0)


async def test_changes_and_syncs_show_in_kubeproxy_series(topo, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    await put(client, service("a", VIP_A, 80))
    await put(client, endpoints("a", [(topo.backend_ip(1), PORT)]))
    kernel = KernelConfig(
        mode="iptables", netns=topo.node, iptables_backend="legacy", iptables_min_sync_period=0.0
    )
    proxy = ServiceProxy(store, ProxyConfig(mode="iptables", kernel=kernel))
    endpoint = MetricsEndpoint(":0", [metrics.REGISTRY])
    await proxy.start()
    try:
        await wait_until(lambda: proxy.kernel.in_sync and len(proxy.table.entries) == 1)
        before = await asyncio.to_thread(scrape, endpoint.url)
        started = time.time()
        syncs = proxy.syncs
        await put(client, endpoints("a", [(topo.backend_ip(i), PORT) for i in (1, 2)]))
        await wait_until(lambda: proxy.syncs > syncs, what="the endpoints sync")
        syncs = proxy.syncs
        await put(client, service("b", VIP_B, 80))
        await wait_until(lambda: proxy.syncs > syncs, what="the service sync")
        assert await asyncio.to_thread(topo.count, VIP_A, 80, 20) == {"b1": 10, "b2": 10} or (
            set(await asyncio.to_thread(topo.count, VIP_A, 80, 20)) == {"b1", "b2"}
        )
        after = await asyncio.to_thread(scrape, endpoint.url)
        assert _delta(before, after, "kubeproxy_sync_proxy_rules_endpoint_changes_total") == 1
        assert _delta(before, after, "kubeproxy_sync_proxy_rules_service_changes_total") == 1
        assert after.value("kubeproxy_sync_proxy_rules_endpoint_changes_pending") == 0
        assert after.value("kubeproxy_sync_proxy_rules_service_changes_pending") == 0
        assert _delta(before, after, "kubeproxy_sync_proxy_rules_duration_seconds_count") == 2
        partial = "kubeproxy_sync_partial_proxy_rules_duration_seconds_count"
        assert _delta(before, after, partial) == 2
        full = "kubeproxy_sync_full_proxy_rules_duration_seconds_count"
        assert _delta(before, after, full) == 0
        programming = "kubeproxy_network_programming_duration_seconds_count"
        assert _delta(before, after, programming) == 2  # one per changed service
        last = after.value("kubeproxy_sync_proxy_rules_last_timestamp_seconds")
        assert last is not None and started <= last <= time.time()

        # a partial restore the kernel refuses (a jump loop) is counted, then a full sync
        real = iptables.IptPlan.partial

        def looping(self, diff):  # type: ignore[no-untyped-def]
            head, _, _ = real(self, diff).rpartition("COMMIT")
            return head + "-A KUBE-SERVICES -j KUBE-SERVICES\nCOMMIT\n"

        monkeypatch.setattr(iptables.IptPlan, "partial", looping)
        await put(client, endpoints("a", [(topo.backend_ip(3), PORT)]))
        await wait_until(lambda: not proxy.kernel.in_sync, what="the refused restore")
        monkeypatch.undo()
        refused = await asyncio.to_thread(scrape, endpoint.url)
        failures = "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total"
        assert _delta(after, refused, failures) == 1
        syncs = proxy.syncs
        await put(client, endpoints("a", [(topo.backend_ip(2), PORT)]))
        await wait_until(lambda: proxy.syncs > syncs and proxy.kernel.in_sync, what="a full sync")
        repaired = await asyncio.to_thread(scrape, endpoint.url)
        assert _delta(refused, repaired, full) == 1
    finally:
        endpoint.stop()
        await proxy.stop(cleanup=True)
        await store.close()


async def test_thousands_of_scrapes_leak_no_descriptor() -> None:
    endpoint = MetricsEndpoint("127.0.0.1:0", [metrics.REGISTRY])
    try:

        def many(n: int) -> None:
            # Each scrape is a whole connection and answer; parsing every one would
            # only spend the test's time, so the series are parsed once.
            for _ in range(n):
                with urllib.request.urlopen(endpoint.url, timeout=10) as resp:
                    assert resp.status == 200 and SYNC_COUNT in resp.read()

        first = await asyncio.to_thread(scrape, endpoint.url)
        assert first.matching("kubeproxy_sync_proxy_rules_duration_seconds_count")
        await asyncio.to_thread(many, 50)
        probe = LeakProbe(os.getpid(), name="proxy metrics", rss_growth_kib=None)
        await asyncio.to_thread(many, 3000)
        await probe.settled()
    finally:
        endpoint.stop()
