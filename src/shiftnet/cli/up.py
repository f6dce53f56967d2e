"""``shiftnet up [-f FILE|DIR ...]``: the main job, a whole cluster on this machine.

Starts the store (embedded SQLite in the state directory unless ``--store``
says otherwise), the master controllers, a node agent and the Kubernetes API
(:class:`shiftnet.cluster.LocalCluster`), applies the manifests, waits for
their pods to become ready, prints what runs and what to try next, and runs
until Ctrl-C or SIGTERM. Shutdown stops every component and every pod
process; nothing is left running.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path
from typing import Any

from shiftnet.api import Pod, Resource, Route, Service
from shiftnet.cli.applying import apply_documents
from shiftnet.cli.manifests import read_manifests
from shiftnet.cli.naming import object_ref
from shiftnet.cli.objects import decode_documents
from shiftnet.cli.runtime import run_async
from shiftnet.cli.settings import DEFAULT_HOME
from shiftnet.client import Client
from shiftnet.cluster import COMPONENTS, ClusterConfig, ComponentFactory, LocalCluster
from shiftnet.errors import ConfigError
from shiftnet.router.config import OPTIONS, add_router_flags
from shiftnet.sdn.config import check_node_name, default_node_name

READY_POLL = 0.25
MAX_CURL_LINES = 8


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "up",
        help="run a whole cluster here (store, master, proxy, DNS, node, router) and apply "
        "manifests",
        description="Start the store, the master controllers and a node agent on this machine, "
        "apply the given manifests and run until Ctrl-C. Try: shiftnet up -f examples/demo",
    )
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="FILE",
        help="manifest file or directory to apply once the cluster runs (repeatable)",
    )
    p.add_argument("-R", "--recursive", action="store_true", help="descend into sub-directories")
    p.add_argument("--node-name", help="name of this machine's Node (default: the host name)")
    p.add_argument(
        "--cluster-network",
        metavar="CIDR",
        help="pod network (default: the first free /16 from 127.10.0.0/16 up, kept by the "
        "cluster; one subnet per node)",
    )
    p.add_argument(
        "--host-subnet-length",
        type=int,
        metavar="BITS",
        help="host bits of each node's subnet (default 8: a /24 per node)",
    )
    p.add_argument(
        "--service-network",
        metavar="CIDR",
        help="ClusterIP range (default: the first free /16 from 127.30.0.0/16 up, kept by the "
        "cluster)",
    )
    p.add_argument(
        "--proxy-mode",
        choices=("userspace", "iptables", "nftables"),
        help="service proxy mode (env SHIFTNET_PROXY_MODE; default userspace in local mode)",
    )
    p.add_argument(
        "--dns-listen",
        metavar="ADDR:PORT",
        help="cluster DNS address (env SHIFTNET_DNS_LISTEN; default 127.0.0.1 and port 8053, or "
        "the next free one, kept by the cluster)",
    )
    p.add_argument(
        "--api-listen",
        metavar="ADDR:PORT",
        help="Kubernetes API (HTTPS) address (env SHIFTNET_API_LISTEN; default 127.0.0.1:6443)",
    )
    p.add_argument(
        "--metrics-listen",
        metavar="ADDR",
        default=os.environ.get("SHIFTNET_METRICS_LISTEN") or "127.0.0.1",
        help="address of every component's /metrics, each on a free port printed when it is "
        "ready; 'off' for none (env SHIFTNET_METRICS_LISTEN; default 127.0.0.1)",
    )
    p.add_argument(
        "--no-api",
        action="store_true",
        help="do not serve the Kubernetes API (kubectl then cannot reach this cluster)",
    )
    add_router_flags(p)
    p.add_argument(
        "--wait",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for the applied pods to become ready (default 60)",
    )
    p.set_defaults(func=run)


def components_for(args: argparse.Namespace) -> list[ComponentFactory]:
    """Every component, less the API server with ``--no-api``."""
    return [f for f in COMPONENTS if not (args.no_api and f.__name__ == "_apiserver")]


def metrics_host(text: str) -> str:
    """``--metrics-listen``: an IP address or ``off``, or one clear error."""
    import ipaddress

    if text == "off":
        return text
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        raise ConfigError(
            f"--metrics-listen={text!r} is invalid: must be an IP address or 'off'"
        ) from None


def say(line: str) -> None:
    print(line, flush=True)


async def apply_all(client: Client, docs: list[Any], objects: list[Resource]) -> None:
    """``shiftnet apply``'s semantics (every check first), printing what happened."""
    async for _doc, result in apply_documents(client, docs, objects):
        say(f"  {object_ref(type(result.obj), result.obj.name)} {result.action}")


def router_settings(args: argparse.Namespace) -> dict[str, str]:
    """The router's OpenShift variables from ``up``'s flags. Ports no flag or variable
    names are chosen per cluster by the claims step (``shiftnet.claims``)."""
    return {
        opt.env: str(getattr(args, opt.dest))
        for opt in OPTIONS
        if getattr(args, opt.dest, None) is not None
    }


async def wait_for_pods(client: Client, keys: list[tuple[str, str]], timeout: float) -> list[Pod]:
    """The applied pods, once all are ready or ``timeout`` passed (whichever is first)."""
    deadline = time.monotonic() + timeout
    told = False
    while True:
        pods = [p for p in [await client.try_get(Pod, ns, name) for ns, name in keys] if p]
        waiting = [p for p in pods if not p.ready]
        if not waiting or time.monotonic() >= deadline:
            if waiting:
                names = ", ".join(f"{p.namespace}/{p.name}" for p in waiting[:5])
                say(f"  not ready after {timeout:g}s: {names} (see shiftnet logs POD -n NS)")
            return pods
        if not told:
            say(f"waiting for {len(waiting)} of {len(pods)} pods to become ready ...")
            told = True
        await asyncio.sleep(READY_POLL)


