"""kube-proxy's bounded-frequency runner: many kicks, one run.

A burst of watch events calls :meth:`CoalescingRunner.kick` many times; the
function runs once after the burst, and never more often than
``min_interval`` apart. ``max_interval`` (optional) forces a periodic run, a
resync that repairs drift. A failing run is logged and retried on the next kick
or period, never allowed to kill the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class CoalescingRunner:
    def __init__(
        self,
        fn: Callable[[], Awaitable[None]],
        *,
        min_interval: float = 0.0,
        max_interval: float | None = None,
        name: str = "runner",
    ) -> None:
        self.fn = fn
        self.min_interval = min_interval
        self.max_interval = max_interval
        self.name = name
        self.runs = 0
        self._pending = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last = 0.0
        self._lock = asyncio.Lock()

    def kick(self) -> None:
        """Ask for a run soon; cheap and safe to call from any handler."""
        self._pending.set()

    async def _run_once(self) -> None:
        async with self._lock:
            self._pending.clear()
            self._last = time.monotonic()
            try:
                await self.fn()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broken sync must not stop later syncs
                log.error(
                    "sync failed runner=%s error=%s",
                    self.name,
                    exc,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                )
            finally:
                self.runs += 1

    async def _loop(self) -> None:
        while True:
            timeout = self.max_interval
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that
            # races with the event being set, and stop() would then wait forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._pending.wait()
            wait = self.min_interval - (time.monotonic() - self._last)
            if wait > 0:
                await asyncio.sleep(wait)
            await self._run_once()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name=self.name)

    async def flush(self) -> None:
        """Run now and wait for it (tests, shutdown)."""
        await self._run_once()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
