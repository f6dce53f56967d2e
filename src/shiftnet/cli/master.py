"""``shiftnet master``: run the master controllers until Ctrl-C.

ClusterIPs for Services, Endpoints for Services with a selector, the
ClusterNetwork and one HostSubnet per Node, and (unless ``--no-scheduler``)
a round-robin scheduler. Run one per cluster; ``shiftnet up`` runs it for you.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Mapping
from typing import Any

from shiftnet.errors import ConfigError
from shiftnet.master.config import DEFAULTS, NETWORK_MODES, MasterConfig

ENV = {
    "network_mode": "SHIFTNET_NETWORK_MODE",
    "cluster_network": "SHIFTNET_CLUSTER_NETWORK",
    "host_subnet_length": "SHIFTNET_HOST_SUBNET_LENGTH",
    "service_network": "SHIFTNET_SERVICE_NETWORK",
    "secondary_service_network": "SHIFTNET_SECONDARY_SERVICE_NETWORK",
    "service_node_port_range": "SHIFTNET_SERVICE_NODE_PORT_RANGE",
    "load_balancer_range": "SHIFTNET_LOAD_BALANCER_RANGE",
    "event_ttl": "SHIFTNET_EVENT_TTL",
    "mirroring_max_endpoints_per_subset": "SHIFTNET_MIRRORING_MAX_ENDPOINTS_PER_SUBSET",
}


def register(subparsers: Any) -> None:
    local, sdn = DEFAULTS["local"], DEFAULTS["sdn"]
    p = subparsers.add_parser(
        "master",
        help="run the master controllers: ClusterIPs, Endpoints, node subnets, scheduling",
        description="Run the cluster's single writers until Ctrl-C: the ClusterIP allocator, "
        "the endpoints controller, the SDN subnet allocator and a round-robin scheduler.",
    )
    p.add_argument(
        "--network-mode",
        choices=NETWORK_MODES,
        default=None,
        help=f"picks the defaults below (env {ENV['network_mode']}; default local)",
    )
    p.add_argument(
        "--cluster-network",
        metavar="CIDR",
        default=None,
        help=f"pod network (env {ENV['cluster_network']}; default {local[0]} in local mode, "
        f"{sdn[0]} in sdn mode)",
    )
    p.add_argument(
        "--host-subnet-length",
        metavar="BITS",
        default=None,
        help=f"host bits of each node's subnet (env {ENV['host_subnet_length']}; default "
        f"{local[1]}: a /24 per node in a /16)",
    )
    p.add_argument(
        "--service-network",
        metavar="CIDR",
        default=None,
        help=f"ClusterIP range (env {ENV['service_network']}; default {local[2]} in local "
        f"mode, {sdn[2]} in sdn mode)",
    )
    p.add_argument(
        "--secondary-service-network",
        metavar="CIDR",
        default=None,
        help=f"a second ClusterIP range of the other family, for dual-stack Services "
        f"(env {ENV['secondary_service_network']}; sdn mode only; default none)",
    )
    p.add_argument(
        "--service-node-port-range",
        metavar="FIRST-LAST",
        default=None,
        help=f"node ports of NodePort and LoadBalancer Services "
        f"(env {ENV['service_node_port_range']}; default 30000-32767)",
    )
    p.add_argument(
        "--load-balancer-range",
        metavar="CIDR",
        default=None,
        help=f"the built-in pool of LoadBalancer addresses (env {ENV['load_balancer_range']}; "
        "default: a loopback /24 in local mode, none in sdn mode)",
    )
    p.add_argument(
        "--event-ttl",
        metavar="DURATION",
        default=None,
        help=f"delete an Event this long after it was last recorded, e.g. 1h, 30m "
        f"(env {ENV['event_ttl']}; default 1h)",
    )
    p.add_argument(
        "--mirroring-max-endpoints-per-subset",
        metavar="N",
        default=None,
        help="addresses of one subset of a user-written Endpoints copied into its "
        f"EndpointSlice, 1-1000 (env {ENV['mirroring_max_endpoints_per_subset']}; default 1000)",
    )
    p.add_argument(
        "--no-scheduler",
        action="store_true",
        help="do not assign unscheduled pods to nodes",
    )
    p.add_argument(
        "--metrics-listen",
        metavar="ADDR:PORT",
        default=None,
        help="serve Prometheus metrics here (default: off)",
    )
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace, env: Mapping[str, str]) -> MasterConfig:
    """Flags first, then environment, then the network mode's defaults."""

    def pick(name: str) -> str | None:
        value = getattr(args, name, None)
        return str(value) if value is not None else (env.get(ENV[name]) or None)

    hsl_text = pick("host_subnet_length")
    hsl: int | None = None
    if hsl_text is not None:
        try:
            hsl = int(hsl_text)
        except ValueError:
            raise ConfigError(
                f'--host-subnet-length "{hsl_text}" is invalid: it must be a number of bits'
            ) from None
    mirror_text = pick("mirroring_max_endpoints_per_subset")
    try:
        mirror = int(mirror_text) if mirror_text is not None else 1000
    except ValueError:
        raise ConfigError(
            f'--mirroring-max-endpoints-per-subset "{mirror_text}" is invalid: '
            "it must be a number from 1 to 1000"
        ) from None
    return MasterConfig.build(
        pick("network_mode"),
        cluster_network=pick("cluster_network"),
        host_subnet_length=hsl,
        service_network=pick("service_network"),
        secondary_service_network=pick("secondary_service_network"),
        scheduler=not args.no_scheduler,
        node_port_range=pick("service_node_port_range"),
        load_balancer_range=pick("load_balancer_range"),
        event_ttl=pick("event_ttl"),
        mirroring_max_endpoints_per_subset=mirror,
    )


def run(args: argparse.Namespace) -> int:
    from shiftnet.cli.runtime import metrics_address, run_async, serve_metrics

    config = config_from_args(args, os.environ)
    if args.metrics_listen:
        metrics_address(args.metrics_listen)  # a bad flag fails before anything starts

    async def serve() -> int:
        from shiftnet.master import Master
        from shiftnet.master.metrics import REGISTRY
        from shiftnet.private_files import ensure_private_dir
        from shiftnet.store import open_store

        if args.store.startswith("sqlite:"):
            ensure_private_dir(args.state_dir)
        store = open_store(args.store)
        master = Master(store, config)
        try:
            serve_metrics(args.metrics_listen, REGISTRY)
            await master.start()
            print(
                f"master running: cluster network {master.subnets.range.cidr} "
                f"(/{master.subnets.range.prefixlen} per node), service network "
                f"{master.cluster_ips.range.cidr}",
                flush=True,
            )
            await asyncio.Event().wait()
        finally:
            await master.stop()
            await store.close()
        return 0

    return int(run_async(serve))
