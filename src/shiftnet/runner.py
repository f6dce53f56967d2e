"""kube-proxy's bounded-frequency runner: many kicks, one run.

A burst of watch events calls :meth:`CoalescingRunner.kick` many times; the
function runs once after the burst, and never more often than
``min_interval`` apart. ``max_interval`` (optional) bounds the time between
two runs: with no kick at all the function still runs that long after the
last run, a resync that repairs drift and retries a run that failed (a
failed ``haproxy -c`` or reload is tried again on its own, not only when an
unrelated event arrives). A failing run is logged, never allowed to kill
the loop.

Time comes from a :class:`Clock` (the event loop's by default), so tests
drive the runner with a clock they advance by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

log = logging.getLogger(__name__)


class Clock(Protocol):
    """Where a runner reads the time and waits."""

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> Awaitable[None]: ...


class SystemClock:
    """``time.monotonic`` and ``asyncio.sleep``."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> Awaitable[None]:
        return asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


class CoalescingRunner:
    def __init__(
        self,
        fn: Callable[[], Awaitable[None]],
        *,
        min_interval: float = 0.0,
        max_interval: float | None = None,
        name: str = "runner",
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.fn = fn
        self.min_interval = min_interval
        self.max_interval = max_interval
        self.name = name
        self.clock = clock
        self.runs = 0
        self.failures = 0  # runs that raised
        self._pending = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last = float("-inf")  # when the last run started (min_interval counts from it)
        self._since = clock.monotonic()  # the last run or the start (max_interval counts from it)
        self._lock = asyncio.Lock()

    def kick(self) -> None:
        """Ask for a run soon; cheap and safe to call from any handler."""
        self._pending.set()

    async def _run_once(self) -> None:
        async with self._lock:
            self._pending.clear()
            self._last = self._since = self.clock.monotonic()
            try:
                await self.fn()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broken sync must not stop later syncs
                self.failures += 1
                log.error(
                    "sync failed runner=%s error=%s retry_in=%s",
                    self.name,
                    exc,
                    self.max_interval,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                )
            finally:
                self.runs += 1

    async def _wait_for_kick(self) -> None:
        """Until a kick, or until ``max_interval`` has passed since the last run."""
        if self.max_interval is None:
            await self._pending.wait()
            return
        remaining = self._since + self.max_interval - self.clock.monotonic()
        if self._pending.is_set() or remaining <= 0:
            return
        kicked = asyncio.ensure_future(self._pending.wait())
        timer = asyncio.ensure_future(self.clock.sleep(remaining))
        try:
            await asyncio.wait({kicked, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (kicked, timer):
                task.cancel()
            await asyncio.gather(kicked, timer, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            await self._wait_for_kick()
            wait = self.min_interval - (self.clock.monotonic() - self._last)
            if wait > 0:
                await self.clock.sleep(wait)
            await self._run_once()

    async def start(self) -> None:
        if self._task is None:
            self._since = self.clock.monotonic()
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
