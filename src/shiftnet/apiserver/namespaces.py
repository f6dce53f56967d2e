"""NamespaceLifecycle, as Kubernetes admits creates: no new object in a namespace that
does not exist or is being terminated.

A namespaced object created through the API needs its Namespace: without it the
answer is 404 ``namespaces "nope" not found``; with one whose ``status.phase`` is
``Terminating`` (or that carries a ``deletionTimestamp``) it is 403 Forbidden.
``default`` is always admitted, whether or not its Namespace object is stored.
Only creates are checked, as upstream: reads, updates and deletes of objects
already in a namespace go on.

A namespace that was found is remembered for ``FRESH_FOR`` seconds, so a burst
of creates reads it once, and the server keeps no watch of its own (an idle
server does not poll the store). Writes of a Namespace through this server
forget it at once; a Namespace deleted or changed behind the server's back (by
``shiftnet apply``/``delete`` on the store) counts within ``FRESH_FOR``, as
upstream's own admission follows Namespaces through a cache that lags too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from shiftnet.api import Namespace
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import StatusError
from shiftnet.errors import NotFound, StoreUnavailable
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

ALWAYS_PRESENT = frozenset({"default"})  # upstream's apiserver creates it and never lets it go
TERMINATING = "Terminating"
FRESH_FOR = 1.0  # seconds a namespace read stays good for admitting creates
MAX_REMEMBERED = 1_024  # namespaces remembered at once; past that the memory starts over


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


def is_terminating(raw: dict[str, Any]) -> bool:
    meta = raw.get("metadata") or {}
    phase = (raw.get("status") or {}).get("phase")
    return bool(meta.get("deletionTimestamp")) or phase == TERMINATING


class NamespaceLifecycle:
    """Admits or refuses a create by the state of its namespace (see the module)."""

    def __init__(self, store: Store, clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self._clock = clock
        self._seen: dict[str, tuple[float, bool]] = {}  # name -> (read at, terminating)

    def forget(self, namespace: str) -> None:
        """This server wrote the Namespace: the next create reads it again."""
        self._seen.pop(namespace, None)

    async def _read(self, info: ResourceInfo, namespace: str) -> bool:
        """Whether ``namespace`` is terminating, read from the store; 404 when it is gone."""
        try:
            raw = await self.store.get(Namespace.RESOURCE, None, namespace)
        except NotFound:
            self._seen.pop(namespace, None)
            log.info(
                "create refused resource=%s namespace=%s reason=namespace-not-found",
                info.plural,
                namespace,
            )
            raise namespace_not_found(namespace) from None
        except StoreUnavailable as err:
            raise StatusError(503, "ServiceUnavailable", str(err)) from None
        return is_terminating(raw)

    async def admit_create(self, info: ResourceInfo, namespace: str | None, name: str) -> None:
        """Return when ``info``'s object may be created in ``namespace``; else the
        ``StatusError`` upstream answers with."""
        if not info.namespaced or namespace is None or namespace in ALWAYS_PRESENT:
            return
        now = self._clock()
        seen = self._seen.get(namespace)
        if seen is not None and now - seen[0] <= FRESH_FOR:
            terminating = seen[1]
        else:
            terminating = await self._read(info, namespace)
            if len(self._seen) >= MAX_REMEMBERED:
                self._seen.clear()
            self._seen[namespace] = (now, terminating)
        if terminating:
            raise namespace_terminating(info, name, namespace)
