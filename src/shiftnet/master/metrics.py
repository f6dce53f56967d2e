"""The master controllers' Prometheus metrics (a private registry, as the router's)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

REGISTRY = CollectorRegistry(auto_describe=True)

CLUSTER_IPS_ALLOCATED = Gauge(
    "shiftnet_master_cluster_ips_allocated",
    "ClusterIPs currently held by Services.",
    registry=REGISTRY,
)
CLUSTER_IPS_FREE = Gauge(
    "shiftnet_master_cluster_ips_free",
    "ClusterIPs still free in the service network.",
    registry=REGISTRY,
)
CLUSTER_IP_ERRORS = Counter(
    "shiftnet_master_cluster_ip_errors",
    "Services whose ClusterIP could not be given (taken, out of range, range full).",
    registry=REGISTRY,
)
HOST_SUBNETS_ALLOCATED = Gauge(
    "shiftnet_master_host_subnets_allocated",
    "Node subnets currently held by HostSubnets.",
    registry=REGISTRY,
)
HOST_SUBNETS_FREE = Gauge(
    "shiftnet_master_host_subnets_free",
    "Node subnets still free in the cluster network.",
    registry=REGISTRY,
)
SUBNETS_EXHAUSTED = Counter(
    "shiftnet_master_host_subnet_exhausted",
    "Times a node found the cluster network full.",
    registry=REGISTRY,
)
ENDPOINTS_WRITES = Counter(
    "shiftnet_master_endpoints_writes",
    "Endpoints objects created or updated by the endpoints controller.",
    registry=REGISTRY,
)
ENDPOINTSLICE_WRITES = Counter(
    "shiftnet_master_endpointslice_writes",
    "EndpointSlices created or updated by the EndpointSlice controller.",
    registry=REGISTRY,
)
ENDPOINTSLICE_MIRRORING_WRITES = Counter(
    "shiftnet_master_endpointslice_mirroring_writes",
    "EndpointSlices created or updated by the EndpointSlice mirroring controller.",
    registry=REGISTRY,
)
PODS_SCHEDULED = Counter(
    "shiftnet_master_pods_scheduled",
    "Pods given a node by the scheduler.",
    registry=REGISTRY,
)
