"""A typed view of the store: pydantic objects in, pydantic objects out.

Writes are validated (``shiftnet.api.validation``) before they reach the
store, so nothing invalid is ever stored. Controllers use :meth:`Client.mutate`
for read-modify-write with automatic retry on Conflict.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from shiftnet.api import Resource
from shiftnet.api.validation import has_update_rules, validate, validate_update
from shiftnet.errors import Conflict, NotFound
from shiftnet.pod_deletion import delete_pod
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

R = TypeVar("R", bound=Resource)


def decode(cls: type[R], raw: dict[str, Any]) -> R:
    """A stored dict back into its type (the store only holds validated objects)."""
    return cls.model_validate(raw)


class Client:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self, cls: type[R], namespace: str | None, name: str) -> R:
        ns = namespace if cls.NAMESPACED else None
        return decode(cls, await self.store.get(cls.RESOURCE, ns, name))

    async def try_get(self, cls: type[R], namespace: str | None, name: str) -> R | None:
        try:
            return await self.get(cls, namespace, name)
        except NotFound:
            return None

    async def list(
        self, cls: type[R], namespace: str | None = None, selector: str | None = None
    ) -> list[R]:
        res = await self.store.list(cls.RESOURCE, namespace if cls.NAMESPACED else None, selector)
        return [decode(cls, o) for o in res.items]

    def _normalise(self, obj: Resource) -> None:
        if not obj.NAMESPACED:
            obj.metadata.namespace = None
        elif not obj.metadata.namespace:
            obj.metadata.namespace = "default"

    async def create(self, obj: R) -> R:
        self._normalise(obj)
        validate(obj)
        raw = await self.store.create(obj.RESOURCE, obj.to_dict())
        return decode(type(obj), raw)

    async def update(self, obj: R, old: R | None = None) -> R:
        """Write ``obj`` over the stored object; ``old``, the object it replaces, lets an
        update keep old values that only the create rules refuse (as upstream)."""
        self._normalise(obj)
        if old is None:
            validate(obj)
        else:
            validate_update(obj, old)
        raw = await self.store.update(obj.RESOURCE, obj.to_dict())
        return decode(type(obj), raw)

    async def delete(
        self, cls: type[R], namespace: str | None, name: str, *, grace_period: int | None = None
    ) -> R:
        """Delete; a pod on a live node is only marked terminating (see
        :mod:`shiftnet.pod_deletion`), ``grace_period=0`` removes it at once."""
        ns = namespace if cls.NAMESPACED else None
        if cls.RESOURCE == "pods":
            raw = await delete_pod(self.store, ns or "default", name, grace_period=grace_period)
            return decode(cls, raw)
        return decode(cls, await self.store.delete(cls.RESOURCE, ns, name))

    async def mutate(
        self,
        cls: type[R],
        namespace: str | None,
        name: str,
        fn: Callable[[R], R | None],
        *,
        attempts: int = 20,
    ) -> R | None:
        """Read, let ``fn`` change the object (return None to leave it alone), write;
        retry from a fresh read on Conflict. Returns the stored object, or None when
        the object is gone or ``fn`` declined."""
        for _ in range(attempts):
            current = await self.try_get(cls, namespace, name)
            if current is None:
                return None
            before = current.to_dict()
            old = decode(cls, before) if has_update_rules(cls) else None
            changed = fn(current)
            if changed is None or changed.to_dict() == before:
                return None
            try:
                return await self.update(changed, old)
            except Conflict:
                continue
            except NotFound:
                return None
        raise Conflict(cls.RESOURCE, namespace, name, f"gave up after {attempts} attempts")
