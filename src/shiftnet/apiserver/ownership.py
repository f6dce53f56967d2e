"""The managedFields a write stores: which manager, and the hook the verbs call.

The verbs call an :data:`~shiftnet.apiserver.verbs.Ownership` hook with the
object before and after, right before they write, so the entries describe
exactly what is stored (defaults filled, controller fields kept). A write
through the API that does not apply (create, update, patch) is an
``Update`` by its ``fieldManager``, or by the first word of its
``User-Agent`` as upstream (``kubectl``, ``Go-http-client``). An object
that has no managedFields (written before, or by ``shiftnet apply`` straight
into the store) gets none from a create or an update: its first
server-side apply hands everything it holds to ``before-first-apply``, as
upstream does for objects older than server-side apply. That keeps the
create path free of this bookkeeping.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from shiftnet.api.fielderrors import ErrorType, FieldError
from shiftnet.apiserver.apply_shapes import Shape
from shiftnet.apiserver.fieldsets import FieldSet, compare, leaf_values
from shiftnet.apiserver.managed_fields import (
    BEFORE_FIRST_APPLY,
    Entries,
    Owned,
    Owner,
    decode,
    encode,
    record_apply,
    record_update,
    updater,
)
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import CAUSE_REASON, StatusError
from shiftnet.apiserver.verbs import Ownership

MAX_MANAGER = 128


def invalid_options(kind: str, errors: list[FieldError]) -> StatusError:
    """422 for bad request options, as upstream names them (``PatchOptions.meta.k8s.io``)."""
    texts = [str(e) for e in errors]
    listed = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    causes = [
        {
            "reason": CAUSE_REASON.get(e.type, "FieldValueInvalid"),
            "message": e.message,
            "field": e.field,
        }
        for e in errors
    ]
    details = {"group": "meta.k8s.io", "kind": kind, "causes": causes}
    return StatusError(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {listed}', details)


def now_text() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def manager_from_agent(user_agent: str) -> str:
    """Upstream's default manager: the User-Agent up to its first ``/``, printable, 128 chars."""
    head = user_agent.split("/", 1)[0]
    return "".join(c for c in head if c.isprintable())[:MAX_MANAGER]


def field_manager(options: str, given: str | None, user_agent: str, *, apply: bool) -> str:
    """The request's manager; refused as upstream refuses it (422 naming ``fieldManager``)."""
    if given is None or given == "":
        if apply:
            found = FieldError(
                "fieldManager", ErrorType.REQUIRED, None, "is required for apply patch"
            )
            raise invalid_options(options, [found])
        return manager_from_agent(user_agent)
    if len(given.encode()) > MAX_MANAGER:
        found = FieldError(
            "fieldManager", ErrorType.TOO_LONG, None, f"may not be more than {MAX_MANAGER} bytes"
        )
        raise invalid_options(options, [found])
    if not given.isprintable():
        found = FieldError(
            "fieldManager", ErrorType.INVALID, given, "must only contain printable characters"
        )
        raise invalid_options(options, [found])
    return given


def parse_force(value: str | None, *, apply: bool) -> bool:
    if value is None:
        return False
    if not apply:
        found = FieldError(
            "force", ErrorType.FORBIDDEN, None, "may not be specified for non-apply patch"
        )
        raise invalid_options("PatchOptions", [found])
    if value.lower() not in ("true", "false", "1", "0", ""):
        raise StatusError(400, "BadRequest", f'force: Invalid value: "{value}": must be a boolean')
    return value.lower() in ("true", "1")


def update_ownership(info: ResourceInfo, manager: str, shape: Shape) -> Ownership:
    """An Update by ``manager``: recorded on objects that already have managedFields."""
    owner = updater(manager, info.group_version)

    def record(old: dict[str, Any] | None, new: dict[str, Any], given: Any) -> Any:
        stored = (old.get("metadata") or {}).get("managedFields") if old is not None else None
        entries = decode(given if given else stored)
        if not entries:
            return None
        before = leaf_values(old, shape) if old is not None else {}
        change = compare(before, leaf_values(new, shape))
        return encode(record_update(entries, change, owner, now_text())) or None

    return record


def current_entries(live: dict[str, Any], info: ResourceInfo, shape: Shape) -> dict[Owner, Owned]:
    """The live object's owners; one with none has everything owned by ``before-first-apply``."""
    entries = decode((live.get("metadata") or {}).get("managedFields"))
    if entries:
        return entries
    paths = frozenset(leaf_values(live, shape))
    if not paths:
        return {}
    time = (live.get("metadata") or {}).get("creationTimestamp")
    owner = updater(BEFORE_FIRST_APPLY, info.group_version)
    return {owner: Owned(paths, info.group_version, time if isinstance(time, str) else None)}


def apply_ownership(
    entries: Entries,
    owner: Owner,
    applied: FieldSet,
    info: ResourceInfo,
    shape: Shape,
    *,
    force: bool,
    now: Callable[[], str] = now_text,
) -> Ownership:
    """An Apply: ``entries`` are the owners the merge and prune were computed against."""

    def record(old: dict[str, Any] | None, new: dict[str, Any], given: Any) -> Any:
        before = leaf_values(old, shape) if old is not None else {}
        change = compare(before, leaf_values(new, shape))
        settled = record_apply(
            entries, change, owner, applied, info.group_version, now(), force=force
        )
        return encode(settled) or None

    return record
