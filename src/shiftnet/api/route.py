"""route.openshift.io/v1 Route, with OpenShift's defaults."""

from __future__ import annotations

from pydantic import Field, field_validator

from shiftnet.api.base import Resource, Wire


class RouteTargetReference(Wire):
    """A backend of a route: a service and the share of requests it gets."""

    kind: str = Field("Service", description="The kind of the backend; only Service is allowed.")
    name: str = Field(description="The name of the service in the route's namespace.")
    weight: int | None = Field(
        100,
        description="The backend's share of requests relative to the other backends, 0 to 256 "
        "(default 100); a backend with weight 0 gets none.",
    )

    @field_validator("kind")
    @classmethod
    def _default_kind(cls, value: str) -> str:
        """Upstream defaults an empty kind to Service."""
        return value or "Service"


class RoutePort(Wire):
    """Which port of the service's endpoints the router sends traffic to."""

    target_port: int | str = Field(
        description="The target port on the pods, by number or by the service port's name."
    )


class LocalObjectReference(Wire):
    """An object in the route's own namespace, named."""

    name: str = Field("", description="The name of the object.")


class TLSConfig(Wire):
    """How the router secures a route with TLS and where the encryption ends."""

    termination: str = Field(
        description="Where TLS ends. edge: at the router, which speaks plain HTTP to the pods. "
        "passthrough: the router forwards the encrypted stream untouched, choosing the backend "
        "by SNI, and the pods end TLS. reencrypt: the router ends TLS and opens a new TLS "
        "connection to the pods.",
        json_schema_extra={"enum": ["edge", "passthrough", "reencrypt"]},
    )
    certificate: str | None = Field(
        None,
        description="The PEM certificate the router presents for the route's host, optionally "
        "followed by its intermediate certificates. Not allowed with passthrough.",
    )
    key: str | None = Field(
        None,
        description="The PEM private key of the certificate. Not allowed with passthrough.",
    )
    ca_certificate: str | None = Field(
        None,
        description="PEM CA certificates that complete the certificate's chain to a trusted "
        "root. Not allowed with passthrough.",
    )
    destination_ca_certificate: str | None = Field(
        default=None,
        alias="destinationCACertificate",
        description="For reencrypt: the PEM CA certificate the router trusts when it checks "
        "the pods' certificates. Without it the router uses the cluster's service CA.",
    )
    external_certificate: LocalObjectReference | None = Field(
        None,
        description="A kubernetes.io/tls Secret in the route's namespace whose tls.crt and "
        "tls.key the router serves instead of certificate and key (one serving certificate, "
        "not a chain). Not allowed with certificate, nor with passthrough. A Secret that "
        "changes is served within a second, without a reload.",
    )
    insecure_edge_termination_policy: str | None = Field(
        None,
        description="What the router does with plain-HTTP requests for a TLS route. None (or "
        "empty): they are refused. Allow: they are served over HTTP too (edge and reencrypt "
        "only). Redirect: they are redirected to HTTPS.",
        json_schema_extra={"enum": ["", "None", "Allow", "Redirect"]},
    )


class RouteSetHTTPHeader(Wire):
    """The value a ``Set`` action gives its header."""

    value: str = Field(
        "",
        description="The header's value, 1 to 16384 characters: visible text, where %% is a "
        "literal % and %[...] inserts a value HAProxy fetches. Requests may use req.hdr(<name>) "
        "and ssl_c_der, responses res.hdr(<name>) and ssl_c_der, each optionally followed by the "
        "converters lower and base64 (e.g. %[req.hdr(Host),lower], %{+Q}[ssl_c_der,base64]).",
    )


class RouteHTTPHeaderActionUnion(Wire):
    """What to do with one header: set it (added or replaced) or delete it."""

    type: str = Field(
        "",
        description="Set: the header gets the value of set (added, or replaced when present). "
        "Delete: the header is removed.",
        json_schema_extra={"enum": ["Set", "Delete"]},
    )
    set: RouteSetHTTPHeader | None = Field(
        None, description="The value to set; required when type is Set, forbidden otherwise."
    )


