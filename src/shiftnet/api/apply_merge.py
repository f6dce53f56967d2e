"""``apply``'s merge (pure): a manifest's spec, labels and annotations on the stored object.

An applied object replaces the stored spec, labels and annotations; the
stored status and the fields a controller assigns (a Service's
``spec.clusterIP``, a Pod's ``spec.nodeName``, ...) are kept when the manifest
leaves them out. ``shiftnet apply`` and the API server's update both use it,
so a write means the same thing whichever door it comes through.
"""

from __future__ import annotations

import copy
from typing import Any

from shiftnet.api.base import Resource
from shiftnet.errors import InvalidObject

# Fields a controller fills in; a manifest that omits them keeps the stored value.
SERVER_ASSIGNED: dict[str, tuple[tuple[str, ...], ...]] = {
    "Service": (
        ("spec", "clusterIP"),
        ("spec", "clusterIPs"),
        ("spec", "ipFamilies"),
        ("spec", "ipFamilyPolicy"),
    ),
    "Pod": (("spec", "nodeName"),),
    "Node": (("spec", "podCIDR"),),
    "Route": (("spec", "host"),),
}
# Server-assigned fields that may not change once set (Kubernetes: "field is immutable").
IMMUTABLE: dict[str, tuple[tuple[str, ...], ...]] = {
    "Service": (("spec", "clusterIP"),),
}
_META_KEPT = ("uid", "creationTimestamp", "generation", "resourceVersion", "managedFields")


def _dig(d: dict[str, Any], path: tuple[str, ...]) -> Any:
    cur: Any = d
    for p in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    return cur


def _put(d: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    cur = d
    for p in path[:-1]:
        cur = cur.setdefault(p, {})
    cur[path[-1]] = value


def _check_immutable(
    existing: dict[str, Any], wanted: dict[str, Any], kind: str, name: str
) -> None:
    for path in IMMUTABLE.get(kind, ()):
        old, new = _dig(existing, path), _dig(wanted, path)
        if old not in (None, "") and new not in (None, "") and old != new:
            raise InvalidObject(
                kind, name, ".".join(path), f'Invalid value: "{new}": field is immutable'
            )


def merged_for_update(existing: Resource, wanted: Resource) -> Resource:
    """``wanted``'s spec, labels and annotations on ``existing``'s identity and status."""
    old = existing.to_dict()
    new = wanted.to_dict()
    kind = type(existing).KIND
    _check_immutable(old, new, kind, existing.name)
    out: dict[str, Any] = {k: copy.deepcopy(v) for k, v in new.items() if k != "status"}
    if "status" in old:
        out["status"] = copy.deepcopy(old["status"])
    meta = out.setdefault("metadata", {})
    old_meta = old.get("metadata") or {}
    for field in _META_KEPT:
        if field in old_meta:
            meta[field] = old_meta[field]
        else:
            meta.pop(field, None)
    for path in SERVER_ASSIGNED.get(kind, ()):
        if _dig(new, path) in (None, "") and _dig(old, path) not in (None, ""):
            _put(out, path, copy.deepcopy(_dig(old, path)))
    if kind == "Service":
        _keep_node_ports(old, out)
        _type_dependent_ports(old.get("spec") or {}, out.setdefault("spec", {}))
    return type(existing).model_validate(out)


def _keep_node_ports(old: dict[str, Any], out: dict[str, Any]) -> None:
    """A port the manifest gives without ``nodePort`` keeps the one the master gave it
    (matched by port number and protocol, as Kubernetes does), while the Service still
    has node ports (NodePort or LoadBalancer)."""
    if (out.get("spec") or {}).get("type") not in ("NodePort", "LoadBalancer"):
        return
    held = {
        (p.get("port"), p.get("protocol", "TCP")): p["nodePort"]
        for p in (old.get("spec") or {}).get("ports") or []
        if p.get("nodePort")
    }
    for port in out["spec"].get("ports") or []:
        if not port.get("nodePort"):
            kept = held.get((port.get("port"), port.get("protocol", "TCP")))
            if kept:
                port["nodePort"] = kept


def _has_node_ports(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _has_health_check(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _type_dependent_ports(old: dict[str, Any], spec: dict[str, Any]) -> None:
    """As kube-apiserver's update: a ``healthCheckNodePort`` the manifest leaves out is
    kept while the Service still needs one; node ports and the health check port the
    master gave are dropped when the Service no longer has them (a type or policy
    change) and the update did not ask for new ones. A three-way merge (``kubectl
    apply``) keeps fields it never set, so without this a change to ClusterIP or to
    the Cluster policy would be refused for values nobody asked for."""
    held = old.get("healthCheckNodePort")
    if _has_health_check(old) and _has_health_check(spec):
        if held and not spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = held
    elif _has_health_check(old) and spec.get("healthCheckNodePort") == held:
        spec.pop("healthCheckNodePort", None)
    if _has_node_ports(old) and not _has_node_ports(spec):
        ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
        given = {p["nodePort"] for p in old.get("ports") or [] if p.get("nodePort")}
        if {p["nodePort"] for p in ports if p.get("nodePort")} <= given:
            for port in ports:
                port.pop("nodePort", None)


def for_create(wanted: Resource) -> Resource:
    """A manifest as a new object: no status, no server identity (as ``kubectl create``)."""
    raw = {k: v for k, v in wanted.to_dict().items() if k != "status"}
    meta = raw.get("metadata") or {}
    for field in _META_KEPT:
        meta.pop(field, None)
    return type(wanted).model_validate(raw)
