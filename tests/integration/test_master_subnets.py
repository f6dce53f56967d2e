"""SDN subnet allocator on real stores: HostSubnets per Node, exhaustion, churn, restart."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest
from tests.support.master import eventually, node, running_master
from tests.support.stores import etcd_server, store_url  # noqa: F401

from shiftnet.api import ClusterNetwork, HostSubnet, Node
from shiftnet.client import Client
from shiftnet.errors import AlreadyExists, NotFound
from shiftnet.master import MasterConfig

pytestmark = pytest.mark.integration


async def subnets(client: Client) -> dict[str, str]:
    return {h.name: h.subnet for h in await client.list(HostSubnet)}


def network_condition(n: Node) -> tuple[str, str | None, str | None] | None:
    c = next((c for c in n.status.conditions if c.type == "NetworkUnavailable"), None)
    return None if c is None else (c.status, c.reason, c.message)


async def test_default_cluster_network_and_host_subnets(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        cn = await client.get(ClusterNetwork, None, "default")
        assert (cn.network, cn.hostsubnetlength, cn.service_network) == (
            "127.10.0.0/16",
            8,
            "127.30.0.0/16",
        )
        assert [(e.cidr, e.host_subnet_length) for e in cn.cluster_networks] == [
            ("127.10.0.0/16", 8)
        ]
        await client.create(node("alpha", "127.0.0.1"))
        await client.create(node("beta", "127.0.0.2"))
        got = await eventually(lambda: subnets(client), lambda s: len(s) == 2)
        assert sorted(got.values()) == ["127.10.0.0/24", "127.10.1.0/24"]  # the lowest two
        first = got
        hs = await client.get(HostSubnet, None, "beta")
        assert (hs.host, hs.host_ip) == ("beta", "127.0.0.2")
        beta = await eventually(
            lambda: client.get(Node, None, "beta"), lambda n: n.spec.pod_cidr is not None
        )
        assert beta.spec.pod_cidr == first["beta"]
        assert network_condition(beta) is None  # nothing to say when all is well

        # a HostSubnet deleted by hand while its node lives comes back, same subnet
        await client.delete(HostSubnet, None, "alpha")
        await eventually(lambda: subnets(client), lambda s: s.get("alpha") == first["alpha"])

        await client.delete(Node, None, "alpha")
        await eventually(lambda: subnets(client), lambda s: s == {"beta": first["beta"]})

    # restart: beta keeps its subnet, a new node gets the free one, never beta's
    async with running_master(store_url) as (_, client):
        await client.create(node("gamma"))
        got = await eventually(lambda: subnets(client), lambda s: len(s) == 2)
    assert got == {"beta": first["beta"], "gamma": first["alpha"]}


async def test_full_cluster_network_gives_clear_error_then_subnet(store_url) -> None:  # noqa: F811
    cfg = MasterConfig.build(cluster_network="127.10.0.0/23", host_subnet_length=8)
    async with running_master(store_url, cfg) as (_, client):
        await client.create(node("n1"))
        await client.create(node("n2"))
        await eventually(lambda: subnets(client), lambda s: len(s) == 2)
        await client.create(node("n3"))
        n3 = await eventually(
            lambda: client.get(Node, None, "n3"), lambda n: network_condition(n) is not None
        )
        status, reason, message = network_condition(n3)  # type: ignore[misc]
        assert (status, reason) == ("True", "SubnetsExhausted")
        assert message is not None
        assert 'no subnet left for node "n3"' in message and "127.10.0.0/23" in message
        assert "range is full" in message
        assert "n3" not in await subnets(client)

        before = await subnets(client)
        freed = before["n1"]
        await client.delete(Node, None, "n1")
        got = await eventually(lambda: subnets(client), lambda s: "n3" in s)
        assert got == {"n2": before["n2"], "n3": freed}
        n3 = await eventually(
            lambda: client.get(Node, None, "n3"),
            lambda n: (network_condition(n) or ("",))[0] == "False",
        )
        assert network_condition(n3)[1] == "SubnetAllocated"  # type: ignore[index]


async def test_nodes_joining_and_leaving_never_share_a_subnet(store_url) -> None:  # noqa: F811
    cfg = MasterConfig.build(cluster_network="127.10.0.0/20", host_subnet_length=8)  # 16 subnets
    names = [f"churn-{i}" for i in range(10)]
    rng = random.Random(7)
    seen_duplicates: list[dict[str, str]] = []
    snapshots = 0
    async with running_master(store_url, cfg) as (_, client):
        stop = asyncio.Event()

        async def watch_for_duplicates() -> None:
            nonlocal snapshots
            while not stop.is_set():
                snap = await subnets(client)
                snapshots += 1
                if any(n > 1 for n in Counter(snap.values()).values()):
                    seen_duplicates.append(snap)
                await asyncio.sleep(0.005)

        async def churn(worker: int) -> None:
            for _ in range(25):  # 4 workers x 25 = 100 joins or leaves
                name = rng.choice(names)
                try:
                    if await client.try_get(Node, None, name) is None:
                        await client.create(node(name))
                    else:
                        await client.delete(Node, None, name)
                except (AlreadyExists, NotFound):
                    pass
                await asyncio.sleep(rng.random() * 0.02)

        checker = asyncio.create_task(watch_for_duplicates())
        await asyncio.gather(*(churn(w) for w in range(4)))
        live = {n.name for n in await client.list(Node)}
        final = await eventually(lambda: subnets(client), lambda s: set(s) == live, timeout=30)
        stop.set()
        await checker
    assert not seen_duplicates, seen_duplicates[:3]
    assert snapshots > 10
    assert len(set(final.values())) == len(final)


async def test_leftover_host_subnet_of_a_vanished_node_is_removed(store_url) -> None:  # noqa: F811
    from shiftnet.api.base import ObjectMeta
    from shiftnet.store import open_store

    store = open_store(store_url)
    try:
        offline = Client(store)
        await offline.create(
            HostSubnet(
                metadata=ObjectMeta(name="ghost"),
                host="ghost",
                host_ip="127.0.0.9",
                subnet="127.10.0.0/24",
            )
        )
        await offline.create(node("real"))
    finally:
        await store.close()
    async with running_master(store_url) as (_, client):
        got = await eventually(lambda: subnets(client), lambda s: "ghost" not in s and "real" in s)
    assert list(got) == ["real"]