def pod_table(pods: list[Pod]) -> list[str]:
    rows = [("NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "IP", "NODE")]
    for p in sorted(pods, key=lambda p: p.key):
        ready = sum(1 for c in p.status.container_statuses if c.ready)
        restarts = sum(c.restart_count for c in p.status.container_statuses)
        rows.append(
            (
                p.namespace or "",
                p.name,
                f"{ready}/{len(p.spec.containers)}",
                p.status.phase,
                str(restarts),
                p.status.pod_ip or "<none>",
                p.spec.node_name or "<none>",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  " + "   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def route_hints(cluster: LocalCluster, objects: list[Resource]) -> list[str]:
    """curl lines through the router for the applied routes, and a dig for the DNS."""
    lines: list[str] = []
    router = cluster.component("router")
    config = getattr(router, "config", None)
    if config is not None:
        lines.append("shiftnet get routes -A")
        for r in [o for o in objects if isinstance(o, Route) and o.spec.host][:MAX_CURL_LINES]:
            path = r.spec.path or "/"
            if r.spec.tls is None:
                lines.append(
                    f"curl -H 'Host: {r.spec.host}' http://127.0.0.1:{config.http_port}{path}"
                )
            else:
                port = config.https_port
                lines.append(
                    f"curl -k --resolve {r.spec.host}:{port}:127.0.0.1 "
                    f"https://{r.spec.host}:{port}{path}    # {r.spec.tls.termination}"
                )
    dns = cluster.component("dns")
    address = getattr(dns, "address", None)
    svc = next((o for o in objects if isinstance(o, Service)), None)
    if address is not None and svc is not None:
        host, port = address
        lines.append(f"dig @{host} -p {port} {svc.name}.{svc.namespace}.svc.cluster.local")
    return lines


def hints(pods: list[Pod], state_dir: Path, extra: list[str]) -> list[str]:
    lines = ["", "Try next (in another terminal):"]
    if state_dir != Path(DEFAULT_HOME).expanduser().absolute():
        lines.append(f"  export SHIFTNET_HOME={state_dir}")
    lines += ["  shiftnet get pods -A -o wide", "  shiftnet get svc,endpoints -A"]
    lines += [f"  {line}" for line in extra]
    shown = 0
    for p in sorted(pods, key=lambda p: p.key):
        ports = [port.container_port for c in p.spec.containers for port in c.ports]
        if p.status.pod_ip and ports and shown < MAX_CURL_LINES:
            lines.append(
                f"  curl http://{p.status.pod_ip}:{ports[0]}/hello    # {p.namespace}/{p.name}"
            )
            shown += 1
    if pods:
        first = sorted(pods, key=lambda p: p.key)[0]
        lines.append(f"  shiftnet logs {first.name} -n {first.namespace} -f")
    lines += ["", "Press Ctrl-C to stop; every pod process stops with it."]
    return lines


async def stop_fully(cluster: LocalCluster) -> None:
    """Stop every component even when more Ctrl-C's arrive meanwhile: a second signal
    must not leave pods or HAProxy running behind the user's back."""
    stopping = asyncio.ensure_future(cluster.stop())
    while True:
        try:
            await asyncio.shield(stopping)
            return
        except asyncio.CancelledError:
            if stopping.done():
                return
            say("still stopping: waiting for pods and the router to exit ...")


def run(args: argparse.Namespace) -> int:
    node_name = check_node_name(args.node_name) if args.node_name else default_node_name()
    # Read and validate every manifest before starting anything.
    docs = read_manifests(args.filename, recursive=args.recursive) if args.filename else []
    objects = decode_documents(docs, None) if docs else []
    from shiftnet.proxy.component import healthz_from_env

    healthz_from_env()  # a bad SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS fails before anything starts
    config = ClusterConfig(
        state_dir=Path(args.state_dir),
        store_url=args.store,
        node_name=node_name,
        cluster_network=args.cluster_network,
        host_subnet_length=args.host_subnet_length,
        service_network=args.service_network,
        extra={
            "router": router_settings(args),
            "dns": {"listen": args.dns_listen} if args.dns_listen else {},
            "apiserver": {"listen": args.api_listen} if args.api_listen else {},
            "metrics_host": metrics_host(args.metrics_listen),
            **({"proxy_mode": args.proxy_mode} if args.proxy_mode else {}),
        },
    )

    async def go() -> int:
        cluster = LocalCluster(config, components_for(args), progress=say)
        code = 0
        try:
            await cluster.start()
            client = Client(cluster.require_store())
            pods: list[Pod] = []
            if objects:
                say(f"applying {len(objects)} objects ...")
                await apply_all(client, docs, objects)
                keys = [(o.namespace or "default", o.name) for o in objects if isinstance(o, Pod)]
                pods = await wait_for_pods(client, keys, args.wait)
            say("")
            say(f"shiftnet is up: state in {config.state_dir}")
            if pods:
                for line in pod_table(pods):
                    say(line)
            extra = cluster.hints() + route_hints(cluster, objects)
            for line in hints(pods, config.state_dir, extra):
                say(line)
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            say("")
            say("shutting down ...")
        finally:
            await stop_fully(cluster)
        say("stopped: every component is down and no pod process is left running")
        return code

    return int(run_async(go))
