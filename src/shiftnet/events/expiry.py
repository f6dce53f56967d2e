"""Deleting Events nobody has repeated for a while: the master's part of ``--event-ttl``.

Why a timed sweep of the cache: kube-apiserver gives every Event a storage
lease of ``--event-ttl`` (one hour by default) that each write renews;
shiftnet's stores have no leases. The master follows Events with an informer,
deletes those last seen longer ago than the TTL
(:func:`~shiftnet.events.folding.expired`) and sleeps until the next one is due
(at most :data:`MAX_INTERVAL`); an Event written already older than that wakes
it early.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging

from shiftnet.api.event import Event
from shiftnet.client import Client
from shiftnet.errors import NotFound, ShiftnetError
from shiftnet.events.folding import DEFAULT_TTL, expired, next_expiry
from shiftnet.informer import Informers

log = logging.getLogger(__name__)

MAX_INTERVAL = 60.0  # seconds between sweeps, at most
MIN_INTERVAL = 0.5  # a burst of early wake-ups costs one sweep per this


class EventExpiry:
    """Deletes Events last seen more than ``ttl`` seconds ago."""

    def __init__(self, client: Client, informers: Informers, ttl: float = DEFAULT_TTL) -> None:
        self.client = client
        self.ttl = ttl
        self.informer = informers.informer(Event)
        self.informer.add_handler(self._on_event)
        self.deleted = 0
        self._due: dt.datetime | None = None  # when the loop wakes next
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def _on_event(self, etype: str, old: Event | None, new: Event | None) -> None:
        if new is None or self._due is None:
            return
        due = next_expiry([new], self.ttl)
        if due is not None and due < self._due:
            self._wake.set()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="event-expiry")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            now = dt.datetime.now(dt.UTC)
            try:
                await self.sweep(now)
            except ShiftnetError as err:
                log.warning("event expiry sweep failed error=%s", err)
            wait = MAX_INTERVAL
            due = next_expiry(self.informer.list(), self.ttl)
            if due is not None:
                wait = min(max((due - now).total_seconds(), MIN_INTERVAL), MAX_INTERVAL)
            self._due = now + dt.timedelta(seconds=wait)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)
            await asyncio.sleep(MIN_INTERVAL)

    async def sweep(self, now: dt.datetime) -> int:
        """Delete the expired events of the cache once; returns how many were deleted."""
        gone = 0
        for ev in expired(self.informer.list(), now, self.ttl):
            with contextlib.suppress(NotFound):
                await self.client.delete(Event, ev.metadata.namespace, ev.metadata.name)
                gone += 1
        if gone:
            self.deleted += gone
            log.info("events expired count=%d ttl=%gs", gone, self.ttl)
        return gone
