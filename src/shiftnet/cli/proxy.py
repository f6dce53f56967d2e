"""``shiftnet proxy``: give Services their ClusterIPs (user-space, iptables or nftables mode)."""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

MODE_HELP = (
    "userspace: asyncio listeners on each ClusterIP:port (local mode, no root); "
    "iptables / nftables: kernel NAT rules (root). Env SHIFTNET_PROXY_MODE; default userspace"
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "proxy",
        help="run the service proxy (stable ClusterIPs for Services)",
        description="Watch Services and Endpoints and forward each ClusterIP:port to a ready "
        "endpoint: round robin, sessionAffinity ClientIP, retries past dead endpoints "
        "(user-space mode), or kernel NAT rules (iptables / nftables modes).",
    )
    p.add_argument("--store", default=argparse.SUPPRESS, metavar="URL", help="cluster store URL")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="tracebacks")
    p.add_argument("--mode", choices=("userspace", "iptables", "nftables"), help=MODE_HELP)
    p.add_argument(
        "--metrics-listen",
        "--metrics-bind-address",
        metavar="ADDR:PORT",
        default=os.environ.get("SHIFTNET_PROXY_METRICS_LISTEN") or None,
        help="serve Prometheus metrics (kube-proxy's names) on ADDR:PORT/metrics; :PORT means "
        "127.0.0.1 (env SHIFTNET_PROXY_METRICS_LISTEN; default off)",
    )
    p.add_argument(
        "--healthz-bind-address",
        metavar="ADDR:PORT",
        default=os.environ.get("SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS", "127.0.0.1:10256"),
        help="serve kube-proxy's /healthz and /livez (200 while syncs keep up) on ADDR:PORT; "
        "'' turns it off (env SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS; default 127.0.0.1:10256)",
    )
    p.add_argument(
        "--netns",
        metavar="NAME",
        help="apply kernel rules inside this network namespace (env SHIFTNET_PROXY_NETNS)",
    )
    p.add_argument(
        "--kernel-spread",
        choices=("random", "roundrobin"),
        default=os.environ.get("SHIFTNET_PROXY_KERNEL_SPREAD", "random"),
        help="kernel modes: random (kube-proxy's statistic/numgen random) or roundrobin "
        "(statistic nth / numgen inc); env SHIFTNET_PROXY_KERNEL_SPREAD",
    )
    p.add_argument(
        "--cluster-cidr",
        metavar="CIDR",
        default=os.environ.get("SHIFTNET_PROXY_CLUSTER_CIDR") or None,
        help="kernel modes: masquerade service traffic from outside this CIDR",
    )
    p.add_argument(
        "--masquerade-all", action="store_true", help="kernel modes: masquerade all service traffic"
    )
    p.add_argument(
        "--hostname-override",
        metavar="NODE",
        default=os.environ.get("SHIFTNET_PROXY_NODE_NAME") or None,
        help="this node's name: its endpoints serve the Local traffic policies "
        "(env SHIFTNET_PROXY_NODE_NAME; default: none, so Local policies find no endpoint)",
    )
    p.add_argument(
        "--nodeport-addresses",
        metavar="IP[,IP...]",
        default=os.environ.get("SHIFTNET_PROXY_NODEPORT_ADDRESSES", "127.0.0.1"),
        help="user-space mode: addresses node ports listen on, and in every mode the "
        "addresses of the health check node ports (env SHIFTNET_PROXY_NODEPORT_ADDRESSES; "
        "default 127.0.0.1); kernel modes serve node ports on every non-loopback address of "
        "the node",
    )
    p.add_argument(
        "--udp-idle-timeout",
        type=float,
        default=float(os.environ.get("SHIFTNET_PROXY_UDP_IDLE_TIMEOUT", "30")),
        metavar="SECONDS",
        help="user-space mode: close a client's UDP backend socket after this idle time",
    )
    p.add_argument(
        "--max-relays",
        default=os.environ.get("SHIFTNET_PROXY_MAX_RELAYS") or None,
        metavar="N",
        help="user-space mode: relayed TCP connections and UDP clients at once; past it new "
        "clients are refused (default: a quarter of the open-file limit); env "
        "SHIFTNET_PROXY_MAX_RELAYS",
    )
    p.add_argument(
        "--min-sync-interval",
        type=float,
        default=0.1,
        metavar="SECONDS",
        help="coalesce changes: at most one sync per interval",
    )
    p.add_argument(
        "--iptables-backend",
        choices=("auto", "nft", "legacy"),
        default=os.environ.get("SHIFTNET_PROXY_IPTABLES_BACKEND", "auto"),
        help="iptables mode: iptables-nft or iptables-legacy tools (must match what the host "
        "uses); auto: the flavour whose tables hold more rules, else the one `iptables` is; "
        "env SHIFTNET_PROXY_IPTABLES_BACKEND",
    )
    p.add_argument(
        "--iptables-sync-period",
        metavar="SECONDS",
        default=os.environ.get("SHIFTNET_PROXY_IPTABLES_SYNC_PERIOD", "30"),
        help="iptables mode: a full sync at least this often (changes in between are partial "
        "restores); default 30, env SHIFTNET_PROXY_IPTABLES_SYNC_PERIOD",
    )
    p.add_argument(
        "--iptables-min-sync-period",
        metavar="SECONDS",
        default=os.environ.get("SHIFTNET_PROXY_IPTABLES_MIN_SYNC_PERIOD", "1"),
        help="iptables mode: at most one sync per period, changes in between are coalesced "
        "(replaces --min-sync-interval); default 1, env SHIFTNET_PROXY_IPTABLES_MIN_SYNC_PERIOD",
    )
    p.add_argument(
        "--cleanup",
        action="store_true",
        help="kernel modes: remove the rules on exit (default: leave them serving)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from shiftnet.cli.runtime import metrics_address, run_async, serve_metrics
    from shiftnet.proxy import ProxyConfig
    from shiftnet.proxy.healthcheck import healthz_address
    from shiftnet.proxy.service import parse_max_relays, parse_node_port_addresses
    from shiftnet.proxy.userspace import UserspaceConfig

    kernel: dict[str, Any] = {
        "spread": args.kernel_spread,
        "cluster_cidr": args.cluster_cidr,
        "masquerade_all": args.masquerade_all,
        "iptables_backend": args.iptables_backend,
        "iptables_sync_period": seconds("--iptables-sync-period", args.iptables_sync_period),
        "iptables_min_sync_period": seconds(
            "--iptables-min-sync-period", args.iptables_min_sync_period
        ),
    }
    if args.netns:
        kernel["netns"] = args.netns
    healthz = args.healthz_bind_address or None
    if healthz:
        healthz_address(healthz)  # a bad flag fails before anything starts
    config = ProxyConfig.from_env(
        mode=args.mode,
        healthz_bind_address=healthz,
        kernel=kernel,
        node_name=args.hostname_override,
        min_sync_interval=args.min_sync_interval,
        state_dir=args.state_dir,
        userspace=UserspaceConfig(
            udp_idle_timeout=args.udp_idle_timeout,
            max_relays=parse_max_relays(args.max_relays) if args.max_relays else None,
            node_port_addresses=parse_node_port_addresses(args.nodeport_addresses),
        ),
    )

    if args.metrics_listen:
        metrics_address(args.metrics_listen)  # a bad flag fails before anything starts

    try:  # user space relays bytes in the event loop: uvloop roughly doubles throughput
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass

    async def serve() -> int:
        import prometheus_client

        from shiftnet.private_files import ensure_private_dir
        from shiftnet.proxy import ServiceProxy, metrics
        from shiftnet.store import open_store

        if args.store.startswith("sqlite:"):
            ensure_private_dir(args.state_dir)
        store = open_store(args.store)
        proxy = ServiceProxy(store, config)
        endpoint = None
        try:
            await proxy.start()
            endpoint = serve_metrics(
                args.metrics_listen, metrics.REGISTRY, prometheus_client.REGISTRY
            )
            print(
                f"service proxy running in {config.mode} mode, "
                f"{len(proxy.table.entries)} service ports",
                flush=True,
            )
            if endpoint is not None:
                print(f"metrics on {endpoint.url}", flush=True)
            if proxy.health.url is not None:
                print(f"healthz on {proxy.health.url}", flush=True)
            await asyncio.Event().wait()
        finally:
            if endpoint is not None:
                endpoint.stop()
            await proxy.stop(cleanup=args.cleanup)
            await store.close()
        return 0

    return int(run_async(serve))


def seconds(flag: str, value: str) -> float:
    """A flag's number of seconds (0 or more), or one sentence naming the flag."""
    from shiftnet.errors import ConfigError

    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0 <= number < float("inf"):
        raise ConfigError(f"{flag} must be a number of seconds (0 or more), not {value[:40]!r}")
    return number
