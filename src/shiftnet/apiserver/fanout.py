"""One store watch per resource, shared by every API watcher of it.

Each API watch reading the store for itself costs one SQLite read, one JSON
decode, one shaping and one encoding per event *per watcher*. Here one task
per (resource, namespace) reads the store once and hands each event to every
subscriber; an event is shaped and encoded at most once per event type
(:class:`SharedEvent`), whoever asks first.

The hub never waits for a subscriber: each has a bounded queue (events and
bytes), and one that falls that far behind is dropped: its stream ends with
``410 Expired`` and the client relists, as after any expiry, while the others
go on. A watch that starts before the hub's position (its events are already
past) reads the store for itself (:mod:`shiftnet.apiserver.watch`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
from typing import Any

from shiftnet.apiserver.wire import out_object
from shiftnet.errors import Expired, StoreUnavailable
from shiftnet.store.base import Store, WatchEvent

log = logging.getLogger(__name__)

QUEUE_EVENTS = 1000
QUEUE_BYTES = 16 * 1024 * 1024


def event_line(etype: str, obj: dict[str, Any]) -> bytes:
    """One watch event as upstream writes it: a JSON object and a newline."""
    return json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n"


class SharedEvent:
    """A store event with its API shape and encodings, each made once for all watchers."""

    __slots__ = ("_lines", "_shown", "event")

    def __init__(self, event: WatchEvent) -> None:
        self.event = event
        self._shown: dict[str, Any] | None = None
        self._lines: dict[str, bytes] = {}

    @property
    def revision(self) -> int:
        return self.event.revision

    def shown(self) -> dict[str, Any]:
        if self._shown is None:
            self._shown = out_object(self.event.object)
        return self._shown

    def line(self, etype: str) -> bytes:
        found = self._lines.get(etype)
        if found is None:
            found = self._lines[etype] = event_line(etype, self.shown())
        return found

    def size(self) -> int:
        """Bytes this event holds in a queue (its common encoding)."""
        return len(self.line(self.event.type))


class Dropped:
    """Why a subscription ended: it fell behind the hub by more than its queue."""


class Subscription:
    """One watcher's bounded queue of shared events after its start revision."""

    def __init__(self, hub: ResourceHub, start: int) -> None:
        self.hub = hub
        self.start = start
        self.events: collections.deque[SharedEvent] = collections.deque()
        self.bytes = 0
        self.ended: object | None = None  # Dropped, Expired, or StoreUnavailable
        self.closed = False
        self._ready = asyncio.Event()

    def offer(self, ev: SharedEvent) -> None:
        if self.ended is not None or ev.revision <= self.start:
            return
        size = ev.size()
        if len(self.events) >= QUEUE_EVENTS or self.bytes + size > QUEUE_BYTES:
            self.events.clear()
            self.bytes = 0
            self.end(Dropped())
            return
        self.events.append(ev)
        self.bytes += size
        self._ready.set()

    def end(self, why: object) -> None:
        if self.ended is None:
            self.ended = why
        self._ready.set()

    def backlog(self) -> int:
        return len(self.events)

    def take(self) -> list[SharedEvent]:
        """Everything queued now, without waiting."""
        taken = list(self.events)
        self.events.clear()
        self.bytes = 0
        self._ready.clear()
        return taken

    async def wait(self) -> None:
        """Until an event is queued or the subscription ends."""
        if self.events or self.ended is not None:
            return
        await self._ready.wait()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.hub.leave(self)


class ResourceHub:
    """The shared store watch of one (resource, namespace) and its subscribers."""

    def __init__(
        self, fanout: WatchFanout, store: Store, resource: str, namespace: str | None, head: int
    ) -> None:
        self.fanout = fanout
        self.key = (resource, namespace)
        self.position = head  # every event up to here has been handed out
        self.subscribers: set[Subscription] = set()
        self.task = asyncio.create_task(
            self._run(store, resource, namespace, head), name=f"apiserver-watch-{resource}"
        )

    async def _run(self, store: Store, resource: str, namespace: str | None, head: int) -> None:
        why: object = StoreUnavailable(f"the watch of {resource} ended")
        try:
            async for ev in store.watch(resource, head, namespace):
                shared = SharedEvent(ev)
                self.position = ev.revision
                behind = 0
                for sub in tuple(self.subscribers):
                    sub.offer(shared)
                    behind = max(behind, sub.backlog())
                if behind >= QUEUE_EVENTS // 2:
                    await asyncio.sleep(0)  # let the watchers write before their queues fill
        except (Expired, StoreUnavailable) as err:
            log.warning("shared watch ended resource=%s error=%s", resource, err)
            why = err
        finally:
            self.fanout.forget(self)
            for sub in tuple(self.subscribers):
                sub.end(why)

    def join(self, start: int) -> Subscription:
        sub = Subscription(self, start)
        self.subscribers.add(sub)
        return sub

    def leave(self, sub: Subscription) -> None:
        self.subscribers.discard(sub)
        if not self.subscribers:
            self.fanout.forget(self)
            self.task.cancel()


class WatchFanout:
    """The hubs of one API server, made on a resource's first watch and ended on its last."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.hubs: dict[tuple[str, str | None], ResourceHub] = {}

    async def subscribe(
        self, resource: str, namespace: str | None, start: int
    ) -> Subscription | None:
        """A subscription from ``start``, or None when the hub is already past it."""
        hub = self.hubs.get((resource, namespace))
        if hub is None:
            head = await self.store.revision()
            hub = self.hubs.get((resource, namespace))  # made meanwhile by another watch
            if hub is None:
                if start < head:
                    return None  # history first: this watch reads the store itself
                hub = ResourceHub(self, self.store, resource, namespace, head)
                self.hubs[hub.key] = hub
        if start < hub.position:
            return None
        return hub.join(start)

    def forget(self, hub: ResourceHub) -> None:
        if self.hubs.get(hub.key) is hub:
            del self.hubs[hub.key]

    async def close(self) -> None:
        hubs = list(self.hubs.values())
        self.hubs.clear()
        for hub in hubs:
            hub.task.cancel()
        for hub in hubs:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await hub.task
