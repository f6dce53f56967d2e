"""network.openshift.io/v1: ClusterNetwork and HostSubnet (top-level fields, as upstream)."""

from __future__ import annotations

from pydantic import Field

from shiftnet.api.base import Resource, Wire

# Where ``shiftnet master --secondary-service-network`` records the cluster's second
# service network (the other IP family) on ClusterNetwork ``default``: the master's
# allocator and the DNS's reverse zones both read it from here.
SECONDARY_SERVICE_NETWORK_ANNOTATION = "shiftnet.io/secondary-service-network"


class ClusterNetworkEntry(Wire):
    cidr: str = Field(alias="CIDR")
    host_subnet_length: int = 8


class ClusterNetwork(Resource):
    """The cluster network: pod CIDRs and how many host bits each node subnet gets.

    ``hostsubnetlength`` is upstream's name: the number of *host* bits of a node
    subnet (8 means a /24 inside a /16).
    """

    API_VERSION = "network.openshift.io/v1"
    KIND = "ClusterNetwork"
    RESOURCE = "clusternetworks"
    NAMESPACED = False

    network: str | None = None
    hostsubnetlength: int | None = Field(default=None, alias="hostsubnetlength")
    cluster_networks: list[ClusterNetworkEntry] = Field(default_factory=list)
    service_network: str | None = None
    plugin_name: str | None = None
    vxlan_port: int | None = None
    mtu: int | None = None


class HostSubnet(Resource):
    API_VERSION = "network.openshift.io/v1"
    KIND = "HostSubnet"
    RESOURCE = "hostsubnets"
    NAMESPACED = False

    host: str = ""
    host_ip: str = Field(default="", alias="hostIP")
    subnet: str = ""
    egress_ips: list[str] = Field(default_factory=list, alias="egressIPs")
