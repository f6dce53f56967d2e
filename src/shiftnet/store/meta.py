"""Generic metadata an API server assigns, shared by every backend."""

from __future__ import annotations

import copy
import datetime as _dt
import os
import threading
from typing import Any

_UID_BATCH = 256  # uids drawn per read of the system's randomness


class _RandomUids:
    """Version 4 UUIDs (as ``uuid.uuid4``) from randomness read ``_UID_BATCH`` at a time.

    ``os.urandom`` releases the GIL for its system call, and in a server whose
    store thread is waiting for the GIL every create then handed it over and
    waited to get it back; one read per batch keeps the same quality of
    randomness without that hand-off on every create.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._at = 0
        self._pid = os.getpid()

    def next(self) -> str:
        with self._lock:
            if self._at >= len(self._pool) or self._pid != os.getpid():  # empty, or forked
                self._pool, self._at, self._pid = os.urandom(16 * _UID_BATCH), 0, os.getpid()
            h = self._pool[self._at : self._at + 16].hex()
            self._at += 16
        # RFC 9562 version 4: the version nibble 4, the variant bits 10
        variant = "89ab"[int(h[16], 16) & 3]
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:]}"


new_uid = _RandomUids().next


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars) without ``copy.deepcopy``'s
    memo, which costs more than the copy of an object of a few dozen values."""
    kind = type(value)
    if kind is dict:
        return {k: json_copy(v) for k, v in value.items()}
    if kind is list:
        return [json_copy(v) for v in value]
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    return copy.deepcopy(value)  # anything else a caller put in: copied as before


def now_rfc3339() -> str:
    """RFC 3339 with microseconds, so "oldest wins" orders objects made in one second."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def key_of(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def prepare_create(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy with uid, creationTimestamp and generation set (resourceVersion is the backend's)."""
    out: dict[str, Any] = json_copy(obj)
    meta = out.setdefault("metadata", {})
    meta["uid"] = new_uid()
    meta["creationTimestamp"] = now_rfc3339()
    meta["generation"] = 1
    meta.pop("resourceVersion", None)
    return out


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def prepare_update(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``new`` keeping the identity fields of ``old`` (and its deletion marks,
    when ``new`` has none) and bumping generation when anything outside metadata and
    status changed."""
    out: dict[str, Any] = json_copy(new)
    meta = out.setdefault("metadata", {})
    old_meta = old.get("metadata") or {}
    for f in ("uid", "creationTimestamp"):
        if f in old_meta:
            meta[f] = old_meta[f]
    # a deletion once asked is not undone by writing the object without it (as upstream)
    for f in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        if f in old_meta and f not in meta:
            meta[f] = old_meta[f]
    gen = int(old_meta.get("generation") or 1)
    meta["generation"] = gen + 1 if _body(old) != _body(new) else gen
    meta.pop("resourceVersion", None)
    return out


def with_revision(obj: dict[str, Any], revision: int) -> dict[str, Any]:
    out = dict(obj)
    out["metadata"] = {**(obj.get("metadata") or {}), "resourceVersion": str(revision)}
    return out
