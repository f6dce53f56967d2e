"""Generic metadata an API server assigns, shared by every backend."""

from __future__ import annotations

import copy
import datetime as _dt
import uuid
from typing import Any


def now_rfc3339() -> str:
    """RFC 3339 with microseconds, so "oldest wins" orders objects made in one second."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def key_of(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def prepare_create(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy with uid, creationTimestamp and generation set (resourceVersion is the backend's)."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_rfc3339()
    meta["generation"] = 1
    meta.pop("resourceVersion", None)
    return out


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def prepare_update(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``new`` keeping the identity fields of ``old`` and bumping generation
    when anything outside metadata and status changed."""
    out = copy.deepcopy(new)
    meta = out.setdefault("metadata", {})
    old_meta = old.get("metadata") or {}
    for f in ("uid", "creationTimestamp"):
        if f in old_meta:
            meta[f] = old_meta[f]
    gen = int(old_meta.get("generation") or 1)
    meta["generation"] = gen + 1 if _body(old) != _body(new) else gen
    meta.pop("resourceVersion", None)
    return out


def with_revision(obj: dict[str, Any], revision: int) -> dict[str, Any]:
    out = dict(obj)
    out["metadata"] = {**(obj.get("metadata") or {}), "resourceVersion": str(revision)}
    return out
