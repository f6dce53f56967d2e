"""Timestamps as the API writes them (RFC 3339) and ages as kubectl prints them.

Shared by the CLI tables and the API server's Tables so both print the same
``AGE``; pure: the caller passes ``now``.
"""

from __future__ import annotations

import datetime as dt


def parse_timestamp(text: str | None) -> dt.datetime | None:
    """An RFC 3339 timestamp (``2026-01-02T03:04:05Z``), or None when unset or unreadable."""
    if not text:
        return None
    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except ValueError:
        try:
            return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None


def human_duration(seconds: float) -> str:
    """kubectl's short ages: 45s, 3m20s, 15m, 5h10m, 20h, 3d4h, 30d, 2y30d, 10y."""
    if seconds < -1:
        return "<invalid>"
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if h < 24 * 365 * 2:
        return f"{d}d"
    y = d // 365
    if h < 24 * 365 * 8:
        return f"{y}y{d % 365}d" if d % 365 else f"{y}y"
    return f"{y}y"


def age(created: str | None, now: dt.datetime) -> str:
    """The AGE cell: time since ``created``, ``<unknown>`` when there is no timestamp."""
    when = parse_timestamp(created)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())
