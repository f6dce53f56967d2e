"""A port the kernel picks (port 0) that is not one the cluster claimed for later.

``shiftnet up`` settles its router, DNS and API ports first and binds them
component by component; a metrics or healthz endpoint bound to port 0 in
between may be handed one of those claimed ports (they are free until their
component starts), and the later component then fails to bind. Binding again
while holding the unlucky pick gets another one.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Collection
from typing import TypeVar

T = TypeVar("T")

ATTEMPTS = 200


def bind_avoiding(
    bind: Callable[[], T],
    port_of: Callable[[T], int],
    release: Callable[[T], None],
    avoid: Collection[int],
    attempts: int = ATTEMPTS,
) -> T:
    """``bind()`` (to port 0) until its port is not in ``avoid``; the picks refused on
    the way are held until then, so the kernel does not hand them out again."""
    held: list[T] = []
    try:
        for _ in range(attempts):
            bound = bind()
            if port_of(bound) not in avoid:
                return bound
            held.append(bound)
        raise OSError(f"no free port outside the {len(avoid)} claimed ones in {attempts} tries")
    finally:
        for h in held:
            release(h)


def free_port_avoiding(host: str, avoid: Collection[int]) -> int:
    """A TCP port free on ``host`` and not in ``avoid``, for a server that binds it at
    once (a server library that takes a port number, not a socket)."""

    def bind() -> socket.socket:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        try:
            s.bind((host, 0))
        except BaseException:
            s.close()
            raise
        return s

    chosen = bind_avoiding(bind, lambda s: int(s.getsockname()[1]), lambda s: s.close(), avoid)
    port = int(chosen.getsockname()[1])
    chosen.close()
    return port
