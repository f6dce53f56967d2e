"""How many relayed connections the user-space proxy may hold at once.

Every relayed TCP connection holds two descriptors (client and endpoint) and
every UDP client one endpoint socket. The proxy shares its process's
descriptor limit with the DNS server, the probes and the router driver (all
of ``shiftnet up`` is one process), so a flood of clients must run into this
budget, which refuses the newcomer, and never into the process limit, which
would take every listener of the process down with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# a quarter of the descriptors: at two per TCP relay, half go to relays
SHARE_OF_DESCRIPTORS = 4
MIN_RELAYS = 64


def default_relay_limit(descriptor_limit: int) -> int:
    """The default budget for a process that may open ``descriptor_limit`` files."""
    return max(MIN_RELAYS, descriptor_limit // SHARE_OF_DESCRIPTORS)


@dataclass
class RelayBudget:
    """A counter of relays in use against a limit; ``refused`` says how often it said no."""

    limit: int
    used: int = 0
    refused: int = 0
    _last_told: float = field(default=float("-inf"), repr=False)

    def take(self) -> bool:
        """One relay more, if the budget allows it."""
        if self.used >= self.limit:
            self.refused += 1
            return False
        self.used += 1
        return True

    def give(self) -> None:
        """A relay has ended."""
        if self.used > 0:
            self.used -= 1

    def time_to_tell(self, now: float, every: float = 10.0) -> bool:
        """Whether a refusal should be logged now (at most once per ``every`` seconds)."""
        if now - self._last_told < every:
            return False
        self._last_told = now
        return True
