"""The EndpointSlice controller on a slice cache that lags its own writes.

A real SQLite store; the controller's informers read it through a store whose
watch of EndpointSlices hands each event on late (as a busy API server or a
slow watch connection does). Planning from that cache would place endpoints
twice and let the 100-endpoint split drift; the controller must wait until
its cache shows its own writes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.lagging_store import lagging_controller
from tests.support.master import eventually, pod, service

from shiftnet.api import EndpointSlice
from shiftnet.client import Client
from shiftnet.master.endpointslices import EndpointSliceController

pytestmark = pytest.mark.integration

WEB = [{"name": "web", "containerPort": 8080}]
PORTS = [{"name": "http", "port": 80, "targetPort": "web"}]
LAG = 0.2  # seconds each slice event waits before the cache sees it


async def test_split_holds_when_the_slice_cache_lags(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    async with lagging_controller(url, "endpointslices", LAG, EndpointSliceController) as (
        client,
        controller,
    ):
        await split_holds(client, controller)


async def split_holds(client: Client, controller: EndpointSliceController) -> None:
    seen_twice: set[str] = set()

    async def watch_for_duplicates() -> None:
        while True:
            found = await client.list(EndpointSlice, "default", "kubernetes.io/service-name=web")
            addresses = [e.addresses[0] for s in found for e in s.endpoints]
            seen_twice.update(a for a in addresses if addresses.count(a) > 1)
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch_for_duplicates())
    try:
        await client.create(service("web", selector={"app": "web"}, ports=PORTS))
        for i in range(130):
            await client.create(pod(f"w{i}", f"127.10.0.{i + 2}", labels={"app": "web"}, ports=WEB))
        found = await eventually(
            lambda: client.list(EndpointSlice, "default", "kubernetes.io/service-name=web"),
            lambda s: sum(len(x.endpoints) for x in s) == 130,
            timeout=60,
        )
        await controller.queue.wait_idle()
        watcher.cancel()
        assert not seen_twice, f"{len(seen_twice)} endpoints were in two slices at once"
        found = await client.list(EndpointSlice, "default", "kubernetes.io/service-name=web")
        addresses = [e.addresses[0] for s in found for e in s.endpoints]
        assert len(addresses) == len(set(addresses)) == 130
        assert sorted(len(s.endpoints) for s in found) == [30, 100]
    finally:
        watcher.cancel()
