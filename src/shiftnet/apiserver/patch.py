"""The three patch types of ``PATCH``: JSON patch, JSON merge patch, strategic merge patch.

Pure functions over decoded JSON: each returns a new document and never
changes its arguments, so a patch that fails half-way leaves nothing behind.
A patch that is not a patch of its type raises :class:`InvalidPatch` (the API
answers 400); a valid patch that cannot apply to this object, such as a failed
``test`` or a path that does not exist, raises :class:`PatchNotApplicable`
(422). The result is still to be parsed and validated like any write.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shiftnet.api.base import Resource
from shiftnet.api.names import is_digits
from shiftnet.apiserver.merge_keys import EMPTY, MergeList, Struct, strategy_for
from shiftnet.errors import InvalidPatch, PatchNotApplicable

# ---------------------------------------------------------------- shared


def _show(value: Any, limit: int = 80) -> str:
    """A value as JSON for an error message, cut short when long."""
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 equals 1.0, but true is not 1 and "1" is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------- RFC 6902 JSON patch

_OPS = ("add", "remove", "replace", "move", "copy", "test")


def _pointer(text: Any, where: str) -> list[str]:
    """An RFC 6901 JSON pointer as its reference tokens (``""`` is the whole document)."""
    if not isinstance(text, str):
        raise InvalidPatch(f"{where}: the path must be a string, got {_show(text)}")
    if text == "":
        return []
    if not text.startswith("/"):
        raise InvalidPatch(f'{where}: path "{text}" must be empty or begin with "/"')
    tokens = text[1:].split("/")
    for token in tokens:
        if "~" in token.replace("~0", "").replace("~1", ""):
            raise InvalidPatch(f'{where}: path "{text}" has "~" not followed by 0 or 1')
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def _index(token: str, size: int, *, allow_end: bool, where: str, path: str) -> int:
    if token == "-" and allow_end:
        return size
    if not is_digits(token) or (len(token) > 1 and token[0] == "0"):
        raise PatchNotApplicable(f'{where}: "{token}" in "{path}" is not an index of the list')
    index = int(token)
    if index > size or (index == size and not allow_end):
        raise PatchNotApplicable(f'{where}: index {index} in "{path}" is past the end of the list')
    return index


def _parent(doc: Any, tokens: list[str], where: str, path: str) -> Any:
    """The container holding the last token of ``path``; it must exist."""
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node), allow_end=False, where=where, path=path)]
        else:
            raise PatchNotApplicable(f'{where}: "{path}" does not exist')
    if not isinstance(node, dict | list):
        raise PatchNotApplicable(f'{where}: "{path}" does not exist')
    return node


def _get(doc: Any, tokens: list[str], where: str, path: str) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens, where, path)
    last = tokens[-1]
    if isinstance(parent, list):
        return parent[_index(last, len(parent), allow_end=False, where=where, path=path)]
    if last not in parent:
        raise PatchNotApplicable(f'{where}: "{path}" does not exist')
    return parent[last]


def _add(doc: Any, tokens: list[str], value: Any, where: str, path: str) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens, where, path)
    last = tokens[-1]
    if isinstance(parent, list):
        parent.insert(_index(last, len(parent), allow_end=True, where=where, path=path), value)
    else:
        parent[last] = value
    return doc


def _remove(doc: Any, tokens: list[str], where: str, path: str) -> Any:
    if not tokens:
        raise PatchNotApplicable(f"{where}: the whole document cannot be removed")
    parent = _parent(doc, tokens, where, path)
    last = tokens[-1]
    if isinstance(parent, list):
        del parent[_index(last, len(parent), allow_end=False, where=where, path=path)]
    elif last in parent:
        del parent[last]
    else:
        raise PatchNotApplicable(f'{where}: "{path}" does not exist')
    return doc


def _replace(doc: Any, tokens: list[str], value: Any, where: str, path: str) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens, where, path)
    last = tokens[-1]
    if isinstance(parent, list):
        parent[_index(last, len(parent), allow_end=False, where=where, path=path)] = value
    elif last in parent:
        parent[last] = value
    else:
        raise PatchNotApplicable(f'{where}: "{path}" does not exist')
    return doc


@dataclass(frozen=True)
class _Operation:
    name: str
    where: str  # "JSON patch operation 2 (replace "/spec/host")", for messages
    path: str
    tokens: list[str]
    value: Any = None
    source: str = ""
    source_tokens: list[str] = field(default_factory=list)


def _operation(op: Any, number: int) -> _Operation:
    where = f"JSON patch operation {number}"
    if not isinstance(op, dict):
        raise InvalidPatch(f"{where} must be an object, got {_show(op)}")
    name = op.get("op")
    if name is None:
        raise InvalidPatch(f'{where} has no "op"')
    if name not in _OPS:
        raise InvalidPatch(f"{where}: op {_show(name)} is not one of {', '.join(_OPS)}")
    if "path" not in op:
        raise InvalidPatch(f'{where} ({name}) has no "path"')
    where = f"{where} ({name} {_show(op['path'])})"
    tokens = _pointer(op["path"], where)
    if name in ("add", "replace", "test") and "value" not in op:
        raise InvalidPatch(f'{where} has no "value"')
    if name in ("move", "copy"):
        if "from" not in op:
            raise InvalidPatch(f'{where} has no "from"')
        source = _pointer(op["from"], where)
        return _Operation(name, where, op["path"], tokens, None, op["from"], source)
    return _Operation(name, where, op["path"], tokens, op.get("value"))


def _apply(doc: Any, op: _Operation) -> Any:
    where, path, tokens = op.where, op.path, op.tokens
    if op.name == "add":
        return _add(doc, tokens, copy.deepcopy(op.value), where, path)
    if op.name == "remove":
        return _remove(doc, tokens, where, path)
    if op.name == "replace":
        return _replace(doc, tokens, copy.deepcopy(op.value), where, path)
    if op.name == "test":
        if not json_equal(_get(doc, tokens, where, path), op.value):
            raise PatchNotApplicable(f'{where}: the value at "{path}" is not {_show(op.value)}')
        return doc
    value = copy.deepcopy(_get(doc, op.source_tokens, where, op.source))
    if op.name == "move":
        inside = tokens[: len(op.source_tokens)] == op.source_tokens
        if inside and len(tokens) > len(op.source_tokens):
            raise PatchNotApplicable(f'{where}: cannot move "{op.source}" into its own child')
        doc = _remove(doc, op.source_tokens, where, op.source)
    return _add(doc, tokens, value, where, path)


def apply_json_patch(doc: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch (a list of operations) to ``doc``; all or nothing."""
    if not isinstance(ops, list):
        raise InvalidPatch(f"a JSON patch must be a list of operations, got {_show(ops)}")
    checked = [_operation(op, n) for n, op in enumerate(ops, start=1)]  # all well-formed first
    out = copy.deepcopy(doc)
    for op in checked:
        out = _apply(out, op)
    return out


