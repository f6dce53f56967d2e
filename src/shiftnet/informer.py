"""List+watch into a local cache, with change handlers: how components see the cluster.

Each component reads the cluster only through informers, never by querying
another component. An informer lists once, replays every object to its
handlers as ADDED, then follows the store's watch. When the watch expires
(compaction) or the store connection is lost, it relists and replays the
difference (ADDED / MODIFIED / DELETED) so handlers never miss a change.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from shiftnet.api import Resource
from shiftnet.api.compact import COMPACT, Compactor
from shiftnet.errors import Expired, ShiftnetError
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

R = TypeVar("R", bound=Resource)
Key = tuple[str, str]
Handler = Callable[[str, Any, Any], Awaitable[None] | None]

RETRY_DELAY = 0.5


class Informer(Generic[R]):
    def __init__(
        self,
        store: Store,
        cls: type[R],
        *,
        namespace: str | None = None,
        compactor: Compactor | None = None,
    ) -> None:
        self.store = store
        self.cls = cls
        self.namespace = namespace
        # Cached objects live as long as the process: stored compactly (api.compact).
        self._compactor = compactor if compactor is not None else Compactor()
        self.revision = 0
        self._cache: dict[Key, R] = {}
        self._handlers: list[Handler] = []
        self._task: asyncio.Task[None] | None = None
        self._synced = asyncio.Event()

    # ------------------------------------------------------------ reading

    def get(self, namespace: str | None, name: str) -> R | None:
        return self._cache.get((namespace or "", name))

    def list(self, namespace: str | None = None) -> list[R]:
        keys = sorted(self._cache)
        if namespace is not None:
            keys = [k for k in keys if k[0] == namespace]
        return [self._cache[k] for k in keys]

    def __len__(self) -> int:
        return len(self._cache)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def add_handler(self, handler: Handler) -> None:
        """``handler(event_type, old, new)``; old is None for ADDED, new is None for DELETED."""
        self._handlers.append(handler)

    # ------------------------------------------------------------ running

    async def _notify(self, etype: str, old: R | None, new: R | None) -> None:
        for h in self._handlers:
            try:
                res = h(etype, old, new)
                if inspect.isawaitable(res):
                    await res
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one broken handler must not starve the others
                log.error(
                    "informer handler failed kind=%s error=%s",
                    self.cls.KIND,
                    exc,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                )

    def _decode(self, raw: dict[str, Any]) -> R | None:
        try:
            obj = self.cls.model_validate(self._compactor.strings(raw), context=COMPACT)
        except ValidationError as exc:
            meta = raw.get("metadata") or {}
            log.warning(
                "skipping undecodable object kind=%s name=%s error=%s",
                self.cls.KIND,
                meta.get("name"),
                exc.errors()[0]["msg"],
            )
            return None
        return obj

    async def _relist(self) -> None:
        res = await self.store.list(self.cls.RESOURCE, self.namespace)
        fresh: dict[Key, R] = {}
        # Each raw dict is let go as soon as it is decoded: the models then reuse
        # its memory instead of the process holding the whole list and the whole
        # cache at once (at 10,000 routes that peak stayed in the RSS for good).
        items = res.items
        items.reverse()
        while items:
            obj = self._decode(items.pop())
            if obj is not None:
                fresh[obj.key] = obj
        old_cache = self._cache
        self._cache = dict(old_cache)
        self.revision = res.revision
        for key in sorted(fresh):
            new = fresh[key]
            old = old_cache.get(key)
            self._cache[key] = new
            if old is None:
                await self._notify("ADDED", None, new)
            elif old.metadata.resource_version != new.metadata.resource_version:
                await self._notify("MODIFIED", old, new)
        for key in sorted(set(old_cache) - set(fresh)):
            gone = self._cache.pop(key)
            await self._notify("DELETED", gone, None)

    async def _follow(self) -> None:
        async for ev in self.store.watch(self.cls.RESOURCE, self.revision, self.namespace):
            self.revision = ev.revision
            obj = self._decode(ev.object)
            if obj is None:
                continue
            key = obj.key
            old = self._cache.get(key)
            if ev.type == "DELETED":
                if old is not None:
                    del self._cache[key]
                    await self._notify("DELETED", old, None)
                continue
            self._cache[key] = obj
            await self._notify("ADDED" if old is None else "MODIFIED", old, obj)

    async def _run(self) -> None:
        need_list = not self._synced.is_set()
        while True:
            try:
                if need_list:
                    await self._relist()
                    self._synced.set()
                need_list = False
                await self._follow()
            except asyncio.CancelledError:
                raise
            except Expired as exc:
                log.info("watch expired, relisting kind=%s detail=%s", self.cls.KIND, exc)
                need_list = True
            except (ShiftnetError, OSError) as exc:
                log.warning("watch lost, relisting kind=%s error=%s", self.cls.KIND, exc)
                need_list = True
                await asyncio.sleep(RETRY_DELAY)

    async def start(self) -> None:
        """List, replay ADDED, start watching; returns once the cache is synced."""
        if self._task is None:
            await self._relist()
            self._synced.set()
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"informer-{self.cls.RESOURCE}"
            )
        await self._synced.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class Informers:
    """One informer per kind, shared by every component of a process."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._by_kind: dict[type[Resource], Informer[Any]] = {}
        self._compactor = Compactor()  # one string table: kinds share namespaces and names

    def informer(self, cls: type[R]) -> Informer[R]:
        inf = self._by_kind.get(cls)
        if inf is None:
            inf = Informer(self.store, cls, compactor=self._compactor)
            self._by_kind[cls] = inf
        return inf

    async def start(self) -> None:
        """Start every informer asked for so far (idempotent); returns when all are synced."""
        await asyncio.gather(*(inf.start() for inf in self._by_kind.values()))

    async def stop(self) -> None:
        await asyncio.gather(*(inf.stop() for inf in self._by_kind.values()))
