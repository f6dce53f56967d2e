"""v1 Event rules as Kubernetes' ``ValidateEventCreate`` for core/v1 clients.

An event lives in its object's namespace (a cluster-wide object's events in
``default``); ``type`` is Normal or Warning; reason, message and the
reporting fields have Kubernetes' length limits. An event written with
``eventTime`` (events.k8s.io style) must also name its reporting component,
instance, action and reason, as upstream asks.
"""

from __future__ import annotations

from shiftnet.api.event import (
    ACTION_MAX,
    EVENT_TYPES,
    MESSAGE_MAX,
    REASON_MAX,
    REPORTING_INSTANCE_MAX,
    Event,
)
from shiftnet.api.fielderrors import FieldError, invalid, not_supported, required
from shiftnet.api.names import qualified_name_errors

_NAMESPACE_MISMATCH = "does not match event.namespace"


def _at_most(path: str, value: str | None, limit: int) -> list[FieldError]:
    if value is not None and len(value) > limit:
        return [invalid(path, "", f"can have at most {limit} characters")]
    return []


def event_errors(event: Event) -> list[FieldError]:
    """Every problem of an Event."""
    out: list[FieldError] = []
    ns = event.metadata.namespace or ""
    ref_ns = event.involved_object.namespace or ""
    if ref_ns:
        mismatch = ref_ns != ns
    else:  # a cluster-wide object's events live in "default" (or kube-system, new style)
        mismatch = ns not in (
            ("", "default", "kube-system") if event.event_time else ("", "default")
        )
    if mismatch:
        out.append(invalid("involvedObject.namespace", ref_ns, _NAMESPACE_MISMATCH))
    if event.type and event.type not in EVENT_TYPES:
        out.append(not_supported("type", event.type, EVENT_TYPES))
    if event.count is not None and event.count < 0:
        out.append(invalid("count", event.count, "must be greater than or equal to 0"))
    if event.event_time:
        component = event.reporting_component or ""
        if not component:
            out.append(required("reportingComponent"))
        else:
            out += [
                invalid("reportingComponent", component, m)
                for m in qualified_name_errors(component)[:1]
            ]
        if not event.reporting_instance:
            out.append(required("reportingInstance"))
        if not event.action:
            out.append(required("action"))
        if not event.reason:
            out.append(required("reason"))
    out += _at_most("reportingInstance", event.reporting_instance, REPORTING_INSTANCE_MAX)
    out += _at_most("action", event.action, ACTION_MAX)
    out += _at_most("reason", event.reason, REASON_MAX)
    out += _at_most("message", event.message, MESSAGE_MAX)
    return out
