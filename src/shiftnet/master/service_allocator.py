"""The write loop every Service allocator shares: decide, write, decide again on Conflict.

Kubernetes allocates ClusterIPs, node ports and load balancer addresses inside
the API server, while it stores the Service. shiftnet's store is a plain
database, so each allocation is a controller: the single writer of its part of
every Service. They differ in what they hold and how they decide; how a
decision reaches the store is the same for all three, and lives here:

* a queue keyed by Service, fed by the Service informer; a deleted Service
  gives back what it held at once;
* a decision is made on a copy of the cached Service, synchronously, so no
  other decision runs between reading and changing the pool;
* the decision is written over the cached version: one request when the cache
  is current; on Conflict (the cache lags) the allocator decides again on the
  fresh object inside :meth:`Client.mutate`;
* a write that finds the Service gone gives back what it held only once the
  store confirms it is gone (not while a decision equals what is stored).
"""

from __future__ import annotations

import abc
import logging
from typing import Any

from shiftnet.api import Service
from shiftnet.client import Client
from shiftnet.errors import Conflict, NotFound
from shiftnet.informer import Informers
from shiftnet.master.workqueue import KeyedWorkQueue

log = logging.getLogger(__name__)

Key = tuple[str, str]


class ServiceAllocator(abc.ABC):
    """Base of the controllers that allocate one part of every Service.

    A subclass keeps its pool and says how to rebuild it (:meth:`rebuild`), how to
    decide one Service (:meth:`_decide`), how to give back what one held
    (:meth:`_release`) and what to report after a write (:meth:`_written`).
    """

    def __init__(self, client: Client, informers: Informers, *, workers: int, name: str) -> None:
        self.client = client
        self.informer = informers.informer(Service)
        self.informer.add_handler(self._on_event)
        self.queue: KeyedWorkQueue[Key] = KeyedWorkQueue(self._sync, workers=workers, name=name)

    # ------------------------------------------------------------ what a subclass says

    @abc.abstractmethod
    def rebuild(self) -> None:
        """Take into the pool what the stored Services already hold (the oldest claim wins)."""

    @abc.abstractmethod
    def _decide(self, svc: Service) -> tuple[Service, str | None]:
        """Bring ``svc`` (a fresh copy) to what it should be; returns (svc, error).

        Synchronous on purpose: no other decision runs between reading and
        changing the pool.
        """

    @abc.abstractmethod
    def _release(self, key: Key, uid: str | None = None) -> None:
        """Give back what the Service ``key`` holds (``uid``: of the deleted Service,
        None when only its name is known)."""

    @abc.abstractmethod
    def _written(self, key: Key, svc: Service, error: str | None) -> None:
        """Report a decision the store now holds (``svc``: as written)."""

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Call after the informers synced: rebuild, then sync every Service."""
        self.rebuild()
        for svc in self.informer.list():
            self.queue.add(svc.key)
        await self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    # ------------------------------------------------------------ events

    def _on_event(self, etype: str, old: Service | None, new: Service | None) -> None:
        if etype == "DELETED" and old is not None:
            self._release(old.key, old.metadata.uid)
        elif new is not None:
            self.queue.add(new.key)

    # ------------------------------------------------------------ writing one decision

    async def _sync(self, key: Key) -> None:
        cached = self.informer.get(*key)
        if cached is None:
            return  # deleted; the DELETED event gave back what it held
        preview, error = self._decide(cached.model_copy(deep=True))
        if preview.to_dict() == cached.to_dict():
            return  # already right (the common case: the event of our own write)
        try:
            await self.client.update(preview)
        except Conflict:
            await self._decide_again(key)
            return
        except NotFound:
            await self._release_if_gone(key)
            return
        self._written(key, preview, error)

    async def _decide_again(self, key: Key) -> None:
        """The cache lagged: decide on the stored Service until a write goes through."""
        decided: dict[str, Any] = {}

        def decide(svc: Service) -> Service:
            before = svc.to_dict()
            svc, decided["error"] = self._decide(svc)
            decided["changed"] = svc.to_dict() != before
            return svc

        stored = await self.client.mutate(Service, key[0], key[1], decide)
        if stored is not None:
            self._written(key, stored, decided["error"])
        elif decided.get("changed", True):  # gone before the first read, or while written
            await self._release_if_gone(key)
        # else the store already holds this decision: nothing to write, nothing to give back

    async def _release_if_gone(self, key: Key) -> None:
        """After a write found nothing: give back what the decision may have taken."""
        if await self.client.try_get(Service, key[0], key[1]) is None:
            log.debug("service gone while written service=%s/%s", key[0], key[1])
            self._release(key)
