"""API validation: the one gate every write passes (``Client.create``/``update``, ``apply``).

``errors(obj)`` lists every problem as a :class:`FieldError`; ``validate(obj)``
raises the first as :class:`InvalidObject`, rendered like Kubernetes:
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
from shiftnet.api.fielderrors import FieldError
from shiftnet.api.meta_validation import meta_errors
from shiftnet.api.network import ClusterNetwork, HostSubnet
from shiftnet.api.network_validation import cluster_network_errors, host_subnet_errors
from shiftnet.api.route import Route
from shiftnet.api.route_validation import route_spec_errors
from shiftnet.errors import InvalidObject

__all__ = ["FieldError", "errors", "validate"]


def _namespace_errors(ns: Namespace) -> list[FieldError]:
    return []


_SPEC_RULES: dict[type[Resource], Callable[[Any], list[FieldError]]] = {
    Namespace: _namespace_errors,
    Pod: pod_errors,
    Service: service_errors,
    Endpoints: endpoints_errors,
    EndpointSlice: endpoint_slice_errors,
    Node: node_errors,
    Route: route_spec_errors,
    ClusterNetwork: cluster_network_errors,
    HostSubnet: host_subnet_errors,
}


def errors(obj: Resource) -> list[FieldError]:
    """Every problem in ``obj`` (metadata first, then the kind's own rules)."""
    rule = _SPEC_RULES.get(type(obj))
    return meta_errors(obj) + (rule(obj) if rule is not None else [])


def validate(obj: Resource) -> None:
    """Raise :class:`InvalidObject` for the first problem in ``obj``; return when valid."""
    found = errors(obj)
    if found:
        first = found[0]
        raise InvalidObject(obj.KIND, obj.metadata.name, first.field, first.message)
