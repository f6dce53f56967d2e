"""Sets of field paths, as ``metadata.managedFields`` records them (pure).

A path is a tuple of elements in the ``FieldsV1`` spelling: ``f:<name>`` for
a field, ``k:{"name":"web"}`` for the item of a keyed list, ``v:"x"`` for a
value of a set. :func:`leaf_values` walks an object along its apply shape
(:mod:`shiftnet.apiserver.apply_shapes`) to the paths it sets, each with its
value (a keyed item's path with :data:`ITEM`), so one walk gives both the
set and what a comparison needs. Empty values count as unset, as the API
shows objects. The server's own bookkeeping (identity, resourceVersion,
timestamps, managedFields) and ``status`` are nobody's: upstream's
field manager strips the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from shiftnet.apiserver.apply_shapes import ListShape, Shape
from shiftnet.apiserver.patch import json_equal
from shiftnet.errors import InvalidPatch

Path = tuple[str, ...]
FieldSet = frozenset[Path]
ITEM = "<item>"  # the value of a keyed list item's own path: it is there

_SERVER_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "managedFields",
    }
)
_TOP_SKIPPED = frozenset({"apiVersion", "kind", "status"})
_USER_MAPS = frozenset({"labels", "annotations"})  # an empty value there is data


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _item_key(item: Any, rules: ListShape, where: str, index: int) -> str:
    if not isinstance(item, dict):
        if rules.keys:
            raise InvalidPatch(f"{where}[{index}]: a keyed list's item must be an object")
        if isinstance(item, list):
            raise InvalidPatch(f"{where}[{index}]: a set's item must be a value")
        return "v:" + _json(item)
    if not rules.keys:
        raise InvalidPatch(f"{where}[{index}]: a set's item must be a value, not an object")
    key: dict[str, Any] = {}
    for name in rules.keys:
        if name in item and item[name] is not None:
            key[name] = item[name]
        elif name in rules.defaults:
            key[name] = rules.defaults[name]
        else:
            raise InvalidPatch(f'{where}[{index}]: the list item has no key field "{name}"')
    return "k:" + _json(key)


@dataclass
class _Walk:
    out: dict[Path, Any]
    strict: bool

    def fields(self, value: Mapping[str, Any], shape: Shape, at: Path, where: str) -> None:
        user_map = bool(at) and at[-1][2:] in _USER_MAPS
        for name, item in value.items():
            if _empty(item) and not (user_map and item == ""):
                continue
            path = (*at, "f:" + name)
            here = f"{where}.{name}"
            if isinstance(item, dict) and name not in shape.atomic:
                self.fields(item, shape.child(name), path, here)
            elif isinstance(item, list) and name in shape.lists:
                self.items(item, shape.lists[name], path, here)
            else:
                self.out[path] = item

    def items(self, value: list[Any], rules: ListShape, at: Path, where: str) -> None:
        found: dict[Path, Any] = {}
        try:
            for index, item in enumerate(value):
                key = _item_key(item, rules, where, index)
                path = (*at, key)
                if path in found:
                    raise InvalidPatch(f"{where}[{index}]: duplicate entries for key {key[2:]}")
                found[path] = item
        except InvalidPatch:
            if self.strict:
                raise
            self.out[at] = value  # an irregular stored list: owned as one value
            return
        for path, item in found.items():
            self.out[path] = ITEM
            if isinstance(item, dict):
                self.fields(item, rules.item, path, where)


def leaf_values(obj: Mapping[str, Any], shape: Shape, *, strict: bool = False) -> dict[Path, Any]:
    """Every path ``obj`` sets, with its value. ``strict`` (an applied configuration):
    a keyed list item without its key, or two with one key, raise InvalidPatch;
    otherwise such a list counts as one value."""
    walk = _Walk({}, strict)
    for name, value in obj.items():
        if name in _TOP_SKIPPED or _empty(value):
            continue
        if name == "metadata" and isinstance(value, dict):
            kept = {k: v for k, v in value.items() if k not in _SERVER_META}
            walk.fields(kept, shape.child("metadata"), ("f:metadata",), "metadata")
        elif isinstance(value, dict) and name not in shape.atomic:
            walk.fields(value, shape.child(name), ("f:" + name,), name)
        elif isinstance(value, list) and name in shape.lists:
            walk.items(value, shape.lists[name], ("f:" + name,), name)
        else:
            walk.out[("f:" + name,)] = value
    return walk.out


@dataclass(frozen=True)
class Comparison:
    """What a write changed, path by path."""

    added: FieldSet
    modified: FieldSet
    removed: FieldSet

    @property
    def changed(self) -> FieldSet:
        return self.added | self.modified


def compare(old: Mapping[Path, Any], new: Mapping[Path, Any]) -> Comparison:
    both = old.keys() & new.keys()
    return Comparison(
        added=frozenset(new.keys() - old.keys()),
        modified=frozenset(p for p in both if not json_equal(old[p], new[p])),
        removed=frozenset(old.keys() - new.keys()),
    )


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """A set as the ``fieldsV1`` tree: ``{}`` for a path, ``".": {}`` beside its children."""
    members = set(paths)
    root: dict[str, Any] = {}
    for path in members:
        node = root
        for element in path:
            node = node.setdefault(element, {})

    def ordered(node: dict[str, Any], at: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if at in members and node:
            out["."] = {}
        for element in sorted(node):
            out[element] = ordered(node[element], (*at, element))
        return out

    return ordered(root, ())


def _well_formed(element: Any) -> bool:
    """Whether a ``fieldsV1`` key is one this server can read back: a ``k:`` key is a
    JSON object and a ``v:`` value JSON, as the merge and conflict messages parse them.
    Stored managedFields come from clients too (an update may send any)."""
    if not isinstance(element, str) or element[:2] not in ("f:", "k:", "v:", "i:"):
        return False
    if element[:2] in ("k:", "v:"):
        try:
            value = json.loads(element[2:])
        except ValueError:
            return False
        return isinstance(value, dict) or element[:2] == "v:"
    return True


def from_fields_v1(tree: Any, at: Path = ()) -> FieldSet:
    """The paths of a ``fieldsV1`` tree; anything that is not one, and any key that
    is not well formed, reads as no paths."""
    if not isinstance(tree, dict):
        return frozenset()
    out: set[Path] = set()
    for element, child in tree.items():
        if element == ".":
            if at:
                out.add(at)
            continue
        if not _well_formed(element):
            continue
        path = (*at, element)
        if child == {}:
            out.add(path)
        else:
            out |= from_fields_v1(child, path)
    return frozenset(out)


def path_text(path: Path) -> str:
    """A path as Kubernetes prints it: ``.spec.ports[port=80,protocol="TCP"].targetPort``."""
    out = []
    for element in path:
        kind, text = element[:2], element[2:]
        if kind == "f:":
            out.append("." + text)
        elif kind == "k:":
            key = json.loads(text)
            out.append("[" + ",".join(f"{k}={_json(v)}" for k, v in key.items()) + "]")
        elif kind == "v:":
            out.append(f"[={text}]")
        else:
            out.append(f"[{text}]")
    return "".join(out)


def covers(paths: FieldSet, path: Path) -> bool:
    """True when ``paths`` holds ``path`` or anything below it."""
    size = len(path)
    return any(p[:size] == path for p in paths)
