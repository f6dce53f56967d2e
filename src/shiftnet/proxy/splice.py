"""TCP relaying for the user-space proxy: ``splice(2)`` for bulk, copies for small reads.

Sockets are plain non-blocking sockets watched with the loop's
``add_reader``/``add_writer``; no asyncio transport, no ``bytes`` object and
no protocol callback per chunk. Each direction of a connection reads in one
of two ways, chosen by what it last saw:

* **copy** (the start, and after a small splice): ``recv_into`` a shared
  64 KiB buffer, ``send`` from it. For the few hundred bytes of a typical
  request or reply this is cheaper than splicing (measured: ~1 us of CPU per
  request less), the pipe's page bookkeeping costs more than the copy.
* **splice** (after a read of 16 KiB or more, until a splice moves less than
  4 KiB): socket -> pipe -> socket, the pages are moved, never copied into
  user space. On bulk transfers this halves the proxy's CPU per byte.

All relays of an event loop share **one** pipe and buffer
(:class:`SharedPipe`), held by each listening service and each relay and
closed with the last: a callback splices what the source holds into the
pipe and at once on to the destination, so the pipe is empty again before
the next callback runs. Only when the destination cannot take everything
(its send buffer is full) is the rest kept in a per-direction backlog,
reading from the source stops (flow control), and the backlog is sent when
the destination is writable. A relay therefore holds no descriptor beyond
its two sockets: the relay budget needs no share for pipes.

Half-close: a source's EOF becomes ``shutdown(SHUT_WR)`` of the destination
once its backlog is sent; the other direction keeps flowing. When both
directions are shut, or either socket fails, both sockets are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import weakref
from collections.abc import Callable

log = logging.getLogger(__name__)

SPLICE_FLAGS = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
CHUNK = 64 * 1024  # a pipe's default capacity: one splice in never blocks on the pipe
SPLICE_FROM = 16 * 1024  # a read this large switches a direction to splice
COPY_BELOW = 4 * 1024  # a splice this small switches it back to copying


class SharedPipe:
    """The one pipe every relay of an event loop splices through (empty between
    callbacks), counted by its users and closed when the last one releases it."""

    _by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SharedPipe] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self) -> None:
        self.r, self.w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.users = 0
        self.buf = memoryview(bytearray(CHUNK))  # the copy path's buffer, also shared

    @classmethod
    def acquire(cls, loop: asyncio.AbstractEventLoop) -> SharedPipe:
        """The loop's pipe (opened on first use), with one user more."""
        pipe = cls._by_loop.get(loop)
        if pipe is None:
            pipe = cls._by_loop[loop] = SharedPipe()
        pipe.users += 1
        return pipe

    def release(self) -> None:
        """One user less; the last one closes the pipe."""
        self.users -= 1
        if self.users <= 0:
            for loop, pipe in list(self._by_loop.items()):
                if pipe is self:
                    del self._by_loop[loop]
            self.close()

    def drain(self, n: int) -> bytearray:
        """Read the ``n`` bytes a destination did not take, so the pipe is empty again."""
        out = bytearray()
        while len(out) < n:
            try:
                chunk = os.read(self.r, n - len(out))
            except BlockingIOError:  # emptier than it should be: nothing more to keep
                break
            if not chunk:
                break
            out += chunk
        return out

    def close(self) -> None:
        for fd in (self.r, self.w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.r = self.w = -1


class _Direction:
    """Bytes from ``src`` to ``dst``."""

    __slots__ = (
        "backlog",
        "buf",
        "copied",
        "dfd",
        "dst",
        "eof",
        "reading",
        "relay",
        "sfd",
        "spliced",
        "splicing",
        "src",
        "writing",
    )

    def __init__(self, relay: SpliceRelay, src: socket.socket, dst: socket.socket) -> None:
        self.relay = relay
        self.src, self.dst = src, dst
        self.sfd, self.dfd = src.fileno(), dst.fileno()
        self.backlog = bytearray()
        self.eof = False  # src sent its FIN (and dst got it once the backlog is empty)
        self.reading = False
        self.writing = False
        self.splicing = False  # copy until a read is large
        self.buf = relay.pipe.buf
        self.copied = self.spliced = 0  # bytes moved each way (tests, debugging)

    def start_reading(self) -> None:
        if not self.reading:
            self.reading = True
            self.relay.loop.add_reader(self.sfd, self._splice if self.splicing else self._copy)

    def stop_reading(self) -> None:
        if self.reading:
            self.reading = False
            self.relay.loop.remove_reader(self.sfd)

    def _switch(self, splicing: bool) -> None:
        """Read the other way from the next readable event on (re-registers the reader,
        so each event costs one Python call, not a dispatch and a call)."""
        self.splicing = splicing
        self.relay.loop.add_reader(self.sfd, self._splice if splicing else self._copy)

    def _copy(self) -> None:
        """Small reads: ``recv_into`` the shared buffer and ``send``; for a few hundred
        bytes two copies cost less than the pipe's page bookkeeping."""
        buf = self.buf
        try:
            n = self.src.recv_into(buf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.relay.fail(exc)
            return
        if n == 0:
            self._eof()
            return
        self.copied += n
        if n >= SPLICE_FROM:
            self._switch(True)  # a bulk transfer: the next reads go through the pipe
        try:
            m = self.dst.send(buf[:n])
        except (BlockingIOError, InterruptedError):
            m = 0
        except OSError as exc:
            self.relay.fail(exc)
            return
        if m < n:
            self._hold(buf[m:n])

    def _splice(self) -> None:
        """Bulk: socket -> pipe -> socket, no copy through user space."""
        pipe = self.relay.pipe
        try:
            n = os.splice(self.sfd, pipe.w, CHUNK, None, None, SPLICE_FLAGS)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.relay.fail(exc)
            return
        if n == 0:
            self._eof()
            return
        self.spliced += n
        if n < COPY_BELOW:
            self._switch(False)
        try:
            m = os.splice(pipe.r, self.dfd, n, None, None, SPLICE_FLAGS)
        except (BlockingIOError, InterruptedError):
            m = 0
        except OSError as exc:
            pipe.drain(n)
            self.relay.fail(exc)
            return
        if m < n:
            self._hold(pipe.drain(n - m))

    def _eof(self) -> None:
        self.eof = True
        self.stop_reading()
        self.shut_if_done()

    def _hold(self, rest: bytes | bytearray | memoryview) -> None:
        """dst is full: keep the rest, wait until dst is writable, stop reading src."""
        self.backlog += rest
        self.stop_reading()
        self.writing = True
        self.relay.loop.add_writer(self.dfd, self.on_writable)

    def on_writable(self) -> None:
        try:
            sent = self.dst.send(self.backlog)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.relay.fail(exc)
            return
        del self.backlog[:sent]
        if self.backlog:
            return
        self.writing = False
        self.relay.loop.remove_writer(self.dfd)
        if self.eof:
            self.shut_if_done()
        else:
            self.start_reading()

    def shut_if_done(self) -> None:
        """Pass the FIN on once everything before it is sent."""
        if self.eof and not self.backlog:
            try:
                self.dst.shutdown(socket.SHUT_WR)
            except OSError as exc:
                self.relay.fail(exc)
                return
            self.relay.direction_done()

    def stop(self) -> None:
        self.stop_reading()
        if self.writing:
            self.writing = False
            self.relay.loop.remove_writer(self.dfd)
        self.backlog.clear()


class SpliceRelay:
    """One relayed connection: client <-> endpoint, both directions by splice."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        pipe: SharedPipe,
        client: socket.socket,
        on_close: Callable[[SpliceRelay], None],
    ) -> None:
        self.loop, self.pipe = loop, pipe
        pipe.users += 1  # released in close()
        self.client = client
        self.endpoint: socket.socket | None = None
        self.on_close = on_close
        self.directions: tuple[_Direction, ...] = ()
        self.done = 0
        self.closed = False

    def start(self, endpoint: socket.socket) -> None:
        """Relay between the client and the now connected ``endpoint``."""
        self.endpoint = endpoint
        for sock in (self.client, endpoint):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.directions = (
            _Direction(self, self.client, endpoint),
            _Direction(self, endpoint, self.client),
        )
        for d in self.directions:
            d.start_reading()

    def direction_done(self) -> None:
        self.done += 1
        if self.done == 2:  # both sides sent their FIN and got the other's
            self.close()

    def fail(self, exc: OSError) -> None:
        log.debug("relay ended error=%s", exc.__class__.__name__)
        self.close()

    def close(self) -> None:
        """Close both sockets (unregistered from the loop first); idempotent."""
        if self.closed:
            return
        self.closed = True
        for d in self.directions:
            d.stop()
        for sock in (self.client, self.endpoint):
            if sock is not None:
                sock.close()
        self.pipe.release()
        self.on_close(self)
