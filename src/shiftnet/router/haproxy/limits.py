"""How many connections HAProxy may accept under a file descriptor limit (pure arithmetic).

Why this exists: with its default ``strict-limits`` HAProxy 2.6 refuses to
start, or to reload, when the descriptors it reserves exceed the hard
``RLIMIT_NOFILE``, and it reserves more than two per connection. Measured on
2.6 (``prlimit --nofile=20000``, ``haproxy -db``, 2 threads, one listener and
the stats socket): it asks for ``2 * maxconn + checked servers + 28``
("Cannot raise FD limit to 20028" for ``maxconn 8000`` with 4,000 checked
servers). Every ``server`` line with ``check`` counts, even a disabled one.

So ``maxconn`` is fitted to the rendered configuration, not only to the
limit: :func:`fit_maxconn` takes the number of checked server lines the
renderer wrote. The checks are counted in steps of :data:`CHECK_STEP`, so
``maxconn`` (and with it the ``global`` section, whose change costs a reload)
moves only when the checked count crosses a step, not with every pod.

When even the smallest sensible ``maxconn`` leaves no room for every check
(10,000 routes with two pods need 40,000 checked slot lines: more than a
20,000 limit holds on its own), the fit keeps half of the connections'
check-free share and asks for ``no strict-limits``: HAProxy then warns and
starts. That is safe in practice: a health check holds a descriptor only
while its probe connection is open, and disabled slots are never probed, so
the checks in flight at any moment are a small fraction of the lines.
"""

from __future__ import annotations

from dataclasses import dataclass

# Beyond two per connection and one per checked server: listeners, the admin
# and internal TLS sockets, the master socket pair, logs, resolvers. At least
# this many, or an eighth of the limit, stay in reserve (the lab saw
# "Cannot raise FD limit to 20067" with only a twentieth in reserve).
FD_RESERVE_MIN = 1000
# Per thread: one poller descriptor and a wake-up pipe (two).
FD_PER_THREAD = 3
# Listeners, sockets and other fixed descriptors of the router's configuration.
FD_FIXED = 64
# Checked server lines are counted in multiples of this (keeps maxconn stable).
CHECK_STEP = 1024


@dataclass(frozen=True)
class MaxconnFit:
    """The ``maxconn`` to render and whether HAProxy must be told ``no strict-limits``."""

    maxconn: int
    requested: int
    nofile: int
    checked: int
    strict: bool = True

    @property
    def lowered(self) -> bool:
        return self.maxconn < self.requested


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def reserve(nofile: int, checked: int = 0, threads: int = 1) -> int:
    """Descriptors kept for everything but client/server connection pairs."""
    fixed = FD_FIXED + FD_PER_THREAD * max(1, threads)
    counted = _round_up(fixed + max(0, checked), CHECK_STEP) if checked > 0 else fixed
    return max(FD_RESERVE_MIN, nofile // 8, counted)


def fit_maxconn(requested: int, nofile: int, checked: int = 0, threads: int = 1) -> MaxconnFit:
    """Fit ``requested`` connections into ``nofile`` descriptors beside ``checked`` servers.

    ``nofile <= 0`` means the limit is unknown: ``requested`` is kept as it is.
    """
    requested = max(1, requested)
    if nofile <= 0:
        return MaxconnFit(requested, requested, nofile, checked)
    check_free = max(1, (nofile - reserve(nofile, 0, threads)) // 2)
    allowed = (nofile - reserve(nofile, checked, threads)) // 2
    floor = max(1, check_free // 2)
    if allowed >= min(requested, floor):
        return MaxconnFit(min(requested, allowed), requested, nofile, checked)
    # The checks alone do not fit: keep half the connections' share and let
    # HAProxy start anyway (only checks in flight hold descriptors).
    return MaxconnFit(min(requested, floor), requested, nofile, checked, strict=False)
