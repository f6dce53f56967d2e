"""How server-side apply sees each kind's fields: which lists merge by which keys (pure).

Server-side apply tracks ownership per field, so it needs to know how a list
is identified item by item. Kubernetes writes that in its types as
``listType=map`` with ``listMapKey`` names, ``listType=set``, or atomic (the
default: the list is one value). For the core kinds this follows the
strategic-merge keys of :mod:`shiftnet.apiserver.merge_keys`, except where
upstream's apply keys differ: Service and container ports are keyed by port
*and* protocol (protocol defaulting to TCP). Maps marked atomic upstream
(a Service's ``selector``, a Pod's ``nodeSelector``) are one value. Route
header actions are keyed by name, as in OpenShift's types; every other Route
list is atomic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shiftnet.api.base import Resource
from shiftnet.api.route import Route
from shiftnet.apiserver.merge_keys import MergeList, Struct, strategy_for


@dataclass(frozen=True)
class ListShape:
    """A list apply merges item by item: by ``keys``, or as a set of values when empty."""

    keys: tuple[str, ...]
    item: Shape
    defaults: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Shape:
    """One object's fields: nested objects, merged lists, and maps that are one value."""

    fields: Mapping[str, Shape] = field(default_factory=dict)
    lists: Mapping[str, ListShape] = field(default_factory=dict)
    atomic: frozenset[str] = frozenset()

    def child(self, name: str) -> Shape:
        return self.fields.get(name, NONE)


NONE = Shape()

# Lists whose upstream apply keys are more than their strategic merge key.
_WIDER_KEYS: dict[str, tuple[tuple[str, ...], Mapping[str, Any]]] = {
    "port": (("port", "protocol"), {"protocol": "TCP"}),
    "containerPort": (("containerPort", "protocol"), {"protocol": "TCP"}),
}
# Maps upstream marks ``mapType=atomic``, by the object they are in.
_ATOMIC_MAPS: dict[str, dict[str, frozenset[str]]] = {
    "Service": {"spec": frozenset({"selector"})},
    "Pod": {"spec": frozenset({"nodeSelector"})},
}

_ACTIONS = ListShape(("name",), NONE)
_ROUTE = Shape(
    fields={
        "spec": Shape(
            fields={
                "httpHeaders": Shape(
                    fields={
                        "actions": Shape(lists={"request": _ACTIONS, "response": _ACTIONS}),
                    }
                )
            }
        )
    }
)


def _list_shape(rules: MergeList) -> ListShape:
    item = _from_struct(rules.item, {})
    if rules.key is None:
        return ListShape((), item)
    keys, defaults = _WIDER_KEYS.get(rules.key, ((rules.key,), {}))
    return ListShape(keys, item, defaults)


def _from_struct(rules: Struct, atomic: Mapping[str, frozenset[str]]) -> Shape:
    return Shape(
        fields={
            name: _from_struct(sub, {}) if name not in atomic else _with_atomic(sub, atomic[name])
            for name, sub in rules.fields.items()
        }
        | {name: Shape(atomic=maps) for name, maps in atomic.items() if name not in rules.fields},
        lists={name: _list_shape(sub) for name, sub in rules.lists.items()},
    )


def _with_atomic(rules: Struct, maps: frozenset[str]) -> Shape:
    plain = _from_struct(rules, {})
    return Shape(fields=plain.fields, lists=plain.lists, atomic=maps)


def _build(kind: type[Resource]) -> Shape:
    if kind is Route:
        return _ROUTE
    rules = strategy_for(kind)
    if rules is None:
        return NONE
    return _from_struct(rules, _ATOMIC_MAPS.get(kind.KIND, {}))


_SHAPES: dict[type[Resource], Shape] = {}


def shape_for(kind: type[Resource]) -> Shape:
    """The kind's apply shape (built once per kind)."""
    found = _SHAPES.get(kind)
    if found is None:
        found = _SHAPES[kind] = _build(kind)
    return found
