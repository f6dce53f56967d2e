"""describe's ``Events:`` section: kubectl's columns, a folded event's ``(xN over ...)``."""

from __future__ import annotations

import datetime as dt

from shiftnet.api import ObjectMeta, Pod
from shiftnet.api.event import EventSource
from shiftnet.cli.event_lines import event_lines
from shiftnet.events.folding import new_event, reference

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
POD = Pod(metadata=ObjectMeta(name="web-1", namespace="shop", uid="u1"))


def test_no_events_is_one_line() -> None:
    assert event_lines([], NOW) == ["Events:  <none>"]


def test_events_are_a_kubectl_table_with_repeats_counted() -> None:
    node = EventSource(component="node", host="node-a")
    started = new_event(
        reference(POD),
        node,
        "Normal",
        "Started",
        "Started container web",
        count=1,
        first=NOW - dt.timedelta(minutes=5),
        last=NOW - dt.timedelta(minutes=5),
    )
    unhealthy = new_event(
        reference(POD),
        node,
        "Warning",
        "Unhealthy",
        "Readiness probe failed:\nconnection refused",
        count=7,
        first=NOW - dt.timedelta(minutes=4),
        last=NOW - dt.timedelta(seconds=3),
    )
    assert event_lines([started, unhealthy], NOW) == [
        "Events:",
        "  Type     Reason     Age              From          Message",
        "  ----     ------     ----             ----          -------",
        "  Normal   Started    5m               node, node-a  Started container web",
        "  Warning  Unhealthy  3s (x7 over 4m)  node, node-a  Readiness probe failed: "
        "connection refused",
    ]
