"""Watch: a chunked stream of JSON events from a resourceVersion, as upstream sends it.

Watches of a resource share one store watch (:mod:`shiftnet.apiserver.fanout`),
each with a bounded queue; a watch from a revision the shared one is already
past reads the store for itself, through a small bounded queue. Either way a
client that stops reading holds a fixed amount of memory, and is dropped once
a write has waited ``watch_write_timeout`` (or, shared, once its queue is
full: ``410 Expired``, and the client relists). A resourceVersion the store has
compacted away ends the stream with an ``ERROR`` event carrying
``410 Expired``; the client relists, as after any expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from shiftnet.api.names import parse_integer
from shiftnet.api.selectors import Selector
from shiftnet.apiserver.config import BOOKMARK_INTERVAL
from shiftnet.apiserver.fanout import (
    Dropped,
    SharedEvent,
    Subscription,
    WatchFanout,
    event_line,
)
from shiftnet.apiserver.fieldselectors import FieldSelector
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import bad_request, failure
from shiftnet.apiserver.wire import out_object
from shiftnet.errors import Expired, StoreUnavailable
from shiftnet.store.base import Store, WatchEvent

log = logging.getLogger(__name__)

QUEUE_SIZE = 100
INITIAL_CHUNK = 100  # ADDED events per write of the current objects
_END = object()


@dataclass(frozen=True)
class WatchRequest:
    info: ResourceInfo
    namespace: str | None
    labels: Selector
    fields: FieldSelector
    start: int | None  # None: send the current objects as ADDED first
    timeout: float
    bookmarks: bool
    write_timeout: float
    bookmark_interval: float = BOOKMARK_INTERVAL
    # Set when the client asked for Tables: each event's object becomes a one-row Table.
    table: Callable[[list[dict[str, Any]], dict[str, Any]], dict[str, Any]] | None = None


def parse_start(text: str | None) -> int | None:
    """``resourceVersion`` of a watch: unset or "0" mean "current state, then changes"."""
    if text in (None, "", "0"):
        return None
    value = parse_integer(str(text))
    if value is None:
        raise bad_request(f'invalid resourceVersion "{str(text)[:32]}": must be an integer')
    if value < 0:
        raise bad_request(f'invalid resourceVersion "{value}"')
    return value


def parse_timeout(text: str | None, default: float) -> float:
    if not text:
        return default
    value = parse_integer(text)
    if value is None:
        raise bad_request(f'invalid timeoutSeconds "{text[:32]}": must be an integer')
    return float(value) if value > 0 else default


def _line(etype: str, obj: dict[str, Any]) -> bytes:
    return event_line(etype, obj)


def _shown(req: WatchRequest, obj: dict[str, Any]) -> dict[str, Any]:
    out = out_object(obj)
    return req.table([out], {}) if req.table is not None else out


def _encoded(req: WatchRequest, ev: SharedEvent, etype: str) -> bytes:
    """The event's line: the shared encoding, or this watcher's own one-row Table."""
    if req.table is None:
        return ev.line(etype)
    return event_line(etype, req.table([ev.shown()], {}))


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class _Filter:
    """Selector filtering with upstream's edge rule: an object that stops matching
    is sent as DELETED, so the client's view never keeps a stale member."""

    def __init__(self, req: WatchRequest) -> None:
        self.req = req
        self.active = not (req.labels.empty and req.fields.empty)
        self.members: set[tuple[str, str]] = set()

    def matches(self, obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels")
        return self.req.labels.matches(labels) and self.req.fields.matches(obj)

    def seen(self, obj: dict[str, Any]) -> None:
        if self.active:
            self.members.add(_key(obj))

    def event_type(self, ev: WatchEvent) -> str | None:
        if not self.active:
            return ev.type
        key = _key(ev.object)
        if self.matches(ev.object):
            if ev.type == "DELETED":
                self.members.discard(key)
            else:
                self.members.add(key)
            return ev.type
        if key in self.members:
            self.members.discard(key)
            return "DELETED"
        return None


class _PrivateFeed:
    """This watch's own store watch, for a start the shared one is already past.

    Pulled through a bounded queue: the store is never read ahead of the client
    by more than the queue, so a client that stops reading holds a fixed amount.
    """

    def __init__(self, store: Store, req: WatchRequest, start: int) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue(QUEUE_SIZE)
        self.task = asyncio.create_task(self._produce(store, req, start), name="apiserver-watch")

    async def _produce(self, store: Store, req: WatchRequest, start: int) -> None:
        try:
            async for ev in store.watch(req.info.plural, start, req.namespace):
                await self.queue.put(SharedEvent(ev))
        except Expired as err:
            await self.queue.put(err)
        except StoreUnavailable as err:
            log.warning("watch ended resource=%s error=%s", req.info.plural, err)
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                self.queue.put_nowait(_END)

    async def next(self, wait: float) -> tuple[list[SharedEvent], object | None]:
        items: list[Any] = []
        if self.queue.empty():
            try:
                async with asyncio.timeout(wait):
                    items.append(await self.queue.get())
            except TimeoutError:
                return [], None
        while not self.queue.empty():
            items.append(self.queue.get_nowait())
        batch: list[SharedEvent] = []
        for item in items:
            if not isinstance(item, SharedEvent):
                return batch, item
            batch.append(item)
        return batch, None

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task


class _SharedFeed:
    """This watch's subscription to the resource's shared store watch."""

    def __init__(self, sub: Subscription) -> None:
        self.sub = sub

    async def next(self, wait: float) -> tuple[list[SharedEvent], object | None]:
        if not self.sub.events and self.sub.ended is None:
            try:
                async with asyncio.timeout(wait):
                    await self.sub.wait()
            except TimeoutError:
                return [], None
        batch = self.sub.take()
        ended = self.sub.ended
        if isinstance(ended, StoreUnavailable):
            return batch, _END
        return batch, ended

    async def close(self) -> None:
        self.sub.close()


async def _initial(store: Store, req: WatchRequest) -> tuple[list[dict[str, Any]], int]:
    listed = await store.list(req.info.plural, req.namespace)
    return listed.items, listed.revision


async def _feed(
    store: Store, req: WatchRequest, start: int, fanout: WatchFanout | None
) -> _PrivateFeed | _SharedFeed:
    if fanout is not None:
        sub = await fanout.subscribe(req.info.plural, req.namespace, start)
        if sub is not None:
            return _SharedFeed(sub)
    return _PrivateFeed(store, req, start)


def _ending(item: object) -> bytes | None:
    """The last line of a stream that ends because of ``item``, if it has one."""
    if isinstance(item, Expired):
        why = f"too old resource version: {item.revision} ({item.oldest})"
        return _line("ERROR", failure(410, "Expired", why))
    if isinstance(item, Dropped):
        why = "the watcher fell behind the changes: list and watch again"
        return _line("ERROR", failure(410, "Expired", why))
    return None


async def stream_events(
    store: Store, req: WatchRequest, fanout: WatchFanout | None = None
) -> AsyncGenerator[bytes, None]:
    """The encoded lines of one watch, ending at its timeout or on expiry.

    Each chunk holds every event ready at the time, so a burst costs one write.
    """
    filt = _Filter(req)
    start = req.start
    if start is None:
        items, start = await _initial(store, req)
        chunk: list[bytes] = []
        for obj in items:
            if filt.matches(obj):
                filt.seen(obj)
                chunk.append(_line("ADDED", _shown(req, obj)))
                if len(chunk) == INITIAL_CHUNK:
                    yield b"".join(chunk)
                    chunk = []
        if chunk:
            yield b"".join(chunk)
    last = start
    feed = await _feed(store, req, start, fanout)
    deadline = time.monotonic() + req.timeout
    next_bookmark = time.monotonic() + req.bookmark_interval
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                return
            wait = deadline - now
            if req.bookmarks:
                wait = min(wait, max(next_bookmark - now, 0.0))
            batch, ended = await feed.next(wait)
            if not batch and ended is None:
                if req.bookmarks and time.monotonic() >= next_bookmark:
                    next_bookmark = time.monotonic() + req.bookmark_interval
                    if await _reached(store, last):
                        yield _line("BOOKMARK", _bookmark(req.info, last))
                continue
            lines: list[bytes] = []
            for ev in batch:
                last = ev.revision
                etype = filt.event_type(ev.event)
                if etype is not None:
                    lines.append(_encoded(req, ev, etype))
            if lines:
                yield b"".join(lines)
            if ended is not None:
                final = _ending(ended)
                if final is not None:
                    yield final
                return
    finally:
        await feed.close()


async def _reached(store: Store, revision: int) -> bool:
    """Whether the store is at ``revision`` yet: a watch from a later revision gets no
    bookmark until it is, as upstream's watch cache sends none ahead of itself."""
    try:
        return revision <= await store.revision()
    except StoreUnavailable:
        return False


def _bookmark(info: ResourceInfo, revision: int) -> dict[str, Any]:
    return {
        "kind": info.kind,
        "apiVersion": info.group_version,
        "metadata": {"resourceVersion": str(revision)},
    }


async def serve_watch(
    request: web.Request, store: Store, req: WatchRequest, fanout: WatchFanout | None = None
) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    lines = stream_events(store, req, fanout)
    try:
        async for line in lines:
            try:
                async with asyncio.timeout(req.write_timeout):  # a timer, not a task per write
                    await resp.write(line)
            except TimeoutError:
                log.warning(
                    "watcher dropped: not reading resource=%s peer=%s",
                    req.info.plural,
                    request.remote,
                )
                if request.transport is not None:
                    request.transport.abort()
                return resp
    except (ConnectionResetError, ConnectionError):
        return resp
    finally:
        await lines.aclose()
    with contextlib.suppress(ConnectionError):
        await resp.write_eof()
    return resp
