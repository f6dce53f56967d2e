"""A keyed, coalescing work queue: many events for one key, one sync of that key.

Controllers get a stream of informer events; the thing to do for each is
"bring object KEY to its desired state", which only needs to happen once no
matter how many events arrived for KEY meanwhile. This queue (the semantics of
client-go's workqueue) keeps a set of dirty keys, runs a few workers, never
syncs one key in two workers at once, re-syncs a key that got dirty while it
was being synced, and retries a failed key with a growing delay.

The delay doubles from ``retry_delay`` (0.1 s) and stops at
``max_retry_delay`` (5 s), far below the 1000 s of client-go's default
controller rate limiter. What reaches this retry is meant to be transient: a
store that is down, a conflict, a cache that lags the controller's own writes
(:meth:`retry_later`). An error that retrying cannot fix (an object stored
around validation) is reported by its controller, which returns normally, so
the key waits for its next change instead. The informers here have no resync
period, so for a key that failed all through a store outage the next retry may
be the only thing that syncs it: a 1000 s ceiling would leave it stale for
minutes after the store is back, where 5 s costs one log line every 5 s for a key
that keeps failing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class KeyedWorkQueue(Generic[K]):
    def __init__(
        self,
        sync: Callable[[K], Awaitable[None]],
        *,
        workers: int = 4,
        name: str = "queue",
        retry_delay: float = 0.1,
        max_retry_delay: float = 5.0,
    ) -> None:
        self.sync = sync
        self.workers = workers
        self.name = name
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.syncs = 0
        self._order: asyncio.Queue[K] = asyncio.Queue()
        self._dirty: set[K] = set()
        self._active: set[K] = set()
        self._failures: dict[K, int] = {}
        self._retry_handles: dict[K, asyncio.TimerHandle] = {}
        self._idle = asyncio.Event()
        self._idle.set()
        self._tasks: list[asyncio.Task[None]] = []

    def add(self, key: K) -> None:
        """Mark ``key`` dirty; cheap, synchronous, safe from any handler."""
        if key in self._dirty:
            return
        self._dirty.add(key)
        self._idle.clear()
        if key not in self._active:
            self._order.put_nowait(key)

    def retry_later(self, key: K) -> None:
        """Sync ``key`` again after the retry delay (the sync could not act yet)."""
        self._schedule_retry(key)

    def __len__(self) -> int:
        return len(self._dirty)

    async def _next(self) -> K:
        key = await self._order.get()
        self._dirty.discard(key)
        self._active.add(key)
        return key

    def _check_idle(self) -> None:
        if not self._dirty and not self._active and not self._retry_handles:
            self._idle.set()

    def _schedule_retry(self, key: K) -> None:
        n = self._failures.get(key, 0) + 1
        self._failures[key] = n
        delay = min(self.retry_delay * (2 ** (n - 1)), self.max_retry_delay)
        old = self._retry_handles.pop(key, None)
        if old is not None:
            old.cancel()

        def fire() -> None:
            self._retry_handles.pop(key, None)
            self.add(key)

        self._retry_handles[key] = asyncio.get_running_loop().call_later(delay, fire)

    async def _worker(self) -> None:
        while True:
            key = await self._next()
            try:
                await self.sync(key)
                self._failures.pop(key, None)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one bad key must never stop the others
                log.warning(
                    "sync failed, will retry queue=%s key=%s error=%s",
                    self.name,
                    key,
                    exc,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                )
                self._schedule_retry(key)
            finally:
                self.syncs += 1
                self._active.discard(key)
                if key in self._dirty:  # got dirty while we synced it: go again
                    self._order.put_nowait(key)
                self._check_idle()

    async def start(self) -> None:
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._worker(), name=f"{self.name}-{i}") for i in range(self.workers)
        ]

    async def stop(self) -> None:
        for h in self._retry_handles.values():
            h.cancel()
        self._retry_handles.clear()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def wait_idle(self) -> None:
        """Return once nothing is dirty, running or waiting for a retry (tests)."""
        self._check_idle()
        await self._idle.wait()
