"""The Ingress-to-Route controller on a Route cache that lags its own writes.

A real SQLite store; the controller's informers read it through a store whose
Route watch hands each event on late. Planning from that cache would see no
Route for a rule it just served and make a second one; the controller must
wait until its cache shows its own writes.
"""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import pytest
from tests.support.lagging_store import lagging_controller
from tests.support.master import eventually, service

from shiftnet.api import Ingress, Route, parse_object
from shiftnet.client import Client
from shiftnet.master.ingress import IngressToRouteController

pytestmark = pytest.mark.integration

LAG = 0.2  # seconds each Route event waits before the cache sees it
PATHS = 40


def shop(paths: int) -> Ingress:
    obj = parse_object(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "shop", "namespace": "default"},
            "spec": {
                "rules": [
                    {
                        "host": "shop.example.com",
                        "http": {
                            "paths": [
                                {
                                    "path": f"/p{i}",
                                    "pathType": "Prefix",
                                    "backend": {"service": {"name": "web", "port": {"number": 80}}},
                                }
                                for i in range(paths)
                            ]
                        },
                    }
                ]
            },
        }
    )
    assert isinstance(obj, Ingress)
    return obj


async def test_one_route_per_path_when_the_route_cache_lags(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    async with lagging_controller(url, "routes", LAG, IngressToRouteController) as (
        client,
        controller,
    ):
        await one_route_per_path(client, controller)


async def one_route_per_path(client: Client, controller: IngressToRouteController) -> None:
    seen_twice: set[str] = set()

    async def watch_for_duplicates() -> None:
        while True:
            found = await client.list(Route, "default")
            per_path = collections.Counter(r.spec.path for r in found)
            seen_twice.update(p for p, n in per_path.items() if n > 1)
            await asyncio.sleep(0.005)

    async def route_count() -> int:
        return len(await client.list(Route, "default"))

    watcher = asyncio.create_task(watch_for_duplicates())
    try:
        await client.create(service("web", selector={"app": "web"}))
        await client.create(shop(1))
        for n in range(2, PATHS + 1):  # one path more at each edit, as a rollout of many
            current = await client.get(Ingress, "default", "shop")
            current.spec = shop(n).spec
            await client.update(current)
        await eventually(route_count, lambda n: n == PATHS, timeout=60)
        await controller.queue.wait_idle()
        watcher.cancel()
        assert not seen_twice, f"{len(seen_twice)} paths had two Routes at once"
        found = await client.list(Route, "default")
        assert sorted(r.spec.path for r in found) == sorted(f"/p{i}" for i in range(PATHS))
    finally:
        watcher.cancel()
