"""Informer caches hold compact objects: shared fields sets and strings, same values."""

from __future__ import annotations

import asyncio

import pytest

from shiftnet.api import Route
from shiftnet.informer import Informers
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
