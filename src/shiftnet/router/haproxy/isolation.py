"""Find the routes whose configuration HAProxy refuses, by bisection, so the rest is served.

Why: validation and the escaping functions refuse everything they know HAProxy
cannot load, but HAProxy (and the TLS library under it) has rules of its own
-- an RSA key shorter than the system's security level allows, say -- and one
route it refuses must not keep every other route's change from being served,
nor the router from starting. ``haproxy -c`` answers only "this whole
configuration is bad"; asking it about halves of the routes narrows that down.

The search is adaptive group testing. Routes known to pass together are the
*good* set; a group of suspects is checked together with it, and only when
that fails is the group split in two and each half checked in turn (the first
half's passing routes joining the good set before the second half is
checked). So a route that fails only together with another is found too, and
what is left passes as a whole by construction. With ``k`` refused routes
among ``n`` suspects the search makes at most about ``2 k log2(n)`` checks, and
never more than ``2 n``; nothing is checked when the whole set passes.

No HAProxy here: the caller passes ``check(keys)``, which renders exactly
those routes and runs ``haproxy -c`` on them (``None`` when it passes,
otherwise HAProxy's reason).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
Check = Callable[[Sequence[K]], Awaitable[str | None]]


class Search(Generic[K]):
    """One bisection: counts the checks it makes (tests and logs report them)."""

    def __init__(self, check: Check[K]) -> None:
        self._check = check
        self.checks = 0

    async def passes(self, keys: Sequence[K]) -> str | None:
        self.checks += 1
        return await self._check(keys)

    async def refused(
        self, good: list[K], suspects: Sequence[K], failing: str | None = None
    ) -> dict[K, str]:
        """The suspects to leave out so that ``good`` (which passes) plus the rest passes.

        ``good`` grows in place with every suspect found to pass; ``failing`` is
        HAProxy's reason when ``good`` plus ``suspects`` is already known to fail.
        """
        if not suspects:
            return {}
        reason = failing or await self.passes([*good, *suspects])
        if reason is None:
            good.extend(suspects)
            return {}
        if len(suspects) == 1:
            return {suspects[0]: reason}
        half = len(suspects) // 2
        found = await self.refused(good, suspects[:half])
        found.update(await self.refused(good, suspects[half:]))
        return found


async def find_refused(
    keys: Sequence[K], check: Check[K], *, likely: Sequence[K] = ()
) -> tuple[dict[K, str], int]:
    """The routes among ``keys`` to leave out so that the others pass; and the checks made.

    ``likely`` are the routes that changed since a configuration last passed:
    when everything else passes on its own, only they are searched. When even
    no route at all fails, the routes are not the cause and none is refused.
    """
    search: Search[K] = Search(check)
    failing = await search.passes(keys)
    if failing is None:
        return {}, search.checks
    likely_set = set(likely)
    if likely_set and len(likely_set) < len(keys):
        rest = [k for k in keys if k not in likely_set]
        if await search.passes(rest) is None:
            found = await search.refused(rest, [k for k in keys if k in likely_set], failing)
            return found, search.checks
    if await search.passes([]) is not None:
        log.error("haproxy refuses the configuration without any route; no route is left out")
        return {}, search.checks
    return await search.refused([], list(keys), failing), search.checks
