"""NamespaceLifecycle, as Kubernetes admits creates: no new object in a namespace that
does not exist or is being terminated.

A namespaced object created through the API needs its Namespace: without it the
answer is 404 ``namespaces "nope" not found``; with one whose ``status.phase`` is
``Terminating`` (or that carries a ``deletionTimestamp``) it is 403 Forbidden.
``default`` is always admitted, whether or not its Namespace object is stored.
Only creates are checked, as upstream: reads, updates and deletes of objects
already in a namespace go on.

The Namespaces come from an informer, so a create in a known namespace costs no
store read; a namespace the informer has not seen (not synced yet, or created a
moment ago) is read from the store before the create is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from shiftnet.api import Namespace
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import StatusError
from shiftnet.errors import NotFound, ShiftnetError, StoreUnavailable
from shiftnet.informer import Informer
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

ALWAYS_PRESENT = frozenset({"default"})  # upstream's apiserver creates it and never lets it go
TERMINATING = "Terminating"


def namespace_not_found(namespace: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'namespaces "{namespace}" not found',
        {"name": namespace, "kind": "namespaces"},
    )


def namespace_terminating(info: ResourceInfo, name: str, namespace: str) -> StatusError:
    details: dict[str, Any] = {"name": name, "kind": info.plural}
    if info.group:
        details["group"] = info.group
    details["causes"] = [
        {
            "reason": "NamespaceTerminating",
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace",
        }
    ]
    return StatusError(
        403,
        "Forbidden",
        f'{info.qualified} "{name}" is forbidden: unable to create new content in namespace '
        f"{namespace} because it is being terminated",
        details,
    )


def _terminating(raw: dict[str, Any]) -> bool:
    meta = raw.get("metadata") or {}
    return (
        bool(meta.get("deletionTimestamp")) or (raw.get("status") or {}).get("phase") == TERMINATING
    )


class NamespaceLifecycle:
    """Admits or refuses a create by the state of its namespace (see the module)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._informer: Informer[Namespace] = Informer(store, Namespace)
        self._starting: asyncio.Task[None] | None = None

    async def _start(self) -> None:
        try:
            await self._informer.start()
        except (ShiftnetError, OSError) as err:  # creates read the store until a retry works
            log.warning("namespace informer did not start error=%s", err)

    def _cached(self, namespace: str) -> Namespace | None:
        if self._starting is None or (self._starting.done() and not self._informer.synced):
            # Started on the first create, in the background: that create reads the store.
            self._starting = asyncio.get_running_loop().create_task(
                self._start(), name="apiserver-namespaces"
            )
        if not self._informer.synced:
            return None
        return self._informer.get(None, namespace)

    async def admit_create(self, info: ResourceInfo, namespace: str | None, name: str) -> None:
        """Return when ``info``'s object may be created in ``namespace``; else the
        ``StatusError`` upstream answers with."""
        if not info.namespaced or namespace is None or namespace in ALWAYS_PRESENT:
            return
        cached = self._cached(namespace)
        if cached is not None:
            raw: dict[str, Any] = {
                "metadata": {"deletionTimestamp": cached.metadata.deletion_timestamp},
                "status": {"phase": cached.status.phase},
            }
        else:
            try:
                raw = await self.store.get(Namespace.RESOURCE, None, namespace)
            except NotFound:
                log.info(
                    "create refused resource=%s namespace=%s reason=namespace-not-found",
                    info.plural,
                    namespace,
                )
                raise namespace_not_found(namespace) from None
            except StoreUnavailable as err:
                raise StatusError(503, "ServiceUnavailable", str(err)) from None
        if _terminating(raw):
            raise namespace_terminating(info, name, namespace)

    async def close(self) -> None:
        if self._starting is not None:
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting
            self._starting = None
        await self._informer.stop()
