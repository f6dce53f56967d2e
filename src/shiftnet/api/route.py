"""route.openshift.io/v1 Route, with OpenShift's defaults."""

from __future__ import annotations

from pydantic import Field, field_validator

from shiftnet.api.base import Resource, Wire


class RouteTargetReference(Wire):
    kind: str = "Service"
    name: str
    weight: int | None = 100

    @field_validator("kind")
    @classmethod
    def _default_kind(cls, value: str) -> str:
        """Upstream defaults an empty kind to Service."""
        return value or "Service"


class RoutePort(Wire):
    target_port: int | str


class TLSConfig(Wire):
    termination: str
    certificate: str | None = None
    key: str | None = None
    ca_certificate: str | None = None
    destination_ca_certificate: str | None = Field(default=None, alias="destinationCACertificate")
    insecure_edge_termination_policy: str | None = None


class RouteSpec(Wire):
    host: str = ""
    subdomain: str | None = None
    path: str = ""
    to: RouteTargetReference
    alternate_backends: list[RouteTargetReference] = Field(default_factory=list)
    port: RoutePort | None = None
    tls: TLSConfig | None = None
    wildcard_policy: str = "None"


class RouteIngressCondition(Wire):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class RouteIngress(Wire):
    host: str | None = None
    router_name: str
    conditions: list[RouteIngressCondition] = Field(default_factory=list)
    wildcard_policy: str | None = None
    router_canonical_hostname: str | None = None


class RouteStatus(Wire):
    ingress: list[RouteIngress] = Field(default_factory=list)


class Route(Resource):
    API_VERSION = "route.openshift.io/v1"
    KIND = "Route"
    RESOURCE = "routes"

    spec: RouteSpec
    status: RouteStatus = Field(default_factory=RouteStatus)

    @property
    def termination(self) -> str | None:
        return self.spec.tls.termination if self.spec.tls else None

    def backends(self) -> list[RouteTargetReference]:
        """spec.to then alternateBackends, in order."""
        return [self.spec.to, *self.spec.alternate_backends]
