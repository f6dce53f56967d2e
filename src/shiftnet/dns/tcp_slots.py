"""Which DNS-over-TCP clients hold a slot, and which one gives it up when a new one comes.

RFC 7766 (section 6.2.3) asks servers to manage TCP connections so that idle
clients cannot deny service to the others: idle connections time out, and a
server at its limit may close idle connections to make room. Refusing the
newcomer instead (what a plain cap does) lets anyone who opens a few hundred
idle connections lock every legitimate TCP client out.

A connection is *idle* while the server waits for its client (for the next
query or the rest of one) and *busy* while the server answers it. At the cap
a new connection takes the slot of the connection idle the longest; only when
every slot is busy answering is the newcomer refused. Pure bookkeeping: the
caller closes what :meth:`TCPSlots.admit` hands back.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

C = TypeVar("C")


class TCPSlots(Generic[C]):
    """At most ``limit`` connections; the longest idle is evicted first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._idle: OrderedDict[C, None] = OrderedDict()  # oldest idle first
        self._busy: set[C] = set()

    def __len__(self) -> int:
        return len(self._idle) + len(self._busy)

    def admit(self, conn: C) -> tuple[bool, C | None]:
        """Take a slot for ``conn`` (idle); returns (admitted, the connection to close)."""
        evicted: C | None = None
        if len(self) >= self.limit:
            if not self._idle:
                return False, None
            evicted, _ = self._idle.popitem(last=False)
        self._idle[conn] = None
        return True, evicted

    def idle(self, conn: C) -> None:
        """``conn`` waits for its client again: it is now the most recently idle."""
        if conn in self._busy:
            self._busy.discard(conn)
            self._idle[conn] = None

    def busy(self, conn: C) -> None:
        """The server is answering ``conn``: it cannot be evicted meanwhile."""
        if conn in self._idle:
            del self._idle[conn]
            self._busy.add(conn)

    def release(self, conn: C) -> None:
        """``conn`` is gone (closed by either side or evicted)."""
        self._idle.pop(conn, None)
        self._busy.discard(conn)

    def holds(self, conn: C) -> bool:
        return conn in self._busy or conn in self._idle
