"""Which events are the same, how repeats fold into one Event, and which have expired.

Why fold: a probe that fails every second, or a route refused on every sync,
would otherwise write a new object each time and bury everything else. As
client-go's event correlator does, events with the same involved object,
source, type, reason and message are one Event whose ``count`` grows and whose
``lastTimestamp`` moves. Pure: the caller passes the time.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from shiftnet.api.ages import parse_timestamp
from shiftnet.api.base import ObjectMeta, Resource
from shiftnet.api.core import ObjectReference
from shiftnet.api.event import MESSAGE_MAX, REASON_MAX, Event, EventSource

NAME_MAX = 253  # a DNS subdomain
DEFAULT_TTL = 3600.0  # kube-apiserver's --event-ttl: one hour


@dataclass(frozen=True)
class EventKey:
    """What makes two recordings the same event."""

    kind: str
    namespace: str
    name: str
    uid: str
    field_path: str
    component: str
    host: str
    type: str
    reason: str
    message: str


def reference(obj: Resource, field_path: str | None = None) -> ObjectReference:
    """The ``involvedObject`` that names ``obj``."""
    m = obj.metadata
    return ObjectReference(
        kind=obj.KIND,
        api_version=obj.API_VERSION,
        namespace=m.namespace if obj.NAMESPACED else None,
        name=m.name,
        uid=m.uid,
        resource_version=m.resource_version,
        field_path=field_path,
    )


def named(cls: type[Resource], namespace: str | None, name: str) -> ObjectReference:
    """The ``involvedObject`` of an object known only by name (no uid)."""
    return ObjectReference(
        kind=cls.KIND,
        api_version=cls.API_VERSION,
        namespace=namespace if cls.NAMESPACED else None,
        name=name,
    )


def key_of(
    ref: ObjectReference, source: EventSource, type_: str, reason: str, message: str
) -> EventKey:
    return EventKey(
        kind=ref.kind or "",
        namespace=ref.namespace or "",
        name=ref.name or "",
        uid=ref.uid or "",
        field_path=ref.field_path or "",
        component=source.component or "",
        host=source.host or "",
        type=type_,
        reason=reason,
        message=message,
    )


def rfc3339(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_name(object_name: str, when: dt.datetime) -> str:
    """``<object>.<hex nanoseconds>``, the name client-go gives an event."""
    suffix = f".{int(when.timestamp() * 1_000_000_000):x}"
    return object_name[: NAME_MAX - len(suffix)] + suffix


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def new_event(
    ref: ObjectReference,
    source: EventSource,
    type_: str,
    reason: str,
    message: str,
    *,
    count: int,
    first: dt.datetime,
    last: dt.datetime,
) -> Event:
    """A new Event for ``count`` recordings between ``first`` and ``last``; its
    namespace is the object's, ``default`` for a cluster-wide object (as upstream)."""
    ref = ref.model_copy()
    return Event(
        metadata=ObjectMeta(
            name=event_name(ref.name or (ref.kind or "event").lower(), first),
            namespace=ref.namespace or "default",
        ),
        involved_object=ref,
        reason=clip(reason, REASON_MAX),
        message=clip(message, MESSAGE_MAX),
        source=source.model_copy(),
        first_timestamp=rfc3339(first),
        last_timestamp=rfc3339(last),
        count=count,
        type=type_,
        reporting_component=source.component,
        reporting_instance=source.host or None,
    )


def folded(stored: Event, count: int, last: dt.datetime) -> Event:
    """``stored`` seen ``count`` more times, the last at ``last``."""
    stored.count = (stored.count or 1) + count
    stored.last_timestamp = rfc3339(last)
    return stored


def expired(events: Iterable[Event], now: dt.datetime, ttl: float) -> list[Event]:
    """The events last seen more than ``ttl`` seconds before ``now`` (kube-apiserver's
    ``--event-ttl`` counts from an event's last write)."""
    out: list[Event] = []
    for ev in events:
        seen = parse_timestamp(ev.last_seen())
        if seen is not None and (now - seen).total_seconds() > ttl:
            out.append(ev)
    return out


def next_expiry(events: Iterable[Event], ttl: float) -> dt.datetime | None:
    """When the first of ``events`` expires; None when there are none."""
    seen = [parse_timestamp(ev.last_seen()) for ev in events]
    known = [t for t in seen if t is not None]
    return min(known) + dt.timedelta(seconds=ttl) if known else None


def by_last_seen(events: Iterable[Event]) -> list[Event]:
    """Oldest first, the newest last (where a reader's eye ends), then by name."""
    return sorted(events, key=lambda e: (e.last_seen() or "", e.metadata.name))


def about(events: Iterable[Event], obj: Resource) -> list[Event]:
    """The events whose involved object is ``obj`` (same uid when both have one)."""
    out = []
    for ev in events:
        ref = ev.involved_object
        if ref.kind != obj.KIND or ref.name != obj.metadata.name:
            continue
        if obj.NAMESPACED and (ref.namespace or "") != (obj.metadata.namespace or ""):
            continue
        if ref.uid and obj.metadata.uid and ref.uid != obj.metadata.uid:
            continue
        out.append(ev)
    return by_last_seen(out)
