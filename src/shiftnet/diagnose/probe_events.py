"""A pod's last probe failure, in the probe's own words, from its ``Unhealthy`` Events.

Why Events: the node agent records every failed probe as a Warning Event
(reason ``Unhealthy``, message ``Readiness probe failed: <why>``), while the
pod's Ready condition only says that it is not ready. Pure: no I/O.
"""

from __future__ import annotations

from shiftnet.api import Event

PROBE_FAILED = " probe failed: "  # the node agent's Unhealthy message: "Readiness probe failed: …"


def last_probe_failures(events: list[Event]) -> dict[str, str]:
    """Pod name -> the message of its most recent ``Unhealthy`` Event (the probe's own words)."""
    latest: dict[str, tuple[str, str]] = {}
    for event in events:
        ref = event.involved_object
        if event.reason != "Unhealthy" or ref.kind != "Pod" or not ref.name:
            continue
        when = event.last_seen() or ""
        if ref.name not in latest or when >= latest[ref.name][0]:
            latest[ref.name] = (when, event.message or "")
    out: dict[str, str] = {}
    for name, (_, message) in latest.items():
        _, sep, rest = message.partition(PROBE_FAILED)
        out[name] = rest if sep and rest else message
    return out
