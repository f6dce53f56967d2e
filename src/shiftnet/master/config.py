"""Master settings: the service network and the cluster network, per network mode.

Local mode (no root) puts every address on loopback so processes can bind
them: pods in 127.10.0.0/16 (a /24 per node), ClusterIPs in 127.30.0.0/16.
These are the first local cluster's; ``shiftnet up`` gives each further
cluster on the machine the next free /16 of each (``shiftnet.claims``).
SDN mode uses the seed's 10.1.0.0/16 with /24 per node and OpenShift 3's
service network 172.30.0.0/16. Every value can be overridden.
"""

from __future__ import annotations

from dataclasses import dataclass

from shiftnet.errors import AllocationError, ConfigError
from shiftnet.ipam import IPNetwork, IPRange, SubnetRange
from shiftnet.master.service_ranges import PortRange, local_load_balancer_range
from shiftnet.router.durations import parse_duration_ms

NETWORK_MODES = ("local", "sdn")

DEFAULTS: dict[str, tuple[str, int, str]] = {
    # mode: (cluster network, hostsubnetlength, service network)
    "local": ("127.10.0.0/16", 8, "127.30.0.0/16"),
    "sdn": ("10.1.0.0/16", 8, "172.30.0.0/16"),
}

PLUGIN_NAME = "redhat/openshift-ovs-subnet"  # the seed's "ovssubnet": one flat pod network


@dataclass(frozen=True)
class MasterConfig:
    """What the master controllers need; ``MasterConfig.build`` fills mode defaults."""

    network_mode: str = "local"
    cluster_network: str = DEFAULTS["local"][0]
    host_subnet_length: int = DEFAULTS["local"][1]
    service_network: str = DEFAULTS["local"][2]
    # a second service network of the other family: dual-stack Services (sdn mode only)
    secondary_service_network: str | None = None
    scheduler: bool = True  # assign unscheduled pods round robin over ready nodes
    workers: int = 8  # concurrent per-object syncs of each controller
    node_port_range: str = "30000-32767"  # kube-apiserver's --service-node-port-range
    # the built-in LoadBalancer address pool (CIDR); None: LoadBalancer Services stay pending
    load_balancer_range: str | None = None
    event_ttl: float = 3600.0  # seconds an Event lives after its last write (--event-ttl)
    # addresses of one Endpoints subset copied into slices (--mirroring-max-endpoints-per-subset)
    mirroring_max_endpoints_per_subset: int = 1000

    @classmethod
    def build(
        cls,
        network_mode: str | None = None,
        *,
        cluster_network: str | None = None,
        host_subnet_length: int | None = None,
        service_network: str | None = None,
        secondary_service_network: str | None = None,
        scheduler: bool = True,
        workers: int = 8,
        node_port_range: str | None = None,
        load_balancer_range: str | None = None,
        event_ttl: str | None = None,
        mirroring_max_endpoints_per_subset: int = 1000,
    ) -> MasterConfig:
        """Defaults of ``network_mode`` for what is not given; ConfigError when invalid."""
        mode = network_mode or "local"
        if mode not in NETWORK_MODES:
            raise ConfigError(
                f'network mode "{mode}" is not supported: use one of {", ".join(NETWORK_MODES)}'
            )
        cn, hsl, sn = DEFAULTS[mode]
        cfg = cls(
            network_mode=mode,
            cluster_network=cluster_network or cn,
            host_subnet_length=hsl if host_subnet_length is None else host_subnet_length,
            service_network=service_network or sn,
            secondary_service_network=secondary_service_network or None,
            scheduler=scheduler,
            workers=workers,
            node_port_range=node_port_range or "30000-32767",
            load_balancer_range=load_balancer_range
            or (local_load_balancer_range(service_network or sn) if mode == "local" else None),
            event_ttl=parse_event_ttl(event_ttl) if event_ttl else 3600.0,
            mirroring_max_endpoints_per_subset=mirroring_max_endpoints_per_subset,
        )
        cfg.check()
        return cfg

    def check(self) -> None:
        """Raise ConfigError naming the setting when a value is unusable."""
        try:
            SubnetRange(self.cluster_network, self.host_subnet_length)
        except AllocationError as exc:
            raise ConfigError(f"cluster network setting is invalid: {exc}") from None
        try:
            IPRange.for_services(self.service_network)
        except AllocationError as exc:
            raise ConfigError(f"service network setting is invalid: {exc}") from None
        cluster = SubnetRange(self.cluster_network, self.host_subnet_length).network
        service = IPRange.for_services(self.service_network).network
        if cluster.overlaps(service):
            raise ConfigError(
                f"service network {service} overlaps cluster network {cluster}: "
                "a ClusterIP could equal a pod IP"
            )
        self._check_secondary(cluster, service)
        PortRange.parse(self.node_port_range)  # ConfigError naming the setting
        if self.load_balancer_range:
            try:
                pool = IPRange.for_services(self.load_balancer_range).network
            except AllocationError as exc:
                raise ConfigError(f"load balancer range setting is invalid: {exc}") from None
            if pool.overlaps(service) or pool.overlaps(cluster):
                raise ConfigError(
                    f"load balancer range {pool} overlaps the service network {service} or "
                    f"the cluster network {cluster}"
                )
        if self.event_ttl <= 0:
            raise ConfigError(f"event TTL must be more than 0 seconds, not {self.event_ttl:g}")
        if self.workers < 1:
            raise ConfigError(f"workers must be at least 1, not {self.workers}")
        if not 1 <= self.mirroring_max_endpoints_per_subset <= 1000:
            raise ConfigError(
                "mirroring max endpoints per subset must be from 1 to 1000, not "
                f"{self.mirroring_max_endpoints_per_subset}"
            )

    def _check_secondary(self, cluster: IPNetwork, service: IPNetwork) -> None:
        """The second service network: the other family, never in local mode (loopback
        has one IPv6 address, ::1, so there is no IPv6 range to serve ClusterIPs on)."""
        text = self.secondary_service_network
        if not text:
            return
        if self.network_mode == "local":
            raise ConfigError(
                f"secondary service network {text}: local network mode serves ClusterIPs on "
                "loopback, where IPv6 has the single address ::1; dual-stack Services need "
                "--network-mode sdn"
            )
        try:
            second = IPRange.for_services(text).network
        except AllocationError as exc:
            raise ConfigError(f"secondary service network setting is invalid: {exc}") from None
        if second.version == service.version:
            raise ConfigError(
                f"secondary service network {second} is of the same family as the service "
                f"network {service}: it must be IPv{6 if service.version == 4 else 4}"
            )
        if cluster.version == second.version and cluster.overlaps(second):
            raise ConfigError(
                f"secondary service network {second} overlaps cluster network {cluster}: "
                "a ClusterIP could equal a pod IP"
            )


def parse_event_ttl(text: str) -> float:
    """Seconds for ``--event-ttl`` (``1h``, ``30m``, ``90s``, or a bare number of seconds)."""
    ms = parse_duration_ms(text, bare_unit="s")
    if ms is None or ms <= 0:
        raise ConfigError(f'event TTL "{text}" is invalid: give a duration such as 1h, 30m or 90s')
    return ms / 1000.0
