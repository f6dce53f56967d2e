"""``shiftnet apiserver``: serve the Kubernetes API over the store (kubectl, client libraries)."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from shiftnet.apiserver.config import BOOKMARK_INTERVAL, DEFAULT_LISTEN, WATCH_WRITE_TIMEOUT


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "apiserver",
        help="serve the Kubernetes API (kubectl, client libraries) over the store",
        description="Serve the Kubernetes REST API over HTTPS on the cluster store. On first "
        "start it makes a CA, a serving certificate and an admin token under the state "
        "directory and writes $SHIFTNET_HOME/kubeconfig for kubectl.",
    )
    p.add_argument(
        "--api-listen",
        metavar="ADDR:PORT",
        help=f"HTTPS address (env SHIFTNET_API_LISTEN; default {DEFAULT_LISTEN})",
    )
    p.add_argument(
        "--watch-write-timeout",
        type=float,
        default=WATCH_WRITE_TIMEOUT,
        metavar="SECONDS",
        help="drop a watcher that has not taken an event for this long "
        f"(default {WATCH_WRITE_TIMEOUT:g})",
    )
    p.add_argument(
        "--watch-bookmark-interval",
        type=float,
        default=BOOKMARK_INTERVAL,
        metavar="SECONDS",
        help="send a BOOKMARK to a watch that asked for them (allowWatchBookmarks) "
        f"after this long without one (default {BOOKMARK_INTERVAL:g})",
    )
    p.add_argument(
        "--audit-log",
        metavar="PATH",
        help="append one JSON line per authenticated request (verb, group, resource, "
        "subresource, namespace, name): what a client needs in RBAC (default: off)",
    )
    p.add_argument(
        "--metrics-listen",
        metavar="ADDR:PORT",
        default=os.environ.get("SHIFTNET_API_METRICS_LISTEN") or None,
        help="serve Prometheus metrics (kube-apiserver's names) on ADDR:PORT/metrics; :PORT "
        "means 127.0.0.1 (env SHIFTNET_API_METRICS_LISTEN; default off)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from shiftnet.apiserver.config import APIServerConfig
    from shiftnet.cli.runtime import metrics_address, run_async, serve_metrics
    from shiftnet.errors import ConfigError

    if not args.watch_write_timeout > 0:
        raise ConfigError("--watch-write-timeout must be a positive number of seconds")
    if not args.watch_bookmark_interval > 0:
        raise ConfigError("--watch-bookmark-interval must be a positive number of seconds")
    config = replace(
        APIServerConfig.build(Path(args.state_dir), listen=args.api_listen),
        watch_write_timeout=args.watch_write_timeout,
        bookmark_interval=args.watch_bookmark_interval,
        audit_log=Path(args.audit_log) if args.audit_log else None,
    )

    if args.metrics_listen:
        metrics_address(args.metrics_listen)  # a bad flag fails before anything starts

    async def serve() -> int:
        from shiftnet.apiserver.server import APIServer
        from shiftnet.store import open_store

        store = open_store(args.store)
        server = APIServer(store, config)
        endpoint = None
        try:
            await server.start()
            endpoint = serve_metrics(args.metrics_listen, server.metrics.registry)
            print(f"Kubernetes API on {server.url}", flush=True)
            print(f"export KUBECONFIG={config.kubeconfig_path}", flush=True)
            if endpoint is not None:
                print(f"metrics on {endpoint.url}", flush=True)
            await asyncio.Event().wait()
        finally:
            if endpoint is not None:
                endpoint.stop()
            await server.stop()
            await store.close()
        return 0

    return int(run_async(serve))
