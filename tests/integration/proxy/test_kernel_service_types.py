"""NodePort, externalIPs, LoadBalancer addresses, traffic policies and affinity in both kernel
modes, inside network namespaces this test creates (see tests/support/proxy_netns.py).

The node namespace is node "n1"; endpoint b1 is on n1, b2 and b3 on "n2" (their
``nodeName``), so the Local policies must pick b1 alone. The client reaches the
node at 10.200.0.1 (its gateway) and routes the external addresses through it.
"""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from tests.support.proxy_cluster import endpoints, put, service, wait_until
from tests.support.proxy_netns import Topology, sh

from shiftnet.api import Endpoints, Service
from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.kernel import KernelConfig
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed"),
]

PORT = 8080
VIP = "172.30.0.20"
NODE = "10.200.0.1"  # the node's address on the client's link
EXTERNAL_IP = "10.202.0.5"
LB_IP = "10.202.0.6"
NODE_PORT = 30080
MODES = ["nftables", "iptables"]


@pytest.fixture(scope="module")
def topo():  # type: ignore[no-untyped-def]
    t = Topology().create()
    try:
        t.start_backends(PORT)
        yield t
    finally:
        t.destroy()


@pytest.fixture(params=MODES)
async def env(request, topo, tmp_path):  # type: ignore[no-untyped-def]
    mode = request.param
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    cfg = ProxyConfig(
        mode=mode,
        node_name="n1",
        min_sync_interval=0.0,
        kernel=KernelConfig(mode=mode, netns=topo.node),
    )
    proxy = ServiceProxy(store, cfg)
    try:
        yield client, proxy, topo
    finally:
        await proxy.stop(cleanup=True)
        await store.close()


def typed(name: str, **spec: object) -> Service:
    """Service ``name`` on VIP:80 with node port 30080 and the given spec fields."""
    data = service(name, VIP, 80, affinity_timeout=spec.pop("affinity", None)).to_dict()  # type: ignore[arg-type]
    data["spec"]["ports"][0]["nodePort"] = NODE_PORT
    data["spec"]["type"] = "NodePort"
    status = spec.pop("status", None)
    data["spec"].update(spec)
    if status is not None:
        data["status"] = status
    return Service.model_validate(data)


def placed(name: str, topo: Topology) -> Endpoints:
    eps = endpoints(name, [(topo.backend_ip(i), PORT) for i in (1, 2, 3)])
    for addr in eps.subsets[0].addresses:
        addr.node_name = "n1" if addr.ip == topo.backend_ip(1) else "n2"
    return eps


async def synced(proxy: ServiceProxy, check) -> None:  # type: ignore[no-untyped-def]
    syncs = proxy.syncs
    await wait_until(lambda: proxy.syncs > syncs and check(), what="proxy sync")
    await wait_until(lambda: proxy.kernel is not None and proxy.kernel.in_sync)


async def count(topo: Topology, host: str, port: int, n: int) -> dict[str, int]:
    return await asyncio.to_thread(topo.count, host, port, n)


def peers(topo: Topology, i: int) -> set[str]:
    """Remote addresses of backend i's established connections to its port."""
    out = sh("ip", "netns", "exec", topo.backends[i - 1], "ss", "-tnH", "state", "established")
    return {
        line.split()[-1].rsplit(":", 1)[0]
        for line in out.splitlines()
        if line.split() and line.split()[-2].endswith(f":{PORT}")
    }


async def start(env, svc: Service) -> ServiceProxy:  # type: ignore[no-untyped-def]
    client, proxy, topo = env
    await put(client, svc)
    await put(client, placed(svc.metadata.name, topo))
    await proxy.start()
    await wait_until(lambda: bool(proxy.table.for_service("default", svc.metadata.name)))
    await wait_until(lambda: proxy.kernel is not None and proxy.kernel.in_sync)
    return proxy


