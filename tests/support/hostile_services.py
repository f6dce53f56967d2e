"""Hostile Services and Endpoints: every field that reaches nft/iptables rulesets or DNS.

Each case is one tenant object (a Service and its Endpoints, in the tenant's
own namespace, on its own ClusterIP) with one field replaced by a value that
tries to break out of a ruleset word, a comment, a set element or a DNS name:
quotes, newlines, ruleset syntax, NUL and control characters, unicode, very
long strings, numbers at and past their edges, wrong types. The cases are
plain dicts, so a test can send them through the validating client (where
most must be refused) and straight into the store around validation (where
the components must skip or render them safely).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class Case:
    """One hostile object pair; ``field`` is what was replaced (for messages)."""

    field: str
    value: Any
    service: dict[str, Any]
    endpoints: dict[str, Any]

    @property
    def label(self) -> str:
        text = repr(self.value)
        return f"{self.field}={text[:40]}{'...' if len(text) > 40 else ''}"


def _base(n: int, backend_ip: str, backend_port: int) -> tuple[dict[str, Any], dict[str, Any]]:
    name = f"evil-{n}"
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "tenant"},
        "spec": {
            "clusterIP": f"172.30.{100 + n // 250}.{1 + n % 250}",
            "selector": {"app": name},
            "ports": [{"name": "main", "port": 80, "protocol": "TCP"}],
        },
    }
    eps = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": "tenant"},
        "subsets": [
            {
                "addresses": [{"ip": backend_ip, "hostname": "pod-a"}],
                "ports": [{"name": "main", "port": backend_port, "protocol": "TCP"}],
            }
        ],
    }
    return svc, eps


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
]


def cases(backend_ip: str, backend_port: int, fields: set[str] | None = None) -> Iterator[Case]:
    """Every hostile case, numbered so each tenant object has its own name and ClusterIP."""
    n = 0
    for label, where, path, values in FIELDS:
        if fields is not None and label not in fields:
            continue
        for value in values:
            svc, eps = _base(n, backend_ip, backend_port)
            if label == "spec.sessionAffinityConfig.clientIP.timeoutSeconds":
                svc["spec"]["sessionAffinity"] = "ClientIP"
            if label == "spec.externalName":
                svc["spec"] = {"type": "ExternalName", "externalName": value}
            elif where in (_SVC, _BOTH):
                _set(svc, path, copy.deepcopy(value))
            if where in (_EPS, _BOTH):
                _set(eps, path, copy.deepcopy(value))
            yield Case(label, value, svc, eps)
            n += 1
