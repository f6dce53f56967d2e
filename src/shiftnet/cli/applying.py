"""``apply`` semantics as a library: create or update, keeping what the cluster assigned.

An applied object replaces the stored spec, labels and annotations; the
stored status and the fields a controller assigns (a Service's
``spec.clusterIP``, a Pod's ``spec.nodeName``, ...) are kept when the manifest
leaves them out. When nothing the user controls differs, nothing is written
and the result is ``unchanged``.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from shiftnet.api import ClusterNetwork, Resource, Service
from shiftnet.cli.manifests import Document
from shiftnet.client import Client
from shiftnet.errors import (
    AlreadyExists,
    Conflict,
    InvalidInput,
    InvalidObject,
    NotFound,
    ShiftnetError,
    StoreUnavailable,
)
from shiftnet.master.clusterip import ClusterIPAllocator

Action = Literal["created", "configured", "unchanged"]

# Fields a controller fills in; a manifest that omits them keeps the stored value.
SERVER_ASSIGNED: dict[str, tuple[tuple[str, ...], ...]] = {
    "Service": (("spec", "clusterIP"),),
    "Pod": (("spec", "nodeName"),),
    "Node": (("spec", "podCIDR"),),
    "Route": (("spec", "host"),),
}
# Server-assigned fields that may not change once set (Kubernetes: "field is immutable").
IMMUTABLE: dict[str, tuple[tuple[str, ...], ...]] = {
    "Service": (("spec", "clusterIP"),),
}
_META_KEPT = ("uid", "creationTimestamp", "generation", "resourceVersion")


@dataclass(frozen=True)
class Applied:
    obj: Resource
    action: Action


def _dig(d: dict[str, Any], path: tuple[str, ...]) -> Any:
    cur: Any = d
    for p in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    return cur


def _put(d: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    cur = d
    for p in path[:-1]:
        cur = cur.setdefault(p, {})
    cur[path[-1]] = value


def _check_immutable(
    existing: dict[str, Any], wanted: dict[str, Any], kind: str, name: str
) -> None:
    for path in IMMUTABLE.get(kind, ()):
        old, new = _dig(existing, path), _dig(wanted, path)
        if old not in (None, "") and new not in (None, "") and old != new:
            raise InvalidObject(
                kind, name, ".".join(path), f'Invalid value: "{new}": field is immutable'
            )


def merged_for_update(existing: Resource, wanted: Resource) -> Resource:
    """``wanted``'s spec, labels and annotations on ``existing``'s identity and status."""
    old = existing.to_dict()
    new = wanted.to_dict()
    kind = type(existing).KIND
    _check_immutable(old, new, kind, existing.name)
    out: dict[str, Any] = {k: copy.deepcopy(v) for k, v in new.items() if k != "status"}
    if "status" in old:
        out["status"] = copy.deepcopy(old["status"])
    meta = out.setdefault("metadata", {})
    old_meta = old.get("metadata") or {}
    for field in _META_KEPT:
        if field in old_meta:
            meta[field] = old_meta[field]
        else:
            meta.pop(field, None)
    for path in SERVER_ASSIGNED.get(kind, ()):
        if _dig(new, path) in (None, "") and _dig(old, path) not in (None, ""):
            _put(out, path, copy.deepcopy(_dig(old, path)))
    return type(existing).model_validate(out)


def for_create(wanted: Resource) -> Resource:
    """A manifest as a new object: no status, no server identity (as ``kubectl create``)."""
    raw = {k: v for k, v in wanted.to_dict().items() if k != "status"}
    meta = raw.get("metadata") or {}
    for field in _META_KEPT:
        meta.pop(field, None)
    return type(wanted).model_validate(raw)


async def check_version(client: Client, wanted: Resource) -> None:
    """A manifest that carries ``metadata.resourceVersion`` must match the stored object."""
    rv = wanted.metadata.resource_version
    if not rv:
        return
    cls = type(wanted)
    current = await client.try_get(cls, wanted.namespace, wanted.name)
    if current is not None and current.metadata.resource_version != rv:
        raise Conflict(
            cls.RESOURCE,
            wanted.namespace,
            wanted.name,
            f"resourceVersion {rv} in the manifest, {current.metadata.resource_version} stored",
        )


async def apply_object(client: Client, wanted: Resource, attempts: int = 10) -> Applied:
    """Create ``wanted`` or bring the stored object in line with it."""
    cls = type(wanted)
    pinned = wanted.metadata.resource_version or None
    for _ in range(attempts):
        existing = await client.try_get(cls, wanted.namespace, wanted.name)
        if existing is None:
            try:
                return Applied(await client.create(for_create(wanted)), "created")
            except AlreadyExists:
                continue  # someone created it meanwhile: update instead
        merged = merged_for_update(existing, wanted)
        if merged.to_dict() == existing.to_dict():
            return Applied(existing, "unchanged")
        if pinned:
            merged.metadata.resource_version = pinned
        try:
            return Applied(await client.update(merged), "configured")
        except Conflict:
            if pinned:
                raise
            continue  # changed by a controller meanwhile: merge again
        except NotFound:
            continue
    raise Conflict(
        cls.RESOURCE, wanted.namespace, wanted.name, f"gave up after {attempts} attempts"
    )


class ServiceIPCheck:
    """Refuse, before anything is written, a Service whose ClusterIP request the master
    would reject (taken, out of range, a change of the one it holds, range full); Services
    earlier in the same apply count as taken."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.network: str | None = None
        self.known: list[Service] | None = None

    async def check(self, svc: Service) -> None:
        if self.known is None:
            cn = await self.client.try_get(ClusterNetwork, None, "default")
            self.network = cn.service_network if cn is not None else None
            self.known = await self.client.list(Service) if self.network else []
        if not self.network:
            return  # no master has run yet: it will report what it cannot honour
        ClusterIPAllocator.check_request(svc, self.known, self.network)
        self.known = [s for s in self.known if s.key != svc.key] + [svc]


async def apply_documents(
    client: Client, docs: Sequence[Document], objects: Sequence[Resource]
) -> AsyncIterator[tuple[Document, Applied]]:
    """``apply`` of decoded manifests: check every pinned resourceVersion first, then
    create/update each in order, yielding as it goes. Errors name the document."""
    services = ServiceIPCheck(client)
    for doc, obj in zip(docs, objects, strict=True):
        try:
            await check_version(client, obj)
            if isinstance(obj, Service):
                await services.check(obj)
        except StoreUnavailable:
            raise
        except ShiftnetError as err:
            raise InvalidInput(f"{doc.where}: {err}") from None
    for doc, obj in zip(docs, objects, strict=True):
        try:
            result = await apply_object(client, obj)
        except StoreUnavailable:
            raise
        except ShiftnetError as err:
            raise InvalidInput(f"{doc.where}: {err}") from None
        yield doc, result
