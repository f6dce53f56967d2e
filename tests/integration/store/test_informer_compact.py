"""Informer caches hold compact objects: shared fields sets and strings, same values."""

from __future__ import annotations

import asyncio

import pytest

from shiftnet.api import Route, Service
from shiftnet.api.compact import PRUNE_FLOOR, Compactor
from shiftnet.informer import Informer, Informers
from shiftnet.store import open_store

pytestmark = pytest.mark.integration


def route(name: str) -> dict:
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"host": f"{name}.example.com", "to": {"kind": "Service", "name": "web"}},
    }


async def test_listed_and_watched_objects_are_compact(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    try:
        for name in ("a", "b"):
            await store.create("routes", route(name))
        informers = Informers(store)
        inf = informers.informer(Route)
        seen: list[Route] = []
        inf.add_handler(lambda t, old, new: seen.append(new) if new is not None else None)
        await informers.start()
        await store.create("routes", route("c"))  # arrives through the watch
        for _ in range(200):
            if inf.get("shop", "c") is not None:
                break
            await asyncio.sleep(0.02)
        a, b, c = (inf.get("shop", n) for n in "abc")
        assert a is not None and b is not None and c is not None
        assert a.metadata.__pydantic_fields_set__ is c.metadata.__pydantic_fields_set__
        assert a.metadata.namespace is b.metadata.namespace is c.metadata.namespace
        assert a.spec.to.name is c.spec.to.name
        assert c == Route.model_validate(await store.get("routes", "shop", "c"))
        assert [r.name for r in seen] == ["a", "b", "c"]
        await informers.stop()
    finally:
        await store.close()


async def wait_for(check, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def test_the_string_table_stays_bounded_under_create_delete_churn(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Routes with new names come and go through a real store: what the informer's
    string table holds after 30 rounds is bounded by what is alive, not by history."""
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    compactor = Compactor()
    inf = Informer(store, Route, compactor=compactor)
    try:
        await store.create("routes", route("stays"))
        await inf.start()
        sizes = []
        for rnd in range(30):
            names = [f"r{rnd}-{i}" for i in range(40)]
            for name in names:
                await store.create("routes", route(name))
            await wait_for(lambda: len(inf) == 41, "the creates")
            for name in names:
                await store.delete("routes", "shop", name)
            await wait_for(lambda: len(inf) == 1, "the deletes")
            sizes.append(len(compactor))
        assert sizes[0] > 0  # the table the informer fills
        # 1,200 Routes (2,400 names and hosts) went through; one round adds about 80
        assert max(sizes) <= PRUNE_FLOOR + sizes[0], sizes
        assert inf.get("shop", "stays") is not None
    finally:
        await inf.stop()
        await store.close()


async def test_the_informers_of_one_process_share_one_string_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    informers = Informers(store)
    try:
        await store.create("routes", route("a"))
        service = {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"ports": [{"port": 80}]},
        }
        await store.create("services", service)
        routes, services = informers.informer(Route), informers.informer(Service)
        await informers.start()
        r, svc = routes.get("shop", "a"), services.get("shop", "web")
        assert r is not None and svc is not None
        assert r.spec.to.name is svc.metadata.name  # one copy of "web" for both kinds
        assert r.metadata.namespace is svc.metadata.namespace
    finally:
        await informers.stop()
        await store.close()
