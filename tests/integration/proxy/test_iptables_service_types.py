"""Service types and traffic policies in iptables mode with the legacy tools (the tests of
test_kernel_service_types.py run here against iptables-legacy; that module runs them with
the default tools), and what the iptables rules do when a policy leaves no endpoint:
a node port without endpoints is rejected (filter INPUT), one whose endpoints are all on
other nodes under ``externalTrafficPolicy: Local`` is dropped, as kube-proxy does.
"""

from __future__ import annotations

import shutil
import time

import pytest
from tests.integration.proxy.test_kernel_service_types import (  # noqa: F401 (collected here)
    NODE,
    NODE_PORT,
    VIP,
    count,
    placed,
    synced,
    test_client_ip_affinity_on_the_node_port,
    test_external_policy_local_only_local_endpoint_and_client_address_kept,
    test_internal_policy_local_only_local_endpoint,
    test_node_port_external_ip_and_lb_address_reach_every_endpoint,
    topo,
    typed,
)
from tests.support.proxy_cluster import endpoints, put, wait_until

from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.kernel import KernelConfig
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("iptables-legacy-restore") is None, reason="no legacy tools"),
]


@pytest.fixture
async def env(topo, tmp_path):  # type: ignore[no-untyped-def]  # noqa: F811
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    cfg = ProxyConfig(
        mode="iptables",
        node_name="n1",
        kernel=KernelConfig(
            mode="iptables",
            netns=topo.node,
            iptables_backend="legacy",
            iptables_min_sync_period=0.0,
        ),
    )
    proxy = ServiceProxy(store, cfg)
    try:
        yield client, proxy, topo
    finally:
        await proxy.stop(cleanup=True)
        await store.close()


async def refused_within(nodes, host: str, port: int) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    with pytest.raises(AssertionError):
        await count(nodes, host, port, 1)
    return time.monotonic() - start


async def test_no_endpoint_rejects_and_no_local_endpoint_drops(env) -> None:  # type: ignore[no-untyped-def]
    client, proxy, nodes = env
    await put(client, typed("np"))
    await put(client, placed("np", nodes))
    await proxy.start()
    await wait_until(
        lambda: bool(proxy.table.for_service("default", "np")) and proxy.kernel.in_sync
    )
    assert set(await count(nodes, NODE, NODE_PORT, 30)) == {"b1", "b2", "b3"}
    # every endpoint on another node, Local policy: the node port drops (client times out)
    remote = placed("np", nodes)
    remote.subsets[0].addresses = [a for a in remote.subsets[0].addresses if a.node_name == "n2"]
    await put(client, remote)
    await put(client, typed("np", externalTrafficPolicy="Local"))
    await synced(proxy, lambda: proxy.table.for_service("default", "np")[0].external_local)
    assert proxy.kernel.last_kind == "partial"
    assert await refused_within(nodes, NODE, NODE_PORT) >= 4.0  # dropped: the 5 s timeout
    assert set(await count(nodes, VIP, 80, 30)) == {"b2", "b3"}  # cluster traffic still served
    # no endpoint at all: rejected at once, on the node port and the ClusterIP
    await put(client, endpoints("np", []))
    await synced(proxy, lambda: not proxy.table.for_service("default", "np")[0].backends)
    assert await refused_within(nodes, NODE, NODE_PORT) < 2.0
    assert await refused_within(nodes, VIP, 80) < 2.0
