"""The ``Events:`` section that ends ``describe``, laid out as kubectl prints it.

Pure: gets the object's events (oldest first) and the time. A repeated event
shows its age as ``<last> (xN over <first>)``, kubectl's way of saying one
Event stands for N recordings.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from shiftnet.api.ages import age
from shiftnet.api.event import Event

HEADINGS = ("Type", "Reason", "Age", "From", "Message")
RULES = ("----", "------", "----", "----", "-------")  # kubectl's, as it prints them
GAP = 2  # spaces between columns (kubectl's tabwriter padding)


def event_age(ev: Event, now: dt.datetime) -> str:
    count = ev.times_seen()
    if count > 1:
        return f"{age(ev.last_seen(), now)} (x{count} over {age(ev.first_seen(), now)})"
    return age(ev.first_seen(), now)


def event_lines(events: Sequence[Event], now: dt.datetime) -> list[str]:
    """``Events:  <none>``, or a table of type, reason, age, source and message."""
    if not events:
        return ["Events:  <none>"]
    rows = [HEADINGS, RULES]
    for ev in events:
        message = " ".join((ev.message or "").split())  # one line per event
        rows.append((ev.type or "", ev.reason or "", event_age(ev, now), ev.source_text(), message))
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADINGS) - 1)]
    out = ["Events:"]
    for row in rows:
        cells = [cell.ljust(w + GAP) for cell, w in zip(row, widths, strict=False)]
        out.append(("  " + "".join(cells) + row[-1]).rstrip())
    return out
