"""Plain-text output helpers: kubectl's aligned tables (ages come from ``api.ages``)."""

from __future__ import annotations

from collections.abc import Sequence

from shiftnet.api.ages import age as age
from shiftnet.api.ages import human_duration as human_duration
from shiftnet.api.ages import parse_timestamp as parse_timestamp
from shiftnet.api.columns import or_none as or_none

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
