"""The shared watch of a resource over a real SQLite store: one store read for every
watcher, a watcher that falls behind dropped alone, a watch from the past served."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from shiftnet.api.selectors import parse_selector
from shiftnet.apiserver import fanout
from shiftnet.apiserver.fanout import Dropped, SharedEvent, Subscription, WatchFanout
from shiftnet.apiserver.fieldselectors import parse_field_selector
from shiftnet.apiserver.resources import find
from shiftnet.apiserver.watch import WatchRequest, stream_events
from shiftnet.store.base import WatchEvent
from shiftnet.store.sqlite import SqliteStore

pytestmark = pytest.mark.integration

_FOUND = find("route.openshift.io", "v1", "routes")
assert _FOUND is not None
ROUTES = _FOUND


class CountingStore(SqliteStore):
    """The real SQLite store, counting the store watches opened on it."""

    watches = 0

    async def watch(
        self, resource: str, revision: int, namespace: str | None = None
    ) -> AsyncIterator[WatchEvent]:
        self.watches += 1
        async for ev in super().watch(resource, revision, namespace):
            yield ev


def route(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"host": f"{name}.example.com", "to": {"kind": "Service", "name": "s"}},
    }


async def collect(sub: Subscription, count: int) -> list[SharedEvent]:
    got: list[SharedEvent] = []
    while len(got) < count and sub.ended is None:
        await asyncio.wait_for(sub.wait(), 10)
        got.extend(sub.take())
    return got


def test_watchers_share_one_store_watch_and_one_encoding(tmp_path: Path) -> None:
    async def run() -> None:
        store = CountingStore(f"sqlite:///{tmp_path}/state.db")
        hub = WatchFanout(store)
        try:
            head = await store.revision()
            subs = [await hub.subscribe("routes", None, head) for _ in range(5)]
            assert all(s is not None for s in subs)
            readers = [asyncio.create_task(collect(s, 30)) for s in subs if s is not None]
            for i in range(30):
                await store.create("routes", route(f"r{i}"))
            seen = await asyncio.gather(*readers)
            assert store.watches == 1
            names = [[e.event.object["metadata"]["name"] for e in got] for got in seen]
            assert names == [[f"r{i}" for i in range(30)]] * 5
            first = [got[0].line("ADDED") for got in seen]
            assert all(line is first[0] for line in first)  # encoded once, for all
            assert json.loads(first[0])["object"]["metadata"]["name"] == "r0"
            for s in subs:
                assert s is not None
                s.close()
            assert hub.hubs == {}  # the last one gone ends the store watch
        finally:
            await hub.close()
            await store.close()

    asyncio.run(run())


def test_a_subscriber_that_falls_behind_is_dropped_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fanout, "QUEUE_EVENTS", 10)

    async def run() -> None:
        store = CountingStore(f"sqlite:///{tmp_path}/state.db")
        hub = WatchFanout(store)
        try:
            head = await store.revision()
            stuck = await hub.subscribe("routes", None, head)
            reading = await hub.subscribe("routes", None, head)
            assert stuck is not None and reading is not None
            reader = asyncio.create_task(collect(reading, 40))
            for i in range(40):
                await store.create("routes", route(f"r{i}"))
                await asyncio.sleep(0.005)
            got = await reader
            assert len(got) == 40 and reading.ended is None
            assert isinstance(stuck.ended, Dropped)
            assert stuck.take() == []  # its queue is let go at once
        finally:
            await hub.close()
            await store.close()

    asyncio.run(run())


def test_a_watch_from_before_the_shared_position_reads_the_history(tmp_path: Path) -> None:
    async def run() -> None:
        store = CountingStore(f"sqlite:///{tmp_path}/state.db")
        hub = WatchFanout(store)
        try:
            start = await store.revision()
            for i in range(3):
                await store.create("routes", route(f"old{i}"))
            live = await hub.subscribe("routes", None, await store.revision())
            assert live is not None
            assert await hub.subscribe("routes", None, start) is None  # already past
            req = WatchRequest(
                info=ROUTES,
                namespace=None,
                labels=parse_selector(None),
                fields=parse_field_selector("", "routes"),
                start=start,
                timeout=5.0,
                bookmarks=False,
                write_timeout=5.0,
            )
            lines = stream_events(store, req, hub)
            chunk = await asyncio.wait_for(anext(lines), 10)
            await lines.aclose()
            names = [json.loads(ln)["object"]["metadata"]["name"] for ln in chunk.splitlines()]
            assert names == ["old0", "old1", "old2"]
            live.close()
        finally:
            await hub.close()
            await store.close()

    asyncio.run(run())
