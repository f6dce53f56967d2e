"""The managedFields a write stores: which manager, and the hook the verbs call.

The verbs call an :data:`~shiftnet.apiserver.managed_fields.Ownership` hook with the
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
import json
from collections.abc import Callable
from typing import Any

from shiftnet.api.fielderrors import ErrorType, FieldError
from shiftnet.apiserver.apply_shapes import Shape
from shiftnet.apiserver.fieldsets import Comparison, FieldSet, compare, leaf_values
from shiftnet.apiserver.managed_fields import (
    BEFORE_FIRST_APPLY,
    MAX_MANAGER,
    Entries,
    Owned,
    Owner,
    Ownership,
    decode,
    encode,
    entry_errors,
    record_apply,
    record_update,
    updater,
)
from shiftnet.apiserver.patch import json_equal
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import CAUSE_REASON, StatusError, invalid
from shiftnet.errors import InvalidPatch

KUBECTL = "kubectl"  # the manager kubectl apply --server-side sends
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


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


def refuse_bad_entries(info: ResourceInfo, new: dict[str, Any], given: Any) -> None:
    """The managedFields a write sent, checked as kube-apiserver checks them: a 422
    naming each bad ``metadata.managedFields[i].<field>``."""
    found = entry_errors(given)
    if found:
        raise invalid(info, str((new.get("metadata") or {}).get("name") or ""), found)


def update_ownership(info: ResourceInfo, manager: str, shape: Shape) -> Ownership:
    """An Update by ``manager``: recorded on objects that already have managedFields."""
    owner = updater(manager, info.group_version)

    def record(old: dict[str, Any] | None, new: dict[str, Any], given: Any) -> Any:
        refuse_bad_entries(info, new, given)
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


def forgiven_paths(live: dict[str, Any], manager: str, shape: Shape) -> FieldSet:
    """Conflicts ``kubectl`` may take over when it first applies to an object
    ``kubectl apply`` made: the fields of the last-applied annotation that still
    have the value it gave them, as upstream's API server lets kubectl move from
    client-side to server-side apply. Other managers are forgiven nothing."""
    if manager != KUBECTL:
        return frozenset()
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or not text:
        return frozenset()
    try:
        last = json.loads(text)
        if not isinstance(last, dict):
            return frozenset()
        then = leaf_values(last, shape)
    except (ValueError, InvalidPatch):
        return frozenset()
    now = leaf_values(live, shape)
    return frozenset(p for p, v in then.items() if p in now and json_equal(now[p], v))


LAST_APPLIED_PATH = ("f:metadata", "f:annotations", "f:" + LAST_APPLIED)


def synced_last_applied(
    merged: dict[str, Any], config: dict[str, Any], manager: str
) -> tuple[dict[str, Any], FieldSet]:
    """As upstream, ``kubectl``'s server-side apply rewrites the last-applied annotation
    an object already has to the configuration it applied, so a later client-side
    ``kubectl apply`` diffs against it. The annotation is then nobody's change:
    the paths to leave out of the ownership comparison."""
    meta = merged.get("metadata") or {}
    annotations = meta.get("annotations")
    if manager != KUBECTL or not isinstance(annotations, dict) or LAST_APPLIED not in annotations:
        return merged, frozenset()
    applied = json.loads(json.dumps(config))
    config_annotations = (applied.get("metadata") or {}).get("annotations")
    if isinstance(config_annotations, dict):
        config_annotations.pop(LAST_APPLIED, None)
    text = json.dumps(applied, separators=(",", ":"), sort_keys=True) + "\n"
    out = {**merged, "metadata": {**meta, "annotations": {**annotations, LAST_APPLIED: text}}}
    return out, frozenset({LAST_APPLIED_PATH})


def apply_ownership(
    entries: Entries,
    owner: Owner,
    applied: FieldSet,
    info: ResourceInfo,
    shape: Shape,
    *,
    force: bool,
    forgiven: FieldSet = frozenset(),
    unchecked: FieldSet = frozenset(),
    now: Callable[[], str] = now_text,
) -> Ownership:
    """An Apply: ``entries`` are the owners the merge and prune were computed against;
    ``unchecked`` paths the server itself rewrote are left out of the comparison."""

    def record(old: dict[str, Any] | None, new: dict[str, Any], given: Any) -> Any:
        before = leaf_values(old, shape) if old is not None else {}
        change = compare(before, leaf_values(new, shape))
        if unchecked:
            change = Comparison(
                change.added - unchecked, change.modified - unchecked, change.removed - unchecked
            )
        settled = record_apply(
            entries,
            change,
            owner,
            applied,
            info.group_version,
            now(),
            force=force,
            forgiven=forgiven,
        )
        return encode(settled) or None

    return record
