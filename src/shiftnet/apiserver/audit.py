"""The request log (``--audit-log PATH``): one JSON line per authenticated request,
written when it arrives, naming what RBAC would check.

Why: a component that will run against a real cluster needs exactly the RBAC
rules for what it sends; this log shows that set (verb, API group, resource,
subresource) as kube-apiserver's authorizer sees it. Off unless a path is
given: then it is one small append per request; without it no middleware runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from shiftnet.apiserver.paths import Target, parse_path

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_WRITES = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def _watching(query: Any) -> bool:
    return str(query.get("watch", "")).lower() in ("true", "1")


def request_verb(method: str, target: Target, query: Any) -> str:
    """The verb upstream's authorizer checks for ``method`` on ``target`` (pure)."""
    if method in ("GET", "HEAD"):
        if _watching(query):
            return "watch"
        return "list" if target.name is None else "get"
    if method == "DELETE":
        return "deletecollection" if target.name is None else "delete"
    return _WRITES.get(method, method.lower())


def request_record(method: str, path: str, query: Any, agent: str = "") -> dict[str, str]:
    """What one request asks for: a resource request, or a non-resource URL."""
    target = parse_path(path)
    if target is None or target.resource is None:
        return {"verb": method.lower(), "nonResourceURL": path, "userAgent": agent}
    record = {
        "userAgent": agent,
        "verb": request_verb(method, target, query),
        "group": target.group,
        "resource": target.resource.plural,
    }
    for key, value in (
        ("subresource", target.subresource),
        ("namespace", target.namespace),
        ("name", target.name),
    ):
        if value is not None:
            record[key] = value
    return record


def open_log(path: Path) -> IO[str]:
    """``path`` for appending, made 0600 (it names every object asked for); never a symlink."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    return os.fdopen(fd, "a", buffering=1, encoding="utf-8")


def audit_middleware(out: IO[str]) -> Middleware:
    """Write each request's record as it arrives (a watch is logged at its start)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        agent = request.headers.get("User-Agent", "")
        record = request_record(request.method, request.path, request.query, agent)
        out.write(json.dumps(record, separators=(",", ":")) + "\n")
        return await handler(request)

    return middleware
