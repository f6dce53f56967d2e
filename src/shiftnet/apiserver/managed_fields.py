"""Who owns which fields: ``metadata.managedFields`` kept as server-side apply keeps it (pure).

Each entry is one *owner*: a manager name with its operation (``Apply``, or
``Update`` for every other write) and, for an Update, the API version it
wrote in (so ``kubectl`` applying and ``kubectl`` editing are two owners, as
upstream). A write compares the object before and after, path by path
(:func:`shiftnet.apiserver.fieldsets.compare`):

* an Update takes the paths it added or changed from everyone else, and
  nobody keeps a path that is gone;
* an Apply owns exactly the paths of its configuration; a path it changes
  that another owner holds is a conflict (:class:`FieldManagerConflict`,
  upstream's message) unless forced, when the path is taken over. A value
  set to what it already was is shared, not a conflict.

An entry's ``time`` moves only when its paths change, so a write that
changes nothing leaves the entries, and the object, as they were.

Entries a client sends are checked as kube-apiserver checks them
(:func:`entry_errors`): an unknown operation or fields type, a manager that
is too long or unprintable, or a subresource that is too long is a 422
naming ``metadata.managedFields[i].<field>``; nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from shiftnet.api.fielderrors import ErrorType, FieldError
from shiftnet.apiserver.fieldsets import (
    Comparison,
    FieldSet,
    Path,
    covers,
    from_fields_v1,
    path_text,
    to_fields_v1,
)
from shiftnet.errors import FieldManagerConflict

APPLY = "Apply"
UPDATE = "Update"
BEFORE_FIRST_APPLY = "before-first-apply"  # upstream's owner of what an object had before
FIELDS_V1 = "FieldsV1"
MAX_MANAGER = 128  # bytes, upstream's FieldManagerMaxLength
MAX_SUBRESOURCE = 256  # bytes, upstream's MaxSubresourceNameLength


@dataclass(frozen=True, order=True)
class Owner:
    """One manager's identity: an Apply ignores the API version, an Update keeps it."""

    manager: str
    operation: str
    api_version: str = ""
    subresource: str = ""

    def printed(self) -> str:
        """As upstream names an owner in a conflict: ``"kubectl-edit" using v1``."""
        text = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text


@dataclass(frozen=True)
class Owned:
    paths: FieldSet
    api_version: str
    time: str | None


Entries = Mapping[Owner, Owned]

# The hook the verbs call on every write (:mod:`shiftnet.apiserver.ownership` makes
# them): given the stored object (None on create), the object about to be written and
# the managedFields the request sent, the managedFields to store (None: none).
Ownership = Callable[[dict[str, Any] | None, dict[str, Any], Any], list[dict[str, Any]] | None]


def applier(manager: str) -> Owner:
    return Owner(manager, APPLY)


def updater(manager: str, api_version: str) -> Owner:
    return Owner(manager, UPDATE, api_version)


def manager_errors(manager: str, at: str) -> list[FieldError]:
    """Upstream's field manager rules: at most 128 bytes, printable (each bad
    character named with its byte position, as Go's ``%#U`` prints it)."""
    found: list[FieldError] = []
    if len(manager.encode()) > MAX_MANAGER:
        found.append(
            FieldError(at, ErrorType.TOO_LONG, None, f"may not be more than {MAX_MANAGER} bytes")
        )
    position = 0
    for char in manager:
        if not char.isprintable():
            detail = f"invalid character U+{ord(char):04X} (at position {position})"
            found.append(FieldError(at, ErrorType.INVALID, manager, detail))
        position += len(char.encode())
    return found


def entry_errors(raw: Any, at: str = "metadata.managedFields") -> list[FieldError]:
    """What kube-apiserver refuses in the managedFields a client sends, by entry.

    A single empty entry is the request to clear them (upstream takes it before
    it validates); entries that are not objects are the decoder's to refuse."""
    if not isinstance(raw, list) or raw == [{}]:
        return []
    found: list[FieldError] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            continue
        here = f"{at}[{i}]"
        operation = entry.get("operation") or ""
        if operation not in (APPLY, UPDATE):
            found.append(
                FieldError(
                    f"{here}.operation",
                    ErrorType.INVALID,
                    str(operation),
                    "must be `Apply` or `Update`",
                )
            )
        fields_type = entry.get("fieldsType") or ""
        if fields_type and fields_type != FIELDS_V1:
            found.append(
                FieldError(
                    f"{here}.fieldsType", ErrorType.INVALID, str(fields_type), "must be `FieldsV1`"
                )
            )
        found.extend(manager_errors(str(entry.get("manager") or ""), f"{here}.manager"))
        subresource = str(entry.get("subresource") or "")
        if len(subresource.encode()) > MAX_SUBRESOURCE:
            found.append(
                FieldError(
                    f"{here}.subresource",
                    ErrorType.TOO_LONG,
                    None,
                    f"may not be more than {MAX_SUBRESOURCE} bytes",
                )
            )
    return found


