"""Core v1 kinds: Namespace, Pod, Service, Endpoints, Node."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from shiftnet.api.base import Condition, Resource, Wire

# ---------------------------------------------------------------- Namespace


NAME_LABEL = "kubernetes.io/metadata.name"


class NamespaceSpec(Wire):
    finalizers: list[str] = Field(default_factory=list)


class NamespaceStatus(Wire):
    phase: str = "Active"


class Namespace(Resource):
    API_VERSION = "v1"
    KIND = "Namespace"
    RESOURCE = "namespaces"
    NAMESPACED = False
    SHORT_NAMES = ("ns",)

    spec: NamespaceSpec = Field(default_factory=NamespaceSpec)
    status: NamespaceStatus = Field(default_factory=NamespaceStatus)

    @model_validator(mode="after")
    def _default_name_label(self) -> Namespace:
        """Kubernetes labels every named Namespace ``kubernetes.io/metadata.name: <name>``
        (and keeps it so), which namespace selectors rely on."""
        if self.metadata.name:
            self.metadata.labels = dict(self.metadata.labels or {})
            self.metadata.labels[NAME_LABEL] = self.metadata.name
        return self


# ---------------------------------------------------------------- Pod


class EnvVar(Wire):
    name: str
    value: str = ""


class ContainerPort(Wire):
    name: str | None = None
    container_port: int
    protocol: str = "TCP"
    host_port: int | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")


class ExecAction(Wire):
    command: list[str] = Field(default_factory=list)


class HTTPGetAction(Wire):
    path: str = "/"
    port: int | str
    host: str | None = None
    scheme: str = "HTTP"


class TCPSocketAction(Wire):
    port: int | str
    host: str | None = None


class Probe(Wire):
    exec_: ExecAction | None = Field(default=None, alias="exec")
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    initial_delay_seconds: int = 0
    period_seconds: int = 10
    timeout_seconds: int = 1
    success_threshold: int = 1
    failure_threshold: int = 3


class ResourceRequirements(Wire):
    """Requests and limits by resource name (``cpu: 100m``, ``memory: 64Mi``): kept, not
    enforced (a pod is a process of its node)."""

    limits: dict[str, str | int] | None = None
    requests: dict[str, str | int] | None = None


class LocalObjectReference(Wire):
    name: str = ""


class Toleration(Wire):
    """A taint this pod tolerates: kept, not acted on (nodes here carry no taints)."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class Container(Wire):
    name: str
    image: str | None = None
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    working_dir: str | None = None
    env: list[EnvVar] = Field(default_factory=list)
    ports: list[ContainerPort] = Field(default_factory=list)
    readiness_probe: Probe | None = None
    liveness_probe: Probe | None = None
    # Kept as written and not acted on: nothing here pulls images or enforces resources.
    image_pull_policy: str | None = None
    resources: ResourceRequirements | None = None
    termination_message_path: str | None = None
    termination_message_policy: str | None = None


class PodDNSConfigOption(Wire):
    name: str = ""
    value: str | None = None


class PodDNSConfig(Wire):
    """Resolver settings merged into what ``dnsPolicy`` gives (all of it for ``None``)."""

    nameservers: list[str] = Field(default_factory=list)
    searches: list[str] = Field(default_factory=list)
    options: list[PodDNSConfigOption] = Field(default_factory=list)


class HostAlias(Wire):
    """One extra line of the pod's hosts file."""

    ip: str = ""
    hostnames: list[str] = Field(default_factory=list)


DNS_CLUSTER_FIRST = "ClusterFirst"
DNS_CLUSTER_FIRST_WITH_HOST_NET = "ClusterFirstWithHostNet"
DNS_DEFAULT = "Default"
DNS_NONE = "None"


class PodSpec(Wire):
    containers: list[Container] = Field(default_factory=list)
    node_name: str | None = None
    restart_policy: str = "Always"
    termination_grace_period_seconds: int = 30
    hostname: str | None = None
    subdomain: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    # unset means ClusterFirst, Kubernetes' default
    dns_policy: str | None = None
    dns_config: PodDNSConfig | None = Field(default=None, alias="dnsConfig")
    host_aliases: list[HostAlias] | None = None
    # Kept as written and not acted on, as on a one-node cluster without service
    # account tokens, taints or a scheduler of its own (docs/api.md, "Pod").
    service_account_name: str | None = None
    service_account: str | None = None
    automount_service_account_token: bool | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None
    tolerations: list[Toleration] | None = None
    priority_class_name: str | None = None
    scheduler_name: str | None = None

    @property
    def effective_dns_policy(self) -> str:
        return self.dns_policy or DNS_CLUSTER_FIRST


class ContainerStatus(Wire):
    name: str
    ready: bool = False
    restart_count: int = 0
    started: bool | None = None
    state: dict[str, dict[str, str | int]] = Field(default_factory=dict)


class PodStatus(Wire):
    phase: str = "Pending"
    conditions: list[Condition] = Field(default_factory=list)
    message: str | None = None
    reason: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    pod_ip: str | None = Field(default=None, alias="podIP")
    start_time: str | None = None
    container_statuses: list[ContainerStatus] = Field(default_factory=list)


class Pod(Resource):
    API_VERSION = "v1"
    KIND = "Pod"
    RESOURCE = "pods"
    SHORT_NAMES = ("po",)

    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    @property
    def ready(self) -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)


# ---------------------------------------------------------------- Service


class ClientIPConfig(Wire):
    timeout_seconds: int = 10800


class SessionAffinityConfig(Wire):
    client_ip: ClientIPConfig | None = Field(default=None, alias="clientIP")


