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
from shiftnet.api.core import ObjectReference
from shiftnet.client import Client
from shiftnet.errors import AllocationError, InvalidAllocation
from shiftnet.events.folding import named
from shiftnet.events.recorder import DISCARD, EventSink
from shiftnet.informer import Informers
from shiftnet.ipam import AlreadyAllocated, IPRange, NotInRange, RangeFull
from shiftnet.master import metrics
from shiftnet.master.service_allocator import Key, ServiceAllocator
from shiftnet.master.service_families import (
    FamilyPlan,
    ServiceNetworks,
    family_of,
    plan_families,
    requested_ips,
)

log = logging.getLogger(__name__)

ERROR_ANNOTATION = "shiftnet.io/cluster-ip-error"
REQUESTED_ANNOTATION = "shiftnet.io/requested-cluster-ip"
IMMUTABLE = "field is immutable"


def wants_cluster_ip(svc: Service) -> bool:
    """Headless and ExternalName Services get no ClusterIP."""
    return svc.spec.type != "ExternalName" and not svc.spec.headless


def _field(index: int) -> str:
    return "spec.clusterIP" if index == 0 else f"spec.clusterIPs[{index}]"


def _invalid(svc: Service, ip: str, reason: str, index: int = 0) -> str:
    return (
        f'Service "{svc.namespace}/{svc.name}" is invalid: {_field(index)}: '
        f'Invalid value: "{ip}": {reason}'
    )


def _refused(svc: Service, ip: str, reason: str, index: int = 0) -> InvalidAllocation:
    return InvalidAllocation(_invalid(svc, ip, reason, index), _field(index), ip, reason)


def _networks(networks: str | ServiceNetworks) -> ServiceNetworks:
    return networks if isinstance(networks, ServiceNetworks) else ServiceNetworks(networks)


def _same_ip(a: str, b: str) -> bool:
    return ipaddress.ip_address(a) == ipaddress.ip_address(b)


def _write_ips(svc: Service, ips: list[str], plan: FamilyPlan | None) -> None:
    """``clusterIP`` and ``clusterIPs`` always agree; families and policy when decided."""
    svc.spec.cluster_ip = ips[0] if ips else None
    svc.spec.cluster_ips = list(ips) if ips else None
    if plan is not None:
        svc.spec.ip_families = list(plan.families)
        svc.spec.ip_family_policy = plan.policy


def _set_error(svc: Service, message: str | None, requested: str | None) -> None:
    ann = svc.metadata.annotations
    for k, v in ((ERROR_ANNOTATION, message), (REQUESTED_ANNOTATION, requested)):
        if v is None:
            ann.pop(k, None)
        else:
            ann[k] = v