class RouteHTTPHeader(Wire):
    """One header action: the header's name and what to do with it."""

    name: str = Field(
        "",
        description="The header's name, an HTTP token of at most 255 characters (letters, digits "
        "and -!#$%&'*+.^_`|~), unique in its list. Strict-Transport-Security, Proxy, Cookie and "
        "Set-Cookie cannot be changed this way.",
    )
    action: RouteHTTPHeaderActionUnion = Field(
        default_factory=RouteHTTPHeaderActionUnion, description="What to do with the header."
    )


class RouteHTTPHeaderActions(Wire):
    """Header actions on the requests a route forwards and on the responses it returns."""

    response: list[RouteHTTPHeader] = Field(
        default_factory=list,
        description="Up to 20 actions on response headers, applied in order before the "
        "router-wide response actions.",
    )
    request: list[RouteHTTPHeader] = Field(
        default_factory=list,
        description="Up to 20 actions on request headers, applied in order after the router-wide "
        "request actions.",
    )


class RouteHTTPHeaders(Wire):
    """How the router changes HTTP headers for a route (not for passthrough routes)."""

    actions: RouteHTTPHeaderActions = Field(
        default_factory=RouteHTTPHeaderActions,
        description="Set and Delete actions on request and response headers.",
    )


class RouteSpec(Wire):
    """What a route exposes: a host and path, the services behind them, and TLS."""

    host: str = Field(
        "",
        description="The DNS name the route answers on, a lowercase RFC 1123 subdomain. When "
        "empty the router may generate one.",
    )
    subdomain: str | None = Field(
        None,
        description="A DNS subdomain the router combines with its own domain to form the host, "
        "used when host is empty.",
    )
    path: str = Field(
        "",
        description="A path prefix: only requests whose path starts with it are sent to this "
        "route. Must begin with /. Not allowed with passthrough termination.",
    )
    to: RouteTargetReference = Field(
        description="The service that receives the route's traffic (with alternateBackends, "
        "its share by weight)."
    )
    alternate_backends: list[RouteTargetReference] = Field(
        default_factory=list,
        description="Up to 3 more services that share the route's traffic by weight.",
    )
    port: RoutePort | None = Field(
        None,
        description="The port of the service's endpoints to use. When unset, every port of the "
        "service is served.",
    )
    tls: TLSConfig | None = Field(
        None, description="Serve the route over TLS, and how. When unset the route is plain HTTP."
    )
    wildcard_policy: str = Field(
        "None",
        description="Subdomain: the route also serves every host of its host's domain. None: "
        "only its own host.",
        json_schema_extra={"enum": ["None", "Subdomain"]},
    )
    http_headers: RouteHTTPHeaders | None = Field(
        None,
        description="Header actions for the route's requests and responses, on http, edge and "
        "reencrypt routes (not passthrough).",
    )


class RouteIngressCondition(Wire):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class RouteIngress(Wire):
    """One router's view of the route: whether it admitted it, and on which host."""

    host: str | None = Field(None, description="The host this router serves the route on.")
    router_name: str = Field(description="The name of the router that wrote this entry.")
    conditions: list[RouteIngressCondition] = Field(default_factory=list)
    wildcard_policy: str | None = None
    router_canonical_hostname: str | None = None


class RouteStatus(Wire):
    """What the routers did with a route."""

    ingress: list[RouteIngress] = Field(
        default_factory=list,
        description="One entry per router that considered the route, written by that router.",
    )


class Route(Resource):
    """Exposes a service at a host name, through the cluster's routers."""

    API_VERSION = "route.openshift.io/v1"
    KIND = "Route"
    RESOURCE = "routes"

    spec: RouteSpec = Field(description="What the route exposes and how.")
    status: RouteStatus = Field(
        default_factory=RouteStatus, description="What the routers did with the route; read-only."
    )

    @property
    def termination(self) -> str | None:
        return self.spec.tls.termination if self.spec.tls else None

    def backends(self) -> list[RouteTargetReference]:
        """spec.to then alternateBackends, in order."""
        return [self.spec.to, *self.spec.alternate_backends]
