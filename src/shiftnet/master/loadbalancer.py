"""A simple built-in load-balancer address pool: fills ``status.loadBalancer.ingress``.

Kubernetes leaves ``type: LoadBalancer`` to a cloud provider or an add-on
(MetalLB and the like). shiftnet has a deliberately small one, in the spirit
of MetalLB's layer-2 mode without the announcing: each LoadBalancer Service
gets one address from ``--load-balancer-range`` (a CIDR), written to
``status.loadBalancer.ingress[0].ip``, and every proxy serves that address as
kube-proxy serves a cloud balancer's. Nothing announces the address: in local
mode the range is on loopback (so the machine itself reaches it), in sdn mode
the operator routes the range to the nodes.

* ``spec.loadBalancerIP`` (deprecated in Kubernetes, still honoured here) asks
  for one address of the pool; an address outside it or taken leaves the
  Service pending with ``shiftnet.io/load-balancer-error`` saying why.
* A Service with ``spec.loadBalancerClass`` belongs to another implementation
  and is left alone, as Kubernetes' default controllers do.
* No range configured: LoadBalancer Services stay pending (as on a cluster
  without a cloud provider); their node ports and ClusterIP still work.

Addresses live in the Services' status: a restarted master rebuilds the pool
from them (the oldest claim wins). A type change or deletion gives it back.

A Service left pending (pool exhausted, requested address taken or outside
the range) also gets a Warning Event ``SyncLoadBalancerFailed``, the reason
Kubernetes' service controller records when it cannot provide a balancer, so
``kubectl describe service`` says why it has no address.
"""

from __future__ import annotations

import contextlib
import logging

from shiftnet.api import Service
from shiftnet.client import Client
from shiftnet.errors import AllocationError
from shiftnet.events.recorder import DISCARD, EventSink
from shiftnet.informer import Informers
from shiftnet.ipam import IPRange
from shiftnet.master.service_allocator import Key, ServiceAllocator

log = logging.getLogger(__name__)

ERROR_ANNOTATION = "shiftnet.io/load-balancer-error"
EVENT_REASON = "SyncLoadBalancerFailed"  # the reason of Kubernetes' service controller


def managed(svc: Service) -> bool:
    """A LoadBalancer Service of the default implementation (no ``loadBalancerClass``)."""
    return svc.spec.type == "LoadBalancer" and not svc.spec.load_balancer_class


def ingress_ips(svc: Service) -> list[str]:
    return [i["ip"] for i in svc.status.load_balancer.ingress if i.get("ip")]


class LoadBalancerAllocator(ServiceAllocator):
    def __init__(
        self, client: Client, informers: Informers, cidr: str | None, *, workers: int = 8
    ) -> None:
        super().__init__(client, informers, workers=workers, name="loadbalancer")
        self.pool: IPRange | None = IPRange.for_services(cidr) if cidr else None
        self._held: dict[Key, str] = {}
        self.events: EventSink = DISCARD

    def rebuild(self) -> None:
        """Take every address the stored Services hold; the oldest claim wins."""
        self._held.clear()
        if self.pool is None:
            return
        self.pool.rebuild(())
        claims = [s for s in self.informer.list() if managed(s)]
        claims.sort(key=lambda s: (s.metadata.creation_timestamp or "", s.key))
        for svc in claims:
            for ip in ingress_ips(svc)[:1]:
                with contextlib.suppress(AllocationError):  # its sync reports it
                    self._held[svc.key] = self.pool.allocate(ip)
        log.info(
            "load balancer addresses rebuilt range=%s allocated=%d",
            self.pool.cidr,
            self.pool.used,
        )

    def _release(self, key: Key, uid: str | None = None) -> None:
        ip = self._held.pop(key, None)
        if ip is not None and self.pool is not None:
            self.pool.release(ip)
            log.info("load balancer address released service=%s/%s ip=%s", key[0], key[1], ip)
            for svc in self.informer.list():  # a pending one may wait for this address
                if managed(svc) and not ingress_ips(svc):
                    self.queue.add(svc.key)

    def _decide(self, svc: Service) -> tuple[Service, str | None]:
        """``svc`` (a fresh copy) with its ingress as it should be; returns (svc, error)."""
        key = svc.key
        annotations = svc.metadata.annotations
        if not managed(svc) or self.pool is None:
            self._release(key)
            if svc.spec.type != "LoadBalancer":
                svc.status.load_balancer.ingress = []  # as Kubernetes, on a type change
            annotations.pop(ERROR_ANNOTATION, None)
            return svc, None
        held = self._held.get(key)
        want = svc.spec.load_balancer_ip or held
        if held is not None and want != held:
            self._release(key)
            held = None
        error: str | None = None
        if held is None:
            try:
                held = self.pool.allocate(want) if want else self.pool.allocate_next()
                self._held[key] = held
            except AllocationError as exc:
                field = "spec.loadBalancerIP" if want else "status.loadBalancer.ingress"
                error = f'Service "{svc.namespace}/{svc.name}": {field}: {exc}'
        svc.status.load_balancer.ingress = [{"ip": held}] if held else []
        if error is None:
            annotations.pop(ERROR_ANNOTATION, None)
        else:
            annotations[ERROR_ANNOTATION] = error
        return svc, error

    def _written(self, key: Key, svc: Service, error: str | None) -> None:
        if error:
            log.warning("load balancer address not allocated service=%s/%s error=%s", *key, error)
            self.events.warning(svc, EVENT_REASON, error)
        else:
            shown = ",".join(ingress_ips(svc)) or "none"
            log.info("load balancer address service=%s/%s ip=%s", key[0], key[1], shown)
