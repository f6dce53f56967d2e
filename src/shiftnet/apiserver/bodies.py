"""Request bodies: read at most the size limit, decode JSON or YAML, refuse the rest.

A body over the limit is refused before it is all read (413), as upstream
refuses bodies over 3 MiB; malformed JSON or YAML is a 400 with the
decoder's reason, never a 500.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from shiftnet.apiserver.status import StatusError, bad_request

JSON_TYPES = ("application/json", "")
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
APPLY_PATCH = "application/apply-patch+yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def too_large(limit: int) -> StatusError:
    return StatusError(
        413, "RequestEntityTooLarge", f"the request body is larger than {limit} bytes"
    )


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


def decode(raw: bytes, content_type: str) -> Any:
    """JSON (also the patch types) or YAML into Python; 415 for anything else."""
    if not raw.strip():
        raise bad_request("the request body is empty")
    if content_type in JSON_TYPES or content_type in PATCH_TYPES:
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as err:
            raise bad_request(f"the request body is not valid JSON: {err}") from None
    if content_type in YAML_TYPES:
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as err:
            reason = " ".join(str(err).split())
            raise bad_request(f"the request body is not valid YAML: {reason}") from None
    if content_type == PROTOBUF:
        raise StatusError(
            415,
            "UnsupportedMediaType",
            "protobuf request bodies are not served: send JSON or YAML "
            "(kubectl create -f FILE, kubectl apply -f FILE)",
        )
    raise StatusError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format "{content_type}"',
    )


def content_type(request: web.Request) -> str:
    """The body's media type; "" when the client sent none (read as JSON)."""
    return request.content_type if "Content-Type" in request.headers else ""


async def read_object(request: web.Request, limit: int) -> dict[str, Any]:
    """The body as one object (create, update)."""
    doc = decode(await read_body(request, limit), content_type(request))
    if not isinstance(doc, dict):
        raise bad_request(f"the request body must be an object, not {type(doc).__name__}")
    return doc
