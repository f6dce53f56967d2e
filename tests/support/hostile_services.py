"""Hostile Services, Endpoints and EndpointSlices: every field that reaches a listener,
an nft/iptables ruleset or DNS.

Each case is one tenant object set (a Service and its Endpoints, or a Service
and its EndpointSlice, in the tenant's own namespace, on its own ClusterIP)
with one field replaced by a value that tries to break out of a ruleset word,
a comment, a set element or a DNS name (quotes, newlines, ruleset syntax, NUL
and control characters, unicode, very long strings, numbers at and past their
edges, wrong types), or to take an address a good Service holds (its ClusterIP
as an external IP or load-balancer address, the unspecified address, a slice
labelled with another namespace's Service). The tenant namespace sorts before
``default``, so a tenant's object is met first wherever objects are taken in
order. The cases are plain dicts, so a test can send them through the
validating client (where most must be refused) and straight into the store
around validation (where the components must skip or render them safely).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from shiftnet.api import parse_object
from shiftnet.client import Client
from shiftnet.errors import ShiftnetError
from shiftnet.store.base import Store

BREAKOUT = [
    '"; flush ruleset; "',
    "x\n-A KUBE-SERVICES -j DROP",
    "x\nCOMMIT",
    "} ; table ip evil { ",
    "a b",
    "$(reboot)",
    "'",
    "\\",
    "#",
    "x\x00y",
    "\x01\x7f",
    "é",
    "xn--evil",
    "a..b",
    ".",
    "*",
    "@",
    "_",
    "-leading",
    "UPPER",
    "a" * 64,
    "a" * 254,
    "a." * 200,
    "z" * 100_000,
    "",
]
PROTOCOLS = ["SCTP", "tcp", "udp", "TCP\n", "TCP; drop", "", "ICMP", "tcp ", "*"]
ADDRESSES = [
    "172.30.9.1 ",
    "172.030.9.1",
    "172.30.9.1/0",
    "172.30.9.1\n-A KUBE-SERVICES -j DROP",
    "::1",
    "0.0.0.0",
    "255.255.255.255",
    "127.0.0.1",
    "169.254.169.254",
    "224.0.0.1",
    "1.2.3",
    "1.2.3.4.5",
    "None",
    "",
    "z" * 100_000,
]
NUMBERS: list[Any] = [0, -1, 65536, 2**31, 2**63, 10**30, True, "80", 80.5, None, "x", [80]]
AFFINITIES = ["ClientIP\n", "clientip", "Sticky", "None ", "ClientIP; drop", ""]
TIMEOUTS: list[Any] = [0, -1, 86401, 2**31, 2**63, True, "10", 1.5, None]
POLICIES: list[Any] = [
    "Local\n",
    "local",
    "Cluster; drop",
    "Local ",
    "",
    None,
    1,
    "Local",
    "Cluster",
]
TYPES: list[Any] = ["NodePort\n", "nodeport", "LoadBalancer", "NodePort", "", "x; drop", None, 1]
FAMILIES: list[Any] = [
    ["IPv4\n"],
    ["IPv6"],
    ["IPv4", "IPv4"],
    ["IPv4", "IPv6", "x"],
    "IPv4",
    [None],
]
FAMILY_POLICIES: list[Any] = ["SingleStack\n", "RequireDualStack", "PreferDualStack", "x", "", 1]
CONDITIONS: list[Any] = [
    {"ready": "x"},
    {"ready": None, "serving": "yes"},
    {"ready": False, "serving": True, "terminating": True},
    {"ready": True, "terminating": "\n"},
    {"evil": True},
    "x",
    None,
]
ADDRESS_TYPES: list[Any] = ["IPv6", "FQDN", "ipv4", "IPv4\n", "IPv4 ", "", None, 4]
TENANT = "a-tenant"  # sorts before "default", where the good Services live


@dataclass(frozen=True)
class Case:
    """One hostile object pair; ``field`` is what was replaced (for messages)."""

    field: str
    value: Any
    service: dict[str, Any]
    endpoints: dict[str, Any] | None
    slice: dict[str, Any] | None = None

    @property
    def objects(self) -> list[tuple[str, dict[str, Any]]]:
        """``(resource, body)`` in the order to write them: the Service first."""
        out = [("services", self.service)]
        if self.endpoints is not None:
            out.append(("endpoints", self.endpoints))
        if self.slice is not None:
            out.append(("endpointslices", self.slice))
        return out

    @property
    def label(self) -> str:
        text = repr(self.value)
        return f"{self.field}={text[:40]}{'...' if len(text) > 40 else ''}"


def _base(
    n: int, backend_ip: str, backend_port: int, prefix: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    name = f"evil-{n}"
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": TENANT},
        "spec": {
            "clusterIP": f"{prefix}.{100 + n // 250}.{1 + n % 250}",
            "selector": {"app": name},
            "ports": [{"name": "main", "port": 80, "protocol": "TCP"}],
        },
    }
    eps = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": TENANT},
        "subsets": [
            {
                "addresses": [{"ip": backend_ip, "hostname": "pod-a"}],
                "ports": [{"name": "main", "port": backend_port, "protocol": "TCP"}],
            }
        ],
    }
    return svc, eps


def _slice(name: str, backend_ip: str, backend_port: int) -> dict[str, Any]:
    """A good EndpointSlice of Service ``name`` in the tenant namespace, every field set."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{name}-x1",
            "namespace": TENANT,
            "labels": {"kubernetes.io/service-name": name},
        },
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": [backend_ip],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "hostname": "pod-a",
                "nodeName": "node-a",
                "zone": "zone-a",
                "targetRef": {"kind": "Pod", "namespace": TENANT, "name": "pod-a"},
            }
        ],
        "ports": [{"name": "main", "port": backend_port, "protocol": "TCP", "appProtocol": "http"}],
    }