def decode(raw: Any) -> dict[Owner, Owned]:
    """``metadata.managedFields`` as owners; malformed entries are skipped."""
    out: dict[Owner, Owned] = {}
    if not isinstance(raw, list):
        return out
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        manager = str(entry.get("manager") or "")
        operation = UPDATE if entry.get("operation") != APPLY else APPLY
        version = str(entry.get("apiVersion") or "")
        owner = Owner(
            manager,
            operation,
            version if operation == UPDATE else "",
            str(entry.get("subresource") or ""),
        )
        paths = from_fields_v1(entry.get("fieldsV1"))
        time = entry.get("time")
        out[owner] = Owned(paths, version, time if isinstance(time, str) else None)
    return out


def _order(item: tuple[Owner, Owned]) -> tuple[str, str, str, str, str]:
    owner, owned = item  # upstream's order: operation, time, manager, version, subresource
    return (owner.operation, owned.time or "", owner.manager, owned.api_version, owner.subresource)


def encode(entries: Entries) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for owner, owned in sorted(entries.items(), key=_order):
        if not owned.paths:
            continue
        entry: dict[str, Any] = {
            "manager": owner.manager,
            "operation": owner.operation,
            "apiVersion": owned.api_version,
        }
        if owned.time:
            entry["time"] = owned.time
        entry["fieldsType"] = FIELDS_V1
        entry["fieldsV1"] = to_fields_v1(owned.paths)
        if owner.subresource:
            entry["subresource"] = owner.subresource
        out.append(entry)
    return out


def _settled(
    entries: Entries, paths: dict[Owner, FieldSet], versions: dict[Owner, str], now: str
) -> dict[Owner, Owned]:
    """The new entries: a changed set gets ``now``, an unchanged one keeps its time."""
    out: dict[Owner, Owned] = {}
    for owner, owned_paths in paths.items():
        if not owned_paths:
            continue
        before = entries.get(owner)
        version = versions.get(owner) or (before.api_version if before else "")
        if before is not None and before.paths == owned_paths and before.api_version == version:
            out[owner] = before
        else:
            out[owner] = Owned(owned_paths, version, now)
    return out


def record_update(
    entries: Entries, change: Comparison, owner: Owner, now: str
) -> dict[Owner, Owned]:
    """An Update by ``owner``: it takes what it added or changed; what is gone is nobody's."""
    paths = {o: owned.paths - change.changed - change.removed for o, owned in entries.items()}
    mine = entries.get(owner)
    paths[owner] = ((mine.paths if mine else frozenset()) | change.changed) - change.removed
    return _settled(entries, paths, {owner: owner.api_version}, now)


def record_apply(
    entries: Entries,
    change: Comparison,
    owner: Owner,
    applied: FieldSet,
    api_version: str,
    now: str,
    *,
    force: bool,
    forgiven: FieldSet = frozenset(),
) -> dict[Owner, Owned]:
    """An Apply by ``owner`` of a configuration setting ``applied``; conflicts raise
    :class:`FieldManagerConflict` unless ``force``, which takes the paths over.
    Conflicts all within ``forgiven`` are taken over as if forced (upstream's
    upgrade from client-side apply, :func:`shiftnet.apiserver.ownership.forgiven_paths`)."""
    taken = {o: owned.paths & change.changed for o, owned in entries.items() if o != owner}
    taken = {o: p for o, p in taken.items() if p}
    if taken and not force and not frozenset().union(*taken.values()) <= forgiven:
        raise conflict_error(taken)
    paths = {
        o: owned.paths - taken.get(o, frozenset()) - change.removed
        for o, owned in entries.items()
        if o != owner
    }
    paths[owner] = applied
    return _settled(entries, paths, {owner: api_version}, now)


def pruned(entries: Entries, owner: Owner, applied: FieldSet) -> list[Path]:
    """Paths ``owner`` applied before and no longer does, that nobody else holds:
    they leave the object. Outermost first."""
    before = entries.get(owner)
    if before is None:
        return []
    kept = applied.union(*(o.paths for who, o in entries.items() if who != owner))
    gone = [p for p in before.paths - applied if not covers(kept, p)]
    return sorted(gone, key=lambda p: (len(p), p))


def conflict_error(taken: Mapping[Owner, Iterable[Path]]) -> FieldManagerConflict:
    """Upstream's message: one conflict on one line, more grouped by manager."""
    found = sorted(
        (owner.printed(), path_text(path)) for owner, paths in taken.items() for path in paths
    )
    if len(found) == 1:
        who, where = found[0]
        return FieldManagerConflict(
            f"Apply failed with 1 conflict: conflict with {who}: {where}", found
        )
    lines: list[str] = []
    for who in sorted({w for w, _ in found}):
        lines.append(f"conflicts with {who}:")
        lines.extend(f"- {where}" for w, where in found if w == who)
    message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    return FieldManagerConflict(message, found)
