"""kube-proxy's bounded-frequency runner: many kicks, one run.

A burst of watch events calls :meth:`CoalescingRunner.kick` many times; the
function runs once after the burst, and never more often than
``min_interval`` apart. ``max_interval`` (optional) bounds the time between
two runs: with no kick at all the function still runs that long after the
last run, a resync that repairs drift and retries a run that failed (a
failed ``haproxy -c`` or reload is tried again on its own, not only when an
unrelated event arrives). A failing run is logged, never allowed to kill
the loop.

:meth:`CoalescingRunner.kick_when_quiet` asks for a run that can wait: it
comes once such requests pause for a quiet period, and no later than a
bound after the first of them (a reload owed by changes HAProxy already
serves waits for the stream of route changes to end, without a task of its
own).

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
        failure_retry: float | None = None,
    ) -> None:
        self.fn = fn
        self.min_interval = min_interval
        self.max_interval = max_interval
        # After a failed run, the next one is due this soon, doubling with each failure in
        # a row up to max_interval (None: at max_interval, as after any run).
        self.failure_retry = failure_retry
        self._retry_due: float | None = None
        self._failed_in_a_row = 0
        self.name = name
        self.clock = clock
        self.runs = 0
        self.failures = 0  # runs that raised
        self._pending = asyncio.Event()
        self._rescheduled = asyncio.Event()  # wakes the loop to look at _quiet_due again
        self._quiet_first: float | None = None  # the first kick_when_quiet since the last run
        self._quiet_due: float | None = None  # when the quiet kick is due
        self._task: asyncio.Task[None] | None = None
        self._last = float("-inf")  # when the last run started (min_interval counts from it)
        self._since = clock.monotonic()  # the last run or the start (max_interval counts from it)
        self._lock = asyncio.Lock()

    def kick(self) -> None:
        """Ask for a run soon; cheap and safe to call from any handler."""
        self._pending.set()

    def kick_when_quiet(self, quiet: float, at_most: float) -> None:
        """Ask for a run once these calls pause for ``quiet`` seconds.

        Each call moves the run to ``quiet`` seconds from now, but never past
        ``at_most`` seconds after the first call since the last run. Any run
        (kicked, resync, flush) satisfies the request.
        """
        now = self.clock.monotonic()
        if self._quiet_first is None:
            self._quiet_first = now
        self._quiet_due = min(now + quiet, self._quiet_first + at_most)
        self._rescheduled.set()

    async def _run_once(self) -> None:
        async with self._lock:
            self._pending.clear()
            self._quiet_first = self._quiet_due = None
            self._last = self._since = self.clock.monotonic()
            self._retry_due = None
            try:
                await self.fn()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broken sync must not stop later syncs
                self.failures += 1
                self._failed_in_a_row += 1
                retry_in = self._retry_in()
                if retry_in is not None:
                    self._retry_due = self._last + retry_in
                log.error(
                    "sync failed runner=%s error=%s retry_in=%s",
                    self.name,
                    exc,
                    retry_in if retry_in is not None else self.max_interval,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                )
            else:
                self._failed_in_a_row = 0
            finally:
                self.runs += 1

    def _retry_in(self) -> float | None:
        if self.failure_retry is None:
            return None
        delay = self.failure_retry * float(2 ** min(self._failed_in_a_row - 1, 30))
        return delay if self.max_interval is None else min(delay, self.max_interval)

    async def _wait_for_kick(self) -> None:
        """Until a kick, a quiet kick's time, or ``max_interval`` since the last run."""
        while not self._pending.is_set():
            self._rescheduled.clear()
            due = [
                t for t in (self._quiet_due, self._resync_due(), self._retry_due) if t is not None
            ]
            remaining = min(due) - self.clock.monotonic() if due else None
            if remaining is not None and remaining <= 0:
                return
            waits: list[asyncio.Future[object]] = [
                asyncio.ensure_future(self._pending.wait()),
                asyncio.ensure_future(self._rescheduled.wait()),
            ]
            if remaining is not None:
                waits.append(asyncio.ensure_future(self.clock.sleep(remaining)))
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in waits:
                    task.cancel()
                await asyncio.gather(*waits, return_exceptions=True)

    def _resync_due(self) -> float | None:
        return None if self.max_interval is None else self._since + self.max_interval

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
