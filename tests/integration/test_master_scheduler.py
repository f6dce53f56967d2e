"""Scheduler on a real store: unscheduled pods spread round robin over ready nodes."""

from __future__ import annotations

from collections import Counter

import pytest
from tests.support.master import eventually, node, pod, running_master
from tests.support.stores import store_url  # noqa: F401

from shiftnet.api import Pod
from shiftnet.client import Client

pytestmark = pytest.mark.integration


async def placement(client: Client) -> dict[str, str | None]:
    return {p.name: p.spec.node_name for p in await client.list(Pod)}


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
async def test_pods_spread_over_ready_nodes_and_wait_for_one(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        await client.create(pod("early", None, node=None, phase="Pending"))
        await client.create(node("a"))
        await client.create(node("b"))
        await client.create(node("sick", ready=False))
        await eventually(lambda: placement(client), lambda m: m["early"] is not None)
        for i in range(10):
            await client.create(pod(f"p{i}", None, node=None, phase="Pending"))
        got = await eventually(lambda: placement(client), lambda m: all(m.values()))
        pinned = pod("pinned", None, node="sick", phase="Pending")
        await client.create(pinned)
        still = await client.get(Pod, "default", "pinned")
    counts = Counter(got.values())
    assert set(counts) == {"a", "b"}
    assert abs(counts["a"] - counts["b"]) <= 1
    assert still.spec.node_name == "sick"  # an explicit nodeName is never changed
