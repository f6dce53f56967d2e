"""Resource types in Kubernetes shape, their validation, and label selectors. No I/O."""

from shiftnet.api.base import Condition, ObjectMeta, Resource, Wire
from shiftnet.api.core import (
    Container,
    ContainerPort,
    EndpointAddress,
    EndpointPort,
    Endpoints,
    EndpointSubset,
    EnvVar,
    Namespace,
    Node,
    NodeAddress,
    Pod,
    Probe,
    Service,
    ServicePort,
)
from shiftnet.api.discovery import (
    Endpoint,
    EndpointConditions,
    EndpointSlice,
    EndpointSlicePort,
)
from shiftnet.api.event import Event
from shiftnet.api.ingress import Ingress, IngressClass
from shiftnet.api.network import ClusterNetwork, ClusterNetworkEntry, HostSubnet
from shiftnet.api.registry import (
    KINDS,
    kind_for_kind,
    kind_for_name,
    kind_for_resource,
    parse_object,
)
from shiftnet.api.route import (
    Route,
    RouteIngress,
    RouteIngressCondition,
    RoutePort,
    RouteSpec,
    RouteTargetReference,
    TLSConfig,
)
from shiftnet.api.secret import Secret

__all__ = [
    "KINDS",
    "ClusterNetwork",
    "ClusterNetworkEntry",
    "Condition",
    "Container",
    "ContainerPort",
    "Endpoint",
    "EndpointAddress",
    "EndpointConditions",
    "EndpointPort",
    "EndpointSlice",
    "EndpointSlicePort",
    "EndpointSubset",
    "Endpoints",
    "EnvVar",
    "Event",
    "HostSubnet",
    "Ingress",
    "IngressClass",
    "Namespace",
    "Node",
    "NodeAddress",
    "ObjectMeta",
    "Pod",
    "Probe",
    "Resource",
    "Route",
    "RouteIngress",
    "RouteIngressCondition",
    "RoutePort",
    "RouteSpec",
    "RouteTargetReference",
    "Secret",
    "Service",
    "ServicePort",
    "TLSConfig",
    "Wire",
    "kind_for_kind",
    "kind_for_name",
    "kind_for_resource",
    "parse_object",
]
