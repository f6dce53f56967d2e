"""The one writer of a component's Events: record now, write later, never block.

Why a queue and a rate: a component records an event in the middle of its own
work (a sync, a probe loop); a slow or unreachable store must not slow that
work down. :meth:`EventRecorder.record` only puts the event in a bounded
table of pending events and returns; a repeat of a pending event is folded
into it (count + 1), and a new event that finds the table full is dropped and
counted. One task writes the pending events through the :class:`Client`, at
most ``writes_per_second`` on average (bursts of ``burst``): a new Event, or
the Event an earlier write created for the same key with its ``count`` and
``lastTimestamp`` moved on (:mod:`shiftnet.events.folding`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import logging
import time
from dataclasses import dataclass
from typing import Protocol

from shiftnet.api.base import Resource
from shiftnet.api.core import ObjectReference
from shiftnet.api.event import NORMAL, WARNING, Event, EventSource
from shiftnet.client import Client
from shiftnet.errors import AlreadyExists, ShiftnetError
from shiftnet.events.folding import EventKey, folded, key_of, new_event, reference

log = logging.getLogger(__name__)

QUEUE_SIZE = 256  # distinct events waiting to be written
KNOWN_SIZE = 4096  # keys whose stored Event is remembered, for folding (client-go: 4096)
WRITES_PER_SECOND = 10.0
BURST = 25
DRAIN_SECONDS = 2.0  # stop() writes what is pending for at most this long


class EventSink(Protocol):
    """What a component's code calls: one line per thing that happened."""

    def record(
        self, obj: Resource | ObjectReference, type_: str, reason: str, message: str
    ) -> None: ...

    def normal(self, obj: Resource | ObjectReference, reason: str, message: str) -> None: ...

    def warning(self, obj: Resource | ObjectReference, reason: str, message: str) -> None: ...


class DiscardEvents:
    """The sink of a component run without a recorder (library use, unit tests)."""

    def record(
        self, obj: Resource | ObjectReference, type_: str, reason: str, message: str
    ) -> None:
        return None

    def normal(self, obj: Resource | ObjectReference, reason: str, message: str) -> None:
        return None

    def warning(self, obj: Resource | ObjectReference, reason: str, message: str) -> None:
        return None


DISCARD = DiscardEvents()


@dataclass
class _Pending:
    ref: ObjectReference
    type: str
    reason: str
    message: str
    count: int
    first: dt.datetime
    last: dt.datetime


class EventRecorder:
    """Records events for ``component`` on ``host``; ``await start()`` begins writing."""

    def __init__(
        self,
        client: Client,
        component: str,
        host: str = "",
        *,
        queue_size: int = QUEUE_SIZE,
        writes_per_second: float = WRITES_PER_SECOND,
        burst: int = BURST,
    ) -> None:
        self.client = client
        self.source = EventSource(component=component, host=host or None)
        self.queue_size = queue_size
        self.rate = writes_per_second
        self.burst = burst
        self._tokens = float(burst)
        self._refilled = time.monotonic()
        self._pending: dict[EventKey, _Pending] = {}
        self._known: collections.OrderedDict[EventKey, tuple[str, str]] = collections.OrderedDict()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.recorded = 0
        self.dropped = 0  # new events refused because the queue was full
        self.written = 0
        self.failed = 0  # writes the store refused or could not take

    # ---------------------------------------------------------------- recording
    def normal(self, obj: Resource | ObjectReference, reason: str, message: str) -> None:
        self.record(obj, NORMAL, reason, message)

    def warning(self, obj: Resource | ObjectReference, reason: str, message: str) -> None:
        self.record(obj, WARNING, reason, message)

    def record(
        self, obj: Resource | ObjectReference, type_: str, reason: str, message: str
    ) -> None:
        """Queue one event and return at once (from any thread)."""
        ref = obj if isinstance(obj, ObjectReference) else reference(obj)
        now = dt.datetime.now(dt.UTC)
        loop = self._loop
        if loop is not None and not loop.is_closed() and _running_loop() is not loop:
            loop.call_soon_threadsafe(self._add, ref, type_, reason, message, now)
        else:
            self._add(ref, type_, reason, message, now)

    def _add(
        self, ref: ObjectReference, type_: str, reason: str, message: str, now: dt.datetime
    ) -> None:
        self.recorded += 1
        key = key_of(ref, self.source, type_, reason, message)
        pending = self._pending.get(key)
        if pending is not None:
            pending.count += 1
            pending.last = now
            return
        if len(self._pending) >= self.queue_size:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 100 == 0:
                log.warning(
                    "event dropped, queue full component=%s dropped=%d reason=%s object=%s/%s",
                    self.source.component,
                    self.dropped,
                    reason,
                    ref.namespace or "",
                    ref.name,
                )
            return
        self._pending[key] = _Pending(ref, type_, reason, message, 1, now, now)
        self._idle.clear()
        self._wake.set()

    @property
    def pending(self) -> int:
        return len(self._pending)

    # ---------------------------------------------------------------- writing
    async def start(self) -> None:
        if self._task is None:
            self._loop = asyncio.get_running_loop()
            self._task = self._loop.create_task(
                self._write_loop(), name=f"events-{self.source.component}"
            )

    async def stop(self) -> None:
        """Write what is pending (for at most :data:`DRAIN_SECONDS`), then stop."""
        task, self._task = self._task, None
        if task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), DRAIN_SECONDS)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self._loop = None

    async def flush(self, timeout: float = 10.0) -> None:
        """Wait until every pending event is written (tests, shutdown)."""
        await asyncio.wait_for(self._idle.wait(), timeout)

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                await self._take_token()
                key = next(iter(self._pending))
                pending = self._pending.pop(key)
                try:
                    await self._write(key, pending)
                    self.written += 1
                except (ShiftnetError, OSError) as err:  # best effort: lose the event only
                    self.failed += 1
                    log.warning(
                        "event not written component=%s reason=%s object=%s/%s error=%s",
                        self.source.component,
                        pending.reason,
                        pending.ref.namespace or "",
                        pending.ref.name,
                        err,
                    )
            self._idle.set()

    async def _take_token(self) -> None:
        """Token bucket: ``burst`` writes at once, then ``rate`` per second."""
        while True:
            now = time.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._refilled) * self.rate)
            self._refilled = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return
            await asyncio.sleep((1.0 - self._tokens) / self.rate)

    async def _write(self, key: EventKey, pending: _Pending) -> None:
        where = self._known.get(key)
        if where is not None:
            stored = await self.client.mutate(
                Event, where[0], where[1], lambda ev: folded(ev, pending.count, pending.last)
            )
            if stored is not None:
                self._known.move_to_end(key)
                return
            # expired or deleted meanwhile: start a new one
        event = new_event(
            pending.ref,
            self.source,
            pending.type,
            pending.reason,
            pending.message,
            count=pending.count,
            first=pending.first,
            last=pending.last,
        )
        try:
            created = await self.client.create(event)
        except AlreadyExists:  # same object and nanosecond: one more nanosecond
            event.metadata.name = new_event(
                pending.ref,
                self.source,
                pending.type,
                pending.reason,
                pending.message,
                count=pending.count,
                first=pending.first + dt.timedelta(microseconds=1),
                last=pending.last,
            ).metadata.name
            created = await self.client.create(event)
        self._known[key] = (created.metadata.namespace or "default", created.metadata.name)
        if len(self._known) > KNOWN_SIZE:
            self._known.popitem(last=False)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
