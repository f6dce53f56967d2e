"""Deleting Events nobody has repeated for a while: the master's part of ``--event-ttl``.

Why a sweep: kube-apiserver gives every Event a storage lease of
``--event-ttl`` (one hour by default) that each write renews; shiftnet's
stores have no leases, so the master lists Events now and then and deletes
those last seen longer ago than the TTL (:func:`~shiftnet.events.folding.expired`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging

from shiftnet.api.event import Event
from shiftnet.client import Client
from shiftnet.errors import NotFound, ShiftnetError
from shiftnet.events.folding import DEFAULT_TTL, expired

log = logging.getLogger(__name__)

MAX_INTERVAL = 60.0  # seconds between sweeps, at most


class EventExpiry:
    """Deletes Events last seen more than ``ttl`` seconds ago, every ``interval``."""

    def __init__(self, client: Client, ttl: float = DEFAULT_TTL, interval: float | None = None):
        self.client = client
        self.ttl = ttl
        self.interval = interval if interval is not None else min(max(ttl / 4, 1.0), MAX_INTERVAL)
        self.deleted = 0
        self._task: asyncio.Task[None] | None = None

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
            try:
                await self.sweep()
            except ShiftnetError as err:
                log.warning("event expiry sweep failed error=%s", err)
            await asyncio.sleep(self.interval)

    async def sweep(self, now: dt.datetime | None = None) -> int:
        """Delete the expired events once; returns how many were deleted."""
        now = now or dt.datetime.now(dt.UTC)
        gone = 0
        for ev in expired(await self.client.list(Event), now, self.ttl):
            with contextlib.suppress(NotFound):
                await self.client.delete(Event, ev.metadata.namespace, ev.metadata.name)
                gone += 1
        if gone:
            self.deleted += gone
            log.info("events expired count=%d ttl=%gs", gone, self.ttl)
        return gone
