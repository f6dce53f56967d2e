"""discovery.k8s.io/v1: EndpointSlice, the scalable form of a Service's endpoints.

As Kubernetes has it: one address family per slice (``addressType``), each
endpoint with ``ready``/``serving``/``terminating`` conditions, the Service
named by the ``kubernetes.io/service-name`` label. An unset condition means
what Kubernetes says it means: ``ready`` unset is ready, ``serving`` unset
follows ``ready``, ``terminating`` unset is not terminating.
"""

from __future__ import annotations

from pydantic import Field

from shiftnet.api.base import Resource, Wire
from shiftnet.api.core import ObjectReference

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
# managed-by of the slices copied from Endpoints a user wrote (Services without a selector)
MIRRORING_CONTROLLER = "endpointslicemirroring-controller.k8s.io"
ADDRESS_TYPES = ("IPv4", "IPv6", "FQDN")


class EndpointConditions(Wire):
    ready: bool | None = None
    serving: bool | None = None
    terminating: bool | None = None

    @property
    def is_ready(self) -> bool:
        return self.ready is not False

    @property
    def is_serving(self) -> bool:
        return self.serving if self.serving is not None else self.is_ready

    @property
    def is_terminating(self) -> bool:
        return self.terminating is True


class EndpointHints(Wire):
    for_zones: list[dict[str, str]] = Field(default_factory=list)


class Endpoint(Wire):
    addresses: list[str] = Field(default_factory=list)
    conditions: EndpointConditions = Field(default_factory=EndpointConditions)
    hostname: str | None = None
    target_ref: ObjectReference | None = None
    node_name: str | None = None
    zone: str | None = None
    hints: EndpointHints | None = None


class EndpointSlicePort(Wire):
    name: str | None = None
    protocol: str | None = "TCP"
    port: int | None = None
    app_protocol: str | None = None


class EndpointSlice(Resource):
    """A part (at most 100 endpoints when the master writes it) of one Service's endpoints."""

    API_VERSION = "discovery.k8s.io/v1"
    KIND = "EndpointSlice"
    RESOURCE = "endpointslices"

    address_type: str = ""
    endpoints: list[Endpoint] = Field(default_factory=list)
    ports: list[EndpointSlicePort] = Field(default_factory=list)

    @property
    def service_name(self) -> str | None:
        """The Service this slice belongs to (its ``kubernetes.io/service-name`` label)."""
        return self.metadata.labels.get(SERVICE_NAME_LABEL)
