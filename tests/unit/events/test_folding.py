"""Which recordings are one Event, how a repeat folds into it, and which Events expire."""

from __future__ import annotations

import datetime as dt

from shiftnet.api import Node, ObjectMeta, Route, RouteSpec, RouteTargetReference
from shiftnet.api.event import EventSource
from shiftnet.api.validation import errors
from shiftnet.events.folding import (
    about,
    by_last_seen,
    event_name,
    expired,
    folded,
    key_of,
    new_event,
    next_expiry,
    reference,
)

T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
ROUTER = EventSource(component="router", host="node-1")


def route(name: str = "web", uid: str = "u1") -> Route:
    return Route(
        metadata=ObjectMeta(name=name, namespace="shop", uid=uid),
        spec=RouteSpec(to=RouteTargetReference(name="web")),
    )


def test_the_key_is_object_source_type_reason_and_message() -> None:
    ref = reference(route())
    a = key_of(ref, ROUTER, "Warning", "HostAlreadyClaimed", "m")
    assert a == key_of(reference(route()), ROUTER, "Warning", "HostAlreadyClaimed", "m")
    assert a != key_of(ref, ROUTER, "Warning", "HostAlreadyClaimed", "other message")
    assert a != key_of(
        ref, EventSource(component="router", host="n2"), "Warning", "HostAlreadyClaimed", "m"
    )
    assert a != key_of(reference(route(uid="u2")), ROUTER, "Warning", "HostAlreadyClaimed", "m")
    assert a != key_of(ref, ROUTER, "Normal", "HostAlreadyClaimed", "m")


def test_a_new_event_is_valid_and_named_after_its_object() -> None:
    ev = new_event(
        reference(route()), ROUTER, "Warning", "HostAlreadyClaimed", "m", count=1, first=T0, last=T0
    )
    assert errors(ev) == []
    assert ev.metadata.namespace == "shop"
    assert ev.metadata.name == f"web.{int(T0.timestamp() * 1e9):x}"
    assert (ev.count, ev.first_timestamp, ev.last_timestamp) == (
        1,
        "2026-01-01T12:00:00Z",
        "2026-01-01T12:00:00Z",
    )
    assert ev.involved_object.api_version == "route.openshift.io/v1"


def test_a_cluster_wide_objects_event_goes_to_default() -> None:
    ev = new_event(
        reference(Node(metadata=ObjectMeta(name="n1"))),
        EventSource(component="master"),
        "Warning",
        "HostSubnetAllocationFailed",
        "m",
        count=1,
        first=T0,
        last=T0,
    )
    assert ev.metadata.namespace == "default" and errors(ev) == []


def test_long_names_reasons_and_messages_are_clipped_to_kubernetes_limits() -> None:
    assert len(event_name("a" * 253, T0)) == 253
    ev = new_event(
        reference(route()), ROUTER, "Warning", "R" * 200, "m" * 5000, count=1, first=T0, last=T0
    )
    assert errors(ev) == []
    assert len(ev.reason or "") == 128 and len(ev.message or "") == 1024


def test_folding_counts_and_moves_the_last_time_only() -> None:
    ev = new_event(
        reference(route()), ROUTER, "Warning", "Unhealthy", "m", count=2, first=T0, last=T0
    )
    later = T0 + dt.timedelta(seconds=30)
    folded(ev, 3, later)
    assert ev.count == 5
    assert ev.first_timestamp == "2026-01-01T12:00:00Z"
    assert ev.last_timestamp == "2026-01-01T12:00:30Z"


def test_expiry_counts_from_the_last_time_seen() -> None:
    old = new_event(reference(route("a")), ROUTER, "Warning", "X", "m", count=1, first=T0, last=T0)
    renewed = new_event(
        reference(route("b")),
        ROUTER,
        "Warning",
        "X",
        "m",
        count=9,
        first=T0,
        last=T0 + dt.timedelta(minutes=50),
    )
    now = T0 + dt.timedelta(minutes=61)
    assert expired([old, renewed], now, 3600) == [old]
    assert expired([old, renewed], now, 7200) == []


def test_about_picks_one_objects_events_newest_last() -> None:
    web = route("web", "u1")
    first = new_event(reference(web), ROUTER, "Warning", "A", "m", count=1, first=T0, last=T0)
    second = new_event(
        reference(web), ROUTER, "Warning", "B", "m", count=1, first=T0, last=T0 + dt.timedelta(1)
    )
    other = new_event(
        reference(route("api")), ROUTER, "Warning", "A", "m", count=1, first=T0, last=T0
    )
    before = new_event(
        reference(route("web", "old-uid")), ROUTER, "Warning", "A", "m", count=1, first=T0, last=T0
    )
    assert about([second, other, first, before], web) == [first, second]
    assert by_last_seen([second, first]) == [first, second]


def test_next_expiry_is_the_oldest_last_seen_plus_the_ttl() -> None:
    a = new_event(reference(route("a")), ROUTER, "Warning", "X", "m", count=1, first=T0, last=T0)
    later = T0 + dt.timedelta(minutes=5)
    b = new_event(reference(route("b")), ROUTER, "Warning", "X", "m", count=1, first=T0, last=later)
    assert next_expiry([b, a], 60) == T0 + dt.timedelta(seconds=60)
    assert next_expiry([], 60) is None
