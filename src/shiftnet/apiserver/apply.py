"""Server-side apply's merge: an applied configuration onto the live object (pure).

Objects merge field by field, keyed lists item by item (the configuration's
fields win inside an item), sets of values as a union, and everything else
(scalars, atomic lists and maps) is replaced by the configuration's value.
:func:`remove_paths` then takes out what the applier no longer sets and
nobody else owns (:func:`shiftnet.apiserver.managed_fields.pruned`). Neither
changes its arguments.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from shiftnet.apiserver.apply_shapes import ListShape, Shape
from shiftnet.apiserver.fieldsets import Path
from shiftnet.apiserver.patch import json_equal


def _key_of(item: Any, rules: ListShape) -> Any:
    if not rules.keys:
        return item
    if not isinstance(item, dict):
        return None
    return {k: item.get(k, rules.defaults.get(k)) for k in rules.keys}


def _merge_items(live: list[Any], config: list[Any], rules: ListShape) -> list[Any]:
    out = [copy.deepcopy(x) for x in live]
    keys = [_key_of(x, rules) for x in out]
    for item in config:
        key = _key_of(item, rules)
        at = next((i for i, k in enumerate(keys) if json_equal(k, key)), -1)
        if at < 0:
            out.append(copy.deepcopy(item))
            keys.append(key)
        elif rules.keys and isinstance(out[at], dict) and isinstance(item, dict):
            out[at] = _merge_fields(out[at], item, rules.item)
    return out


def _merge_fields(live: dict[str, Any], config: dict[str, Any], shape: Shape) -> dict[str, Any]:
    out = dict(live)
    for name, value in config.items():
        current = out.get(name)
        if value is None:
            out.pop(name, None)
        elif isinstance(value, dict) and isinstance(current, dict) and name not in shape.atomic:
            out[name] = _merge_fields(current, value, shape.child(name))
        elif isinstance(value, list) and isinstance(current, list) and name in shape.lists:
            out[name] = _merge_items(current, value, shape.lists[name])
        else:
            out[name] = copy.deepcopy(value)
    return out


def merge_applied(live: dict[str, Any], config: dict[str, Any], shape: Shape) -> dict[str, Any]:
    """``config`` merged onto ``live`` along the kind's ``shape``."""
    return _merge_fields(live, config, shape)


def _matches(item: Any, element: str, rules: ListShape) -> bool:
    wanted = json.loads(element[2:])
    if element.startswith("v:"):
        return json_equal(item, wanted)
    return isinstance(item, dict) and json_equal(_key_of(item, rules), wanted)


def _remove(node: Any, path: Path, shape: Shape) -> None:
    element, rest = path[0], path[1:]
    if not isinstance(node, dict) or not element.startswith("f:"):
        return
    name = element[2:]
    if name not in node:
        return
    if not rest:
        del node[name]
        return
    child = node[name]
    if isinstance(child, list) and name in shape.lists:
        rules = shape.lists[name]
        item_element, below = rest[0], rest[1:]
        if not item_element.startswith(("k:", "v:")):
            return
        for i, item in enumerate(child):
            if _matches(item, item_element, rules):
                if below:
                    _remove(item, below, rules.item)
                else:
                    del child[i]
                return
    elif isinstance(child, dict):
        _remove(child, rest, shape.child(name))


def remove_paths(obj: dict[str, Any], paths: Iterable[Path], shape: Shape) -> dict[str, Any]:
    """``obj`` without ``paths`` (a missing one is no error)."""
    out = copy.deepcopy(obj)
    for path in paths:
        if path:
            _remove(out, path, shape)
    return out
