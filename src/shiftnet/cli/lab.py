"""``shiftnet lab``: a whole SDN cluster on this machine (root): up, down, status, trace.

The lab keeps its own store and files under ``<state dir>/lab/<prefix>/``; the
commands it prints point ``--store`` at that store (this machine plays the
master's console), and ``kubectl`` at the lab's API server from inside the lab.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Any

DEFAULT_PREFIX = "sn-lab"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "lab",
        help="a cluster of SDN nodes in network namespaces on this machine (root)",
        description="Build (up), inspect (status, trace) and remove (down) a lab cluster: "
        "every node is a network namespace on a shared underlay bridge running its own "
        "node agent in sdn mode, service proxy (nftables) and, on the first node, the "
        "router and the cluster DNS; each reaches the API server in the master's "
        "namespace over the underlay with a token of its own.",
    )
    sub = p.add_subparsers(dest="lab_command", metavar="up|down|status|trace")
    sub.required = True

    up = sub.add_parser("up", help="build the lab and wait until every node is Ready")
    up.add_argument("--nodes", type=int, default=2, help="number of nodes (default 2)")
    _prefix(up)
    up.add_argument(
        "--http-port", type=int, default=80, help="router HTTP port in the first node (80)"
    )
    up.add_argument(
        "--https-port", type=int, default=443, help="router HTTPS port in the first node (443)"
    )
    up.add_argument("--no-router", action="store_true", help="do not start the router")
    up.set_defaults(func=run_up)

    down = sub.add_parser("down", help="stop every lab process and delete its namespaces")
    _prefix(down)
    down.set_defaults(func=run_down)

    status = sub.add_parser("status", help="the lab's nodes, processes and namespaces")
    _prefix(status)
    status.set_defaults(func=run_status)

    tr = sub.add_parser(
        "trace",
        help="the path a packet takes from POD_A to POD_B, read from the real devices",
    )
    tr.add_argument("pod_a", metavar="POD_A")
    tr.add_argument("pod_b", metavar="POD_B", help="a pod, or an IPv4 address outside the cluster")
    tr.add_argument("-n", "--namespace", default="default", help="the pods' namespace")
    tr.add_argument("-d", "--details", action="store_true", help="also show how each hop was found")
    _prefix(tr)
    tr.set_defaults(func=run_trace)


def _prefix(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prefix",
        default=os.environ.get("SHIFTNET_LAB_PREFIX", DEFAULT_PREFIX),
        help="namespace name prefix, must start with sn- (env SHIFTNET_LAB_PREFIX; "
        f"default {DEFAULT_PREFIX})",
    )


def _lab(args: argparse.Namespace) -> Any:
    from shiftnet.errors import ConfigError

    if os.geteuid() != 0:
        raise ConfigError("shiftnet lab needs root: it creates network namespaces")
    from shiftnet.sdn.lab import Lab

    return Lab(Path(args.state_dir), args.prefix)


def run_up(args: argparse.Namespace) -> int:
    from shiftnet.errors import InvalidInput

    if not 1 <= args.nodes <= 200:
        raise InvalidInput(f"--nodes {args.nodes} is out of range 1..200")
    lab = _lab(args)
    state = lab.up(
        args.nodes,
        router=not args.no_router,
        http_port=args.http_port,
        https_port=args.https_port,
    )
    first = state.nodes[0]
    store = f"--store {state.store}"
    admin = lab.api_config.kubeconfig_path
    print(f"lab {state.prefix} is up: {len(state.nodes)} nodes, store {state.store}")
    homes = lab.dir / "machines"
    print(f"API server {state.api} in {state.master_netns}; kubeconfigs {homes}/<node>/kubeconfig")
    print("try:")
    print(f"  shiftnet {store} get nodes,hostsubnets")
    print(f"  ip netns exec {state.master_netns} kubectl --kubeconfig {admin} get nodes")
    print(f"  shiftnet {store} apply -f pods.yaml      # pods land on the nodes round-robin")
    print(f"  shiftnet lab trace POD_A POD_B --prefix {state.prefix}")
    print(
        f"  ip netns exec {first['netns']} curl -H 'Host: <route host>' http://{first['hostIP']}/"
    )
    print(f"  shiftnet lab down --prefix {state.prefix}")
    return 0


def run_down(args: argparse.Namespace) -> int:
    lab = _lab(args)
    lab.down(progress=True)
    return 0


def run_status(args: argparse.Namespace) -> int:
    lab = _lab(args)
    state = lab.loaded()
    print(f"lab {state.prefix}: store {state.store}, API {state.api}, dns {state.dns}")
    for n in state.nodes:
        print(f"  node {n['name']:<16} netns {n['netns']:<22} host IP {n['hostIP']}")
    for p in state.processes:
        alive = _alive(p.pid)
        where = p.netns or "host"
        print(f"  {p.role:<22} pid {p.pid:<8} {'running' if alive else 'EXITED':<8} in {where}")
    names = lab.underlay.namespaces()
    pods = [n for n in names if n.startswith("sn-pod-")]
    print(f"  {len(names)} network namespaces ({len(pods)} pod namespaces)")
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ")[-1][:1] != "Z"
    return True


def _is_address(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def run_trace(args: argparse.Namespace) -> int:
    import asyncio

    lab = _lab(args)
    state = lab.loaded()
    netns_of = {n["name"]: n["netns"] for n in state.nodes}

    async def places() -> list[Any]:
        from shiftnet.api import Pod
        from shiftnet.client import Client
        from shiftnet.errors import InvalidInput
        from shiftnet.sdn.topology import pod_netns
        from shiftnet.sdn.trace import PodPlace
        from shiftnet.store import open_store

        store = open_store(state.store)
        try:
            client = Client(store)
            out = []
            names = [args.pod_a] if _is_address(args.pod_b) else [args.pod_a, args.pod_b]
            for name in names:
                pod = await client.get(Pod, args.namespace, name)
                node = pod.spec.node_name or ""
                if not pod.status.pod_ip or node not in netns_of:
                    raise InvalidInput(
                        f"pod {args.namespace}/{name} has no IP on a lab node yet "
                        f"(node {node or 'none'}, phase {pod.status.phase})"
                    )
                out.append(
                    PodPlace(
                        label=f"{args.namespace}/{name}",
                        ip=pod.status.pod_ip,
                        pod_netns=pod_netns(node, args.namespace, name),
                        node=node,
                        node_netns=netns_of[node],
                    )
                )
            return out
        finally:
            await store.close()

    from shiftnet.sdn.trace import trace, trace_out

    found = asyncio.run(places())
    src = found[0]
    if len(found) == 1:  # POD_B is an address outside the cluster
        t = trace_out(src, args.pod_b)
        print(f"{src.label} ({src.ip} on {src.node}) → {args.pod_b}")
    else:
        dst = found[1]
        t = trace(src, dst)
        print(f"{src.label} ({src.ip} on {src.node}) → {dst.label} ({dst.ip} on {dst.node})")
    print(t.path())
    if args.details:
        for note in t.notes:
            print(f"  {note}")
    return 0