# ---------------------------------------------------------------- RFC 7386 merge patch


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def apply_merge_patch(doc: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch: objects merge, ``null`` deletes, the rest replaces."""
    if not isinstance(patch, dict):
        raise InvalidPatch(f"a merge patch must be a JSON object, got {_show(patch)}")
    return _merge(doc, patch)


# ---------------------------------------------------------------- strategic merge patch

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_ORDER = "$setElementOrder/"
_DELETE_FROM = "$deleteFromPrimitiveList/"

_DROP = object()  # a patch value that removes its field (a ``$patch: delete`` map)


def _clean(value: Any) -> Any:
    """A patch value for a field the object lacks: directives and nulls left out."""
    if isinstance(value, dict):
        if _DIRECTIVE in value:
            return _DROP
        out = {}
        for k, v in value.items():
            if v is None or k.startswith("$"):
                continue
            cleaned = _clean(v)
            if cleaned is not _DROP:
                out[k] = cleaned
        return out
    if isinstance(value, list):
        return [c for c in (_clean(v) for v in value) if c is not _DROP]
    return value


def _merge_key_value(item: Any, key: str, where: str) -> Any:
    if not isinstance(item, dict):
        raise InvalidPatch(f"{where}: list item {_show(item)} must be an object")
    if key not in item:
        raise InvalidPatch(f'{where}: list item {_show(item)} has no merge key "{key}"')
    return item[key]


def _identity(item: Any, key: str | None, where: str) -> Any:
    return item if key is None else _merge_key_value(item, key, where)


def _position(items: Sequence[Any], value: Any, key: str | None, where: str) -> int:
    for i, item in enumerate(items):
        if json_equal(_identity(item, key, where), value):
            return i
    return -1


def _ordered(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: Sequence[Any],
    server_order: Sequence[Any],
    key: str | None,
    where: str,
) -> list[Any]:
    """Patch items in the patch's order, server-only items kept where the live list had them.

    Kubernetes' rule: the order the patch gives wins; a server-only item goes
    before the first patch item that follows it in the live list.
    """
    order_ids = [_identity(x, key, where) for x in patch_order]

    def patch_rank(item: Any) -> int:
        return _position(order_ids, _identity(item, key, where), None, where)

    def server_rank(item: Any) -> int:
        return _position(server_order, _identity(item, key, where), key, where)

    patch_items = sorted(patch_items, key=patch_rank)
    server_only = sorted(server_only, key=server_rank)
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) and j < len(patch_items):
        left, right = server_rank(server_only[i]), server_rank(patch_items[j])
        if left >= 0 and right >= 0 and left < right:
            out.append(server_only[i])
            i += 1
        else:
            out.append(patch_items[j])
            j += 1
    return out + server_only[i:] + patch_items[j:]


def _partition(
    merged: list[Any], by: Sequence[Any], key: str | None, where: str
) -> tuple[list[Any], list[Any]]:
    ids = [_identity(x, key, where) for x in by]
    inside = [m for m in merged if _position(ids, _identity(m, key, where), None, where) >= 0]
    outside = [m for m in merged if _position(ids, _identity(m, key, where), None, where) < 0]
    return inside, outside


def _merge_list(original: list[Any], patch: list[Any], rules: MergeList, where: str) -> list[Any]:
    if not original and not patch:
        return []
    if any(isinstance(x, list) for x in [*original, *patch]):
        raise InvalidPatch(f"{where}: lists of lists cannot be merged")
    if not any(isinstance(x, dict) for x in [*original, *patch]):  # primitives: a set union
        merged: list[Any] = []
        for value in [*original, *patch]:
            if _position(merged, value, None, where) < 0:
                merged.append(value)
        inside, outside = _partition(merged, patch, None, where)
        return _ordered(inside, outside, patch, original, None, where)
    key = rules.key
    if key is None:
        raise InvalidPatch(f"{where}: a list of objects cannot be merged without a merge key")
    live = list(original)
    rest: list[Any] = []
    replace = False
    for item in patch:
        directive = item.get(_DIRECTIVE) if isinstance(item, dict) else None
        if directive is None:
            rest.append(item)
        elif directive == "delete":
            gone = _merge_key_value(item, key, where)
            live = [x for x in live if not json_equal(_merge_key_value(x, key, where), gone)]
        elif directive == "replace":
            replace = True
        else:
            raise InvalidPatch(
                f'{where}: $patch {_show(directive)} in a list must be "delete" or "replace"'
            )
    if replace:
        return [_clean(x) for x in rest]
    for item in rest:
        at = _position(live, _merge_key_value(item, key, where), key, where)
        if at >= 0:
            live[at] = _merge_map(live[at], item, rules.item, where)
        else:
            live.append(_clean(item))
    inside, outside = _partition(live, rest, key, where)
    return _ordered(inside, outside, rest, original, key, where)


def _merge_value(current: Any, value: Any, name: str, rules: Struct, where: str) -> Any:
    if isinstance(current, dict) and isinstance(value, dict):
        return _merge_map(current, value, rules.fields.get(name, EMPTY), where)
    if isinstance(current, list) and isinstance(value, list):
        list_rules = rules.lists.get(name)
        if list_rules is not None:
            return _merge_list(current, value, list_rules, where)
    return _clean(value)


def _retain(out: dict[str, Any], patch: dict[str, Any], where: str) -> dict[str, Any]:
    keys = patch.pop(_RETAIN_KEYS)
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise InvalidPatch(f"{where}: $retainKeys must be a list of field names")
    for k, v in patch.items():
        if v is not None and not k.startswith("$") and k not in keys:
            raise InvalidPatch(f'{where}: field "{k}" is patched but not in $retainKeys')
    return {k: v for k, v in out.items() if k in keys}


def _set_order(
    out: dict[str, Any], patch: dict[str, Any], name: str, order: Any, rules: Struct, where: str
) -> None:
    """Merge list ``name`` and put it in the order ``$setElementOrder/<name>`` gives."""
    list_rules = rules.lists.get(name)
    if not isinstance(order, list):
        raise InvalidPatch(f"{where}: $setElementOrder must be a list")
    given = patch.pop(name, None)
    if given is not None and not isinstance(given, list):
        raise InvalidPatch(f"{where}: must be a list when $setElementOrder is given")
    current = out.get(name)
    if not isinstance(current, list):
        current = None
    everything = [*order, *(given or []), *(current or [])]
    key = list_rules.key if list_rules and any(isinstance(x, dict) for x in everything) else None
    if key is None and any(isinstance(x, dict) for x in everything):
        raise InvalidPatch(f"{where}: a list of objects cannot be ordered without a merge key")
    order_ids = [_identity(x, key, where) for x in order]
    at = 0
    for item in given or []:  # each patched item is in the order list, in the same order
        if isinstance(item, dict) and _DIRECTIVE in item:
            continue
        found = _position(order_ids[at:], _identity(item, key, where), None, where)
        if found < 0:
            raise InvalidPatch(f"{where}: the list does not follow its $setElementOrder")
        at += found + 1
    if current is not None and given is None:
        merged = list(current)
    elif current is None and given is not None:
        merged = _clean(given)
    elif current is not None and given is not None:
        merged = _merge_list(current, given, list_rules, where) if list_rules else _clean(given)
    else:
        return
    inside, outside = _partition(merged, order, key, where)
    out[name] = _ordered(inside, outside, order, current or [], key, where)


def _field(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], rules: Struct, where: str
) -> dict[str, Any]:
    patch = dict(patch)
    if _DIRECTIVE in patch:
        directive = patch.pop(_DIRECTIVE)
        if directive == "replace":
            cleaned = _clean(patch)
            return cleaned if isinstance(cleaned, dict) else {}
        if directive == "delete":
            return {}
        raise InvalidPatch(
            f'{where or "patch"}: $patch {_show(directive)} must be "replace" or "delete"'
        )
    out = dict(original)
    if _RETAIN_KEYS in patch:
        out = _retain(out, patch, where or "patch")
    for directive in [k for k in patch if k.startswith(_ORDER)]:
        name = directive[len(_ORDER) :]
        _set_order(out, patch, name, patch.pop(directive), rules, _field(where, name))
    deletions: dict[str, Any] = {}
    for name, value in patch.items():
        here = _field(where, name)
        if name.startswith(_DELETE_FROM):
            deletions[name[len(_DELETE_FROM) :]] = value
            continue
        if name.startswith("$"):
            raise InvalidPatch(f'{here}: unknown patch directive "{name}"')
        if value is None:
            out.pop(name, None)
        elif name not in out:
            cleaned = _clean(value)
            if cleaned is not _DROP:
                out[name] = cleaned
        else:
            merged = _merge_value(out[name], value, name, rules, here)
            if merged is _DROP:
                out.pop(name)
            else:
                out[name] = merged
    for name, values in deletions.items():
        here = _field(where, name)
        if not isinstance(values, list) or any(isinstance(v, dict | list) for v in values):
            raise InvalidPatch(f"{here}: $deleteFromPrimitiveList needs a list of values")
        current = out.get(name)
        if isinstance(current, list):
            out[name] = [v for v in current if _position(values, v, None, here) < 0]
    return out


def apply_strategic_merge_patch(
    doc: dict[str, Any], patch: Any, kind: type[Resource]
) -> dict[str, Any]:
    """Apply a Kubernetes strategic merge patch to an object of ``kind``.

    Lists the kind's merge rules name (:mod:`shiftnet.apiserver.merge_keys`)
    merge item by item; other lists are replaced. The directives kubectl
    sends are honoured: ``$patch: delete|replace``, ``$setElementOrder/<list>``,
    ``$retainKeys`` and ``$deleteFromPrimitiveList/<list>``. Kinds that are
    custom resources on a real cluster (Route, HostSubnet, ClusterNetwork)
    take the patch as a JSON merge patch.
    """
    if not isinstance(patch, dict):
        raise InvalidPatch(f"a strategic merge patch must be a JSON object, got {_show(patch)}")
    rules = strategy_for(kind)
    if rules is None:
        result: dict[str, Any] = apply_merge_patch(doc, patch)
        return result
    return copy.deepcopy(_merge_map(doc, patch, rules, ""))