class ClusterIPAllocator(ServiceAllocator):
    def __init__(
        self,
        client: Client,
        informers: Informers,
        service_network: str,
        *,
        secondary_network: str | None = None,
        workers: int = 8,
    ) -> None:
        """``secondary_network``: a second service network of the other family, which
        makes the cluster dual-stack (PreferDualStack and RequireDualStack get one
        ClusterIP of each family)."""
        super().__init__(client, informers, workers=workers, name="clusterip")
        self.range = IPRange.for_services(service_network)
        self.secondary: IPRange | None = (
            IPRange.for_services(secondary_network) if secondary_network else None
        )
        self._held: dict[Key, tuple[tuple[str, ...], str | None]] = {}  # key -> (ips, uid)
        self._waiting: set[Key] = set()  # wait for an address to be released
        self.allocations = 0
        self.errors = 0
        self.events: EventSink = DISCARD

    # ------------------------------------------------------------ pure check for the CLI

    @staticmethod
    def check_request(
        svc: Service, others: Iterable[Service], service_network: str | ServiceNetworks
    ) -> None:
        """Raise AllocationError if ``svc`` cannot get its ClusterIPs: one it asks for
        is taken, outside its range or a change of one it holds; its families or
        policy ask for what the cluster lacks (``RequireDualStack`` without a second
        service network); or, asking for none, a range is full.

        ``others`` are the Services already stored (``svc`` itself, an update of a
        stored Service, is recognised by namespace/name).
        """
        if svc.spec.type == "ExternalName":
            return
        nets = _networks(service_network)
        ranges = {fam: IPRange.for_services(cidr) for fam, cidr in nets.by_family.items()}
        holders: dict[str, Service] = {}
        held: list[str] = []
        for o in others:
            if not wants_cluster_ip(o):
                continue
            mine = o.key == svc.key
            for ip in o.spec.effective_cluster_ips:
                try:
                    rng = ranges.get(family_of(ip))
                except ValueError:
                    continue
                if rng is None or not rng.contains(ip):
                    continue
                if mine:
                    held.append(str(ipaddress.ip_address(ip)))
                else:
                    holders[str(ipaddress.ip_address(ip))] = o
        plan = plan_families(svc, nets, held)
        if plan.headless:
            return
        held_by_family = {family_of(ip): ip for ip in held}
        for i, family in enumerate(plan.families):
            rng = ranges[family]
            want = plan.requested[i] if i < len(plan.requested) else None
            have = held_by_family.get(family)
            if have is not None:
                if want and not _same_ip(want, have):
                    raise _refused(svc, want, f"{IMMUTABLE} (the Service holds {have})", i)
                continue  # it keeps what it holds
            if want:
                try:
                    rng.check(want)
                except AllocationError as exc:
                    raise _refused(svc, want, str(exc), i) from None
                holder = holders.get(str(ipaddress.ip_address(want)))
                if holder is not None:
                    owner = f'Service "{holder.namespace}/{holder.name}"'
                    reason = f"provided IP is already allocated (to {owner})"
                    raise _refused(svc, want, reason, i)
            elif sum(1 for ip in holders if rng.contains(ip)) >= rng.capacity:
                reason = f"failed to allocate a ClusterIP from {rng.cidr}: range is full"
                raise InvalidAllocation(
                    f'Service "{svc.namespace}/{svc.name}": {reason}', _field(i), None, reason
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

    @property
    def networks(self) -> ServiceNetworks:
        return ServiceNetworks(self.range.cidr, self.secondary.cidr if self.secondary else None)

    def use_secondary_network(self, cidr: str | None) -> None:
        """Adopt the second service network ClusterNetwork ``default`` records (before
        start): ClusterIPs handed out from it must stay valid."""
        if not cidr:
            return
        try:
            stored = IPRange.for_services(cidr)
        except AllocationError as exc:
            log.error("stored secondary service network unusable error=%s", exc)
            return
        if self.secondary is not None and self.secondary.cidr != stored.cidr:
            log.warning(
                "secondary service network setting ignored, the stored one is kept "
                "stored=%s setting=%s",
                stored.cidr,
                self.secondary.cidr,
            )
        self.secondary = stored

    def _family_range(self, family: str) -> IPRange | None:
        for rng in (self.range, self.secondary):
            if rng is not None and family_of(str(rng.network.network_address)) == family:
                return rng
        return None

    def _range_for(self, ip: str) -> IPRange | None:
        try:
            return self._family_range(family_of(ip))
        except ValueError:
            return None

    def _release_ips(self, ips: Iterable[str]) -> None:
        for ip in ips:
            rng = self._range_for(ip)
            if rng is not None:
                rng.release(ip)

    def rebuild(self) -> None:
        """Take every address the stored Services already hold; the oldest claim wins."""
        claims = [s for s in self.informer.list() if wants_cluster_ip(s) and s.spec.cluster_ip]
        claims.sort(key=lambda s: (s.metadata.creation_timestamp or "", s.key))
        self._held.clear()
        self.range.rebuild(())
        if self.secondary is not None:
            self.secondary.rebuild(())
        for s in claims:
            kept: list[str] = []
            for ip in s.spec.effective_cluster_ips:
                rng = self._range_for(ip)
                try:
                    if rng is None:
                        raise NotInRange(ip)
                    kept.append(rng.allocate(ip))
                except AllocationError:
                    continue  # the sync of this Service reports it
            if kept:
                self._held[s.key] = (tuple(kept), s.metadata.uid)
        metrics.CLUSTER_IPS_ALLOCATED.set(self.range.used)
        metrics.CLUSTER_IPS_FREE.set(self.range.free)
        log.info(
            "cluster IPs rebuilt network=%s allocated=%d free=%d",
            self.range.cidr,
            self.range.used,
            self.range.free,
        )

    # ------------------------------------------------------------ release

    def _release(self, key: Key, uid: str | None = None) -> None:
        held = self._held.get(key)
        self._waiting.discard(key)
        if held is None or (uid is not None and held[1] is not None and held[1] != uid):
            return
        del self._held[key]
        self._release_ips(held[0])
        log.info("cluster IP released service=%s/%s ips=%s", key[0], key[1], ",".join(held[0]))
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
        if svc.spec.type == "ExternalName":
            if held is not None:
                self._release(key, None)
            _set_error(svc, None, None)
            return svc, None
        held_ips = list(held[0]) if held is not None else []
        asked = svc.metadata.annotations.get(REQUESTED_ANNOTATION)
        if asked and not held_ips and not requested_ips(svc):
            svc.spec.cluster_ip = asked  # waits for the address an earlier attempt was refused
        try:
            plan = plan_families(svc, self.networks, held_ips)
        except InvalidAllocation as exc:
            wanted = requested_ips(svc)
            _write_ips(svc, held_ips, None)  # what it holds keeps serving; nothing else does
            _set_error(svc, str(exc), wanted[0] if wanted and not held_ips else None)
            return svc, str(exc)
        if plan.headless:
            if held is not None:
                self._release(key, None)
            svc.spec.cluster_ip = svc.spec.cluster_ip or "None"
            svc.spec.cluster_ips = ["None"]
            svc.spec.ip_families = list(plan.families)
            svc.spec.ip_family_policy = plan.policy
            _set_error(svc, None, None)
            return svc, None
        requested = plan.requested
        held_by_family = {family_of(ip): ip for ip in held_ips}
        result: list[str] = []
        taken: list[str] = []
        refusal: str | None = None
        for i, family in enumerate(plan.families):
            want = requested[i] if i < len(requested) else None
            have = held_by_family.get(family)
            if have is not None:
                if want and not _same_ip(want, have):
                    refusal = _invalid(svc, want, f"{IMMUTABLE} (the Service keeps {have})", i)
                result.append(have)
                continue
            rng = self._family_range(family)
            if rng is None:  # plan_families offers only configured families
                raise AllocationError(f"{family} is not configured on this cluster")
            try:
                ip = rng.allocate(want) if want else rng.allocate_next()
            except (AlreadyAllocated, RangeFull, NotInRange) as exc:
                self._release_ips(taken)
                if not isinstance(exc, NotInRange):
                    self._waiting.add(key)
                err = (
                    _invalid(svc, want, str(exc), i)
                    if want
                    else (
                        f'Service "{svc.namespace}/{svc.name}": failed to allocate a ClusterIP '
                        f"from {rng.cidr}: {exc}"
                    )
                )
                kept = list(held_ips)
                _write_ips(svc, kept, None)
                _set_error(svc, err, (want or None) if i == 0 and not kept else None)
                return svc, err
            taken.append(ip)
            result.append(ip)
        self._waiting.discard(key)
        self._release_ips(ip for ip in held_ips if ip not in result)  # SingleStack gave one back
        self._held[key] = (tuple(result), svc.metadata.uid)
        if taken:
            self.allocations += 1
        _write_ips(svc, result, plan)
        if refusal is not None:
            _set_error(svc, refusal, None)
            return svc, refusal
        # a refused change stays reported until the Service is written again by its user
        previous = svc.metadata.annotations.get(ERROR_ANNOTATION, "")
        _set_error(svc, previous if IMMUTABLE in previous and not taken else None, None)
        return svc, None

    def _written(self, key: Key, svc: Service, error: str | None) -> None:
        metrics.CLUSTER_IPS_ALLOCATED.set(self.range.used)
        metrics.CLUSTER_IPS_FREE.set(self.range.free)
        if error:
            self.errors += 1
            metrics.CLUSTER_IP_ERRORS.inc()
            self.events.warning(self._service(key), "ClusterIPNotAllocated", error)
            log.warning("cluster IP not allocated service=%s/%s error=%s", key[0], key[1], error)
        else:
            shown = ",".join(svc.spec.cluster_ips or []) or None
            log.info("cluster IP allocated service=%s/%s ip=%s", key[0], key[1], shown)

    def _service(self, key: Key) -> Service | ObjectReference:
        return self.informer.get(*key) or named(Service, *key)


async def check_service_request(client: Client, svc: Service) -> None:
    """For ``shiftnet apply``: reject, before anything is written, a Service that cannot
    get a ClusterIP (see :meth:`ClusterIPAllocator.check_request`).

    Uses the service network recorded in the ``default`` ClusterNetwork (written
    by the master); without one, nothing is checked (the master will report).
    """
    if svc.spec.type == "ExternalName":
        return
    networks = ServiceNetworks.of(await client.try_get(ClusterNetwork, None, "default"))
    if networks is None:
        return
    others = await client.list(Service)
    ClusterIPAllocator.check_request(svc, others, networks)
