"""The event recorder on a real SQLite store: folding, the bounded queue, never blocking."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shiftnet.api import Event, ObjectMeta, Service
from shiftnet.client import Client
from shiftnet.events.recorder import EventRecorder
from shiftnet.store import open_store

pytestmark = pytest.mark.integration


def svc(name: str) -> Service:
    return Service(metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"))


async def test_repeats_fold_into_one_event_before_and_after_it_is_written(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    rec = EventRecorder(client, "test", host="here")
    try:
        await rec.start()
        for _ in range(5):
            rec.warning(svc("web"), "Flapping", "it flaps")
        await rec.flush()
        (ev,) = await client.list(Event)
        assert ev.count == 5 and ev.source.component == "test" and ev.source.host == "here"
        rec.warning(svc("web"), "Flapping", "it flaps")
        rec.warning(svc("web"), "Flapping", "it flaps")
        rec.warning(svc("web"), "Flapping", "a different message")
        await rec.flush()
        found = {e.message: e for e in await client.list(Event)}
        assert found["it flaps"].count == 7
        assert found["it flaps"].metadata.name == ev.metadata.name
        assert found["it flaps"].last_timestamp >= ev.last_timestamp  # type: ignore[operator]
        assert found["a different message"].count == 1
        assert rec.written == 3 and rec.dropped == 0
    finally:
        await rec.stop()
        await store.close()


async def test_a_full_queue_drops_new_events_and_counts_them(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    rec = EventRecorder(client, "test", queue_size=10)
    try:
        t0 = time.monotonic()
        for i in range(500):  # not started: nothing is written meanwhile
            rec.warning(svc(f"s{i}"), "Broken", "m")
        rec.warning(svc("s0"), "Broken", "m")  # a repeat of a pending one still folds
        assert time.monotonic() - t0 < 1.0
        assert (rec.pending, rec.dropped) == (10, 490)
        await rec.start()
        await rec.flush()
        stored = await client.list(Event)
        assert len(stored) == 10
        assert next(e for e in stored if e.involved_object.name == "s0").count == 2
    finally:
        await rec.stop()
        await store.close()


async def test_writes_are_rate_bounded_after_a_burst(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    rec = EventRecorder(client, "test", writes_per_second=20.0, burst=5)
    try:
        await rec.start()
        t0 = time.monotonic()
        for i in range(15):
            rec.normal(svc(f"s{i}"), "Seen", "m")
        await rec.flush()
        took = time.monotonic() - t0
        assert len(await client.list(Event)) == 15
        assert took >= 0.4  # 5 at once, then 10 at 20 a second
    finally:
        await rec.stop()
        await store.close()


async def test_a_store_that_refuses_costs_the_event_not_the_caller(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    rec = EventRecorder(client, "test")
    await rec.start()
    await store.close()
    try:
        t0 = time.monotonic()
        rec.warning(svc("web"), "Broken", "m")
        assert time.monotonic() - t0 < 0.1
        await rec.flush()
        assert (rec.written, rec.failed) == (0, 1)
    finally:
        await rec.stop()
