"""The write and read verbs over the :class:`~shiftnet.store.base.Store`, without HTTP.

Every write passes the same checks as ``shiftnet apply``: the registry's
shape check, :func:`shiftnet.api.validation.errors` (every field problem
reported, not just the first), on update apply's merge (status and
controller-assigned fields kept, immutable fields refused), and for a Service
the ClusterIP request check (:class:`shiftnet.applying.ServiceIPCheck`).
A create passes NamespaceLifecycle (:mod:`shiftnet.apiserver.namespaces`)
before validation, as upstream's admission runs. Unknown and duplicate fields
are handled first, as the request's ``fieldValidation`` says
(:mod:`shiftnet.apiserver.fieldvalidation`). Errors leave as
:class:`~shiftnet.apiserver.status.StatusError`; nothing is written when one
is raised.
"""

from __future__ import annotations

import copy
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from shiftnet.api import Service
from shiftnet.api.apply_merge import merged_for_update
from shiftnet.api.base import Resource
from shiftnet.api.fielderrors import ErrorType, FieldError
from shiftnet.api.registry import parse_object
from shiftnet.api.selectors import parse_selector
from shiftnet.api.validation import errors as field_errors
from shiftnet.api.validation import update_errors as update_field_errors
from shiftnet.api.validation import warnings as object_warnings
from shiftnet.apiserver.fieldselectors import parse_field_selector
from shiftnet.apiserver.fieldvalidation import FieldCheck, drop_unknown
from shiftnet.apiserver.managed_fields import Ownership as Ownership  # handlers use it
from shiftnet.apiserver.managed_fields import entry_errors
from shiftnet.apiserver.namespaces import NamespaceLifecycle
from shiftnet.apiserver.paging import decode_token, page
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import (
    StatusError,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from shiftnet.apiserver.wire import out_list, out_object
from shiftnet.applying import ServiceIPCheck
from shiftnet.client import Client
from shiftnet.errors import (
    AlreadyExists,
    Conflict,
    InvalidAllocation,
    InvalidInput,
    InvalidObject,
    NotFound,
    StoreUnavailable,
)
from shiftnet.pod_deletion import delete_pod
from shiftnet.store.base import Store
from shiftnet.store.meta import prepare_create, with_revision

log = logging.getLogger(__name__)

T = TypeVar("T")
PATCH_ATTEMPTS = 10
GENERATE_ATTEMPTS = 5
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # upstream's: no vowels, no look-alikes


def _owned(body: dict[str, Any], entries: list[dict[str, Any]] | None) -> None:
    meta = body.setdefault("metadata", {})
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


def generated_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))


def _shape_error(info: ResourceInfo, name: str, err: InvalidObject) -> StatusError:
    kind = ErrorType.REQUIRED if err.message == "Required value" else ErrorType.INVALID
    found = FieldError(err.field, kind, None, "")
    shown = StatusError(
        422,
        "Invalid",
        f'{info.qualified_kind} "{name}" is invalid: {err.field}: {err.message}',
    )
    shown.details = invalid(info, name, [found]).details
    assert shown.details is not None
    shown.details["causes"][0]["message"] = err.message
    return shown


def _check_identity(info: ResourceInfo, raw: dict[str, Any]) -> dict[str, Any]:
    """Fill a missing apiVersion/kind from the URL; refuse ones that name another type."""
    out = dict(raw)
    kind = out.setdefault("kind", info.kind)
    version = out.setdefault("apiVersion", info.group_version)
    if kind != info.kind:
        raise bad_request(
            f"the kind in the body ({kind}) does not match the resource of the URL ({info.kind})"
        )
    if version != info.group_version:
        raise bad_request(
            f"the API version in the data ({version}) does not match the expected API version "
            f"({info.group_version})"
        )
    if not isinstance(out.get("metadata", {}), dict):
        raise bad_request(f"{info.kind}: metadata must be an object")
    return out


