"""ClusterIP allocator: the single writer of every Service's ``spec.clusterIP``.

Kubernetes allocates a ClusterIP inside the API server while it stores the
Service, and rejects a bad request before anything is stored. shiftnet's
store is a plain database, so the allocation happens here, just after the
Service was stored, and a request that cannot be honoured is reported on the
Service itself:

* the ``shiftnet.io/cluster-ip-error`` annotation holds the error in
  Kubernetes' words (``... provided IP is already allocated``), and the log
  says the same;
* ``spec.clusterIP`` is cleared, so no proxy or DNS server ever serves an
  address that belongs to another Service; the wanted address is kept in
  ``shiftnet.io/requested-cluster-ip``, and is honoured as soon as it is
  released (as is a Service that waits because the range was full).

The CLI's ``apply`` can reject such a Service before it is stored with
:func:`check_service_request` (or the pure :meth:`ClusterIPAllocator.check_request`).

A Service that holds an address keeps it: re-applying a manifest without
``clusterIP`` restores it, changing it is refused (the field is immutable in
Kubernetes). Headless (``clusterIP: None``) and ExternalName Services are left
alone. All decisions are synchronous on the in-memory :class:`IPRange`
(rebuilt from the store before the first allocation), so no address is handed
out twice however many Services arrive at once.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable

from shiftnet.api import ClusterNetwork, Service
from shiftnet.client import Client
from shiftnet.errors import AllocationError, Conflict, InvalidAllocation, NotFound
from shiftnet.informer import Informers
from shiftnet.ipam import AlreadyAllocated, IPRange, NotInRange, RangeFull
from shiftnet.master import metrics
from shiftnet.master.workqueue import KeyedWorkQueue

log = logging.getLogger(__name__)

ERROR_ANNOTATION = "shiftnet.io/cluster-ip-error"
REQUESTED_ANNOTATION = "shiftnet.io/requested-cluster-ip"
IMMUTABLE = "field is immutable"

Key = tuple[str, str]


def wants_cluster_ip(svc: Service) -> bool:
    """Headless and ExternalName Services get no ClusterIP."""
    return svc.spec.type != "ExternalName" and not svc.spec.headless


def _invalid(svc: Service, ip: str, reason: str) -> str:
    return (
        f'Service "{svc.namespace}/{svc.name}" is invalid: spec.clusterIP: '
        f'Invalid value: "{ip}": {reason}'
    )


def _refused(svc: Service, ip: str, reason: str) -> InvalidAllocation:
    return InvalidAllocation(_invalid(svc, ip, reason), "spec.clusterIP", ip, reason)


def _set_error(svc: Service, message: str | None, requested: str | None) -> None:
    ann = svc.metadata.annotations
    for k, v in ((ERROR_ANNOTATION, message), (REQUESTED_ANNOTATION, requested)):
        if v is None:
            ann.pop(k, None)
        else:
            ann[k] = v


class ClusterIPAllocator:
    def __init__(
        self, client: Client, informers: Informers, service_network: str, *, workers: int = 8
    ) -> None:
        self.client = client
        self.range = IPRange.for_services(service_network)
        self.informer = informers.informer(Service)
        self.informer.add_handler(self._on_event)
        self._held: dict[Key, tuple[str, str | None]] = {}  # key -> (ip, uid)
        self._waiting: set[Key] = set()  # wait for an address to be released
        self.queue: KeyedWorkQueue[Key] = KeyedWorkQueue(
            self._sync, workers=workers, name="clusterip"
        )
        self.allocations = 0
        self.errors = 0

    # ------------------------------------------------------------ pure check for the CLI

    @staticmethod
    def check_request(svc: Service, others: Iterable[Service], service_network: str) -> None:
        """Raise AllocationError if ``svc`` cannot get a ClusterIP: the one it asks for is
        taken, outside the range or a change of the one it holds; or, asking for none,
        the range is full.

        ``others`` are the Services already stored (``svc`` itself, an update of a
        stored Service, is recognised by namespace/name).
        """
        if not wants_cluster_ip(svc):
            return
        rng = IPRange.for_services(service_network)
        ip = svc.spec.cluster_ip
        if ip:
            try:
                rng.check(ip)
            except AllocationError as exc:
                raise _refused(svc, ip, str(exc)) from None
        holders: dict[str, Service] = {}
        for o in others:
            held = o.spec.cluster_ip if wants_cluster_ip(o) else None
            if not held or not rng.contains(held):
                continue
            if o.key == svc.key:
                if ip and ipaddress.ip_address(held) != ipaddress.ip_address(ip):
                    raise _refused(svc, ip, f"{IMMUTABLE} (the Service holds {held})")
                return  # it keeps what it holds
            holders[str(ipaddress.ip_address(held))] = o
        if ip:
            holder = holders.get(str(ipaddress.ip_address(ip)))
            if holder is not None:
                owner = f'Service "{holder.namespace}/{holder.name}"'
                raise _refused(svc, ip, f"provided IP is already allocated (to {owner})")
        elif len(holders) >= rng.capacity:
            reason = f"failed to allocate a ClusterIP from {rng.cidr}: range is full"
            raise InvalidAllocation(
                f'Service "{svc.namespace}/{svc.name}": {reason}', "spec.clusterIP", None, reason
            )

    # ------------------------------------------------------------ lifecycle

    def use_network(self, cidr: str) -> None:
        """Adopt the service network stored in ClusterNetwork ``default`` (before start):
        once ClusterIPs are handed out, changing the range would strand them."""
        try:
            stored = IPRange.for_services(cidr)
        except AllocationError as exc:
            log.error("stored service network unusable, using the setting error=%s", exc)
            return
        log.warning(
            "service network setting ignored, the stored one is kept stored=%s setting=%s",
            stored.cidr,
            self.range.cidr,
        )
        self.range = stored

    def rebuild(self) -> None:
        """Take every address the stored Services already hold; the oldest claim wins."""
        claims = [s for s in self.informer.list() if wants_cluster_ip(s) and s.spec.cluster_ip]
        claims.sort(key=lambda s: (s.metadata.creation_timestamp or "", s.key))
        self._held.clear()
        self.range.rebuild(())
        for s in claims:
            ip = s.spec.cluster_ip or ""
            try:
                ip = self.range.allocate(ip)
            except AllocationError:
                continue  # the sync of this Service reports it
            self._held[s.key] = (ip, s.metadata.uid)
        metrics.CLUSTER_IPS_ALLOCATED.set(self.range.used)
        metrics.CLUSTER_IPS_FREE.set(self.range.free)
        log.info(
            "cluster IPs rebuilt network=%s allocated=%d free=%d",
            self.range.cidr,
            self.range.used,
            self.range.free,
        )

    async def start(self) -> None:
        """Call after the informers synced: rebuild, then sync every Service."""
        self.rebuild()
        for s in self.informer.list():
            self.queue.add(s.key)
        await self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    # ------------------------------------------------------------ events

    def _on_event(self, etype: str, old: Service | None, new: Service | None) -> None:
        if etype == "DELETED" and old is not None:
            self._release(old.key, old.metadata.uid)
            return
        if new is not None:
            self.queue.add(new.key)

    def _release(self, key: Key, uid: str | None) -> None:
        held = self._held.get(key)
        self._waiting.discard(key)
        if held is None or (uid is not None and held[1] is not None and held[1] != uid):
            return
        del self._held[key]
        self.range.release(held[0])
        log.info("cluster IP released service=%s/%s ip=%s", key[0], key[1], held[0])
        for k in sorted(self._waiting):  # someone may be waiting for exactly this address
            self.queue.add(k)

    # ------------------------------------------------------------ sync

    def _decide(self, svc: Service) -> tuple[Service, str | None]:
        """Bring ``svc`` (a fresh copy) to what it should be; returns (svc, error).

        Synchronous on purpose: no other sync runs between reading and changing
        the allocation state.
        """
        key = svc.key
        held = self._held.get(key)
        if held is not None and held[1] and svc.metadata.uid and held[1] != svc.metadata.uid:
            self._release(key, held[1])  # a new Service under an old name
            held = None
        if not wants_cluster_ip(svc):
            if held is not None:
                self._release(key, None)
            _set_error(svc, None, None)
            return svc, None
        wanted = svc.spec.cluster_ip or svc.metadata.annotations.get(REQUESTED_ANNOTATION)
        if held is not None:
            ip = held[0]
            if wanted and wanted != ip and svc.spec.cluster_ip:
                err = _invalid(svc, wanted, f"{IMMUTABLE} (the Service keeps {ip})")
                svc.spec.cluster_ip = ip
                _set_error(svc, err, None)
                return svc, err
            svc.spec.cluster_ip = ip
            # a refused change stays reported until the Service is written again by its user
            previous = svc.metadata.annotations.get(ERROR_ANNOTATION, "")
            _set_error(svc, previous if IMMUTABLE in previous else None, None)
            return svc, None
        try:
            ip = self.range.allocate(wanted) if wanted else self.range.allocate_next()
        except (AlreadyAllocated, RangeFull, NotInRange) as exc:
            if not isinstance(exc, NotInRange):
                self._waiting.add(key)
            err = (
                _invalid(svc, wanted, str(exc))
                if wanted
                else (
                    f'Service "{svc.namespace}/{svc.name}": failed to allocate a ClusterIP '
                    f"from {self.range.cidr}: {exc}"
                )
            )
            svc.spec.cluster_ip = None
            _set_error(svc, err, wanted or None)
            return svc, err
        self._waiting.discard(key)
        self._held[key] = (ip, svc.metadata.uid)
        self.allocations += 1
        svc.spec.cluster_ip = ip
        _set_error(svc, None, None)
        return svc, None

    async def _sync(self, key: Key) -> None:
        cached = self.informer.get(*key)
        if cached is None:
            return  # deleted; the DELETED event released its address
        preview, err = self._decide(cached.model_copy(deep=True))
        if preview.to_dict() == cached.to_dict():
            return  # already right (the common case: the event of our own write)
        # Write the decision over the cached version: one request when the cache
        # is current; the store refuses it (Conflict) when it is not.
        outcome: dict[str, str | None] = {"error": err, "ip": preview.spec.cluster_ip}
        try:
            await self.client.update(preview)
            self._written(key, outcome)
            return
        except Conflict:
            pass
        except NotFound:
            await self._gone(key)
            return
        outcome = {}

        def fn(svc: Service) -> Service:
            before = svc.to_dict()
            svc, err = self._decide(svc)
            outcome["error"] = err
            outcome["ip"] = svc.spec.cluster_ip
            outcome["changed"] = "yes" if svc.to_dict() != before else None
            return svc

        stored = await self.client.mutate(Service, key[0], key[1], fn)
        if stored is None:
            if "error" not in outcome or outcome["changed"]:
                await self._gone(key)  # vanished under us: give back what we took
            return
        self._written(key, outcome)

    def _written(self, key: Key, outcome: dict[str, str | None]) -> None:
        metrics.CLUSTER_IPS_ALLOCATED.set(self.range.used)
        metrics.CLUSTER_IPS_FREE.set(self.range.free)
        if outcome["error"]:
            self.errors += 1
            metrics.CLUSTER_IP_ERRORS.inc()
            log.warning(
                "cluster IP not allocated service=%s/%s error=%s",
                key[0],
                key[1],
                outcome["error"],
            )
        else:
            log.info("cluster IP allocated service=%s/%s ip=%s", key[0], key[1], outcome["ip"])

    async def _gone(self, key: Key) -> bool:
        """After a write found nothing: release what the decision may have taken."""
        if await self.client.try_get(Service, key[0], key[1]) is None:
            self._release(key, None)
            return True
        return False


async def check_service_request(client: Client, svc: Service) -> None:
    """For ``shiftnet apply``: reject, before anything is written, a Service that cannot
    get a ClusterIP (see :meth:`ClusterIPAllocator.check_request`).

    Uses the service network recorded in the ``default`` ClusterNetwork (written
    by the master); without one, nothing is checked (the master will report).
    """
    if not wants_cluster_ip(svc):
        return
    cn = await client.try_get(ClusterNetwork, None, "default")
    if cn is None or not cn.service_network:
        return
    others = await client.list(Service)
    ClusterIPAllocator.check_request(svc, others, cn.service_network)