def _set(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        obj = obj[part]
    obj[path[-1]] = value


# (field label, where in the Service, where in the Endpoints, values)
_SVC = "service"
_EPS = "endpoints"
_BOTH = "both"
FIELDS: list[tuple[str, str, tuple[Any, ...], list[Any]]] = [
    ("metadata.name", _BOTH, ("metadata", "name"), BREAKOUT),
    ("metadata.namespace", _BOTH, ("metadata", "namespace"), BREAKOUT),
    ("spec.ports[0].name", _SVC, ("spec", "ports", 0, "name"), BREAKOUT),
    ("subsets[0].ports[0].name", _EPS, ("subsets", 0, "ports", 0, "name"), BREAKOUT),
    ("spec.ports[0].protocol", _SVC, ("spec", "ports", 0, "protocol"), PROTOCOLS),
    ("subsets[0].ports[0].protocol", _EPS, ("subsets", 0, "ports", 0, "protocol"), PROTOCOLS),
    ("spec.clusterIP", _SVC, ("spec", "clusterIP"), ADDRESSES),
    ("subsets[0].addresses[0].ip", _EPS, ("subsets", 0, "addresses", 0, "ip"), ADDRESSES),
    (
        "subsets[0].addresses[0].hostname",
        _EPS,
        ("subsets", 0, "addresses", 0, "hostname"),
        BREAKOUT,
    ),
    ("spec.ports[0].port", _SVC, ("spec", "ports", 0, "port"), NUMBERS),
    ("spec.ports[0].targetPort", _SVC, ("spec", "ports", 0, "targetPort"), NUMBERS + BREAKOUT[:6]),
    ("subsets[0].ports[0].port", _EPS, ("subsets", 0, "ports", 0, "port"), NUMBERS),
    ("spec.sessionAffinity", _SVC, ("spec", "sessionAffinity"), AFFINITIES),
    (
        "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
        _SVC,
        ("spec", "sessionAffinityConfig"),
        [{"clientIP": {"timeoutSeconds": t}} for t in TIMEOUTS],
    ),
    ("spec.externalName", _SVC, ("spec", "externalName"), BREAKOUT),
    ("spec.ports[0].nodePort", _SVC, ("spec", "ports", 0, "nodePort"), [*NUMBERS, 80, 22, 30080]),
    ("spec.externalIPs", _SVC, ("spec", "externalIPs"), [[a] for a in ADDRESSES] + ["x", [None]]),
    (
        "status.loadBalancer.ingress[0].ip",
        _SVC,
        ("status",),
        [{"loadBalancer": {"ingress": [{"ip": a}]}} for a in ADDRESSES],
    ),
    (
        "status.loadBalancer.ingress[0].hostname",
        _SVC,
        ("status",),
        [{"loadBalancer": {"ingress": [{"hostname": b}]}} for b in BREAKOUT]
        + [{"loadBalancer": {"ingress": "x"}}, {"loadBalancer": {"ingress": [{"ip": 1}]}}],
    ),
    ("spec.externalTrafficPolicy", _SVC, ("spec", "externalTrafficPolicy"), POLICIES),
    ("spec.internalTrafficPolicy", _SVC, ("spec", "internalTrafficPolicy"), POLICIES),
    ("spec.healthCheckNodePort", _SVC, ("spec", "healthCheckNodePort"), [*NUMBERS, 80, 30081]),
    ("spec.clusterIPs", _SVC, ("spec", "clusterIPs"), [[a] for a in ADDRESSES] + ["x", [None]]),
    ("spec.ipFamilies", _SVC, ("spec", "ipFamilies"), FAMILIES),
    ("spec.ipFamilyPolicy", _SVC, ("spec", "ipFamilyPolicy"), FAMILY_POLICIES),
    ("spec.type", _SVC, ("spec", "type"), TYPES),
    (
        "spec.sessionAffinityConfig",
        _SVC,
        ("spec", "sessionAffinityConfig"),
        [{"clientIP": None}, {"clientIP": {}}, {}, {"clientIP": {"timeoutSeconds": "x"}}, "x", [1]],
    ),
]
# Fields that only mean something on an external Service (NodePort, LoadBalancer).
_EXTERNAL = {
    "spec.ports[0].nodePort": "NodePort",
    "status.loadBalancer.ingress[0].ip": "LoadBalancer",
    "status.loadBalancer.ingress[0].hostname": "LoadBalancer",
    "spec.externalTrafficPolicy": "LoadBalancer",
    "spec.healthCheckNodePort": "LoadBalancer",
}

# EndpointSlice fields: (label, path in the slice, values).
SLICE_FIELDS: list[tuple[str, tuple[Any, ...], list[Any]]] = [
    ("slice.metadata.name", ("metadata", "name"), BREAKOUT),
    ("slice.metadata.namespace", ("metadata", "namespace"), BREAKOUT),
    (
        "slice.metadata.labels",
        ("metadata", "labels"),
        [{"kubernetes.io/service-name": v} for v in ["web", "default/web", "web.default"]]
        + [{"kubernetes.io/service-name": b} for b in BREAKOUT]
        + [{}, {"kubernetes.io/service-name\n": "web"}],
    ),
    ("slice.addressType", ("addressType",), ADDRESS_TYPES),
    ("slice.endpoints[0].addresses", ("endpoints", 0, "addresses"), [[a] for a in ADDRESSES]),
    ("slice.endpoints[0].conditions", ("endpoints", 0, "conditions"), CONDITIONS),
    ("slice.endpoints[0].hostname", ("endpoints", 0, "hostname"), BREAKOUT),
    ("slice.endpoints[0].nodeName", ("endpoints", 0, "nodeName"), BREAKOUT),
    ("slice.endpoints[0].zone", ("endpoints", 0, "zone"), BREAKOUT),
    (
        "slice.endpoints[0].targetRef",
        ("endpoints", 0, "targetRef"),
        [{"kind": b, "namespace": b, "name": b} for b in BREAKOUT[:10]]
        + [{"kind": "Pod", "namespace": "default", "name": "web-0"}, "x"],
    ),
    ("slice.ports[0].name", ("ports", 0, "name"), BREAKOUT),
    ("slice.ports[0].port", ("ports", 0, "port"), NUMBERS),
    ("slice.ports[0].protocol", ("ports", 0, "protocol"), PROTOCOLS),
    ("slice.ports[0].appProtocol", ("ports", 0, "appProtocol"), BREAKOUT),
]


def cases(
    backend_ip: str,
    backend_port: int,
    fields: set[str] | None = None,
    *,
    prefix: str = "172.30",
    good_vip: str = "172.30.0.10",
) -> Iterator[Case]:
    """Every hostile case, numbered so each tenant object has its own name and ClusterIP.

    ClusterIPs are ``prefix.100.1`` on; ``good_vip`` (port 80) is the good Service's
    address, also tried as a tenant's external IP and load-balancer address.
    """
    n = 0
    for label, where, path, values in FIELDS:
        if fields is not None and label not in fields:
            continue
        if label in ("spec.externalIPs", "status.loadBalancer.ingress[0].ip"):
            values = [*values, _grab(label, good_vip)]
        for value in values:
            svc, eps = _base(n, backend_ip, backend_port, prefix)
            if label in _EXTERNAL:
                svc["spec"]["type"] = _EXTERNAL[label]
            if label == "spec.healthCheckNodePort":
                svc["spec"]["externalTrafficPolicy"] = "Local"
            if label.startswith("spec.sessionAffinityConfig"):
                svc["spec"]["sessionAffinity"] = "ClientIP"
            if label == "spec.externalName":
                svc["spec"] = {"type": "ExternalName", "externalName": value}
            elif where in (_SVC, _BOTH):
                _set(svc, path, copy.deepcopy(value))
            if where in (_EPS, _BOTH):
                _set(eps, path, copy.deepcopy(value))
            yield Case(label, value, svc, eps)
            n += 1
    for label, path, values in SLICE_FIELDS:
        if fields is not None and label not in fields:
            continue
        for value in values:
            svc, _ = _base(n, backend_ip, backend_port, prefix)
            es = _slice(svc["metadata"]["name"], backend_ip, backend_port)
            _set(es, path, copy.deepcopy(value))
            if label == "slice.metadata.namespace":
                svc["metadata"]["namespace"] = copy.deepcopy(value)
            yield Case(label, value, svc, None, es)
            n += 1


def _grab(label: str, vip: str) -> Any:
    """The value of ``label`` that claims ``vip`` (a good Service's ClusterIP)."""
    if label == "spec.externalIPs":
        return [vip]
    return {"loadBalancer": {"ingress": [{"ip": vip}]}}


@dataclass
class Written:
    """What :func:`write_cases` did: counts, and the cases now in the store."""

    refused: int = 0  # by validation, with one clear sentence
    accepted: int = 0  # valid: written through the client
    raw: int = 0  # objects written around validation, straight into the store
    cases: list[Case] = field(default_factory=list)


async def write_cases(client: Client, store: Store, hostile: Iterable[Case]) -> Written:
    """Each case through the validating client; a refused one again straight into the
    store, as a broken writer could. Every refusal must be one short line."""
    out = Written()
    for case in hostile:
        try:
            for _, body in case.objects:
                await client.create(parse_object(body))  # type: ignore[type-var]
            out.accepted += 1
            out.cases.append(case)
            continue
        except ShiftnetError as err:
            text = str(err)
            assert text and "\n" not in text and len(text) <= 800, (case.label, text[:300])
            out.refused += 1
        for resource, body in case.objects:
            try:
                await store.create(resource, body)
                out.raw += 1
            except ShiftnetError:
                pass  # the store itself refused it (no name, say): also fine
        out.cases.append(case)
    return out
