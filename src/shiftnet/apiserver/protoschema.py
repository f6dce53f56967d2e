"""Which protobuf field number is which JSON field, for the kinds clients send as protobuf.

Pure data. The numbers are those of Kubernetes' ``generated.proto`` files
(``k8s.io/api/core/v1``, ``k8s.io/apimachinery/pkg/apis/meta/v1``,
``.../util/intstr``); the JSON names are the ones the same Go fields carry.
Only the kinds kubectl's generators and typed clients write to shiftnet are
here: Namespace (``kubectl create namespace``), Service (``kubectl create
service``), Secret (``kubectl create secret``), Ingress (``kubectl create
ingress``, ``k8s.io/api/networking/v1``), Pod (``kubectl debug --copy-to``)
and DeleteOptions (``kubectl drain``).

Every upstream field of those messages is listed, also the ones shiftnet's
models lack, so that such a field is named in the answer (``unknown field
"spec.volumes"``) and follows ``fieldValidation`` as it would in JSON. A
message whose inside shiftnet never reads (volumes, security contexts, ...)
is ``OPAQUE``: its field is named, its bytes are not decoded.

``pointer`` marks Go pointer fields (``*int64``, ``*Probe``): Go's protobuf
code writes every non-pointer field, even when it holds the zero value, so
a zero there means "not set" and is left out, while a pointer field is
written only when set and keeps its value even when that is 0 or empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Kind(Enum):
    STRING = "string"
    INT = "int"  # int32 and int64, as varints
    BOOL = "bool"
    MESSAGE = "message"
    STRING_MAP = "map<string,string>"
    QUANTITY_MAP = "map<string,Quantity>"  # JSON: the quantities' strings
    BYTES_MAP = "map<string,bytes>"  # JSON: base64 values (a Secret's data)
    TIME = "Time"  # meta/v1 Time: seconds since the epoch; empty means unset
    INT_OR_STRING = "IntOrString"
    FIELDS_V1 = "FieldsV1"  # meta/v1 FieldsV1: field 1 holds the JSON tree as bytes
    OPAQUE = "opaque"  # a message shiftnet has no model for: named, not decoded
    UNREAD = "unread"  # a field shiftnet has but does not take from protobuf


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    message: Message | None = None
    repeated: bool = False
    pointer: bool = False
    inline: bool = False  # an embedded struct: its fields belong to the parent in JSON


@dataclass(frozen=True)
class Message:
    name: str
    fields: dict[int, Field] = field(default_factory=dict)


def string(name: str, *, repeated: bool = False, pointer: bool = False) -> Field:
    return Field(name, Kind.STRING, repeated=repeated, pointer=pointer)


def integer(name: str, *, pointer: bool = False) -> Field:
    return Field(name, Kind.INT, pointer=pointer)


def boolean(name: str, *, pointer: bool = False) -> Field:
    return Field(name, Kind.BOOL, pointer=pointer)


def message(
    name: str, of: Message, *, repeated: bool = False, pointer: bool = False, inline: bool = False
) -> Field:
    return Field(name, Kind.MESSAGE, of, repeated=repeated, pointer=pointer, inline=inline)


def string_map(name: str) -> Field:
    return Field(name, Kind.STRING_MAP)


def quantity_map(name: str) -> Field:
    return Field(name, Kind.QUANTITY_MAP)


def bytes_map(name: str) -> Field:
    return Field(name, Kind.BYTES_MAP)


def time(name: str, *, pointer: bool = False) -> Field:
    return Field(name, Kind.TIME, pointer=pointer)


def int_or_string(name: str) -> Field:
    return Field(name, Kind.INT_OR_STRING)


def fields_v1(name: str) -> Field:
    return Field(name, Kind.FIELDS_V1, pointer=True)


def opaque(name: str, *, repeated: bool = False) -> Field:
    return Field(name, Kind.OPAQUE, repeated=repeated)


# ---------------------------------------------------------------- meta/v1

OWNER_REFERENCE = Message(
    "OwnerReference",
    {
        5: string("apiVersion"),
        1: string("kind"),
        3: string("name"),
        4: string("uid"),
        6: boolean("controller", pointer=True),
        7: boolean("blockOwnerDeletion", pointer=True),
    },
)

MANAGED_FIELDS_ENTRY = Message(
    "ManagedFieldsEntry",
    {
        1: string("manager"),
        2: string("operation"),
        3: string("apiVersion"),
        4: time("time", pointer=True),
        6: string("fieldsType"),
        7: fields_v1("fieldsV1"),
        8: string("subresource"),
    },
)

OBJECT_META = Message(
    "ObjectMeta",
    {
        1: string("name"),
        2: string("generateName"),
        3: string("namespace"),
        4: string("selfLink"),
        5: string("uid"),
        6: string("resourceVersion"),
        7: integer("generation"),
        8: time("creationTimestamp"),
        9: time("deletionTimestamp", pointer=True),
        10: integer("deletionGracePeriodSeconds", pointer=True),
        11: string_map("labels"),
        12: string_map("annotations"),
        13: message("ownerReferences", OWNER_REFERENCE, repeated=True),
        14: string("finalizers", repeated=True),
        17: message("managedFields", MANAGED_FIELDS_ENTRY, repeated=True),
    },
)

PRECONDITIONS = Message(
    "Preconditions",
    {1: string("uid", pointer=True), 2: string("resourceVersion", pointer=True)},
)

DELETE_OPTIONS = Message(
    "DeleteOptions",
    {
        1: integer("gracePeriodSeconds", pointer=True),
        2: message("preconditions", PRECONDITIONS, pointer=True),
        3: boolean("orphanDependents", pointer=True),
        4: string("propagationPolicy", pointer=True),
        5: string("dryRun", repeated=True),
        6: boolean("ignoreStoreReadErrorWithClusterBreakingPotential", pointer=True),
    },
)

# ---------------------------------------------------------------- Namespace

NAMESPACE = Message(
    "Namespace",
    {
        1: message("metadata", OBJECT_META),
        2: message("spec", Message("NamespaceSpec", {1: string("finalizers", repeated=True)})),
        3: message(
            "status",
            Message(
                "NamespaceStatus",
                {1: string("phase"), 2: opaque("conditions", repeated=True)},
            ),
        ),
    },
)

# ---------------------------------------------------------------- Service

SERVICE_PORT = Message(
    "ServicePort",
    {
        1: string("name"),
        2: string("protocol"),
        6: string("appProtocol", pointer=True),
        3: integer("port"),
        4: int_or_string("targetPort"),
        5: integer("nodePort"),
    },
)

SESSION_AFFINITY_CONFIG = Message(
    "SessionAffinityConfig",
    {
        1: message(
            "clientIP",
            Message("ClientIPConfig", {1: integer("timeoutSeconds", pointer=True)}),
            pointer=True,
        )
    },
)

SERVICE_SPEC = Message(
    "ServiceSpec",
    {
        1: message("ports", SERVICE_PORT, repeated=True),
        2: string_map("selector"),
        3: string("clusterIP"),
        18: string("clusterIPs", repeated=True),
        4: string("type"),
        5: string("externalIPs", repeated=True),
        7: string("sessionAffinity"),
        8: string("loadBalancerIP"),
        9: string("loadBalancerSourceRanges", repeated=True),
        10: string("externalName"),
        11: string("externalTrafficPolicy"),
        12: integer("healthCheckNodePort"),
        13: boolean("publishNotReadyAddresses"),
        14: message("sessionAffinityConfig", SESSION_AFFINITY_CONFIG, pointer=True),
        19: string("ipFamilies", repeated=True),
        17: string("ipFamilyPolicy", pointer=True),
        20: boolean("allocateLoadBalancerNodePorts", pointer=True),
        21: string("loadBalancerClass", pointer=True),
        22: string("internalTrafficPolicy", pointer=True),
        23: string("trafficDistribution", pointer=True),
    },
)

LOAD_BALANCER_INGRESS = Message(
    "LoadBalancerIngress",
    {
        1: string("ip"),
        2: string("hostname"),
        3: string("ipMode", pointer=True),
        4: opaque("ports", repeated=True),
    },
)

SERVICE = Message(
    "Service",
    {
        1: message("metadata", OBJECT_META),
        2: message("spec", SERVICE_SPEC),
        3: message(
            "status",
            Message(
                "ServiceStatus",
                {
                    1: message(
                        "loadBalancer",
                        Message(
                            "LoadBalancerStatus",
                            {1: message("ingress", LOAD_BALANCER_INGRESS, repeated=True)},
                        ),
                    ),
                    2: opaque("conditions", repeated=True),
                },
            ),
        ),
    },
)

# ---------------------------------------------------------------- Pod

EXEC_ACTION = Message("ExecAction", {1: string("command", repeated=True)})

PROBE_HANDLER = Message(
    "ProbeHandler",
    {
        1: message("exec", EXEC_ACTION, pointer=True),
        2: message(
            "httpGet",
            Message(
                "HTTPGetAction",
                {
                    1: string("path"),
                    2: int_or_string("port"),
                    3: string("host"),
                    4: string("scheme"),
                    5: opaque("httpHeaders", repeated=True),
                },
            ),
            pointer=True,
        ),
        3: message(
            "tcpSocket",
            Message("TCPSocketAction", {1: int_or_string("port"), 2: string("host")}),
            pointer=True,
        ),
        4: opaque("grpc"),
    },
)

PROBE = Message(
    "Probe",
    {
        1: message("handler", PROBE_HANDLER, inline=True),
        2: integer("initialDelaySeconds"),
        3: integer("timeoutSeconds"),
        4: integer("periodSeconds"),
        5: integer("successThreshold"),
        6: integer("failureThreshold"),
        7: integer("terminationGracePeriodSeconds", pointer=True),
    },
)

CONTAINER = Message(
    "Container",
    {
        1: string("name"),
        2: string("image"),
        3: string("command", repeated=True),
        4: string("args", repeated=True),
        5: string("workingDir"),
        6: message(
            "ports",
            Message(
                "ContainerPort",
                {
                    1: string("name"),
                    2: integer("hostPort"),
                    3: integer("containerPort"),
                    4: string("protocol"),
                    5: string("hostIP"),
                },
            ),
            repeated=True,
        ),
        19: opaque("envFrom", repeated=True),
        7: message(
            "env",
            Message("EnvVar", {1: string("name"), 2: string("value"), 3: opaque("valueFrom")}),
            repeated=True,
        ),
        8: message(
            "resources",
            Message(
                "ResourceRequirements",
                {
                    1: quantity_map("limits"),
                    2: quantity_map("requests"),
                    3: opaque("claims", repeated=True),
                },
            ),
        ),
        23: opaque("resizePolicy", repeated=True),
        24: string("restartPolicy", pointer=True),
        9: opaque("volumeMounts", repeated=True),
        21: opaque("volumeDevices", repeated=True),
        10: message("livenessProbe", PROBE, pointer=True),
        11: message("readinessProbe", PROBE, pointer=True),
        22: message("startupProbe", PROBE, pointer=True),
        12: opaque("lifecycle"),
        13: string("terminationMessagePath"),
        20: string("terminationMessagePolicy"),
        14: string("imagePullPolicy"),
        15: opaque("securityContext"),
        16: boolean("stdin"),
        17: boolean("stdinOnce"),
        18: boolean("tty"),
    },
)

HOST_ALIAS = Message("HostAlias", {1: string("ip"), 2: string("hostnames", repeated=True)})

POD_DNS_CONFIG = Message(
    "PodDNSConfig",
    {
        1: string("nameservers", repeated=True),
        2: string("searches", repeated=True),
        3: message(
            "options",
            Message("PodDNSConfigOption", {1: string("name"), 2: string("value", pointer=True)}),
            repeated=True,
        ),
    },
)

POD_SPEC = Message(
    "PodSpec",
    {
        1: opaque("volumes", repeated=True),
        20: message("initContainers", CONTAINER, repeated=True),
        2: message("containers", CONTAINER, repeated=True),
        34: opaque("ephemeralContainers", repeated=True),
        3: string("restartPolicy"),
        4: integer("terminationGracePeriodSeconds", pointer=True),
        5: integer("activeDeadlineSeconds", pointer=True),
        6: string("dnsPolicy"),
        7: string_map("nodeSelector"),
        8: string("serviceAccountName"),
        9: string("serviceAccount"),
        21: boolean("automountServiceAccountToken", pointer=True),
        10: string("nodeName"),
        11: boolean("hostNetwork"),
        12: boolean("hostPID"),
        13: boolean("hostIPC"),
        27: boolean("shareProcessNamespace", pointer=True),
        14: opaque("securityContext"),
        15: message(
            "imagePullSecrets", Message("LocalObjectReference", {1: string("name")}), repeated=True
        ),
        16: string("hostname"),
        17: string("subdomain"),
        18: opaque("affinity"),
        19: string("schedulerName"),
        22: message(
            "tolerations",
            Message(
                "Toleration",
                {
                    1: string("key"),
                    2: string("operator"),
                    3: string("value"),
                    4: string("effect"),
                    5: integer("tolerationSeconds", pointer=True),
                },
            ),
            repeated=True,
        ),
        23: message("hostAliases", HOST_ALIAS, repeated=True),
        24: string("priorityClassName"),
        25: integer("priority", pointer=True),
        26: message("dnsConfig", POD_DNS_CONFIG, pointer=True),
        28: opaque("readinessGates", repeated=True),
        29: string("runtimeClassName", pointer=True),
        30: boolean("enableServiceLinks", pointer=True),
        31: string("preemptionPolicy", pointer=True),
        32: opaque("overhead", repeated=True),
        33: opaque("topologySpreadConstraints", repeated=True),
        35: boolean("setHostnameAsFQDN", pointer=True),
        36: opaque("os"),
        37: boolean("hostUsers", pointer=True),
        38: opaque("schedulingGates", repeated=True),
        39: opaque("resourceClaims", repeated=True),
        40: opaque("resources"),
    },
)

POD_CONDITION = Message(
    "PodCondition",
    {
        1: string("type"),
        2: string("status"),
        3: time("lastProbeTime"),
        4: time("lastTransitionTime"),
        5: string("reason"),
        6: string("message"),
    },
)

POD_STATUS = Message(
    "PodStatus",
    {
        1: string("phase"),
        2: message("conditions", POD_CONDITION, repeated=True),
        3: string("message"),
        4: string("reason"),
        11: string("nominatedNodeName"),
        5: string("hostIP"),
        16: opaque("hostIPs", repeated=True),
        6: string("podIP"),
        12: opaque("podIPs", repeated=True),
        7: time("startTime", pointer=True),
        10: opaque("initContainerStatuses", repeated=True),
        8: Field("containerStatuses", Kind.UNREAD, repeated=True),
        9: string("qosClass"),
        13: opaque("ephemeralContainerStatuses", repeated=True),
        14: string("resize"),
        15: opaque("resourceClaimStatuses", repeated=True),
    },
)

POD = Message(
    "Pod",
    {
        1: message("metadata", OBJECT_META),
        2: message("spec", POD_SPEC),
        3: message("status", POD_STATUS),
    },
)

SECRET = Message(
    "Secret",
    {
        1: message("metadata", OBJECT_META),
        5: boolean("immutable", pointer=True),
        2: bytes_map("data"),
        4: string_map("stringData"),
        3: string("type"),
    },
)

# ---------------------------------------------------------------- networking.k8s.io/v1

SERVICE_BACKEND_PORT = Message("ServiceBackendPort", {1: string("name"), 2: integer("number")})

INGRESS_BACKEND = Message(
    "IngressBackend",
    {
        4: message(
            "service",
            Message(
                "IngressServiceBackend",
                {1: string("name"), 2: message("port", SERVICE_BACKEND_PORT)},
            ),
            pointer=True,
        ),
        3: message(
            "resource",
            Message(
                "TypedLocalObjectReference",
                {1: string("apiGroup", pointer=True), 2: string("kind"), 3: string("name")},
            ),
            pointer=True,
        ),
    },
)

HTTP_INGRESS_PATH = Message(
    "HTTPIngressPath",
    {
        1: string("path"),
        3: string("pathType", pointer=True),
        2: message("backend", INGRESS_BACKEND),
    },
)

INGRESS_RULE = Message(
    "IngressRule",
    {
        1: string("host"),
        2: message(
            "ingressRuleValue",
            Message(
                "IngressRuleValue",
                {
                    1: message(
                        "http",
                        Message(
                            "HTTPIngressRuleValue",
                            {1: message("paths", HTTP_INGRESS_PATH, repeated=True)},
                        ),
                        pointer=True,
                    )
                },
            ),
            inline=True,
        ),
    },
)

INGRESS = Message(
    "Ingress",
    {
        1: message("metadata", OBJECT_META),
        2: message(
            "spec",
            Message(
                "IngressSpec",
                {
                    4: string("ingressClassName", pointer=True),
                    1: message("defaultBackend", INGRESS_BACKEND, pointer=True),
                    2: message(
                        "tls",
                        Message(
                            "IngressTLS",
                            {1: string("hosts", repeated=True), 2: string("secretName")},
                        ),
                        repeated=True,
                    ),
                    3: message("rules", INGRESS_RULE, repeated=True),
                },
            ),
        ),
        3: message(
            "status",
            Message(
                "IngressStatus",
                {
                    1: message(
                        "loadBalancer",
                        Message(
                            "IngressLoadBalancerStatus",
                            {
                                1: message(
                                    "ingress",
                                    Message(
                                        "IngressLoadBalancerIngress",
                                        {
                                            1: string("ip"),
                                            2: string("hostname"),
                                            4: opaque("ports", repeated=True),
                                        },
                                    ),
                                    repeated=True,
                                )
                            },
                        ),
                    )
                },
            ),
        ),
    },
)

# ---------------------------------------------------------------- self reviews

SELF_SUBJECT_ACCESS_REVIEW = Message(
    "SelfSubjectAccessReview",
    {
        1: message("metadata", OBJECT_META),
        2: message(
            "spec",
            Message(
                "SelfSubjectAccessReviewSpec",
                {
                    1: message(
                        "resourceAttributes",
                        Message(
                            "ResourceAttributes",
                            {
                                1: string("namespace"),
                                2: string("verb"),
                                3: string("group"),
                                4: string("version"),
                                5: string("resource"),
                                6: string("subresource"),
                                7: string("name"),
                                8: opaque("fieldSelector"),
                                9: opaque("labelSelector"),
                            },
                        ),
                        pointer=True,
                    ),
                    2: message(
                        "nonResourceAttributes",
                        Message("NonResourceAttributes", {1: string("path"), 2: string("verb")}),
                        pointer=True,
                    ),
                },
            ),
        ),
        3: opaque("status"),
    },
)

SELF_SUBJECT_RULES_REVIEW = Message(
    "SelfSubjectRulesReview",
    {
        1: message("metadata", OBJECT_META),
        2: message("spec", Message("SelfSubjectRulesReviewSpec", {1: string("namespace")})),
        3: opaque("status"),
    },
)

SELF_SUBJECT_REVIEW = Message(
    "SelfSubjectReview", {1: message("metadata", OBJECT_META), 2: opaque("status")}
)

# (apiVersion, kind) of the envelope -> the message of its ``raw`` bytes.
KINDS: dict[tuple[str, str], Message] = {
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "Service"): SERVICE,
    ("v1", "Pod"): POD,
    ("v1", "Secret"): SECRET,
    ("networking.k8s.io/v1", "Ingress"): INGRESS,
    ("v1", "DeleteOptions"): DELETE_OPTIONS,
    ("meta.k8s.io/v1", "DeleteOptions"): DELETE_OPTIONS,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): SELF_SUBJECT_ACCESS_REVIEW,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): SELF_SUBJECT_RULES_REVIEW,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): SELF_SUBJECT_REVIEW,
}
