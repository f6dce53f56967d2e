"""Round robin with ClientIP affinity over one service port's endpoints.

No I/O and no clock of its own: callers pass ``now`` (monotonic seconds), so
the behaviour is testable and deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shiftnet.proxy.model import Backend


@dataclass
class _Affinity:
    backend: Backend
    last_used: float


class Balancer:
    """Picks an endpoint per new connection; remembers a client's pick when affinity is on."""

    def __init__(
        self, backends: Sequence[Backend] = (), affinity: bool = False, timeout: float = 10800
    ) -> None:
        self.backends: tuple[Backend, ...] = tuple(backends)
        self.affinity = affinity
        self.timeout = timeout
        self._next = 0
        self._clients: dict[str, _Affinity] = {}

    def update(self, backends: Sequence[Backend], affinity: bool, timeout: float) -> None:
        """New endpoint list: keep the rotation position and affinities to endpoints that stay."""
        self.backends = tuple(backends)
        if not affinity or timeout != self.timeout:
            self._clients.clear()
        self.affinity, self.timeout = affinity, timeout
        alive = set(self.backends)
        self._clients = {c: a for c, a in self._clients.items() if a.backend in alive}
        if self.backends:
            self._next %= len(self.backends)
        else:
            self._next = 0

    def _round_robin(self) -> Backend:
        backend = self.backends[self._next % len(self.backends)]
        self._next = (self._next + 1) % len(self.backends)
        return backend

    def pick(self, client_ip: str, now: float) -> Backend | None:
        """The endpoint for a new connection from ``client_ip`` (None: no endpoints)."""
        if not self.backends:
            return None
        if self.affinity:
            held = self._clients.get(client_ip)
            if held is not None and now - held.last_used <= self.timeout:
                held.last_used = now
                return held.backend
        backend = self._round_robin()
        if self.affinity:
            self._clients[client_ip] = _Affinity(backend, now)
        return backend

    def retry(self, client_ip: str, failed: Backend, now: float) -> Backend:
        """The next endpoint after ``failed`` (round robin, affinity ignored and then reset)."""
        backend = self._round_robin()
        if backend == failed and len(self.backends) > 1:
            backend = self._round_robin()
        if self.affinity:
            self._clients[client_ip] = _Affinity(backend, now)
        return backend

    def expire(self, now: float) -> None:
        """Forget affinities older than the timeout (keeps the table small)."""
        self._clients = {
            c: a for c, a in self._clients.items() if now - a.last_used <= self.timeout
        }
