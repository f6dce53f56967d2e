"""Which parts of an object an update changes: the object itself, its status, or both.

Pure. On a Kubernetes API a kind with a ``status`` subresource takes its
status only through ``/status`` and everything else only through a plain
update, and RBAC grants the two separately (a router may update
``routes/status`` and not ``routes``). So the ``kube`` store sends only the
request(s) a change needs. Both sides are compared as the API shows them:
empty fields left out, and the metadata the server assigns ignored.
"""

from __future__ import annotations

from typing import Any

SERVER_METADATA = frozenset(
    {"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink"}
)


def _shown(value: Any) -> Any:
    """``value`` without empty fields (None, "", {}, []), as the API omits them."""
    if isinstance(value, dict):
        out = {k: _shown(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", {}, [])}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def _without_status(obj: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in obj.items() if k != "status"}
    meta = body.get("metadata") or {}
    body["metadata"] = {k: v for k, v in meta.items() if k not in SERVER_METADATA}
    shown: dict[str, Any] = _shown(body)
    return shown


def object_changed(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Anything outside ``status`` and the server's metadata differs."""
    return _without_status(current) != _without_status(wanted)


def status_changed(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """The statuses differ as the API shows them: an empty status (``{"ingress": []}``,
    what a new object's model carries) is the same as none, which is how the server
    answers it, so a create of a fresh object is one request, not a create and a
    ``/status`` write."""
    changed: bool = (_shown(current.get("status")) or None) != (
        _shown(wanted.get("status")) or None
    )
    return changed
