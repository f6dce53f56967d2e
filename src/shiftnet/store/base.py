"""The Store protocol every backend implements, and its event type.

The store keeps raw Kubernetes-shaped dicts keyed by (resource, namespace,
name); it knows nothing of what a resource means. It assigns the generic
metadata every API server assigns (uid, creationTimestamp, resourceVersion,
generation) through :mod:`shiftnet.store.meta`, identically for every backend.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True)
class WatchEvent:
    """One change: for DELETED, ``object`` is the last state with the delete's revision."""

    type: EventType
    resource: str
    object: dict[str, Any]
    revision: int


@dataclass(frozen=True)
class ListResult:
    items: list[dict[str, Any]]  # a fresh list per call: the caller may consume it
    revision: int  # watch from here to see every change after this list


class Store(Protocol):
    """Cluster configuration store: the single source of truth."""

    url: str

    async def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        """Return the object or raise :class:`shiftnet.errors.NotFound`."""
        ...

    async def list(
        self, resource: str, namespace: str | None = None, selector: str | None = None
    ) -> ListResult:
        """Objects of one resource (all namespaces when ``namespace`` is None), sorted by key."""
        ...

    async def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a new object; raise :class:`AlreadyExists` if the key is taken."""
        ...

    async def update(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace an object. When ``metadata.resourceVersion`` is set it must equal the
        stored one, else :class:`Conflict`; an empty resourceVersion updates unconditionally."""
        ...

    async def delete(
        self, resource: str, namespace: str | None, name: str, resource_version: str | None = None
    ) -> dict[str, Any]:
        """Remove an object and return its last state; NotFound / Conflict as above."""
        ...

    def watch(
        self, resource: str, revision: int, namespace: str | None = None
    ) -> AsyncIterator[WatchEvent]:
        """Every change to ``resource`` after ``revision``, in order, forever.

        Raises :class:`shiftnet.errors.Expired` (on first iteration) when
        ``revision`` is older than the oldest revision the store still keeps.
        """
        ...

    async def revision(self) -> int:
        """The store's current revision."""
        ...

    async def compact(self, revision: int) -> None:
        """Forget history up to ``revision`` (watches from before it then expire)."""
        ...

    async def close(self) -> None: ...
