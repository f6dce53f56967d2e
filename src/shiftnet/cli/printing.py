"""Plain-text output helpers: kubectl's aligned tables and its human ages."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

COLUMN_GAP = 3  # kubectl's tabwriter padding


def column_widths(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    all_rows = [header, *rows]
    return [max(len(r[i]) for r in all_rows) for i in range(len(header))]


def format_row(row: Sequence[str], widths: Sequence[int]) -> str:
    """One line: each cell padded to its column's width plus the gap; no trailing blanks."""
    cells = [c.ljust(max(widths[i], len(c)) + COLUMN_GAP) for i, c in enumerate(row[:-1])]
    return ("".join(cells) + row[-1]).rstrip()


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by at least three spaces; no trailing blanks."""
    widths = column_widths(header, rows)
    return "".join(format_row(r, widths) + "\n" for r in [header, *rows])


def parse_timestamp(text: str | None) -> dt.datetime | None:
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
    when = parse_timestamp(created)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def or_none(value: str | None) -> str:
    return value if value else "<none>"
