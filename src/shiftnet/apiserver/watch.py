"""Watch: a chunked stream of JSON events from a resourceVersion, as upstream sends it.

One store watch per client, pulled through a small bounded queue: the
server never reads ahead of a client by more than the queue, so a client
that stops reading holds a fixed amount of memory, and is dropped once a
write has waited ``watch_write_timeout``. A resourceVersion the store has
compacted away ends the stream with an ``ERROR`` event carrying
``410 Expired``; the client relists, as after any expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from shiftnet.api.selectors import Selector
from shiftnet.apiserver.fieldselectors import FieldSelector
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import bad_request, failure
from shiftnet.apiserver.wire import out_object
from shiftnet.errors import Expired, StoreUnavailable
from shiftnet.store.base import Store, WatchEvent

log = logging.getLogger(__name__)

QUEUE_SIZE = 100
BOOKMARK_INTERVAL = 60.0
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
    try:
        value = int(str(text))
    except ValueError:
        raise bad_request(
            f'invalid resourceVersion "{str(text)[:32]}": must be an integer'
        ) from None
    if value < 0:
        raise bad_request(f'invalid resourceVersion "{value}"')
    return value


def parse_timeout(text: str | None, default: float) -> float:
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise bad_request(f'invalid timeoutSeconds "{text[:32]}": must be an integer') from None
    return float(value) if value > 0 else default


def _line(etype: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _shown(req: WatchRequest, obj: dict[str, Any]) -> dict[str, Any]:
    out = out_object(obj)
    return req.table([out], {}) if req.table is not None else out


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


async def _produce(store: Store, req: WatchRequest, start: int, queue: asyncio.Queue[Any]) -> None:
    try:
        async for ev in store.watch(req.info.plural, start, req.namespace):
            await queue.put(ev)
    except Expired as err:
        await queue.put(err)
    except StoreUnavailable as err:
        log.warning("watch ended resource=%s error=%s", req.info.plural, err)
    finally:
        with contextlib.suppress(asyncio.QueueFull):
            queue.put_nowait(_END)


async def _initial(store: Store, req: WatchRequest) -> tuple[list[dict[str, Any]], int]:
    listed = await store.list(req.info.plural, req.namespace)
    return listed.items, listed.revision


async def stream_events(store: Store, req: WatchRequest) -> AsyncGenerator[bytes, None]:
    """The encoded lines of one watch, ending at its timeout or on expiry."""
    filt = _Filter(req)
    start = req.start
    if start is None:
        items, start = await _initial(store, req)
        for obj in items:
            if filt.matches(obj):
                filt.seen(obj)
                yield _line("ADDED", _shown(req, obj))
    last = start
    queue: asyncio.Queue[Any] = asyncio.Queue(QUEUE_SIZE)
    producer = asyncio.create_task(_produce(store, req, start, queue), name="apiserver-watch")
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
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                if req.bookmarks and time.monotonic() >= next_bookmark:
                    next_bookmark = time.monotonic() + req.bookmark_interval
                    yield _line("BOOKMARK", _bookmark(req.info, last))
                continue
            if item is _END:
                return
            if isinstance(item, Expired):
                yield _line(
                    "ERROR",
                    failure(
                        410, "Expired", f"too old resource version: {item.revision} ({item.oldest})"
                    ),
                )
                return
            assert isinstance(item, WatchEvent)
            last = item.revision
            etype = filt.event_type(item)
            if etype is not None:
                yield _line(etype, _shown(req, item.object))
    finally:
        producer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await producer


def _bookmark(info: ResourceInfo, revision: int) -> dict[str, Any]:
    return {
        "kind": info.kind,
        "apiVersion": info.group_version,
        "metadata": {"resourceVersion": str(revision)},
    }


async def serve_watch(request: web.Request, store: Store, req: WatchRequest) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    lines = stream_events(store, req)
    try:
        async for line in lines:
            try:
                await asyncio.wait_for(resp.write(line), req.write_timeout)
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
