"""Every kind shiftnet knows, how users name it, and how raw dicts become typed objects."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from shiftnet.api.base import Resource
from shiftnet.api.core import Endpoints, Namespace, Node, Pod, Service
from shiftnet.api.discovery import EndpointSlice
from shiftnet.api.event import Event
from shiftnet.api.fielderrors import quote
from shiftnet.api.ingress import Ingress, IngressClass
from shiftnet.api.network import ClusterNetwork, HostSubnet
from shiftnet.api.route import Route
from shiftnet.api.secret import Secret
from shiftnet.errors import InvalidInput, InvalidObject, shorten

KINDS: tuple[type[Resource], ...] = (
    Namespace,
    Pod,
    Service,
    Endpoints,
    EndpointSlice,
    Node,
    Event,
    Secret,
    Route,
    Ingress,
    IngressClass,
    ClusterNetwork,
    HostSubnet,
)

_BY_KIND: dict[str, type[Resource]] = {k.KIND: k for k in KINDS}
_BY_RESOURCE: dict[str, type[Resource]] = {k.RESOURCE: k for k in KINDS}


def _aliases() -> dict[str, type[Resource]]:
    out: dict[str, type[Resource]] = {}
    for k in KINDS:
        group = k.API_VERSION.split("/")[0] if "/" in k.API_VERSION else ""
        names = {k.KIND.lower(), k.RESOURCE, *k.SHORT_NAMES}
        if k.RESOURCE.endswith("s"):
            names.add(k.RESOURCE[:-1])
        for n in list(names):
            out[n] = k
            if group:
                out[f"{n}.{group}"] = k
    return out


_BY_ALIAS = _aliases()


def kind_for_name(name: str) -> type[Resource]:
    """Resolve what a user typed (``svc``, ``routes``, ``route.route.openshift.io``)."""
    k = _BY_ALIAS.get(name.lower())
    if k is None:
        known = ", ".join(sorted(x.RESOURCE for x in KINDS))
        raise InvalidInput(f'unknown resource type "{name}" (known: {known})')
    return k


def kind_for_resource(resource: str) -> type[Resource]:
    return _BY_RESOURCE[resource]


def kind_for_kind(kind: str) -> type[Resource] | None:
    return _BY_KIND.get(kind)


_UNION_TAGS = {"int", "str", "float", "bool", "list", "dict", "none"}


def _path(loc: tuple[int | str, ...], model: type[Resource]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, str) and (part in _UNION_TAGS or "[" in part):
            continue  # pydantic names the union member it tried; not a field
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


# pydantic error types -> what the value should have been, in Kubernetes' words.
_EXPECTED = {
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
    "list_type": "must be a list",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
}


def _shape_message(kind: str, value: Any, fallback: str) -> str:
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "Required value"
    expected = _EXPECTED.get(kind)
    if expected is None:
        return fallback
    if isinstance(value, str | int | float | bool) or value is None:
        return f"Invalid value: {quote(value)}: {expected}"
    return f"Invalid value: {type(value).__name__}: {expected}"


def parse_object(raw: Any, *, source: str = "") -> Resource:
    """Turn one decoded YAML/JSON document into a typed object, or raise one clear error.

    Only shape is checked here (types, unknown fields); semantic rules live in
    :mod:`shiftnet.api.validation`.
    """
    where = f"{source}: " if source else ""
    if not isinstance(raw, dict):
        raise InvalidInput(
            f"{where}expected an object with apiVersion and kind, got {type(raw).__name__}"
        )
    kind = raw.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InvalidInput(f"{where}object has no kind")
    cls = kind_for_kind(kind)
    if cls is None:
        raise InvalidInput(f'{where}unknown kind "{shorten(kind)}"')
    api_version = raw.get("apiVersion")
    accepted = {cls.API_VERSION}
    if cls.API_VERSION.split("/")[0].endswith(".openshift.io"):
        accepted.add("v1")  # OpenShift 3 clients still write routes as plain v1
    if api_version not in accepted:
        raise InvalidInput(
            f'{where}{kind}: apiVersion "{shorten(str(api_version))}" is not served '
            f'(use "{cls.API_VERSION}")'
        )
    name = ""
    meta = raw.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("name"), str):
        name = meta["name"]
    try:
        obj = cls.model_validate({**raw, "apiVersion": cls.API_VERSION})
    except ValidationError as exc:
        found = exc.errors()
        # A misspelt field is both "unknown" and "missing"; the unknown name is the cause.
        err = next((e for e in found if e["type"] == "extra_forbidden"), found[0])
        field = _path(tuple(err["loc"]), cls)
        msg = _shape_message(err["type"], err.get("input"), err["msg"])
        invalid = InvalidObject(kind, name, field, msg)
        if where:  # the document's place leads the sentence; field and message stay clean
            invalid.args = (f"{where}{invalid}",)
        raise invalid from None
    return obj


def to_dict(obj: Resource) -> dict[str, Any]:
    return obj.to_dict()