class ServicePort(Wire):
    name: str | None = None
    protocol: str = "TCP"
    port: int
    target_port: int | str | None = None
    node_port: int | None = None

    @model_validator(mode="after")
    def _default_target_port(self) -> ServicePort:
        """Kubernetes fills ``targetPort`` with ``port`` when it is unset, 0 or empty, so
        ``-o yaml`` shows it as a real cluster does."""
        if self.target_port in (None, "", 0):
            self.target_port = self.port
        return self

    @property
    def effective_target_port(self) -> int | str:
        """Kubernetes defaults targetPort to port."""
        return self.port if self.target_port in (None, "", 0) else self.target_port


IPV4 = "IPv4"
IPV6 = "IPv6"
SINGLE_STACK = "SingleStack"
PREFER_DUAL_STACK = "PreferDualStack"
REQUIRE_DUAL_STACK = "RequireDualStack"


class ServiceSpec(Wire):
    type: str = "ClusterIP"
    selector: dict[str, str] | None = None
    ports: list[ServicePort] = Field(default_factory=list)
    cluster_ip: str | None = Field(default=None, alias="clusterIP")
    # Dual-stack, as Kubernetes has them: clusterIPs[0] is clusterIP, the second (if
    # any) is of the other family; ipFamilies names each one's family in the same order.
    cluster_ips: list[str] | None = Field(default=None, alias="clusterIPs")
    ip_families: list[str] | None = None
    ip_family_policy: str | None = None
    external_ips: list[str] = Field(default_factory=list, alias="externalIPs")
    external_name: str | None = None
    session_affinity: str = "None"
    session_affinity_config: SessionAffinityConfig | None = None
    publish_not_ready_addresses: bool | None = None
    # Where external traffic (node ports, external IPs, load-balancer addresses) and
    # cluster traffic may go: "Cluster" (any ready endpoint) or "Local" (this node's).
    external_traffic_policy: str | None = None
    internal_traffic_policy: str | None = None
    health_check_node_port: int | None = None
    allocate_load_balancer_node_ports: bool | None = None
    load_balancer_ip: str | None = Field(default=None, alias="loadBalancerIP")
    load_balancer_class: str | None = None

    @field_validator("publish_not_ready_addresses")
    @classmethod
    def _false_is_unset(cls, value: bool | None) -> bool | None:
        """Left out when false, as Kubernetes' JSON leaves a false ``omitempty`` bool."""
        return value or None

    @model_validator(mode="after")
    def _default_affinity_config(self) -> ServiceSpec:
        """Kubernetes fills ``clientIP.timeoutSeconds: 10800`` when affinity is ClientIP."""
        if self.session_affinity == "ClientIP":
            if self.session_affinity_config is None:
                self.session_affinity_config = SessionAffinityConfig()
            if self.session_affinity_config.client_ip is None:
                self.session_affinity_config.client_ip = ClientIPConfig()
        return self

    @property
    def affinity_timeout(self) -> int:
        """ClientIP affinity timeout in seconds (Kubernetes default 10800)."""
        cfg = self.session_affinity_config
        if cfg and cfg.client_ip:
            return cfg.client_ip.timeout_seconds
        return 10800

    @property
    def headless(self) -> bool:
        return self.cluster_ip == "None"

    @property
    def effective_cluster_ips(self) -> list[str]:
        """Every ClusterIP, primary first: ``clusterIPs``, or ``[clusterIP]`` as an old
        client (or a Service stored before dual-stack) writes it; ``[]`` when unset."""
        if self.cluster_ips:
            return list(self.cluster_ips)
        return [self.cluster_ip] if self.cluster_ip else []


class LoadBalancerStatus(Wire):
    ingress: list[dict[str, str]] = Field(default_factory=list)


class ServiceStatus(Wire):
    load_balancer: LoadBalancerStatus = Field(default_factory=LoadBalancerStatus)


class Service(Resource):
    API_VERSION = "v1"
    KIND = "Service"
    RESOURCE = "services"
    SHORT_NAMES = ("svc",)

    spec: ServiceSpec = Field(default_factory=ServiceSpec)
    status: ServiceStatus = Field(default_factory=ServiceStatus)


# ---------------------------------------------------------------- Endpoints


class ObjectReference(Wire):
    """Enough to find one object: an endpoint's pod, an event's involved object."""

    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class EndpointAddress(Wire):
    ip: str
    hostname: str | None = None
    node_name: str | None = None
    target_ref: ObjectReference | None = None


class EndpointPort(Wire):
    name: str | None = None
    port: int
    protocol: str = "TCP"


class EndpointSubset(Wire):
    addresses: list[EndpointAddress] = Field(default_factory=list)
    not_ready_addresses: list[EndpointAddress] = Field(default_factory=list)
    ports: list[EndpointPort] = Field(default_factory=list)


class Endpoints(Resource):
    API_VERSION = "v1"
    KIND = "Endpoints"
    RESOURCE = "endpoints"
    SHORT_NAMES = ("ep",)

    subsets: list[EndpointSubset] = Field(default_factory=list)


# ---------------------------------------------------------------- Node


class NodeAddress(Wire):
    type: str
    address: str


class NodeSpec(Wire):
    pod_cidr: str | None = Field(default=None, alias="podCIDR")
    unschedulable: bool = False


class NodeStatus(Wire):
    addresses: list[NodeAddress] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)


class Node(Resource):
    API_VERSION = "v1"
    KIND = "Node"
    RESOURCE = "nodes"
    NAMESPACED = False
    SHORT_NAMES = ("no",)

    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def ready(self) -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)

    @property
    def internal_ip(self) -> str | None:
        for a in self.status.addresses:
            if a.type == "InternalIP":
                return a.address
        return None


CORE_KINDS: tuple[type[Resource], ...] = (Namespace, Pod, Service, Endpoints, Node)
