"""What the contract tests store: Routes, a kind every backend holds.

A Kubernetes API serves only the kinds it knows and validates them, so the
contract is written in a real kind rather than a made-up one. A Route's
``spec.path`` (``/n/<number>``) carries the number the tests count with; the
defaults the API would fill in are given, so every backend stores the same
object.
"""

from __future__ import annotations

import copy
from typing import Any

RESOURCE = "routes"
OTHER_RESOURCE = "services"

ADMITTED = {
    "ingress": [
        {
            "host": "a.example.com",
            "routerName": "default",
            "conditions": [{"type": "Admitted", "status": "True"}],
        }
    ]
}


def thing(
    name: str, ns: str = "ns", labels: dict[str, str] | None = None, n: int = 0
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": meta,
        "spec": {
            "host": f"{name}.example.com",
            "path": f"/n/{n}",
            "to": {"kind": "Service", "name": "s", "weight": 100},
            "wildcardPolicy": "None",
        },
    }


def other(name: str, ns: str = "ns") -> dict[str, Any]:
    """An object of another resource (a Service), for watches that must not see it."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"ports": [{"port": 80}]},
    }


def number(obj: dict[str, Any]) -> int:
    return int(str(obj["spec"]["path"]).rsplit("/", 1)[1])


def renumbered(obj: dict[str, Any], n: int) -> dict[str, Any]:
    """A copy of ``obj`` (identity and resourceVersion kept) carrying ``n``."""
    out = copy.deepcopy(obj)
    out["spec"]["path"] = f"/n/{n}"
    return out
