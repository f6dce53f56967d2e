"""Server-side apply (``PATCH`` with ``application/apply-patch+yaml``) over the verbs.

The body is an applied configuration: a partial object naming only the
fields its manager wants. Absent, the object is created from it (201);
present, it is merged on (:mod:`shiftnet.apiserver.apply`), what the manager
applied before and dropped is pruned, and the result goes through the same
update as any other write: field validation, admission, validation,
``dryRun``, one store write, none when nothing changed. Ownership
(:mod:`shiftnet.apiserver.managed_fields`) is settled against the object as
it will be stored; a conflict is upstream's 409 and writes nothing. A
concurrent write between the read and the write is retried against the
newer object, unless the configuration names a ``resourceVersion``.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any

from shiftnet.apiserver.apply import merge_applied, remove_paths
from shiftnet.apiserver.apply_shapes import shape_for
from shiftnet.apiserver.fieldsets import FieldSet, leaf_values
from shiftnet.apiserver.fieldvalidation import FieldCheck
from shiftnet.apiserver.managed_fields import applier, pruned
from shiftnet.apiserver.ownership import (
    apply_ownership,
    current_entries,
    forgiven_paths,
    synced_last_applied,
)
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import StatusError, bad_request, conflict
from shiftnet.apiserver.verbs import PATCH_ATTEMPTS, Verbs
from shiftnet.apiserver.wire import out_object
from shiftnet.errors import FieldManagerConflict, InvalidPatch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApplyRequest:
    info: ResourceInfo
    namespace: str | None
    name: str
    config: Any
    manager: str
    force: bool
    dry_run: bool
    check: FieldCheck


def conflict_status(err: FieldManagerConflict) -> StatusError:
    """Upstream's apply conflict: 409 Conflict, one cause per field."""
    causes = [
        {"type": "FieldManagerConflict", "message": f"conflict with {who}", "field": where}
        for who, where in err.conflicts
    ]
    return StatusError(409, "Conflict", err.message, {"causes": causes})


def _checked_config(req: ApplyRequest) -> dict[str, Any]:
    config = req.config
    if not isinstance(config, dict):
        raise bad_request("the applied configuration must be an object")
    for field in ("apiVersion", "kind"):
        if not config.get(field):
            raise bad_request(f"{field} must be set in the applied configuration")
    meta = config.get("metadata")
    if not isinstance(meta, dict):
        raise bad_request("metadata must be set in the applied configuration")
    if meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    name = meta.get("name")
    if name != req.name:
        raise bad_request(
            f"the name of the object ({name}) does not match the name on the URL ({req.name})"
        )
    return config


def _applied_paths(req: ApplyRequest, config: dict[str, Any]) -> FieldSet:
    try:
        return frozenset(leaf_values(config, shape_for(req.info.model), strict=True))
    except InvalidPatch as err:
        raise StatusError(
            422, "Invalid", f'{req.info.qualified_kind} "{req.name}" is invalid: {err}'
        ) from None


async def _create(verbs: Verbs, req: ApplyRequest, applied: FieldSet) -> dict[str, Any]:
    shape = shape_for(req.info.model)
    fields = apply_ownership({}, applier(req.manager), applied, req.info, shape, force=req.force)
    body = copy.deepcopy(req.config)
    return await verbs.create(req.info, req.namespace, body, req.dry_run, req.check, fields)


async def _apply_to(
    verbs: Verbs, req: ApplyRequest, live: dict[str, Any], applied: FieldSet
) -> dict[str, Any]:
    info, shape, owner = req.info, shape_for(req.info.model), applier(req.manager)
    entries = current_entries(live, info, shape)
    merged = merge_applied(live, req.config, shape)
    merged = remove_paths(merged, pruned(entries, owner, applied), shape)
    forgiven = forgiven_paths(live, req.manager, shape)
    merged, unchecked = synced_last_applied(merged, req.config, req.manager)
    fields = apply_ownership(
        entries,
        owner,
        applied,
        info,
        shape,
        force=req.force,
        forgiven=forgiven,
        unchecked=unchecked,
    )
    return await verbs.update(
        info, req.namespace, req.name, merged, req.dry_run, check=req.check, fields=fields
    )


async def server_side_apply(verbs: Verbs, req: ApplyRequest) -> tuple[int, dict[str, Any]]:
    """Create (201) or apply to (200) the object; the answer's code and body."""
    config = _checked_config(req)
    applied = _applied_paths(req, config)
    pinned = str(config["metadata"].get("resourceVersion") or "")
    try:
        for _ in range(PATCH_ATTEMPTS):
            try:
                live = out_object(await verbs.get_raw(req.info, req.namespace, req.name))
            except StatusError as err:
                if err.reason != "NotFound":
                    raise
                if pinned:
                    raise
                try:
                    return 201, await _create(verbs, req, applied)
                except StatusError as err:
                    if err.reason == "AlreadyExists":
                        continue  # created meanwhile: apply to it
                    raise
            try:
                return 200, await _apply_to(verbs, req, live, applied)
            except StatusError as err:
                if err.reason == "Conflict" and not pinned:
                    continue  # written meanwhile: apply to the newer object
                raise
    except FieldManagerConflict as err:
        log.info(
            "apply conflict resource=%s name=%s manager=%s conflicts=%d",
            req.info.plural,
            req.name,
            req.manager,
            len(err.conflicts),
        )
        raise conflict_status(err) from None
    raise conflict(req.info, req.name)
