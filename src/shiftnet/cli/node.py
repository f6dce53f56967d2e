"""``shiftnet node``: run a node agent on this machine until Ctrl-C.

It registers a Node, waits for the master to allocate its HostSubnet and
runs the Pods scheduled to it. ``shiftnet up`` runs one of these for you;
start more (``--node-name``) to try a cluster of several nodes on one host.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from shiftnet.api.names import is_digits
from shiftnet.cli.runtime import metrics_address, run_async, serve_metrics
from shiftnet.sdn.config import NETWORK_MODES, NodeConfig, default_node_name


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "node",
        help="run a node agent: register a Node and run the Pods scheduled to it",
        description="Run a node agent until Ctrl-C. In local network mode (the default, no "
        "root needed) every pod is a process bound to its own 127.x.y.z address.",
    )
    p.add_argument("--node-name", default=None, help="Node name (default: this host's name)")
    p.add_argument(
        "--network", choices=NETWORK_MODES, default="local", help="network mode (default: local)"
    )
    p.add_argument(
        "--host-ip",
        default=None,
        metavar="IP",
        help="address other nodes reach this one at (sdn mode: the VXLAN endpoint; "
        "default 127.0.0.1 in local mode, required in sdn mode)",
    )
    p.add_argument(
        "--vxlan-port", type=int, default=4789, metavar="PORT", help="sdn mode: VXLAN UDP port"
    )
    p.add_argument("--vni", type=int, default=1, help="sdn mode: VXLAN network identifier")
    p.add_argument(
        "--dns",
        default=None,
        metavar="ADDR[:PORT]",
        help="cluster DNS for pods (sdn mode: written to each pod's /etc/resolv.conf; "
        "port 53 there)",
    )
    p.add_argument(
        "--keep-pods",
        action="store_true",
        help="leave pod processes running on exit; the next agent adopts them",
    )
    p.add_argument(
        "--heartbeat", type=float, default=10.0, metavar="SECONDS", help="Node status period"
    )
    p.add_argument(
        "--metrics-listen",
        metavar="ADDR:PORT",
        help="serve Prometheus metrics here (default: off)",
    )
    p.add_argument(
        "-l",
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Node label (repeatable)",
    )
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> NodeConfig:
    from shiftnet.errors import InvalidInput

    labels: dict[str, str] = {}
    for item in args.label:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f'--label "{item}" must look like key=value')
        labels[key] = value
    if args.network == "sdn":
        import os

        from shiftnet.errors import ConfigError

        if os.geteuid() != 0:
            raise ConfigError(
                "shiftnet node --network sdn needs root: it creates network namespaces, "
                "bridges and VXLAN devices"
            )
        if not args.host_ip:
            raise ConfigError("shiftnet node --network sdn needs --host-ip (this node's address)")
    dns: tuple[str, int] | None = None
    if args.dns:
        host, _, port = args.dns.rpartition(":") if ":" in args.dns else (args.dns, "", "53")
        import ipaddress

        try:
            host = str(ipaddress.ip_address(host))
        except ValueError:
            port = ""
        if not is_digits(port) or not 0 < int(port) < 65536:
            raise InvalidInput(f'--dns "{args.dns}" must look like ADDR[:PORT] (an IP address)')
        dns = (host, int(port))
    extra = {"host_ip": args.host_ip} if args.host_ip else {}
    return NodeConfig(
        node_name=args.node_name or default_node_name(),
        state_dir=Path(args.state_dir),
        network=args.network,
        vni=args.vni,
        vxlan_port=args.vxlan_port,
        dns_server=dns,
        **extra,
        heartbeat_seconds=args.heartbeat,
        stop_pods_on_exit=not args.keep_pods,
        labels=labels,
    )


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if args.metrics_listen:
        metrics_address(args.metrics_listen)  # a bad flag fails before anything starts

    async def go() -> int:
        from shiftnet.private_files import ensure_private_dir
        from shiftnet.sdn.agent import NodeAgent
        from shiftnet.sdn.metrics import REGISTRY
        from shiftnet.store import open_store

        ensure_private_dir(config.state_dir)
        store = open_store(args.store)
        agent = NodeAgent(store, config)
        try:
            serve_metrics(args.metrics_listen, REGISTRY)
            await agent.start()
            print(f"node {config.node_name} registered; waiting for its HostSubnet", flush=True)
            subnet = await agent.wait_for_subnet()
            print(f"node {config.node_name} has subnet {subnet}; running its pods", flush=True)
            await asyncio.Event().wait()
        finally:
            await agent.stop()
            await store.close()
        return 0

    return int(run_async(go))
