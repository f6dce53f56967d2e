"""``shiftnet router``: serve Routes through HAProxy (the OpenShift router, alone).

Every option is an OpenShift router environment variable and a flag (see
``shiftnet router --help`` and docs/router.md). SIGINT/SIGTERM stop the router
and its HAProxy cleanly; if the router dies any other way, HAProxy keeps
serving and the next ``shiftnet router`` on the same work directory adopts it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from shiftnet.router.config import (
    RouterConfig,
    add_router_flags,
    listen_address,
    stats_address,
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "router",
        help="serve Routes through HAProxy",
        description="Watch Routes, Services, Endpoints and Namespaces in the store, admit "
        "routes (host claims, shards, TLS checks), and serve them with HAProxy straight to "
        "pod IPs. Flags override the OpenShift router's environment variables.",
    )
    # Also accepted after the sub-command (the global flags come before it).
    p.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="cluster store URL (same as the global --store)",
    )
    p.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="debug logging and tracebacks (same as the global --debug)",
    )
    p.add_argument(
        "--metrics-listen",
        metavar="ADDR:PORT",
        default=os.environ.get("ROUTER_METRICS_LISTEN") or None,
        help="serve Prometheus metrics on ADDR:PORT/metrics [ROUTER_METRICS_LISTEN] (default: off)",
    )
    add_router_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from shiftnet.cli.runtime import metrics_address, run_async, serve_metrics
    from shiftnet.heap import limit_heap_growth

    limit_heap_growth()  # big rendered texts come and go: keep them off the heap
    config = RouterConfig.from_args(args)
    if args.metrics_listen:
        metrics_address(args.metrics_listen)  # a bad flag fails before anything starts

    async def serve() -> int:
        from shiftnet.private_files import ensure_private_dir
        from shiftnet.router import Router
        from shiftnet.router.metrics import REGISTRY, HAProxyCollector
        from shiftnet.router.stats_auth import stats_line
        from shiftnet.store import open_store

        if args.store.startswith("sqlite:"):
            ensure_private_dir(args.state_dir)
        store = open_store(args.store)
        router = Router(store, config)
        endpoint = None
        try:
            haproxy = HAProxyCollector(router, asyncio.get_running_loop())
            endpoint = serve_metrics(args.metrics_listen, REGISTRY, haproxy)
            await router.start()
            print(
                f"router {config.name} serving http on {listen_address(config, config.http_port)}"
                f" and https on {listen_address(config, config.https_port)}"
                f" (work dir {config.work_dir})",
                flush=True,
            )
            line = stats_line(router.stats_credentials, f"http://{stats_address(config)}/")
            if line:
                print(line, flush=True)
            if endpoint is not None:
                print(f"metrics on {endpoint.url}", flush=True)
            await asyncio.Event().wait()
        finally:
            if endpoint is not None:
                endpoint.stop()
            await router.stop()
            await store.close()
        return 0

    return int(run_async(serve))
