"""Request bodies: read at most the size limit, decode JSON, YAML or protobuf, refuse the rest.

A body over the limit is refused before it is all read (413), as upstream
refuses bodies over 3 MiB; malformed JSON or YAML is a 400 with the
decoder's reason, never a 500. Decoding is as bounded as ``shiftnet
apply``'s (:mod:`shiftnet.api.strict_yaml`): nesting deeper than 100 levels
or YAML aliases that expand past a million values are a 400, not a
recursion error or a server busy for minutes. A key given twice keeps its
last value, and its path is handed to field validation
(:mod:`shiftnet.apiserver.fieldvalidation`), which refuses or warns.
Protobuf bodies (kubectl's generators send nothing else) are read by
:mod:`shiftnet.apiserver.protobuf` into the same shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from shiftnet.api.strict_yaml import (
    MAX_NESTING,
    MAX_NODES,
    ManifestLoader,
    expanded_size,
    nesting,
)
from shiftnet.apiserver.protobuf import MEDIA_TYPE as PROTOBUF
from shiftnet.apiserver.protobuf import UnsupportedProtobuf, decode_object
from shiftnet.apiserver.protowire import MalformedProtobuf
from shiftnet.apiserver.status import StatusError, bad_request
from shiftnet.errors import shorten

JSON_TYPES = ("application/json", "")
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
APPLY_PATCH = "application/apply-patch+yaml"


def too_large(limit: int) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


async def read_body(request: web.Request, limit: int) -> bytes:
    if request.content_length is not None and request.content_length > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.read(65536)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class Body:
    """A decoded body and the paths of the keys it gave more than once."""

    doc: Any
    duplicates: tuple[str, ...] = ()


def _child(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


class _Pairs(dict[str, Any]):
    """A JSON object that remembers which of its keys came more than once."""

    repeated: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> _Pairs:
    out = _Pairs()
    out.repeated = []
    for key, value in pairs:
        if key in out and key not in out.repeated:
            out.repeated.append(key)
        out[key] = value
    return out


def _plain(value: Any, path: str, found: list[str]) -> Any:
    """``value`` with plain dicts, collecting the repeated keys' paths (nesting is
    bounded before this runs)."""
    if isinstance(value, dict):
        found.extend(_child(path, k) for k in getattr(value, "repeated", ()))
        return {k: _plain(v, _child(path, k), found) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    return value


def _decode_json(raw: bytes) -> Body:
    too_deep = f"the request body is not valid JSON: nesting deeper than {MAX_NESTING} levels"
    repeats = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeats
        out = dict(items)
        if len(out) == len(items):
            return out  # nearly every object: no key twice, nothing to remember
        repeats = True
        return _pairs(items)

    try:
        doc = json.loads(raw, object_pairs_hook=pairs)
    except RecursionError:
        raise bad_request(too_deep) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise bad_request(f"the request body is not valid JSON: {err}") from None
    # Each level opens a bracket: a body with few brackets (most) needs no walk.
    if raw.count(b"{") + raw.count(b"[") > MAX_NESTING and nesting(doc) > MAX_NESTING:
        raise bad_request(too_deep)
    found: list[str] = []
    if repeats:  # only then are there _Pairs to turn into plain dicts
        doc = _plain(doc, "", found)
    return Body(doc, tuple(found))


class _BodyLoader(ManifestLoader):
    """``shiftnet apply``'s bounded loader, keeping the last of duplicate keys (field
    validation decides what they mean) instead of refusing them."""

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        return yaml.SafeLoader.construct_mapping(self, node, deep)  # type: ignore[arg-type]


def _yaml_duplicates(root: Node) -> list[str]:
    """Paths of keys a mapping gives twice; a node shared through aliases is read once."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        children: list[tuple[Node, str]] = []
        if isinstance(node, MappingNode):
            keys: set[str] = set()
            for key_node, value_node in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag.endswith(":merge"):
                    children.append((value_node, path))
                    continue
                child = _child(path, key_node.value)
                if key_node.value in keys:
                    found.append(child)
                keys.add(key_node.value)
                children.append((value_node, child))
        elif isinstance(node, SequenceNode):
            children = [(v, f"{path}[{i}]") for i, v in enumerate(node.value)]
        stack.extend(reversed(children))
    return found


def _decode_yaml(raw: bytes) -> Body:
    try:
        loader = _BodyLoader(raw.decode("utf-8"))
        try:
            node = loader.get_single_node()
            duplicates = _yaml_duplicates(node) if node is not None else []
            doc = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except UnicodeDecodeError as err:
        raise bad_request(f"the request body is not valid YAML: {err}") from None
    except yaml.YAMLError as err:
        reason = shorten(" ".join(str(err).split()))
        raise bad_request(f"the request body is not valid YAML: {reason}") from None
    if expanded_size(doc) > MAX_NODES:
        raise bad_request(
            f"the request body is not valid YAML: its aliases expand past {MAX_NODES} values"
        )
    return Body(doc, tuple(duplicates))


def decode(raw: bytes, content_type: str) -> Body:
    """JSON (also the patch types), YAML or Kubernetes protobuf into Python; 415 for
    anything else."""
    if not raw.strip():
        raise bad_request("the request body is empty")
    if content_type in JSON_TYPES or content_type in PATCH_TYPES:
        return _decode_json(raw)
    if content_type in YAML_TYPES:
        return _decode_yaml(raw)
    if content_type == PROTOBUF:
        return _decode_protobuf(raw)
    raise StatusError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format "{content_type}"',
    )


def _decode_protobuf(raw: bytes) -> Body:
    try:
        found = decode_object(raw)
    except MalformedProtobuf as err:
        raise bad_request(f"the request body is not valid protobuf: {err}") from None
    except UnsupportedProtobuf as err:
        raise StatusError(415, "UnsupportedMediaType", str(err)) from None
    return Body(found.doc, found.duplicates)


def content_type(request: web.Request) -> str:
    """The body's media type; "" when the client sent none (read as JSON)."""
    return request.content_type if "Content-Type" in request.headers else ""


async def read_object(request: web.Request, limit: int) -> Body:
    """The body as one object (create, update)."""
    body = decode(await read_body(request, limit), content_type(request))
    if not isinstance(body.doc, dict):
        raise bad_request(f"the request body must be an object, not {type(body.doc).__name__}")
    return body
