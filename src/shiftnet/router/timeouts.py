"""Time values in route annotations (``timeout``, ``timeout-tunnel``, the health check
interval) read exactly as OpenShift's router reads them.

OpenShift accepts only ``[1-9][0-9]*`` followed by at most one unit (``us``,
``ms``, ``s``, ``m``, ``h``, ``d``; none means milliseconds): no zero, no
leading zero, no sum such as ``1m30s``, no white space, no capitals. A value
larger than HAProxy's largest timer, including one too large to count in
nanoseconds, is clipped to it (``2147483647ms``) rather than ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# HAProxy keeps timers as signed 32-bit milliseconds.
MAX_MS = 2_147_483_647
_INT64_MAX = 2**63 - 1
_TIME_RE = re.compile(r"([1-9][0-9]*)(us|ms|s|m|h|d)?")
_UNIT_NS = {
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
    "d": 86_400_000_000_000,
}
_NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class HAProxyTime:
    """A time value in whole milliseconds, and whether it was clipped to :data:`MAX_MS`."""

    ms: int
    clipped: bool = False


def parse_haproxy_time(value: str) -> HAProxyTime | None:
    """``value`` as OpenShift's ``clipHAProxyTimeoutValue`` reads it; None when refused.

    Microseconds round up to a whole millisecond, as HAProxy reads them.
    """
    match = _TIME_RE.fullmatch(value)
    if match is None or not value.isascii():
        return None
    digits, unit = match.group(1), match.group(2) or "ms"
    unit_ns = _UNIT_NS[unit]
    if len(digits) > 19 or int(digits) > _INT64_MAX // unit_ns:  # Go: OverflowError
        return HAProxyTime(MAX_MS, clipped=True)
    ns = int(digits) * unit_ns
    if ns > MAX_MS * _NS_PER_MS:
        return HAProxyTime(MAX_MS, clipped=True)
    return HAProxyTime(-(-ns // _NS_PER_MS))
