"""CoalescingRunner with a hand-driven clock: coalescing, min_interval, max_interval, failures."""

from __future__ import annotations

import asyncio
import heapq
import itertools

import pytest

from shiftnet.runner import CoalescingRunner


class FakeClock:
    """A clock that moves only when :meth:`advance` says so."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move the time on, wake every sleeper that is due, and let the tasks run."""
        self.now += seconds
        while self._sleepers and self._sleepers[0][0] <= self.now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
        await settle()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


class Calls:
    def __init__(self, clock: FakeClock, fail: int = 0) -> None:
        self.clock, self.fail = clock, fail
        self.at: list[float] = []

    async def __call__(self) -> None:
        self.at.append(self.clock.now)
        if self.fail:
            self.fail -= 1
            raise RuntimeError("haproxy -c refused the configuration")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def test_a_burst_of_kicks_is_one_run(clock: FakeClock) -> None:
    calls = Calls(clock)
    runner = CoalescingRunner(calls, name="t", clock=clock)
    await runner.start()
    try:
        for _ in range(50):
            runner.kick()
        await settle()
        assert calls.at == [1000.0] and runner.runs == 1
        await clock.advance(3600)
        assert runner.runs == 1  # no max_interval: nothing without a kick
    finally:
        await runner.stop()


async def test_runs_are_min_interval_apart(clock: FakeClock) -> None:
    calls = Calls(clock)
    runner = CoalescingRunner(calls, min_interval=5.0, name="t", clock=clock)
    await runner.start()
    try:
        runner.kick()
        await settle()
        assert calls.at == [1000.0]  # the first run does not wait
        runner.kick()
        await clock.advance(2.0)
        runner.kick()
        await clock.advance(2.0)
        assert calls.at == [1000.0]
        await clock.advance(1.0)
        assert calls.at == [1000.0, 1005.0]  # both kicks, one run
    finally:
        await runner.stop()


async def test_max_interval_runs_without_a_kick(clock: FakeClock) -> None:
    calls = Calls(clock)
    runner = CoalescingRunner(calls, max_interval=30.0, name="t", clock=clock)
    await runner.start()
    try:
        await clock.advance(29.0)
        assert calls.at == []
        await clock.advance(1.0)
        assert calls.at == [1030.0]
        await clock.advance(10.0)
        runner.kick()  # a kicked run restarts the period
        await settle()
        assert calls.at == [1030.0, 1040.0]
        await clock.advance(29.0)
        assert len(calls.at) == 2
        await clock.advance(1.0)
        assert calls.at == [1030.0, 1040.0, 1070.0]
    finally:
        await runner.stop()


async def test_a_failed_run_is_retried_on_its_own(clock: FakeClock) -> None:
    calls = Calls(clock, fail=2)
    runner = CoalescingRunner(calls, min_interval=1.0, max_interval=10.0, name="t", clock=clock)
    await runner.start()
    try:
        runner.kick()
        await settle()
        assert runner.failures == 1
        await clock.advance(10.0)
        assert runner.failures == 2  # retried, failed again: the loop lives on
        await clock.advance(10.0)
        assert calls.at == [1000.0, 1010.0, 1020.0] and runner.failures == 2
    finally:
        await runner.stop()
    assert runner._task is None


async def test_a_failed_run_is_retried_soon_backing_off_to_max_interval(clock: FakeClock) -> None:
    calls = Calls(clock, fail=5)
    runner = CoalescingRunner(
        calls, min_interval=1.0, max_interval=10.0, name="t", clock=clock, failure_retry=1.0
    )
    await runner.start()
    try:
        runner.kick()
        await settle()
        for _ in range(30):
            await clock.advance(1.0)
        # failed at 0, retried after 1, 2, 4, 8 (capped at 10) s; the sixth run succeeds,
        # and the next one is a whole max_interval later again
        assert calls.at == [1000.0, 1001.0, 1003.0, 1007.0, 1015.0, 1025.0]
        assert runner.failures == 5
    finally:
        await runner.stop()


async def test_flush_runs_now_and_stop_ends_a_waiting_runner(clock: FakeClock) -> None:
    calls = Calls(clock)
    runner = CoalescingRunner(calls, min_interval=60.0, max_interval=600.0, clock=clock)
    await runner.start()
    await runner.flush()
    assert calls.at == [1000.0]
    runner.kick()
    await settle()  # waiting out min_interval on the fake clock
    await asyncio.wait_for(runner.stop(), timeout=5)
    assert calls.at == [1000.0]


async def test_a_quiet_kick_runs_once_the_calls_pause(clock: FakeClock) -> None:
    calls = Calls(clock)
    runner = CoalescingRunner(calls, min_interval=1.0, name="t", clock=clock)
    await runner.start()
    try:
        runner.kick_when_quiet(5.0, at_most=30.0)
        await clock.advance(4.0)
        runner.kick_when_quiet(5.0, at_most=30.0)  # another change: the run moves on
        await clock.advance(4.0)
        assert calls.at == []
        await clock.advance(1.0)
        assert calls.at == [1009.0]
        await clock.advance(60.0)
        assert calls.at == [1009.0]  # one request, one run
    finally:
        await runner.stop()


async def test_a_quiet_kick_waits_at_most_its_bound(clock: FakeClock) -> None:
    calls = Calls(clock)
    runner = CoalescingRunner(calls, name="t", clock=clock)
    await runner.start()
    try:
        for _ in range(12):  # a change every 3 s: never 5 s quiet
            runner.kick_when_quiet(5.0, at_most=30.0)
            await clock.advance(3.0)
        assert calls.at == [1030.0]
    finally:
        await runner.stop()


async def test_any_run_satisfies_a_quiet_kick(clock: FakeClock) -> None:
    calls = Calls(clock)
    runner = CoalescingRunner(calls, max_interval=100.0, name="t", clock=clock)
    await runner.start()
    try:
        runner.kick_when_quiet(5.0, at_most=30.0)
        await clock.advance(2.0)
        runner.kick()
        await settle()
        assert calls.at == [1002.0]
        await clock.advance(10.0)
        assert calls.at == [1002.0]  # the quiet kick was served by the kicked run
        await clock.advance(90.0)
        assert calls.at == [1002.0, 1102.0]  # max_interval still counts
    finally:
        await runner.stop()
