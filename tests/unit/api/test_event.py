"""v1 Event: the kind as kubectl knows it, Kubernetes' field rules, kubectl's columns."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from shiftnet.api import Event, kind_for_name, parse_object
from shiftnet.api.columns import cells, columns_for
from shiftnet.api.validation import errors
from shiftnet.errors import InvalidObject

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def raw(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.18a1", "namespace": "shop"},
        "involvedObject": {
            "kind": "Route",
            "apiVersion": "route.openshift.io/v1",
            "namespace": "shop",
            "name": "web",
            "uid": "u1",
        },
        "reason": "HostAlreadyClaimed",
        "message": "route web already exposes www.example.com and is older",
        "source": {"component": "router", "host": "node-1"},
        "firstTimestamp": "2026-01-01T11:50:00Z",
        "lastTimestamp": "2026-01-01T11:59:00Z",
        "count": 4,
        "type": "Warning",
    }
    doc.update(over)
    return doc


def event(**over: Any) -> Event:
    obj = parse_object(raw(**over))
    assert isinstance(obj, Event)
    return obj


def test_event_names_and_short_name() -> None:
    for name in ("ev", "event", "events", "Events"):
        assert kind_for_name(name) is Event
    assert Event.NAMESPACED and Event.API_VERSION == "v1"


def test_a_valid_event_round_trips() -> None:
    ev = event()
    assert errors(ev) == []
    out = ev.to_dict()
    out["metadata"] = {k: v for k, v in out["metadata"].items() if v}
    assert out == raw()


@pytest.mark.parametrize(
    ("over", "message"),
    [
        (
            {"involvedObject": {"kind": "Route", "namespace": "other", "name": "web"}},
            'involvedObject.namespace: Invalid value: "other": does not match event.namespace',
        ),
        (
            {"involvedObject": {"kind": "Node", "name": "n1"}},
            'involvedObject.namespace: Invalid value: "": does not match event.namespace',
        ),
        ({"type": "Error"}, 'type: Unsupported value: "Error": supported values: '),
        ({"reason": "R" * 129}, 'reason: Invalid value: "": can have at most 128 characters'),
        ({"message": "m" * 1025}, 'message: Invalid value: "": can have at most 1024 characters'),
        ({"count": -1}, "count: Invalid value: -1: must be greater than or equal to 0"),
        (
            {"eventTime": "2026-01-01T11:50:00.000000Z"},
            "reportingComponent: Required value",
        ),
    ],
)
def test_refused_events_name_the_field(over: dict[str, Any], message: str) -> None:
    found = errors(event(**over))
    assert found, over
    assert str(found[0]).startswith(message)


def test_a_cluster_wide_objects_event_lives_in_default() -> None:
    ev = event(
        metadata={"name": "n1.1", "namespace": "default"},
        involvedObject={"kind": "Node", "name": "n1"},
    )
    assert errors(ev) == []


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(InvalidObject, match="spec: unknown field"):
        parse_object(raw(spec={}))


def test_columns_are_kubectls() -> None:
    ev = event()
    plain = columns_for(Event, wide=False)
    assert [c.header for c in plain] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert cells(plain, ev, NOW) == [
        "60s",
        "Warning",
        "HostAlreadyClaimed",
        "route/web",
        "route web already exposes www.example.com and is older",
    ]
    wide = columns_for(Event)
    row = dict(zip([c.header for c in wide], cells(wide, ev, NOW), strict=True))
    assert row["SOURCE"] == "router, node-1"
    assert row["FIRST SEEN"] == "10m"
    assert row["COUNT"] == "4"
    assert row["NAME"] == "web.18a1"
