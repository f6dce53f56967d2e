"""Durations as HAProxy and OpenShift write them: ``500ms``, ``30s``, ``1m30s``, ``1h``.

Why one parser: the router reads durations from environment variables, flags
and route annotations, and renders them back into ``haproxy.cfg``. Parsing to
an integer number of milliseconds and rendering from that integer means no
user text ever reaches the configuration, and equal durations render equally.
"""

from __future__ import annotations

import re

_PART = re.compile(r"([0-9]{1,12})(us|ms|s|m|h|d)?")  # ASCII digits: \d takes any script's
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
# HAProxy stores timeouts as signed 32-bit milliseconds: about 24.8 days.
MAX_MS = 2_147_483_647


def parse_duration_ms(text: str, bare_unit: str = "ms") -> int | None:
    """Milliseconds for ``text``, or None when it is not a duration.

    ``bare_unit`` is the unit of a number without one: HAProxy reads ``5000`` as
    milliseconds, OpenShift's RELOAD_INTERVAL reads it as seconds. Microseconds
    round up to whole milliseconds. A sum like ``1m30s`` is accepted (Go style).
    """
    text = text.strip()
    if not text or len(text) > 64:
        return None
    pos, total, parts = 0, 0, 0
    while pos < len(text):
        m = _PART.match(text, pos)
        if not m:
            return None
        number, unit = int(m.group(1)), m.group(2)
        if unit is None:
            if parts or m.end() != len(text):
                return None
            unit = bare_unit
        total += -(-number // 1000) if unit == "us" else number * _UNIT_MS[unit]
        pos, parts = m.end(), parts + 1
    if total > MAX_MS:
        return None
    return total


def format_duration_ms(ms: int) -> str:
    """The shortest HAProxy spelling of ``ms`` milliseconds (``30s``, ``1h``, ``1500ms``)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"
