"""Node port allocator: the single writer of every Service's ``spec.ports[].nodePort``.

Kubernetes hands out node ports inside the API server from
``--service-node-port-range`` (default 30000-32767). Here, as for ClusterIPs,
``shiftnet apply`` and the API server refuse a request that cannot be honoured
before it is stored (:meth:`NodePortAllocator.check_request`, in Kubernetes'
words), and this controller allocates just after the Service was stored:

* ``type: NodePort`` and ``LoadBalancer`` get one node port a service port
  (two ports of one Service with the same number and different protocols
  share one, as Kubernetes allows); a requested port is honoured when it is
  free and in range, others get the lowest free port;
* re-applying a manifest without ``nodePort`` keeps the one the port holds;
* a type change to ClusterIP or ExternalName, or a deleted Service, gives the
  ports back;
* a request written around the API (taken or out of range) is not served: the
  port's ``nodePort`` is cleared and ``shiftnet.io/node-port-error`` says why.

``spec.healthCheckNodePort`` comes from the same pool, as the API server's
allocator does it: a ``LoadBalancer`` Service with ``externalTrafficPolicy:
Local`` gets one (a requested one when it is free and in range), keeps it
across updates (the API refuses a change, "field is immutable"), and gives it
back when it is deleted, stops being a LoadBalancer or goes back to the
Cluster policy. The proxy of every node serves kube-proxy's health check on
it (``shiftnet.proxy.healthcheck``).

Allocations live in the Services themselves: a restarted master rebuilds the
pool from the stored Services (the oldest claim wins).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from shiftnet.api import Service, ServicePort
from shiftnet.client import Client
from shiftnet.errors import InvalidAllocation
from shiftnet.events.recorder import DISCARD, EventSink
from shiftnet.informer import Informers
from shiftnet.ipam import SlotPool
from shiftnet.master.service_allocator import Key, ServiceAllocator
from shiftnet.master.service_ranges import DEFAULT_NODE_PORT_RANGE, PortRange

log = logging.getLogger(__name__)

RANGE_ANNOTATION = "shiftnet.io/service-node-port-range"  # on ClusterNetwork "default"
ERROR_ANNOTATION = "shiftnet.io/node-port-error"
NODE_PORT_TYPES = ("NodePort", "LoadBalancer")
HEALTH_CHECK = "healthCheckNodePort"  # the health check port's identity among a Service's ports
HEALTH_CHECK_FIELD = "spec.healthCheckNodePort"


def wants_node_ports(svc: Service) -> bool:
    """NodePort and LoadBalancer Services get node ports (LoadBalancer unless
    ``allocateLoadBalancerNodePorts: false``, which keeps only requested ones)."""
    return svc.spec.type in NODE_PORT_TYPES


def wants_health_check_port(svc: Service) -> bool:
    """A LoadBalancer whose external traffic stays on the node it reaches needs a health
    check port: the balancer asks each node whether it has an endpoint to send to."""
    return svc.spec.type == "LoadBalancer" and svc.spec.external_traffic_policy == "Local"


def _auto(svc: Service) -> bool:
    return not (
        svc.spec.type == "LoadBalancer" and svc.spec.allocate_load_balancer_node_ports is False
    )


def _identity(port: ServicePort) -> str:
    """A service port across updates: its name, number and protocol."""
    return f"{port.name or ''}/{port.port}/{port.protocol}"


def _field(index: int) -> str:
    return f"spec.ports[{index}].nodePort"


def out_of_range(svc: Service, index: int, port: int, rng: PortRange) -> InvalidAllocation:
    reason = f"provided port is not in the valid range. The range of valid ports is {rng}"
    return _refusal(svc, index, port, reason)


def already_allocated(svc: Service, index: int, port: int) -> InvalidAllocation:
    return _refusal(svc, index, port, "provided port is already allocated")


def range_full(svc: Service, index: int, rng: PortRange) -> InvalidAllocation:
    reason = f"failed to allocate a nodePort from {rng}: range is full"
    message = f'Service "{svc.namespace}/{svc.name}": {_field(index)}: {reason}'
    return InvalidAllocation(message, _field(index), None, reason)


def health_check_out_of_range(svc: Service, port: int, rng: PortRange) -> InvalidAllocation:
    reason = f"provided port is not in the valid range. The range of valid ports is {rng}"
    return _health_check_refusal(svc, port, reason)


def health_check_taken(svc: Service, port: int) -> InvalidAllocation:
    return _health_check_refusal(svc, port, "provided port is already allocated")


def health_check_range_full(svc: Service, rng: PortRange) -> InvalidAllocation:
    reason = f"failed to allocate a HealthCheck NodePort from {rng}: range is full"
    message = f'Service "{svc.namespace}/{svc.name}": {HEALTH_CHECK_FIELD}: {reason}'
    return InvalidAllocation(message, HEALTH_CHECK_FIELD, None, reason)


def health_check_immutable(svc: Service) -> InvalidAllocation:
    reason = "field is immutable"
    message = f'Service "{svc.namespace}/{svc.name}" is invalid: {HEALTH_CHECK_FIELD}: {reason}'
    return InvalidAllocation(message, HEALTH_CHECK_FIELD, None, reason)


def _health_check_refusal(svc: Service, port: int, why: str) -> InvalidAllocation:
    """kube-apiserver's words: the requested port, then the allocator's reason."""
    reason = f"failed to allocate requested HealthCheck NodePort {port}: {why}"
    message = (
        f'Service "{svc.namespace}/{svc.name}" is invalid: {HEALTH_CHECK_FIELD}: '
        f"Invalid value: {port}: {reason}"
    )
    return InvalidAllocation(message, HEALTH_CHECK_FIELD, port, reason)


def _refusal(svc: Service, index: int, port: int, reason: str) -> InvalidAllocation:
    message = (
        f'Service "{svc.namespace}/{svc.name}" is invalid: {_field(index)}: '
        f"Invalid value: {port}: {reason}"
    )
    return InvalidAllocation(message, _field(index), port, reason)


def _numbers(svc: Service) -> set[int]:
    """The node ports ``svc`` holds, its health check port among them."""
    held = {p.node_port for p in svc.spec.ports if p.node_port}
    if wants_health_check_port(svc) and svc.spec.health_check_node_port:
        held.add(svc.spec.health_check_node_port)
    return held


def _check_health_check_request(
    svc: Service, stored: Service | None, holders: dict[int, Service], rng: PortRange
) -> None:
    """The API server's rules for ``spec.healthCheckNodePort`` (see :func:`_numbers`)."""
    want = svc.spec.health_check_node_port
    held = (
        stored.spec.health_check_node_port
        if stored is not None and wants_health_check_port(stored)
        else None
    )
    if held:
        if want and want != held:
            raise health_check_immutable(svc)
        return
    own = {p.node_port for p in svc.spec.ports if p.node_port}
    if not want:
        taken = {p for p in holders if rng.contains(p)} | {p for p in own if rng.contains(p)}
        if len(taken) >= rng.size:
            raise health_check_range_full(svc, rng)
        return
    if not rng.contains(want):
        raise health_check_out_of_range(svc, want, rng)
    if want in holders or want in own:
        raise health_check_taken(svc, want)