def _parse_known(info: ResourceInfo, raw: dict[str, Any], check: FieldCheck) -> Resource:
    """``parse_object``; unknown fields are looked for only when it finds one, so a
    clean body (nearly every body) is validated once."""
    try:
        obj = parse_object(raw)
    except InvalidObject as err:
        if err.message != "unknown field":
            raise
        cleaned, unknown = drop_unknown(info.model, raw)
        check.report(info, unknown)  # Strict: 400 naming every one
        return parse_object(cleaned)
    check.report(info, [])  # duplicates alone
    return obj


def parse(info: ResourceInfo, raw: dict[str, Any], check: FieldCheck | None = None) -> Resource:
    """A body into the kind's model, or 422 naming the field / 400 for a non-object."""
    raw = _check_identity(info, raw)
    name = str((raw.get("metadata") or {}).get("name") or "")
    try:
        obj = _parse_known(info, raw, check or FieldCheck())
    except InvalidObject as err:
        raise _shape_error(info, name, err) from None
    except InvalidInput as err:
        raise bad_request(str(err)) from None
    if type(obj) is not info.model:
        raise bad_request(f"the body is a {obj.KIND}, the URL names {info.kind}")
    return obj


def check_valid(
    info: ResourceInfo, obj: Resource, old: Resource | None = None, check: FieldCheck | None = None
) -> None:
    """Create rules, or with ``old`` the rules of an update of it; the kind's warnings
    about a valid object join the request's (``Warning`` headers)."""
    if old is None:  # an update's managedFields are its Ownership hook's to check
        sent = [e.to_dict() for e in obj.metadata.managed_fields or ()]
        found = entry_errors(sent) + field_errors(obj)
    else:
        found = update_field_errors(obj, old)
    if found:
        raise invalid(info, obj.metadata.name, found)
    if check is not None:
        check.warnings.extend(w for w in object_warnings(obj) if w not in check.warnings)


def _refused_allocation(info: ResourceInfo, name: str, err: InvalidAllocation) -> StatusError:
    if err.value is None:  # asked for none, and none is left
        found = FieldError(err.field, ErrorType.FORBIDDEN, None, err.reason)
    else:
        found = FieldError(err.field, ErrorType.INVALID, err.value, err.reason)
    return invalid(info, name, [found])


def _place(info: ResourceInfo, obj: Resource, namespace: str | None) -> None:
    """The URL's namespace on the object; a body naming another one is refused."""
    if not info.namespaced:
        obj.metadata.namespace = None
        return
    if obj.metadata.namespace and obj.metadata.namespace != namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    obj.metadata.namespace = namespace


# Kinds whose create keeps the status sent, as upstream's node strategy: a kubelet
# registers its Node with its addresses and conditions in one write.
STATUS_KEPT_ON_CREATE = frozenset({"Node"})


def _reset_status(obj: Resource) -> None:
    """The kind's empty status in place of the one sent (parsed already, so no second parse)."""
    field = type(obj).model_fields.get("status")
    if field is None or obj.KIND in STATUS_KEPT_ON_CREATE:
        return
    # the factory itself: FieldInfo.get_default inspects its signature on every call
    factory = cast(Callable[[], Any] | None, field.default_factory)
    empty = factory() if factory is not None else copy.deepcopy(field.default)
    setattr(obj, "status", empty)  # noqa: B010  (Resource itself declares no status)


