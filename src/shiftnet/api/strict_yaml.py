"""YAML and JSON decoding with the strictness kubectl has and PyYAML lacks (the CLI's manifests,
the API server's request bodies).

PyYAML's safe loader keeps the last of two equal keys, recurses once per
nesting level (so a deep document ends in a ``RecursionError``) and expands
aliases without bound when the result is walked. Here a duplicate key is an
error worded as kubectl words it, nesting is bounded while composing, and a
document whose aliases would expand past :data:`MAX_NODES` values is refused.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

from shiftnet.errors import InvalidInput, shorten

MAX_NESTING = 100  # real manifests nest about 10 deep; Python's stack would end near 1,000
MAX_NODES = 1_000_000  # values in one document once aliases are expanded
_MERGE = "tag:yaml.org,2002:merge"


class TooDeep(yaml.MarkedYAMLError):
    """Nesting beyond :data:`MAX_NESTING`; carries the mark where it happened."""


class ManifestLoader(yaml.SafeLoader):
    """The safe loader, refusing duplicate keys and nesting deeper than MAX_NESTING.

    ``line_offset`` is added to line numbers in messages (the document's first
    line in its file, when documents are parsed one at a time).
    """

    def __init__(self, stream: str, line_offset: int = 0) -> None:
        super().__init__(stream)
        self.line_offset = line_offset
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                raise TooDeep(
                    None,
                    None,
                    f"nesting deeper than {MAX_NESTING} levels",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: dict[tuple[type, Any], int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE or not isinstance(key_node, ScalarNode):
                    continue
                key = self.construct_object(key_node)
                ident = (type(key), key)
                if ident in seen:
                    raise ConstructorError(
                        None,
                        None,
                        f'mapping key "{shorten(str(key))}" already defined at line '
                        f"{seen[ident] + self.line_offset}",
                        key_node.start_mark,
                    )
                seen[ident] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)  # type: ignore[arg-type]


def expanded_size(data: Any, limit: int = MAX_NODES) -> int:
    """How many values ``data`` holds with every shared (aliased) part counted each time
    it appears; stops counting past ``limit``. Shared parts are measured once."""
    memo: dict[int, int] = {}

    def size(value: Any) -> int:
        if isinstance(value, dict):
            children: Any = list(value.keys()) + list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            return 1
        known = memo.get(id(value))
        if known is not None:
            return known
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                break
        memo[id(value)] = total
        return total

    return size(data)


def nesting(data: Any) -> int:
    """The depth of nested objects and lists (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            depth += 1
            if depth > deepest:
                deepest = depth
            if depth > MAX_NESTING:
                return depth
            stack.extend((v, depth) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidInput(f'mapping key "{shorten(key)}" already defined')
        out[key] = value
    return out


def load_json(text: str, name: str) -> Any:
    """One JSON value, with the same duplicate-key and nesting rules as YAML."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as err:
        raise InvalidInput(
            f"{name}: line {err.lineno}, column {err.colno}: invalid JSON: {err.msg}"
        ) from None
    except InvalidInput as err:
        raise InvalidInput(f"{name}: invalid JSON: {err}") from None
    except RecursionError:
        raise InvalidInput(
            f"{name}: invalid JSON: nesting deeper than {MAX_NESTING} levels"
        ) from None
    if nesting(data) > MAX_NESTING:
        raise InvalidInput(f"{name}: invalid JSON: nesting deeper than {MAX_NESTING} levels")
    return data