class NodePortPool:
    """The ports of one range, each held by at most one Service (pure, no I/O)."""

    def __init__(self, rng: PortRange) -> None:
        self.range = rng
        self._slots = SlotPool(rng.size)

    @property
    def used(self) -> int:
        return self._slots.used

    @property
    def free(self) -> int:
        return self._slots.free

    def take(self, port: int) -> bool:
        """Hold ``port``; False when it is taken or outside the range."""
        return self.range.contains(port) and self._slots.take(port - self.range.first)

    def take_lowest(self) -> int | None:
        slot = self._slots.take_lowest()
        return None if slot is None else slot + self.range.first

    def give_back(self, port: int) -> None:
        if self.range.contains(port):
            self._slots.give_back(port - self.range.first)

    def clear(self) -> None:
        self._slots.clear()


class NodePortAllocator(ServiceAllocator):
    def __init__(
        self,
        client: Client,
        informers: Informers,
        node_port_range: str = DEFAULT_NODE_PORT_RANGE,
        *,
        workers: int = 8,
    ) -> None:
        super().__init__(client, informers, workers=workers, name="nodeports")
        self.range = PortRange.parse(node_port_range)
        self.pool = NodePortPool(self.range)
        self._held: dict[Key, dict[str, int]] = {}  # service -> port identity -> node port
        # Ports a Service asked for that were taken: still what it asks for after the
        # refused value is cleared, so it is never given another port instead.
        self._refused: dict[Key, dict[str, int]] = {}
        self.allocations = 0
        self.errors = 0
        self.events: EventSink = DISCARD

    # ------------------------------------------------------------ pure check for the CLI

    @staticmethod
    def check_request(svc: Service, others: Iterable[Service], rng: PortRange) -> None:
        """Raise InvalidAllocation if ``svc`` asks for a node port that is taken by
        another Service or outside ``rng`` (one it already holds is fine), or needs
        one and none is left; the same for its ``healthCheckNodePort``, which may
        not change while it holds one. ``others``: the stored Services (``svc``'s
        stored version is recognised by namespace/name)."""
        if not wants_node_ports(svc):
            return
        holders: dict[int, Service] = {}
        mine: set[int] = set()
        stored: Service | None = None
        for other in others:
            if not wants_node_ports(other):
                continue
            if other.key != svc.key:
                holders.update((number, other) for number in _numbers(other))
                continue
            stored = other
            mine.update(p.node_port for p in other.spec.ports if p.node_port)
            if wants_health_check_port(other) and other.spec.health_check_node_port:
                holders[other.spec.health_check_node_port] = other  # not for a service port
        for i, port in enumerate(svc.spec.ports):
            want = port.node_port
            if not want:
                if _auto(svc) and sum(1 for p in holders if rng.contains(p)) >= rng.size:
                    raise range_full(svc, i, rng)
                continue
            if want in mine:
                continue
            if not rng.contains(want):
                raise out_of_range(svc, i, want, rng)
            if want in holders:
                raise already_allocated(svc, i, want)
        if wants_health_check_port(svc):
            _check_health_check_request(svc, stored, holders, rng)

    # ------------------------------------------------------------ lifecycle

    def rebuild(self) -> None:
        """Take every node port the stored Services hold; the oldest claim wins."""
        claims = [s for s in self.informer.list() if wants_node_ports(s)]
        claims.sort(key=lambda s: (s.metadata.creation_timestamp or "", s.key))
        self.pool.clear()
        self._held.clear()
        for svc in claims:
            held: dict[str, int] = {}
            for port in svc.spec.ports:
                n = port.node_port
                if n and (n in held.values() or self.pool.take(n)):
                    held[_identity(port)] = n
            hc = svc.spec.health_check_node_port
            wanted = wants_health_check_port(svc) and hc and hc not in held.values()
            if wanted and hc and self.pool.take(hc):
                held[HEALTH_CHECK] = hc
            if held:
                self._held[svc.key] = held
        log.info(
            "node ports rebuilt range=%s allocated=%d free=%d",
            self.range,
            self.pool.used,
            self.pool.free,
        )

    # ------------------------------------------------------------ release

    def _release(self, key: Key, uid: str | None = None) -> None:
        self._refused.pop(key, None)
        held = self._held.pop(key, {})
        for port in set(held.values()):
            self.pool.give_back(port)
        if held:
            log.info(
                "node ports released service=%s/%s ports=%s",
                key[0],
                key[1],
                ",".join(str(p) for p in sorted(set(held.values()))),
            )

    # ------------------------------------------------------------ sync

    def _decide(self, svc: Service) -> tuple[Service, str | None]:
        """Bring ``svc`` (a fresh copy) to what it should be; returns (svc, error).
        Synchronous: no other decision runs between reading and changing the pool."""
        key = svc.key
        before = self._held.get(key, {})
        if not wants_node_ports(svc):
            self._release(key)
            for port in svc.spec.ports:
                port.node_port = None
            svc.spec.health_check_node_port = None
            svc.metadata.annotations.pop(ERROR_ANNOTATION, None)
            return svc, None
        kept = set(before.values())
        held: dict[str, int] = {}
        refused = self._refused.pop(key, {})
        error: InvalidAllocation | None = None
        own_ports = kept - {before.get(HEALTH_CHECK)}  # the health check port is not a port's
        auto: list[tuple[int, ServicePort]] = []
        for i, port in enumerate(svc.spec.ports):
            identity = _identity(port)
            want = (
                port.node_port
                or refused.get(identity)
                or (before.get(identity) if _auto(svc) else None)
            )
            if want:
                if want in own_ports or want in held.values() or self.pool.take(want):
                    held[identity] = port.node_port = want
                    continue
                port.node_port = None
                self._refused.setdefault(key, {})[identity] = want
                if self.range.contains(want):
                    error = error or already_allocated(svc, i, want)
                else:
                    error = error or out_of_range(svc, i, want, self.range)
            elif _auto(svc):
                auto.append((i, port))
        # a requested (or held) health check port before the lowest free ones are handed out
        hc_error = self._decide_health_check(svc, before, held, refused, pick=False)
        for i, port in auto:
            got = self.pool.take_lowest()
            if got is None:
                error = error or range_full(svc, i, self.range)
                continue
            self.allocations += 1
            held[_identity(port)] = port.node_port = got
        hc_error = hc_error or self._decide_health_check(svc, before, held, refused, pick=True)
        error = error or hc_error
        for port_number in kept - set(held.values()):
            self.pool.give_back(port_number)
        if held:
            self._held[key] = held
        else:
            self._held.pop(key, None)
        if error is None:
            svc.metadata.annotations.pop(ERROR_ANNOTATION, None)
            return svc, None
        svc.metadata.annotations[ERROR_ANNOTATION] = str(error)
        return svc, str(error)

    def _decide_health_check(
        self,
        svc: Service,
        before: dict[str, int],
        held: dict[str, int],
        refused: dict[str, int],
        *,
        pick: bool,
    ) -> InvalidAllocation | None:
        """``spec.healthCheckNodePort``: the one held or requested if free (``pick``
        False: before the service ports take the lowest free ones, so they cannot take
        it), else (``pick`` True: after them, as the API server orders it) the lowest."""
        if not wants_health_check_port(svc):
            svc.spec.health_check_node_port = None
            return None
        spec = svc.spec
        if HEALTH_CHECK in held or HEALTH_CHECK in self._refused.get(svc.key, {}):
            return None  # decided by the first pass
        want = spec.health_check_node_port or refused.get(HEALTH_CHECK) or before.get(HEALTH_CHECK)
        if bool(want) == pick:
            return None  # the other pass decides
        if not want:
            got = self.pool.take_lowest()
            if got is None:
                return health_check_range_full(svc, self.range)
            self.allocations += 1
            held[HEALTH_CHECK] = spec.health_check_node_port = got
            return None
        mine = set(before.values())
        if want not in held.values() and (want in mine or self.pool.take(want)):
            held[HEALTH_CHECK] = spec.health_check_node_port = want
            return None
        spec.health_check_node_port = None
        self._refused.setdefault(svc.key, {})[HEALTH_CHECK] = want
        if self.range.contains(want):
            return health_check_taken(svc, want)
        return health_check_out_of_range(svc, want, self.range)

    def _written(self, key: Key, svc: Service, error: str | None) -> None:
        if error:
            self.errors += 1
            log.warning("node port not allocated service=%s/%s error=%s", key[0], key[1], error)
            self.events.warning(svc, "PortNotAllocated", error)
            return
        ports = ",".join(str(p.node_port) for p in svc.spec.ports if p.node_port)
        log.info(
            "node ports allocated service=%s/%s ports=%s health_check=%s",
            key[0],
            key[1],
            ports or "none",
            svc.spec.health_check_node_port or "none",
        )
