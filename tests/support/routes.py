"""Builders for Route, Service and Endpoints objects in router tests (wire-shaped dicts in)."""

from __future__ import annotations

from typing import Any

from shiftnet.api import Endpoints, Route, Service


def route(
    name: str,
    host: str = "",
    *,
    namespace: str = "ns",
    service: str = "svc",
    path: str = "",
    weight: int | None = None,
    alternates: list[tuple[str, int]] | None = None,
    target_port: int | str | None = None,
    tls: dict[str, Any] | None = None,
    wildcard: bool = False,
    annotations: dict[str, str] | None = None,
    created: str = "2026-01-01T00:00:00Z",
    uid: str | None = None,
    labels: dict[str, str] | None = None,
) -> Route:
    """A Route ``namespace/name`` for ``host`` pointing at ``service``."""
    to: dict[str, Any] = {"kind": "Service", "name": service}
    if weight is not None:
        to["weight"] = weight
    spec: dict[str, Any] = {"host": host or f"{name}.example.com", "to": to}
    if path:
        spec["path"] = path
    if alternates:
        spec["alternateBackends"] = [
            {"kind": "Service", "name": n, "weight": w} for n, w in alternates
        ]
    if target_port is not None:
        spec["port"] = {"targetPort": target_port}
    if tls is not None:
        spec["tls"] = tls
    if wildcard:
        spec["wildcardPolicy"] = "Subdomain"
    return Route.model_validate(
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "creationTimestamp": created,
                "uid": uid or f"uid-{namespace}-{name}",
                "annotations": annotations or {},
                "labels": labels or {},
            },
            "spec": spec,
        }
    )


def endpoints(
    name: str,
    ips: list[str],
    ports: list[tuple[str | None, int]] | None = None,
    *,
    namespace: str = "ns",
    not_ready: list[str] | None = None,
) -> Endpoints:
    """Endpoints with one subset: ``ips`` ready on ``ports`` ((name, port) pairs)."""
    port_list = [{"port": p, **({"name": n} if n else {})} for n, p in (ports or [(None, 8080)])]
    subset: dict[str, Any] = {
        "addresses": [
            {"ip": ip, "targetRef": {"kind": "Pod", "name": f"{name}-{i}", "namespace": namespace}}
            for i, ip in enumerate(ips)
        ],
        "ports": port_list,
    }
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return Endpoints.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": name, "namespace": namespace},
            "subsets": [subset] if ips or not_ready else [],
        }
    )


def service(
    name: str, ports: list[tuple[str | None, int, int]], *, namespace: str = "ns"
) -> Service:
    """A Service with (name, port, targetPort) ports."""
    return Service.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "ports": [
                    {"port": p, "targetPort": t, **({"name": n} if n else {})} for n, p, t in ports
                ]
            },
        }
    )
