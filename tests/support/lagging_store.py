"""A real store whose watch of one resource hands each event on late.

What a busy API server or a slow watch connection does to a controller's
informer: its cache shows the controller's own writes a while after they
succeeded. Everything else goes straight to the real store.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

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
