"""The master controllers: the cluster's single writers of allocations and endpoints.

``Master(store, config)`` runs, on one set of shared informers:

* :class:`~shiftnet.master.clusterip.ClusterIPAllocator` (``spec.clusterIP``),
* :class:`~shiftnet.master.nodeports.NodePortAllocator` (``spec.ports[].nodePort``),
* :class:`~shiftnet.master.loadbalancer.LoadBalancerAllocator` (``status.loadBalancer``),
* :class:`~shiftnet.master.endpoints.EndpointsController` (Endpoints),
* :class:`~shiftnet.master.endpointslices.EndpointSliceController` (EndpointSlices),
* :class:`~shiftnet.master.endpointslice_mirroring.EndpointSliceMirroringController`
  (EndpointSlices of user-written Endpoints),
* :class:`~shiftnet.master.ingress.IngressToRouteController` (Routes of Ingresses),
* :class:`~shiftnet.master.subnets.SubnetAllocator` (ClusterNetwork, HostSubnets),
* :class:`~shiftnet.master.scheduler.Scheduler` (``spec.nodeName``; optional),
* :class:`~shiftnet.events.expiry.EventExpiry` (deletes Events older than ``event_ttl``).

The allocators record a Warning Event on a Service or Node they could not serve;
the ingress-to-route controller records OpenShift's ``IncompleteIngressToRouteRules``
Event on an Ingress some of whose paths get no Route.

Run exactly one master per cluster: the allocators keep their pools in memory.
"""

from __future__ import annotations

import logging

from shiftnet.api import ClusterNetwork
from shiftnet.client import Client
from shiftnet.events.expiry import EventExpiry
from shiftnet.events.recorder import EventRecorder
from shiftnet.informer import Informers
from shiftnet.master.clusterip import ClusterIPAllocator, check_service_request
from shiftnet.master.config import MasterConfig
from shiftnet.master.endpoints import EndpointsController
from shiftnet.master.endpointslice_mirroring import EndpointSliceMirroringController
from shiftnet.master.endpointslices import EndpointSliceController
from shiftnet.master.ingress import IngressToRouteController
from shiftnet.master.loadbalancer import LoadBalancerAllocator
from shiftnet.master.nodeports import RANGE_ANNOTATION, NodePortAllocator
from shiftnet.master.scheduler import Scheduler
from shiftnet.master.service_families import SECONDARY_ANNOTATION
from shiftnet.master.subnets import SubnetAllocator
from shiftnet.store.base import Store

__all__ = ["Master", "MasterConfig", "check_service_request"]

log = logging.getLogger(__name__)


class Master:
    """``await master.start()`` returns once every controller has synced its first view."""

    def __init__(
        self,
        store: Store,
        config: MasterConfig | None = None,
        informers: Informers | None = None,
    ) -> None:
        self.store = store
        self.config = config or MasterConfig()
        self.config.check()
        self.client = Client(store)
        self._own_informers = informers is None
        self.informers = informers or Informers(store)
        self.events = EventRecorder(self.client, "master")
        self.event_expiry = EventExpiry(self.client, self.informers, self.config.event_ttl)
        self.subnets = SubnetAllocator(self.client, self.informers, self.config)
        self.cluster_ips = ClusterIPAllocator(
            self.client,
            self.informers,
            self.config.service_network,
            secondary_network=self.config.secondary_service_network,
            workers=self.config.workers,
        )
        self.node_ports = NodePortAllocator(
            self.client,
            self.informers,
            self.config.node_port_range,
            workers=self.config.workers,
        )
        self.load_balancers = LoadBalancerAllocator(
            self.client,
            self.informers,
            self.config.load_balancer_range,
            workers=self.config.workers,
        )
        self.endpoints = EndpointsController(self.client, self.informers)
        self.endpoint_slices = EndpointSliceController(self.client, self.informers)
        self.endpoint_slice_mirroring = EndpointSliceMirroringController(
            self.client,
            self.informers,
            max_per_subset=self.config.mirroring_max_endpoints_per_subset,
        )
        self.endpoint_slice_mirroring.events = self.events
        self.ingress_routes = IngressToRouteController(self.client, self.informers)
        self.ingress_routes.events = self.events
        self.scheduler = Scheduler(self.client, self.informers) if self.config.scheduler else None
        for allocator in (self.subnets, self.cluster_ips, self.node_ports, self.load_balancers):
            allocator.events = self.events
        self._started = False

    async def start(self) -> None:
        if self._started:
            return
        cn = await self.subnets.ensure_cluster_network()
        if cn.service_network and cn.service_network != self.cluster_ips.range.cidr:
            self.cluster_ips.use_network(cn.service_network)
        await self._record_secondary_network(cn)
        await self._record_node_port_range(cn)
        await self.events.start()
        await self.informers.start()
        await self.event_expiry.start()
        await self.subnets.start()
        await self.cluster_ips.start()
        await self.node_ports.start()
        await self.load_balancers.start()
        await self.endpoints.start()
        await self.endpoint_slices.start()
        await self.endpoint_slice_mirroring.start()
        await self.ingress_routes.start()
        if self.scheduler is not None:
            await self.scheduler.start()
        self._started = True
        log.info(
            "master started mode=%s cluster_network=%s service_network=%s secondary=%s",
            self.config.network_mode,
            self.subnets.range.cidr,
            self.cluster_ips.range.cidr,
            self.cluster_ips.secondary.cidr if self.cluster_ips.secondary else "none",
        )

    async def _record_secondary_network(self, cn: ClusterNetwork) -> None:
        """The second service network lives on ClusterNetwork ``default`` (an annotation:
        OpenShift's type has one ``serviceNetwork``); once recorded, the stored one is kept."""
        stored = cn.metadata.annotations.get(SECONDARY_ANNOTATION)
        if stored:
            self.cluster_ips.use_secondary_network(stored)
            return
        wanted = self.config.secondary_service_network
        if not wanted:
            return

        def record(c: ClusterNetwork) -> ClusterNetwork:
            c.metadata.annotations.setdefault(SECONDARY_ANNOTATION, wanted)
            return c

        written = await self.client.mutate(ClusterNetwork, None, cn.name, record)
        if written is not None:
            self.cluster_ips.use_secondary_network(
                written.metadata.annotations.get(SECONDARY_ANNOTATION)
            )
        log.info("secondary service network recorded network=%s", wanted)

    async def _record_node_port_range(self, cn: ClusterNetwork) -> None:
        """The node port range lives on ClusterNetwork ``default`` (an annotation), so
        ``apply`` and the API server check requests against the master's range. The
        setting wins, as kube-apiserver's flag does; ports held outside it are kept."""
        wanted = str(self.node_ports.range)
        if cn.metadata.annotations.get(RANGE_ANNOTATION) == wanted:
            return

        def record(c: ClusterNetwork) -> ClusterNetwork:
            c.metadata.annotations[RANGE_ANNOTATION] = wanted
            return c

        await self.client.mutate(ClusterNetwork, None, cn.name, record)
        log.info("node port range recorded range=%s", wanted)

    async def stop(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()
        await self.ingress_routes.stop()
        await self.endpoint_slice_mirroring.stop()
        await self.endpoint_slices.stop()
        await self.endpoints.stop()
        await self.node_ports.stop()
        await self.load_balancers.stop()
        await self.cluster_ips.stop()
        await self.subnets.stop()
        await self.event_expiry.stop()
        await self.events.stop()
        if self._own_informers:
            await self.informers.stop()
        self._started = False
        log.info("master stopped")
