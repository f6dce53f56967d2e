"""A Kubernetes ``Status`` answer as the store's own typed error.

Pure: the ``kube`` backend hands over the HTTP code and the decoded body, and
gets the error every other backend raises for the same case (NotFound,
AlreadyExists, Conflict, Expired), so callers never learn which backend
they talk to. What has no store equivalent (a refused credential, a missing
permission, a server fault) is :class:`StoreUnavailable` in one sentence
that names the server, the operation and the server's own message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shiftnet.errors import (
    AlreadyExists,
    Conflict,
    Expired,
    InvalidInput,
    InvalidObject,
    NotFound,
    ShiftnetError,
    StoreUnavailable,
    shorten,
)


@dataclass(frozen=True)
class Call:
    """What was asked, for the error: ``update routes ns/web at https://host:6443``."""

    verb: str
    resource: str
    namespace: str | None
    name: str
    server: str

    @property
    def subject(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.verb} {self.resource} {where}".rstrip()


def _message(body: Any) -> str:
    if isinstance(body, dict) and body.get("message"):
        return shorten(" ".join(str(body["message"]).split()), 400)
    return ""


def _invalid(body: Any, call: Call, message: str) -> ShiftnetError:
    details = body.get("details") if isinstance(body, dict) else None
    details = details if isinstance(details, dict) else {}
    causes = details.get("causes") or []
    first = causes[0] if causes and isinstance(causes[0], dict) else {}
    field = str(first.get("field") or "")
    if field:
        reason = str(first.get("message") or message)
        return InvalidObject(str(details.get("kind") or call.resource), call.name, field, reason)
    return InvalidInput(message)


def error_for(code: int, body: Any, call: Call, revision: int = 0) -> ShiftnetError:
    """The typed error for one non-2xx answer (``revision``: the watch's start, for 410)."""
    reason = body.get("reason") if isinstance(body, dict) else None
    message = _message(body)
    said = f": {message}" if message else ""
    if code == 404:
        details = body.get("details") if isinstance(body, dict) else None
        missing = details.get("name") if isinstance(details, dict) else None
        if (
            call.resource != "namespaces"
            and isinstance(details, dict)
            and details.get("kind") == "namespaces"
            and isinstance(missing, str)
        ):  # a create in a namespace the server does not have (NamespaceLifecycle)
            return NotFound("namespaces", None, missing)
        return NotFound(call.resource, call.namespace, call.name)
    if code == 409:
        if reason == "AlreadyExists":
            return AlreadyExists(call.resource, call.namespace, call.name)
        return Conflict(call.resource, call.namespace, call.name)
    if code == 410:
        return Expired(revision, 0)
    if code == 422:
        return _invalid(body, call, message or f"HTTP {code}")
    if code in (400, 413, 415):
        return InvalidInput(f"the API server at {call.server} refused {call.subject}{said}")
    if code in (401, 403):
        status = f"HTTP {code} {reason}" if reason else f"HTTP {code}"
        return StoreUnavailable(
            f"the API server at {call.server} refused {call.subject} ({status}){said}"
        )
    return StoreUnavailable(
        f"the API server at {call.server} failed {call.subject}: HTTP {code}{said}"
    )
