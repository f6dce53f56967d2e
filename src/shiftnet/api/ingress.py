"""networking.k8s.io/v1 Ingress and IngressClass, in Kubernetes' shape.

Charts and manifests written for Kubernetes carry Ingresses; the master's
ingress-to-route controller turns the ones of shiftnet's class into Routes
(:mod:`shiftnet.master.ingress_model`). Pure: no I/O.
"""

from __future__ import annotations

from pydantic import Field

from shiftnet.api.base import Resource, Wire

PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
# The legacy class annotation; when present it wins over spec.ingressClassName.
CLASS_ANNOTATION = "kubernetes.io/ingress.class"
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
PARAMETER_SCOPES = ("Cluster", "Namespace")


class ServiceBackendPort(Wire):
    """A port of the backend Service, by name or by number (one of them)."""

    name: str | None = Field(None, description="The Service port's name.")
    number: int | None = Field(None, description="The Service port's number (1-65535).")


class IngressServiceBackend(Wire):
    """A Service in the Ingress's namespace and one of its ports."""

    name: str = Field("", description="The Service's name.")
    port: ServiceBackendPort = Field(
        default_factory=ServiceBackendPort, description="The Service port to send traffic to."
    )


class TypedLocalObjectReference(Wire):
    """Another object in the Ingress's namespace (a non-Service backend)."""

    api_group: str | None = Field(None, description="The object's API group.")
    kind: str = Field("", description="The object's kind.")
    name: str = Field("", description="The object's name.")


class IngressBackend(Wire):
    """Where matching requests go: a Service (shiftnet's routes serve only Services)."""

    service: IngressServiceBackend | None = Field(None, description="A Service and its port.")
    resource: TypedLocalObjectReference | None = Field(
        None, description="Another kind of object; not served by shiftnet's routes."
    )


class HTTPIngressPath(Wire):
    """One path of a rule and the backend its requests go to."""

    path: str = Field(
        "", description="The request path to match; must begin with / (any path when empty)."
    )
    path_type: str | None = Field(
        None,
        description="How path matches. Prefix: by '/'-separated segments. Exact: the whole "
        "path (shiftnet's routes cannot serve it). ImplementationSpecific: as a route path "
        "prefix.",
        json_schema_extra={"enum": list(PATH_TYPES)},
    )
    backend: IngressBackend = Field(
        default_factory=IngressBackend, description="Where the matching requests go."
    )


class HTTPIngressRuleValue(Wire):
    paths: list[HTTPIngressPath] = Field(
        default_factory=list, description="The paths of the rule's host, each with a backend."
    )


class IngressRule(Wire):
    """A host and the paths served under it."""

    host: str = Field(
        "",
        description="The DNS name the rule answers on; '*.' in front serves every name one "
        "label below. Routes need a host: a rule without one gets no route.",
    )
    http: HTTPIngressRuleValue | None = Field(None, description="The rule's paths.")


class IngressTLS(Wire):
    """Hosts served over TLS and the kubernetes.io/tls Secret holding their certificate."""

    hosts: list[str] = Field(default_factory=list, description="The hosts the certificate is for.")
    secret_name: str = Field(
        "", description="The Secret (type kubernetes.io/tls) with tls.crt and tls.key."
    )


class IngressSpec(Wire):
    ingress_class_name: str | None = Field(
        None, description="The IngressClass that serves this Ingress."
    )
    default_backend: IngressBackend | None = Field(
        None,
        description="Where requests that match no rule go. Like OpenShift, shiftnet makes no "
        "route for it.",
    )
    tls: list[IngressTLS] = Field(default_factory=list, description="TLS for some hosts.")
    rules: list[IngressRule] = Field(default_factory=list, description="Hosts and their paths.")


class IngressPortStatus(Wire):
    port: int = 0
    protocol: str = "TCP"
    error: str | None = None


class IngressLoadBalancerIngress(Wire):
    """One address the Ingress is reachable through."""

    ip: str | None = None
    hostname: str | None = None
    ports: list[IngressPortStatus] | None = None


class IngressLoadBalancerStatus(Wire):
    ingress: list[IngressLoadBalancerIngress] = Field(default_factory=list)


class IngressStatus(Wire):
    load_balancer: IngressLoadBalancerStatus = Field(
        default_factory=IngressLoadBalancerStatus,
        description="The routers that admitted this Ingress's routes (their canonical names).",
    )


class Ingress(Resource):
    """HTTP(S) rules from Kubernetes manifests, served by shiftnet as Routes."""

    API_VERSION = "networking.k8s.io/v1"
    KIND = "Ingress"
    RESOURCE = "ingresses"
    SHORT_NAMES = ("ing",)

    spec: IngressSpec = Field(default_factory=IngressSpec)
    status: IngressStatus = Field(default_factory=IngressStatus)

    @property
    def class_name(self) -> str | None:
        """The class asked for: the legacy annotation wins over spec.ingressClassName."""
        annotated = self.metadata.annotations.get(CLASS_ANNOTATION)
        return annotated if annotated is not None else self.spec.ingress_class_name


class IngressClassParametersReference(Wire):
    api_group: str | None = Field(None, description="The parameters object's API group.")
    kind: str = Field("", description="The parameters object's kind.")
    name: str = Field("", description="The parameters object's name.")
    scope: str | None = Field(
        None,
        description="Cluster (default) or Namespace.",
        json_schema_extra={"enum": list(PARAMETER_SCOPES)},
    )
    namespace: str | None = Field(None, description="Its namespace, for scope Namespace.")


class IngressClassSpec(Wire):
    controller: str = Field(
        "",
        description="The controller that serves Ingresses of this class, a domain-prefixed "
        "path. shiftnet's is openshift.io/ingress-to-route. Cannot change.",
    )
    parameters: IngressClassParametersReference | None = Field(
        None, description="An object with the controller's settings for this class."
    )


class IngressClass(Resource):
    """Names the controller that serves Ingresses of a class (cluster-wide)."""

    API_VERSION = "networking.k8s.io/v1"
    KIND = "IngressClass"
    RESOURCE = "ingressclasses"
    NAMESPACED = False

    spec: IngressClassSpec = Field(default_factory=IngressClassSpec)

    @property
    def is_default(self) -> bool:
        """Marked as the class of Ingresses that name none (Kubernetes: exactly "true")."""
        return self.metadata.annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"
