"""KeyedWorkQueue: coalescing per key, one sync of a key at a time, retry after failure."""

from __future__ import annotations

import asyncio

from shiftnet.master.workqueue import KeyedWorkQueue


async def test_burst_for_one_key_is_one_sync_and_keys_never_overlap() -> None:
    calls: list[str] = []
    running: set[str] = set()
    overlaps: list[str] = []
    gate = asyncio.Event()

    async def sync(key: str) -> None:
        if key in running:
            overlaps.append(key)
        running.add(key)
        calls.append(key)
        await gate.wait()
        running.discard(key)

    q: KeyedWorkQueue[str] = KeyedWorkQueue(sync, workers=4)
    for _ in range(100):
        q.add("a")
    q.add("b")
    await q.start()
    await asyncio.sleep(0.01)
    assert sorted(calls) == ["a", "b"]
    for _ in range(50):  # dirty again while being synced: exactly one more sync later
        q.add("a")
    gate.set()
    await asyncio.wait_for(q.wait_idle(), 5)
    await q.stop()
    assert sorted(calls) == ["a", "a", "b"]
    assert overlaps == []


async def test_failed_sync_is_retried_and_others_go_on() -> None:
    attempts: dict[str, int] = {}

    async def sync(key: str) -> None:
        attempts[key] = attempts.get(key, 0) + 1
        if key == "bad" and attempts[key] < 3:
            raise RuntimeError("store hiccup")

    q: KeyedWorkQueue[str] = KeyedWorkQueue(sync, workers=2, retry_delay=0.01)
    q.add("bad")
    q.add("good")
    await q.start()
    await asyncio.wait_for(q.wait_idle(), 5)
    await q.stop()
    assert attempts == {"bad": 3, "good": 1}
