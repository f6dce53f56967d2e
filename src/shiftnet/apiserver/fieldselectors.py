"""Field selectors (``metadata.name=web,status.phase!=Running``), pure.

Upstream serves ``metadata.name`` and ``metadata.namespace`` for every kind
and a few more per kind; any other field is refused (never "match all").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shiftnet.apiserver.status import StatusError, bad_request

Getter = Callable[[dict[str, Any]], str]


def _path(*keys: str) -> Getter:
    def get(obj: dict[str, Any]) -> str:
        cur: Any = obj
        for k in keys:
            cur = cur.get(k) if isinstance(cur, dict) else None
        return "" if cur is None else str(cur)

    return get


COMMON: dict[str, Getter] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}
BY_RESOURCE: dict[str, dict[str, Getter]] = {
    "pods": {
        "spec.nodeName": _path("spec", "nodeName"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
    },
    "routes": {
        "spec.host": _path("spec", "host"),
        "spec.path": _path("spec", "path"),
        "spec.to.name": _path("spec", "to", "name"),
    },
    "hostsubnets": {"host": _path("host"), "subnet": _path("subnet")},
    # upstream's event fields: what kubectl describe asks for an object's events
    "events": {
        **{
            f"involvedObject.{f}": _path("involvedObject", f)
            for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")
        },
        "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "type": _path("type"),
    },
}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    equal: bool
    value: str
    get: Getter

    def matches(self, obj: dict[str, Any]) -> bool:
        return (self.get(obj) == self.value) == self.equal


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: dict[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def parse_field_selector(text: str | None, resource: str) -> FieldSelector:
    """Parse or raise a 400 ``Status`` naming the bad term or unsupported field."""
    if not text:
        return FieldSelector()
    fields = {**COMMON, **BY_RESOURCE.get(resource, {})}
    out: list[FieldRequirement] = []
    for term in text.split(","):
        if not term.strip():
            continue
        op = next((o for o in ("!=", "==", "=") if o in term), None)
        if op is None:
            raise bad_request(f'invalid field selector "{text}": "{term}" has no operator')
        key, _, value = term.partition(op)
        equal = op != "!="
        key = key.strip()
        get = fields.get(key)
        if get is None:
            raise _unsupported(key, resource)
        out.append(FieldRequirement(key, equal, value.strip(), get))
    return FieldSelector(tuple(out))


def _unsupported(key: str, resource: str) -> StatusError:
    return bad_request(f'field label not supported: {key} (resource "{resource}")')
