"""v1 Event: what a component saw happen to one object, as Kubernetes' core Event.

Why the core/v1 shape (``involvedObject``, ``source``, ``count``,
``firstTimestamp``/``lastTimestamp``) and not events.k8s.io: it is what
``kubectl get events`` and ``kubectl describe`` read, and what OpenShift's
router and the kubelet write. Repeats of one event are folded into one object
whose ``count`` grows (see :mod:`shiftnet.events.folding`). Pure: no I/O.
"""

from __future__ import annotations

from pydantic import Field

from shiftnet.api.base import Resource, Wire
from shiftnet.api.core import ObjectReference

NORMAL = "Normal"
WARNING = "Warning"
EVENT_TYPES = (NORMAL, WARNING)

# Kubernetes' limits on the fields of an Event.
REASON_MAX = 128
MESSAGE_MAX = 1024
ACTION_MAX = 128
REPORTING_INSTANCE_MAX = 128


class EventSource(Wire):
    """Who recorded the event: the component and the machine it runs on."""

    component: str | None = Field(None, description="The component that recorded the event.")
    host: str | None = Field(None, description="The node or host the component runs on.")


class EventSeries(Wire):
    """events.k8s.io's repeat counter; read for ``kubectl`` compatibility, never written."""

    count: int | None = None
    last_observed_time: str | None = None


class Event(Resource):
    """One thing that happened to ``involvedObject``, with how often and when."""

    API_VERSION = "v1"
    KIND = "Event"
    RESOURCE = "events"
    SHORT_NAMES = ("ev",)

    involved_object: ObjectReference = Field(
        default_factory=ObjectReference,
        description="The object the event is about; its namespace is the event's namespace.",
    )
    reason: str | None = Field(
        None,
        description="Why it happened, one CamelCase word a program can match "
        "(HostAlreadyClaimed, Unhealthy, ...); at most 128 characters.",
    )
    message: str | None = Field(
        None, description="What happened, for a person; at most 1024 characters."
    )
    source: EventSource = Field(
        default_factory=EventSource, description="The component that recorded the event."
    )
    first_timestamp: str | None = Field(None, description="When it was first recorded (RFC 3339).")
    last_timestamp: str | None = Field(None, description="When it was last recorded (RFC 3339).")
    count: int | None = Field(None, description="How many times it was recorded.")
    type: str | None = Field(None, description="Normal or Warning.")
    event_time: str | None = Field(
        None, description="When it was first observed (events.k8s.io clients; RFC 3339, micro)."
    )
    series: EventSeries | None = Field(None, description="Repeats, as events.k8s.io counts them.")
    action: str | None = Field(None, description="What was done or failed about the object.")
    related: ObjectReference | None = Field(None, description="A second object involved.")
    reporting_component: str | None = Field(
        None, description="The controller that reported it (e.g. shiftnet.io/router)."
    )
    reporting_instance: str | None = Field(
        None, description="Which instance of that controller; at most 128 characters."
    )

    def times_seen(self) -> int:
        """How often it happened: ``series.count``, else ``count``, at least 1 (as kubectl)."""
        if self.series is not None and self.series.count:
            return self.series.count
        return self.count or 1

    def last_seen(self) -> str | None:
        """When it last happened: the series' time, ``lastTimestamp``, else the first time."""
        if self.series is not None and self.series.last_observed_time:
            return self.series.last_observed_time
        return self.last_timestamp or self.first_seen()

    def first_seen(self) -> str | None:
        return self.first_timestamp or self.event_time or self.metadata.creation_timestamp

    def source_text(self) -> str:
        """kubectl's FROM: the component, then the host after a comma when known."""
        component = self.source.component or self.reporting_component or ""
        host = self.source.host or self.reporting_instance or ""
        return f"{component}, {host}" if host else component

    def object_text(self) -> str:
        """kubectl's OBJECT: ``kind/name``, lower-case kind."""
        ref = self.involved_object
        kind = (ref.kind or "").lower()
        return f"{kind}/{ref.name}" if ref.name else kind