async def test_node_port_external_ip_and_lb_address_reach_every_endpoint(env) -> None:  # type: ignore[no-untyped-def]
    client, proxy, topo = env
    svc = typed(
        "web",
        type="LoadBalancer",
        externalIPs=[EXTERNAL_IP],
        status={"loadBalancer": {"ingress": [{"ip": LB_IP}]}},
    )
    for addr in (EXTERNAL_IP, LB_IP):
        sh("ip", "-n", topo.client, "route", "replace", f"{addr}/32", "via", NODE)
    await start(env, svc)  # a full sync
    for host, port in ((NODE, NODE_PORT), (EXTERNAL_IP, 80), (LB_IP, 80), (VIP, 80)):
        counts = await count(topo, host, port, 60)
        assert set(counts) == {"b1", "b2", "b3"}, (host, counts)
    # partial syncs: the node port moves, the external IP goes; the old ones stop answering
    moved = typed("web", externalIPs=[], ports=[{"name": "main", "port": 80, "nodePort": 30081}])
    await put(client, moved)
    await synced(proxy, lambda: proxy.table.for_service("default", "web")[0].node_port == 30081)
    assert set(await count(topo, NODE, 30081, 30)) == {"b1", "b2", "b3"}
    for host, port in ((NODE, NODE_PORT), (EXTERNAL_IP, 80), (LB_IP, 80)):
        with pytest.raises(AssertionError):
            await count(topo, host, port, 1)


async def test_external_policy_local_only_local_endpoint_and_client_address_kept(env) -> None:  # type: ignore[no-untyped-def]
    client, proxy, topo = env
    await start(env, typed("loc"))
    hold = topo.python(topo.client, "hold", NODE, str(NODE_PORT), stdin=True)
    assert hold.stdout is not None
    first = hold.stdout.readline().split()[1]
    i = int(first[1:])
    # Cluster policy: masqueraded, the endpoint sees the node's address on its link
    await wait_until(lambda: f"10.201.{i}.1" in peers(topo, i), what="masqueraded peer")
    hold.kill()
    hold.wait()
    await put(client, typed("loc", externalTrafficPolicy="Local"))
    await synced(proxy, lambda: proxy.table.for_service("default", "loc")[0].external_local)
    assert await count(topo, NODE, NODE_PORT, 40) == {"b1": 40}
    assert set(await count(topo, VIP, 80, 60)) == {"b1", "b2", "b3"}  # cluster traffic: all
    hold = topo.python(topo.client, "hold", NODE, str(NODE_PORT), stdin=True)
    assert hold.stdout is not None and hold.stdout.readline().split()[1] == "b1"
    await wait_until(lambda: "10.200.0.2" in peers(topo, 1), what="client address kept")
    hold.kill()
    hold.wait()
    # the node itself is served cluster-wide, as kube-proxy does
    await wait_until(lambda: set(from_node(topo, 60)) == {"b1", "b2", "b3"}, timeout=20)


def from_node(topo: Topology, n: int) -> dict[str, int]:
    """``n`` connections from the node's own namespace to its node port."""
    proc = topo.python(topo.node, "count", NODE, str(NODE_PORT), str(n))
    out, _ = proc.communicate(timeout=60)
    return json.loads(out) if proc.returncode == 0 else {}


async def test_internal_policy_local_only_local_endpoint(env) -> None:  # type: ignore[no-untyped-def]
    _, _, topo = env
    await start(env, typed("itp", internalTrafficPolicy="Local"))
    assert await count(topo, VIP, 80, 40) == {"b1": 40}
    assert set(await count(topo, NODE, NODE_PORT, 60)) == {"b1", "b2", "b3"}


async def test_client_ip_affinity_on_the_node_port(env) -> None:  # type: ignore[no-untyped-def]
    client, proxy, topo = env
    await start(env, typed("sticky", affinity=60))
    counts = await count(topo, NODE, NODE_PORT, 50)
    assert len(counts) == 1, counts
    # one affinity per service port: the ClusterIP keeps the client there too
    assert await count(topo, VIP, 80, 20) == {next(iter(counts)): 20}
    # with the Local policy the node port is sticky among local endpoints (b1 alone)
    await put(client, typed("sticky", affinity=60, externalTrafficPolicy="Local"))
    await synced(proxy, lambda: proxy.table.for_service("default", "sticky")[0].external_local)
    assert await count(topo, NODE, NODE_PORT, 20) == {"b1": 20}
