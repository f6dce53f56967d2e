"""Kubernetes ``Status`` objects: every error the API returns, with its reason and code.

Pure. Clients (kubectl, client-go, the Python client) decide what to do from
``reason`` and ``code`` and print ``message``, so these follow upstream's
wording: ``pods "web" not found``, ``Operation cannot be fulfilled on ...``.
"""

from __future__ import annotations

from typing import Any

from shiftnet.api.fielderrors import ErrorType, FieldError
from shiftnet.apiserver.resources import ResourceInfo

# FieldError types -> the CauseType string of k8s.io/apimachinery.
CAUSE_REASON = {
    ErrorType.REQUIRED: "FieldValueRequired",
    ErrorType.INVALID: "FieldValueInvalid",
    ErrorType.NOT_SUPPORTED: "FieldValueNotSupported",
    ErrorType.FORBIDDEN: "FieldValueForbidden",
    ErrorType.DUPLICATE: "FieldValueDuplicate",
    ErrorType.TOO_LONG: "FieldValueTooLong",
    ErrorType.TOO_MANY: "FieldValueTooMany",
}


class StatusError(Exception):
    """An API answer that is a ``Status`` failure; raised by handlers, rendered once."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details = details

    def body(self) -> dict[str, Any]:
        return failure(self.code, self.reason, self.message, self.details)


def failure(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        out["details"] = details
    return out


def success(info: ResourceInfo, name: str, uid: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": info.plural}
    if info.group:
        details["group"] = info.group
    if uid:
        details["uid"] = uid
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


def _details(info: ResourceInfo, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "kind": info.plural}
    if info.group:
        out["group"] = info.group
    return out


def not_found(info: ResourceInfo, name: str) -> StatusError:
    return StatusError(
        404, "NotFound", f'{info.qualified} "{name}" not found', _details(info, name)
    )


def already_exists(info: ResourceInfo, name: str) -> StatusError:
    return StatusError(
        409, "AlreadyExists", f'{info.qualified} "{name}" already exists', _details(info, name)
    )


def conflict(info: ResourceInfo, name: str) -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {info.qualified} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        _details(info, name),
    )


def invalid(info: ResourceInfo, name: str, errors: list[FieldError]) -> StatusError:
    """422 naming every field; the message lists them as upstream's aggregate does."""
    details = _details(info, name)
    details["kind"] = info.kind
    return invalid_object(info.qualified_kind, details, errors)


def invalid_object(
    qualified_kind: str, details: dict[str, Any], errors: list[FieldError]
) -> StatusError:
    """:func:`invalid` for an object of any kind, served or not (the self reviews)."""
    texts = [str(e) for e in errors]
    listed = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    name = details.get("name", "")
    details["causes"] = [
        {
            "reason": CAUSE_REASON.get(e.type, "FieldValueInvalid"),
            "message": e.message,
            "field": e.field,
        }
        for e in errors
    ]
    return StatusError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {listed}', details)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def method_not_allowed() -> StatusError:
    return StatusError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


def path_not_found(path: str) -> StatusError:
    return StatusError(
        404, "NotFound", f"the server could not find the requested resource ({path})"
    )


UNAUTHORIZED = failure(401, "Unauthorized", "Unauthorized")