class Verbs:
    """get, list, create, update, patch, delete of one store, in Kubernetes' terms."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.client = Client(store)
        self.namespaces = NamespaceLifecycle(store)

    async def _call(self, info: ResourceInfo, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        try:
            return await fn()
        except NotFound:
            raise not_found(info, name) from None
        except AlreadyExists:
            raise already_exists(info, name) from None
        except Conflict:
            raise conflict(info, name) from None
        except StoreUnavailable as err:
            log.warning("store unavailable error=%s", err)
            raise StatusError(503, "ServiceUnavailable", str(err)) from None

    # ------------------------------------------------------------------ reads

    async def get_raw(self, info: ResourceInfo, namespace: str | None, name: str) -> dict[str, Any]:
        return await self._call(info, name, lambda: self.store.get(info.plural, namespace, name))

    async def get(self, info: ResourceInfo, namespace: str | None, name: str) -> dict[str, Any]:
        return out_object(await self.get_raw(info, namespace, name))

    async def list(
        self,
        info: ResourceInfo,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str | None = None,
        shape: bool = True,
    ) -> dict[str, Any]:
        """A page of the kind's list; ``shape=False`` leaves the items as stored."""
        try:
            parse_selector(label_selector)
        except InvalidInput as err:
            raise bad_request(str(err)) from None
        fields = parse_field_selector(field_selector, info.plural)
        after = decode_token(continue_token) if continue_token else None
        result = await self._call(
            info, "", lambda: self.store.list(info.plural, namespace, label_selector or None)
        )
        items = result.items
        if not fields.empty:
            items = [o for o in items if fields.matches(o)]
        revision = after.revision if after is not None else result.revision
        chosen, token, remaining = page(items, revision, limit, after)
        return out_list(info, chosen, revision, token, remaining if token else None, shape)

    # ------------------------------------------------------------------ writes

    async def _check_allocation(self, info: ResourceInfo, obj: Resource) -> None:
        """A Service's ClusterIP request, checked as ``shiftnet apply`` checks it."""
        if not isinstance(obj, Service):
            return
        try:
            await ServiceIPCheck(self.client).check(obj)
        except InvalidAllocation as err:
            raise _refused_allocation(info, obj.metadata.name, err) from None
        except StoreUnavailable as err:
            raise StatusError(503, "ServiceUnavailable", str(err)) from None

    async def create(
        self,
        info: ResourceInfo,
        namespace: str | None,
        raw: dict[str, Any],
        dry_run: bool,
        check: FieldCheck | None = None,
        fields: Ownership | None = None,
    ) -> dict[str, Any]:
        obj = parse(info, raw, check)
        _place(info, obj, namespace)
        await self.namespaces.admit_create(info, obj.metadata.namespace, obj.metadata.name)
        # As upstream's create: the status sent is decoded (a badly shaped one is
        # refused) and then reset, a Node's excepted; no server identity from the client.
        _reset_status(obj)
        for field in ("uid", "resource_version", "creation_timestamp", "generation"):
            setattr(obj.metadata, field, None)
        prefix = obj.metadata.generate_name
        attempts = GENERATE_ATTEMPTS if prefix and not obj.metadata.name else 1
        for attempt in range(attempts):
            if prefix and (attempt or not obj.metadata.name):
                obj.metadata.name = generated_name(prefix)
            check_valid(info, obj, check=check)
            if attempt == 0:
                await self._check_allocation(info, obj)
            body = obj.to_dict()
            if fields is not None:
                _owned(body, fields(None, body, body["metadata"].get("managedFields")))
            if dry_run:
                return out_object(prepare_create(body))
            try:
                created = await self.store.create(info.plural, body)
            except AlreadyExists:
                if attempt + 1 < attempts:
                    continue
                raise already_exists(info, obj.metadata.name) from None
            except StoreUnavailable as err:
                raise StatusError(503, "ServiceUnavailable", str(err)) from None
            log.info("created resource=%s namespace=%s name=%s", info.plural, namespace, obj.name)
            return out_object(created)
        raise already_exists(info, obj.metadata.name)  # unreachable: the loop returns or raises

    async def update(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        raw: dict[str, Any],
        dry_run: bool,
        subresource: str | None = None,
        check: FieldCheck | None = None,
        fields: Ownership | None = None,
    ) -> dict[str, Any]:
        wanted = parse(info, raw, check)
        _place(info, wanted, namespace)
        if wanted.metadata.name != name:
            raise bad_request(
                f"the name of the object ({wanted.metadata.name}) does not match the name on "
                f"the URL ({name})"
            )
        existing_raw = await self.get_raw(info, namespace, name)
        pinned = wanted.metadata.resource_version or ""
        if subresource == "status":
            new = copy.deepcopy(existing_raw)
            status = wanted.to_dict().get("status")  # as parsed: unknown fields dropped
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            return await self._write(info, existing_raw, new, pinned, dry_run)
        existing = info.model.model_validate(existing_raw)
        try:
            merged = merged_for_update(existing, wanted)
        except InvalidObject as err:
            raise _shape_error(info, name, err) from None
        check_valid(info, merged, existing, check)
        await self._check_allocation(info, merged)
        new = merged.to_dict()
        if fields is not None:
            sent = wanted.metadata.managed_fields
            given = [e.to_dict() for e in sent] if sent else None
            _owned(new, fields(existing_raw, new, given))
        return await self._write(info, existing_raw, new, pinned, dry_run)

    async def _write(
        self,
        info: ResourceInfo,
        existing: dict[str, Any],
        new: dict[str, Any],
        pinned: str,
        dry_run: bool,
    ) -> dict[str, Any]:
        meta = existing.get("metadata") or {}
        name = str(meta.get("name") or "")
        if pinned and pinned != meta.get("resourceVersion"):
            raise conflict(info, name)
        new["metadata"] = {**(new.get("metadata") or {}), "resourceVersion": ""}
        if new == {**existing, "metadata": {**meta, "resourceVersion": ""}}:
            return out_object(existing)  # a no-op update writes nothing, as upstream
        new["metadata"]["resourceVersion"] = pinned
        if dry_run:
            return out_object(with_revision(new, int(meta.get("resourceVersion") or 0)))
        updated = await self._call(info, name, lambda: self.store.update(info.plural, new))
        if info.plural == "namespaces":
            self.namespaces.forget(name)
        log.info("updated resource=%s name=%s", info.plural, name)
        return out_object(updated)

    async def patch(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        apply: Callable[[dict[str, Any]], dict[str, Any]],
        dry_run: bool,
        subresource: str | None = None,
        check: FieldCheck | None = None,
        fields: Ownership | None = None,
    ) -> dict[str, Any]:
        """Read, ``apply`` the patch, update; retried on a concurrent write unless the
        patch itself names a resourceVersion (then that write's Conflict is returned)."""
        for _ in range(PATCH_ATTEMPTS):
            existing = await self.get_raw(info, namespace, name)
            current_rv = str((existing.get("metadata") or {}).get("resourceVersion") or "")
            patched = apply(out_object(copy.deepcopy(existing)))
            if not isinstance(patched, dict):
                raise bad_request("the patched object is not an object")
            meta = patched.get("metadata")
            pinned = str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
            try:
                return await self.update(
                    info, namespace, name, patched, dry_run, subresource, check, fields
                )
            except StatusError as err:
                if err.reason == "Conflict" and pinned == current_rv:
                    continue  # someone wrote meanwhile: patch the newer object
                raise
        raise conflict(info, name)

    async def delete(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
        dry_run: bool = False,
        grace_period: int | None = None,
    ) -> dict[str, Any]:
        existing = await self.get_raw(info, namespace, name)
        if uid and (existing.get("metadata") or {}).get("uid") != uid:
            raise conflict(info, name)
        if dry_run:
            return out_object(existing)
        if info.plural == "pods":  # a pod on a live node is marked terminating first
            gone = await self._call(
                info,
                name,
                lambda: delete_pod(
                    self.store,
                    namespace or "default",
                    name,
                    grace_period=grace_period,
                    resource_version=resource_version,
                ),
            )
            return out_object(gone)
        gone = await self._call(
            info, name, lambda: self.store.delete(info.plural, namespace, name, resource_version)
        )
        if info.plural == "namespaces":
            self.namespaces.forget(name)
        log.info("deleted resource=%s namespace=%s name=%s", info.plural, namespace, name)
        return out_object(gone)

    async def delete_collection(
        self,
        info: ResourceInfo,
        namespace: str | None,
        *,
        label_selector: str | None,
        field_selector: str | None,
        dry_run: bool,
    ) -> dict[str, Any]:
        listed = await self.list(
            info, namespace, label_selector=label_selector, field_selector=field_selector
        )
        gone: list[dict[str, Any]] = []
        for item in listed["items"]:
            meta = item.get("metadata") or {}
            try:
                gone.append(
                    await self.delete(
                        info, meta.get("namespace"), str(meta.get("name")), dry_run=dry_run
                    )
                )
            except StatusError as err:
                if err.reason != "NotFound":
                    raise
        return {**listed, "items": gone}
