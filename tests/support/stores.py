"""Fixtures that yield a fresh store URL for each backend: a SQLite file, a real etcd,
and ``kube``: a real ``shiftnet apiserver`` process (over a SQLite file of its own)
reached through its kubeconfig."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from shiftnet.store import open_store
from shiftnet.store.base import Store
from tests.support.apiserver import APIServerProcess
from tests.support.etcd import EtcdServer

# kube:// URL -> the store behind that API server (what compaction acts on)
_BACKING: dict[str, str] = {}


@pytest.fixture(scope="session")
def etcd_server() -> Iterator[EtcdServer]:
    srv = EtcdServer()
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


# Namespaces the store tests write into: the API admits a create only in one that exists.
TEST_NAMESPACES = ("ns", "other", "a", "b", "shop")


async def _seed_namespaces(store_url: str) -> None:
    store = open_store(store_url)
    try:
        for name in TEST_NAMESPACES:
            await store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": name}})  # fmt: skip
    finally:
        await store.close()


def start_apiserver(request: pytest.FixtureRequest, home) -> APIServerProcess:  # type: ignore[no-untyped-def]
    """A ``shiftnet apiserver`` on a free loopback port, stopped when the test ends, its
    store holding the Namespaces the tests write into."""
    home.mkdir(mode=0o700)
    srv = APIServerProcess(home)
    with ThreadPoolExecutor(1) as pool:  # callers may already run an event loop
        pool.submit(asyncio.run, _seed_namespaces(srv.store)).result()
    srv.start()
    request.addfinalizer(srv.stop)
    return srv


@pytest.fixture(params=["sqlite", "etcd", "kube"])
def store_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A store URL no other test shares: a new sqlite file, a fresh etcd, or a new
    API server's kubeconfig (``kube://``)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/state.db"
        return
    if request.param == "kube":
        srv = start_apiserver(request, tmp_path / "apiserver")
        url = f"kube://{srv.kubeconfig}"
        _BACKING[url] = srv.store
        try:
            yield url
        finally:
            _BACKING.pop(url, None)
        return
    srv: EtcdServer = request.getfixturevalue("etcd_server")
    # one etcd per session: isolate tests by wiping the keyspace first
    import httpx

    base = f"http://127.0.0.1:{srv.client_port}"
    httpx.post(f"{base}/v3/kv/deleterange", json={"key": "AA==", "range_end": "AA=="}, timeout=5)
    yield srv.url


@pytest.fixture
def compact_history(store_url: str) -> Callable[[Store], Awaitable[None]]:
    """Forget the store's history up to now. The Kubernetes API has no such request, so
    for ``kube`` the API server's own store is compacted, as its server would do."""

    async def compact(store: Store) -> None:
        backing = _BACKING.get(store_url)
        if backing is None:
            await store.compact(await store.revision())
            return
        behind = open_store(backing)
        try:
            await behind.compact(await behind.revision())
        finally:
            await behind.close()

    return compact
