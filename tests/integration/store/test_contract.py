"""One contract, every backend: the same tests run against SQLite, a real etcd and a
real ``shiftnet apiserver`` reached through the ``kube`` backend."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.integration.store.objects import (
    ADMITTED,
    OTHER_RESOURCE,
    RESOURCE,
    number,
    other,
    renumbered,
    thing,
)
from tests.support.stores import compact_history, etcd_server, store_url  # noqa: F401

from shiftnet.api import Route, parse_object
from shiftnet.errors import AlreadyExists, Conflict, Expired, NotFound
from shiftnet.informer import Informers
from shiftnet.store import open_store

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
async def store(store_url):  # noqa: F811
    st = open_store(store_url)
    yield st
    await st.close()


async def test_create_get_list(store) -> None:
    a = await store.create(RESOURCE, thing("a", labels={"app": "web"}))
    assert a["metadata"]["uid"] and a["metadata"]["creationTimestamp"]
    assert a["metadata"]["generation"] == 1
    assert int(a["metadata"]["resourceVersion"]) > 0
    await store.create(RESOURCE, thing("b", ns="other", labels={"app": "db"}))
    await store.create(RESOURCE, thing("c", labels={"app": "db", "tier": "x"}))
    got = await store.get(RESOURCE, "ns", "a")
    assert got == a
    every = await store.list(RESOURCE)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in every.items] == [
        ("ns", "a"),
        ("ns", "c"),
        ("other", "b"),
    ]
    assert [o["metadata"]["name"] for o in (await store.list(RESOURCE, "ns")).items] == ["a", "c"]
    sel = await store.list(RESOURCE, selector="app in (db),!tier")
    assert [o["metadata"]["name"] for o in sel.items] == ["b"]
    assert every.revision >= int(a["metadata"]["resourceVersion"])


async def test_errors(store) -> None:
    await store.create(RESOURCE, thing("a"))
    with pytest.raises(AlreadyExists):
        await store.create(RESOURCE, thing("a"))
    with pytest.raises(NotFound):
        await store.get(RESOURCE, "ns", "missing")
    with pytest.raises(NotFound):
        await store.update(RESOURCE, thing("missing"))
    with pytest.raises(NotFound):
        await store.delete(RESOURCE, "ns", "missing")


async def test_stale_update_conflicts(store) -> None:
    v1 = await store.create(RESOURCE, thing("a", n=1))
    v2 = await store.update(RESOURCE, renumbered(v1, 2))
    assert int(v2["metadata"]["resourceVersion"]) > int(v1["metadata"]["resourceVersion"])
    assert v2["metadata"]["generation"] == 2
    with pytest.raises(Conflict):
        await store.update(RESOURCE, renumbered(v1, 3))
    with pytest.raises(Conflict):
        await store.delete(RESOURCE, "ns", "a", resource_version=v1["metadata"]["resourceVersion"])
    # status-only change keeps generation; identity fields survive an update
    v3 = await store.update(RESOURCE, {**v2, "status": ADMITTED})
    assert v3["metadata"]["generation"] == 2
    assert v3["status"] == ADMITTED
    assert (await store.get(RESOURCE, "ns", "a"))["status"] == ADMITTED
    assert v3["metadata"]["uid"] == v1["metadata"]["uid"]
    # an update without resourceVersion is unconditional
    blind = thing("a", n=9)
    v4 = await store.update(RESOURCE, blind)
    assert number(v4) == 9
    assert "status" not in v4  # the blind update carried none
    gone = await store.delete(RESOURCE, "ns", "a")
    assert number(gone) == 9


async def test_watch_from_revision_sees_exactly_later_events(store) -> None:
    for i in range(3):
        await store.create(RESOURCE, thing(f"early-{i}"))
    start = await store.revision()
    await store.create(RESOURCE, thing("x", n=1))
    x = await store.get(RESOURCE, "ns", "x")
    await store.update(RESOURCE, renumbered(x, 2))
    await store.create(OTHER_RESOURCE, other("unrelated"))
    await store.delete(RESOURCE, "ns", "x")
    await store.create(RESOURCE, thing("y"))

    seen = []

    async def collect() -> None:
        async for ev in store.watch(RESOURCE, start):
            seen.append((ev.type, ev.object["metadata"]["name"], ev.revision))
            if len(seen) == 4:
                return

    await asyncio.wait_for(collect(), 10)
    assert [(t, n) for t, n, _ in seen] == [
        ("ADDED", "x"),
        ("MODIFIED", "x"),
        ("DELETED", "x"),
        ("ADDED", "y"),
    ]
    revs = [r for _, _, r in seen]
    assert revs == sorted(revs) and revs[0] > start


async def test_watch_sees_live_writes_in_namespace(store) -> None:
    start = await store.revision()
    seen: list[str] = []

    async def collect() -> None:
        async for ev in store.watch(RESOURCE, start, namespace="a"):
            seen.append(ev.object["metadata"]["name"])
            if len(seen) == 2:
                return

    task = asyncio.create_task(collect())
    await asyncio.sleep(0.1)
    await store.create(RESOURCE, thing("one", ns="a"))
    await store.create(RESOURCE, thing("skip", ns="b"))
    await store.create(RESOURCE, thing("two", ns="a"))
    await asyncio.wait_for(task, 10)
    assert seen == ["one", "two"]


async def test_watch_from_compacted_revision_expires(store, compact_history) -> None:  # noqa: F811
    # A first write, so that old - 1 is a real revision: to a Kubernetes API, a watch
    # from resourceVersion 0 means "from the current state" and cannot expire.
    await store.create(RESOURCE, thing("first"))
    await store.create(RESOURCE, thing("a"))
    old = await store.revision()
    await store.create(RESOURCE, thing("b"))
    await store.create(RESOURCE, thing("c"))
    await compact_history(store)
    with pytest.raises(Expired):
        async for _ in store.watch(RESOURCE, old - 1):
            pass


def _spawn(url: str, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.store.writer", args[0], url, *args[1:]],
        cwd=ROOT,
        env=env,
    )


async def test_two_processes_write_1000_objects_concurrently(store, store_url) -> None:  # noqa: F811
    start = await store.revision()
    procs = [_spawn(store_url, "create", "p1", "500"), _spawn(store_url, "create", "p2", "500")]
    seen: set[str] = set()

    async def watch_all() -> None:
        async for ev in store.watch(RESOURCE, start):
            seen.add(ev.object["metadata"]["name"])
            if len(seen) == 1000:
                return

    await asyncio.wait_for(watch_all(), 120)
    for p in procs:
        assert await asyncio.to_thread(p.wait) == 0
    listed = await store.list(RESOURCE, "ns")
    assert len(listed.items) == 1000
    assert len(seen) == 1000


async def test_concurrent_read_modify_write_loses_nothing(store, store_url) -> None:  # noqa: F811
    await store.create(RESOURCE, thing("counter", n=0))
    procs = [_spawn(store_url, "inc", "100"), _spawn(store_url, "inc", "100")]
    for p in procs:
        assert await asyncio.to_thread(p.wait) == 0
    final = await store.get(RESOURCE, "ns", "counter")
    assert number(final) == 200


async def test_informer_relists_after_expiry(store, compact_history) -> None:  # noqa: F811
    def route(name: str, host: str) -> Route:
        obj = parse_object(
            {
                "apiVersion": "route.openshift.io/v1",
                "kind": "Route",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"host": host, "to": {"kind": "Service", "name": "s"}},
            }
        )
        assert isinstance(obj, Route)
        return obj

    await store.create("routes", route("keep", "a.example.com").to_dict())
    await store.create("routes", route("change", "b.example.com").to_dict())
    await store.create("routes", route("drop", "c.example.com").to_dict())
    informers = Informers(store)
    inf = informers.informer(Route)
    events: list[tuple[str, str]] = []
    inf.add_handler(lambda t, old, new: events.append((t, (new or old).name)))
    await informers.start()
    await informers.stop()
    assert sorted(events) == [("ADDED", "change"), ("ADDED", "drop"), ("ADDED", "keep")]
    events.clear()
    # while nobody watches: change, delete, add; then compact the history away
    cur = await store.get("routes", "ns", "change")
    cur["spec"]["host"] = "b2.example.com"
    await store.update("routes", cur)
    await store.delete("routes", "ns", "drop")
    await store.create("routes", route("new", "d.example.com").to_dict())
    await compact_history(store)
    await inf.start()  # relists and replays only the difference
    assert sorted(events) == [("ADDED", "new"), ("DELETED", "drop"), ("MODIFIED", "change")]
    assert inf.get("ns", "change").spec.host == "b2.example.com"
    # and it follows live changes again
    await store.delete("routes", "ns", "keep")
    for _ in range(100):
        if inf.get("ns", "keep") is None:
            break
        await asyncio.sleep(0.05)
    assert inf.get("ns", "keep") is None
    await inf.stop()
