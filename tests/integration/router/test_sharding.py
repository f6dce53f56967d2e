"""Sharding: routers with different ROUTE_LABELS / NAMESPACE_LABELS on one store, each on its
own ports, serve only their own routes and write only their own status entry."""

from __future__ import annotations

import asyncio

import pytest
from tests.support.backends import backends
from tests.support.router import RouterEnv, endpoints, namespace, route, service

from shiftnet.api import Route

pytestmark = pytest.mark.integration


async def status_of(env: RouterEnv, ns: str, name: str) -> list[str]:
    r = await env.client.get(Route, ns, name)
    return sorted(e.router_name for e in r.status.ingress)


async def answered_by(env: RouterEnv, host: str) -> str | None:
    r = await env.get(host)
    return r.backend if r.status == 200 else None


async def test_route_and_namespace_shards_serve_only_their_own(tmp_path) -> None:  # type: ignore[no-untyped-def]
    shard_a = RouterEnv(tmp_path, {"ROUTER_SERVICE_NAME": "shard-a", "ROUTE_LABELS": "shard=a"})
    shard_b = RouterEnv(
        tmp_path, {"ROUTER_SERVICE_NAME": "shard-b", "NAMESPACE_LABELS": "team in (blue)"}
    )
    try:
        await shard_a.start()
        await shard_b.start()
        env = shard_a  # any client of the shared store writes the objects
        with backends("a-pod") as a_pods, backends("b-pod") as b_pods, backends("x-pod") as x:
            await env.apply(namespace("red"), namespace("blue", {"team": "blue"}))
            for ns, name, pods in (("red", "a", a_pods), ("blue", "b", b_pods), ("red", "x", x)):
                await env.apply(service(ns, name), endpoints(ns, name, pods))
            labelled = route("red", "a", "a.example.com", "a")
            labelled.metadata.labels = {"shard": "a"}
            await env.apply(
                labelled,
                route("blue", "b", "b.example.com", "b"),
                route("red", "x", "x.example.com", "x"),  # in neither shard
            )
            await shard_a.eventually(lambda: _eq(answered_by(shard_a, "a.example.com"), "a-pod"))
            await shard_b.eventually(lambda: _eq(answered_by(shard_b, "b.example.com"), "b-pod"))
            await asyncio.sleep(0.5)  # give both a chance to (wrongly) pick up the others
            assert await answered_by(shard_a, "b.example.com") is None
            assert await answered_by(shard_b, "a.example.com") is None
            for shard in (shard_a, shard_b):
                assert await answered_by(shard, "x.example.com") is None
            # each router writes only its own entry, and none for routes outside its shard
            assert await status_of(env, "red", "a") == ["shard-a"]
            assert await status_of(env, "blue", "b") == ["shard-b"]
            assert await status_of(env, "red", "x") == []
            # relabelling moves a route into a shard
            moved = await env.client.get(Route, "red", "x")
            moved.metadata.labels = {"shard": "a"}
            await env.client.update(moved)
            await shard_a.eventually(lambda: _eq(answered_by(shard_a, "x.example.com"), "x-pod"))
            await shard_a.eventually(lambda: _eq(status_of(env, "red", "x"), ["shard-a"]))
    finally:
        await shard_b.stop()
        await shard_a.stop()


async def _eq(coro, want):  # type: ignore[no-untyped-def]
    return (await coro) == want
