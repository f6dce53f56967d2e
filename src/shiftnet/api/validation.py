"""API validation: the one gate every write passes (``Client.create``/``update``, ``apply``).

``errors(obj)`` lists every problem of a new object as a :class:`FieldError`;
``update_errors(obj, old)`` those of an update (some kinds, as upstream, keep an
old value the update does not touch even when a new object could not have it);
``standing_errors(obj)`` those a stored object cannot have whatever its history.
``validate``/``validate_update`` raise the first as :class:`InvalidObject`,
rendered like Kubernetes:
``Route "web" is invalid: spec.host: Invalid value: "Foo.com": a lowercase ...``.
Status is not validated: it is written by shiftnet's own controllers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shiftnet.api.base import Resource
from shiftnet.api.core import Endpoints, Namespace, Node, Pod, Service
from shiftnet.api.core_validation import endpoints_errors, node_errors, pod_errors, service_errors
from shiftnet.api.discovery import EndpointSlice
from shiftnet.api.discovery_validation import endpoint_slice_errors
from shiftnet.api.event import Event
from shiftnet.api.event_validation import event_errors
from shiftnet.api.fielderrors import FieldError
from shiftnet.api.ingress import Ingress, IngressClass
from shiftnet.api.ingress_validation import (
    ingress_class_errors,
    ingress_class_update_errors,
    ingress_errors,
    ingress_standing_errors,
    ingress_update_errors,
)
from shiftnet.api.meta_validation import meta_errors
from shiftnet.api.network import ClusterNetwork, HostSubnet
from shiftnet.api.network_validation import cluster_network_errors, host_subnet_errors
from shiftnet.api.route import Route
from shiftnet.api.route_validation import (
    route_spec_errors,
    route_standing_errors,
    route_update_errors,
    route_warnings,
)
from shiftnet.api.secret import Secret
from shiftnet.api.secret_validation import secret_errors, secret_update_errors
from shiftnet.errors import InvalidObject

__all__ = [
    "FieldError",
    "errors",
    "has_update_rules",
    "standing_errors",
    "update_errors",
    "validate",
    "validate_standing",
    "validate_update",
    "warnings",
]


def _namespace_errors(ns: Namespace) -> list[FieldError]:
    return []


_SPEC_RULES: dict[type[Resource], Callable[[Any], list[FieldError]]] = {
    Namespace: _namespace_errors,
    Pod: pod_errors,
    Service: service_errors,
    Endpoints: endpoints_errors,
    EndpointSlice: endpoint_slice_errors,
    Node: node_errors,
    Event: event_errors,
    Secret: secret_errors,
    Route: route_spec_errors,
    Ingress: ingress_errors,
    IngressClass: ingress_class_errors,
    ClusterNetwork: cluster_network_errors,
    HostSubnet: host_subnet_errors,
}


SpecRule = Callable[[Any], list[FieldError]]
UpdateRule = Callable[[Any, Any], list[FieldError]]

# Kinds whose update keeps old values the create rules would refuse: (update, standing).
_UPDATE_RULES: dict[type[Resource], tuple[UpdateRule, SpecRule]] = {
    Route: (route_update_errors, route_standing_errors),
    Secret: (secret_update_errors, secret_errors),
    Ingress: (ingress_update_errors, ingress_standing_errors),
    IngressClass: (ingress_class_update_errors, ingress_class_errors),
}


def has_update_rules(cls: type[Resource]) -> bool:
    """Whether validating an update of ``cls`` needs the object it replaces."""
    return cls in _UPDATE_RULES


def errors(obj: Resource) -> list[FieldError]:
    """Every problem in ``obj`` (metadata first, then the kind's own rules)."""
    rule = _SPEC_RULES.get(type(obj))
    return meta_errors(obj) + (rule(obj) if rule is not None else [])


def update_errors(obj: Resource, old: Resource) -> list[FieldError]:
    """Every problem in ``obj`` as an update of the stored ``old``."""
    rules = _UPDATE_RULES.get(type(obj))
    if rules is None or type(old) is not type(obj):
        return errors(obj)
    return meta_errors(obj) + rules[0](obj, old)


def standing_errors(obj: Resource) -> list[FieldError]:
    """The problems ``obj`` has whether it is new or an update of anything."""
    rules = _UPDATE_RULES.get(type(obj))
    return errors(obj) if rules is None else meta_errors(obj) + rules[1](obj)


def warnings(obj: Resource) -> list[str]:
    """What upstream warns about an object it accepts (kubectl prints ``Warning: ...``)."""
    return route_warnings(obj) if isinstance(obj, Route) else []


def validate(obj: Resource) -> None:
    """Raise :class:`InvalidObject` for the first problem in ``obj``; return when valid."""
    _raise_first(obj, errors(obj))


def validate_update(obj: Resource, old: Resource) -> None:
    """:func:`validate` for an update of the stored ``old``."""
    _raise_first(obj, update_errors(obj, old))


def validate_standing(obj: Resource) -> None:
    """:func:`validate` with :func:`standing_errors`."""
    _raise_first(obj, standing_errors(obj))


def _raise_first(obj: Resource, found: list[FieldError]) -> None:
    if found:
        first = found[0]
        raise InvalidObject(obj.KIND, obj.metadata.name, first.field, first.message)
