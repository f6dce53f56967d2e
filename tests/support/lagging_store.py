"""A real store whose watch of one resource hands each event on late.

What a busy API server or a slow watch connection does to a controller's
informer: its cache shows the controller's own writes a while after they
succeeded. Everything else goes straight to the real store.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypeVar

from shiftnet.client import Client
from shiftnet.informer import Informers
from shiftnet.store import open_store
from shiftnet.store.base import Store, WatchEvent


class WatchLag:
    def __init__(self, store: Store, resource: str, lag: float) -> None:
        self._store = store
        self._resource = resource
        self._lag = lag

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def watch(
        self, resource: str, revision: int, namespace: str | None = None
    ) -> AsyncIterator[WatchEvent]:
        async for ev in self._store.watch(resource, revision, namespace):
            if resource == self._resource:
                await asyncio.sleep(self._lag)
            yield ev


class Controller(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


C = TypeVar("C", bound=Controller)


@asynccontextmanager
async def lagging_controller(
    url: str, resource: str, lag: float, make: Callable[[Client, Informers], C]
) -> AsyncIterator[tuple[Client, C]]:
    """A controller whose informers watch ``resource`` through :class:`WatchLag`, writing
    straight to the store; and a client of that store. All stopped and closed after."""
    store, writes = open_store(url), open_store(url)
    informers = Informers(WatchLag(store, resource, lag))
    controller = make(Client(writes), informers)
    try:
        await informers.start()
        await controller.start()
        yield Client(writes), controller
    finally:
        await controller.stop()
        await informers.stop()
        await store.close()
        await writes.close()
