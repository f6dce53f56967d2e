"""``shiftnet describe KIND NAME...``: one object in detail, with what it points at.

Extension hook for components: a module listed in :data:`ROUTE_EXTENSIONS`
may define ``describe_route(route, state_dir) -> list[str]`` (plain or
``async``); its lines are appended after the backends of ``describe route``.
The router uses it to show the servers behind the route and their health
(see ``docs/cli.md`` and ``docs/router.md``). A module that is not installed
is skipped; an extension that fails adds one line saying so and never breaks
``describe``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import inspect
import logging
import sys
from pathlib import Path
from typing import Any

from shiftnet.api import (
    ClusterNetwork,
    Endpoints,
    Event,
    HostSubnet,
    Ingress,
    Namespace,
    Node,
    Pod,
    Resource,
    Route,
    Secret,
    Service,
)
from shiftnet.cli import describers as d
from shiftnet.cli.event_lines import event_lines
from shiftnet.cli.get import parse_kinds
from shiftnet.cli.objects import DEFAULT_NAMESPACE
from shiftnet.cli.runtime import client_from_args, run_async
from shiftnet.client import Client
from shiftnet.errors import InvalidInput, ShiftnetError
from shiftnet.events.folding import about
from shiftnet.master.ingress_model import owner_ingress

log = logging.getLogger(__name__)

# Modules that add lines to `describe route` (each defines describe_route(route, state_dir)).
ROUTE_EXTENSIONS: tuple[str, ...] = ("shiftnet.router.describe",)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "describe",
        help="show one object in detail",
        description="Show objects in detail; a Route shows its backends, weights and "
        "endpoints and what each router decided about it.",
    )
    p.add_argument("kind", metavar="KIND", help="resource type, e.g. route, svc, pod")
    p.add_argument("names", nargs="*", metavar="NAME", help="objects to describe (default: all)")
    p.add_argument("-n", "--namespace", help="namespace (default: default)")
    p.add_argument("-l", "--selector", help="label selector when no NAME is given")
    p.set_defaults(func=run)


async def describe_object(
    client: Client, obj: Resource, now: dt.datetime, state_dir: Path | None = None
) -> list[str]:
    """The describe text of one object, fetching the objects it refers to."""
    ns = obj.namespace
    if isinstance(obj, Route):
        names = sorted({b.name for b in obj.backends()})
        eps = {n: await client.try_get(Endpoints, ns, n) for n in names}
        return d.describe_route(obj, eps, now) + await route_extension_lines(obj, state_dir)
    if isinstance(obj, Service):
        return d.describe_service(obj, await client.try_get(Endpoints, ns, obj.name), now)
    if isinstance(obj, Endpoints):
        return d.describe_endpoints(obj, now)
    if isinstance(obj, Pod):
        return d.describe_pod(obj, now)
    if isinstance(obj, Node):
        return d.describe_node(obj, now)
    if isinstance(obj, Namespace):
        return d.describe_namespace(obj, now)
    if isinstance(obj, HostSubnet):
        return d.describe_hostsubnet(obj, now)
    if isinstance(obj, Secret):
        return d.describe_secret(obj, now)
    if isinstance(obj, Ingress):
        routes = [r for r in await client.list(Route, ns) if owner_ingress(r) == obj.name]
        return d.describe_ingress(obj, routes, now)
    if isinstance(obj, ClusterNetwork):
        return d.describe_clusternetwork(obj, now)
    return d.describe_generic(obj, now)


async def route_extension_lines(route: Route, state_dir: Path | None) -> list[str]:
    lines: list[str] = []
    for module_name in ROUTE_EXTENSIONS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name == module_name:
                continue  # that component is not part of this installation
            raise
        fn = getattr(module, "describe_route", None)
        if fn is None:
            continue
        try:
            result = fn(route, state_dir)
            if inspect.isawaitable(result):
                result = await result
            extra = [str(x) for x in result or ()]
        except (ShiftnetError, OSError, ValueError) as err:
            log.debug("extension=%s error=%r", module_name, err)
            extra = [f"({module_name}: {err})"]
        if extra:
            lines.append("")
            lines.extend(extra)
    return lines


def run(args: argparse.Namespace) -> int:
    kinds = parse_kinds(args.kind)
    if len(kinds) != 1:
        raise InvalidInput("describe takes a single resource type")
    cls = kinds[0]
    ns = (args.namespace or DEFAULT_NAMESPACE) if cls.NAMESPACED else None

    async def go() -> list[list[str]]:
        out: list[list[str]] = []
        now = dt.datetime.now(dt.UTC)
        async with client_from_args(args) as client:
            if args.names:
                objs: list[Resource] = [await client.get(cls, ns, n) for n in args.names]
            else:
                objs = list(await client.list(cls, namespace=ns, selector=args.selector))
            # a cluster-wide object's events are in "default", as upstream puts them
            events = await client.list(Event, ns or DEFAULT_NAMESPACE) if objs else []
            for obj in objs:
                lines = await describe_object(client, obj, now, args.state_dir)
                out.append([*lines, *event_lines(about(events, obj), now)])
        return out

    texts = run_async(go)
    if isinstance(texts, int):
        return texts
    if not texts:
        where = f" in {ns} namespace" if ns else ""
        print(f"No resources found{where}.", file=sys.stderr)
        return 0
    print("\n\n".join("\n".join(t) for t in texts))
    return 0
