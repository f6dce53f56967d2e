"""``shiftnet logs POD [-n NS] [-c CONTAINER] [-f] [--tail N]``: a pod's output;
``shiftnet logs router[/NAME]``: a router's access log (``router_logs.py``).

Node agents write each container's stdout and stderr to
``$SHIFTNET_HOME/nodes/<node>/logs/<namespace>_<pod>/<container>.log``; this
command finds the pod's node in the store and prints that file (all of it, or
the last ``--tail`` lines), following it with ``-f`` until Ctrl-C or until the
pod is deleted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import deque
from pathlib import Path
from typing import Any, BinaryIO

from shiftnet.api import Pod
from shiftnet.cli.objects import DEFAULT_NAMESPACE
from shiftnet.cli.runtime import client_from_args, run_async
from shiftnet.client import Client
from shiftnet.errors import InvalidInput, NotFound

FOLLOW_POLL = 0.2
POD_CHECK = 2.0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "logs",
        help="print the output of a pod's container, or a router's access log",
        description="Print what a pod's container wrote to stdout and stderr "
        "(kept across restarts of the container). 'shiftnet logs router' (or router/NAME) "
        "prints the access log of the router running from this state directory; with -n "
        "the name is always a pod.",
    )
    p.add_argument("pod", metavar="POD", help="pod name, or router / router/NAME")
    p.add_argument("-n", "--namespace", help="namespace (default: default)")
    p.add_argument("-c", "--container", help="container name (needed when the pod has several)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new output")
    p.add_argument("--tail", type=int, default=-1, metavar="N", help="only the last N lines")
    p.set_defaults(func=run)


def log_path(state_dir: Path, pod: Pod, container: str | None) -> Path:
    """The log file of one container of ``pod``; InvalidInput in one sentence when there is none."""
    from shiftnet.sdn.pods import log_dir

    ns = pod.namespace or DEFAULT_NAMESPACE
    names = [c.name for c in pod.spec.containers]
    if container is None:
        if len(names) != 1:
            raise InvalidInput(
                f'a container name must be specified for pod "{pod.name}", '
                f"choose one of: [{' '.join(names)}]"
            )
        container = names[0]
    elif container not in names:
        raise InvalidInput(
            f'container "{container}" is not valid for pod "{pod.name}": '
            f"choose one of: [{' '.join(names)}]"
        )
    if not pod.spec.node_name:
        raise InvalidInput(f'pod "{pod.name}" is not scheduled to a node yet: no logs')
    path = log_dir(state_dir / "nodes" / pod.spec.node_name, ns, pod.name) / f"{container}.log"
    if not path.exists():
        raise InvalidInput(
            f'container "{container}" in pod "{pod.name}" has not started yet '
            f"(phase {pod.status.phase}): no logs"
        )
    return path


def _tail_lines(f: BinaryIO, count: int) -> bytes:
    if count < 0:
        return f.read()
    return b"".join(deque(f, maxlen=count)) if count else b""


async def _follow(client: Client, pod: Pod, path: Path, f: BinaryIO, out: BinaryIO) -> None:
    pos = f.tell()
    waited = 0.0
    while True:
        chunk = f.read()
        if chunk:
            out.write(chunk)
            out.flush()
            pos = f.tell()
        elif path.exists() and path.stat().st_size < pos:
            f.seek(0)  # truncated: start over
            pos = 0
        await asyncio.sleep(FOLLOW_POLL)
        waited += FOLLOW_POLL
        if waited >= POD_CHECK:
            waited = 0.0
            current = await client.try_get(Pod, pod.namespace, pod.name)
            if current is None or current.metadata.uid != pod.metadata.uid:
                out.write(f'shiftnet: pod "{pod.name}" was deleted\n'.encode())
                out.flush()
                return


def run(args: argparse.Namespace) -> int:
    from shiftnet.cli.router_logs import print_router_log, router_name

    out = sys.stdout.buffer
    router = router_name(args.pod, args.namespace)
    if router is not None:
        state_dir = Path(args.state_dir)
        return int(
            run_async(lambda: print_router_log(state_dir, router, args.tail, args.follow, out))
        )
    ns = args.namespace or DEFAULT_NAMESPACE

    async def go() -> int:
        async with client_from_args(args) as client:
            pod = await client.try_get(Pod, ns, args.pod)
            if pod is None:
                raise NotFound("pods", ns, args.pod)
            path = log_path(Path(args.state_dir), pod, args.container)
            with open(path, "rb") as f:
                out.write(_tail_lines(f, args.tail))
                out.flush()
                if args.follow:
                    await _follow(client, pod, path, f, out)
        return 0

    return int(run_async(go))
