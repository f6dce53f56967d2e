"""``shiftnet get KIND[,KIND] [NAME...] [-n NS | -A] [-l SELECTOR] [-o wide|yaml|json|name]``."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from shiftnet.api import Event, Resource, kind_for_name
from shiftnet.api.selectors import parse_selector
from shiftnet.cli.objects import DEFAULT_NAMESPACE
from shiftnet.cli.output import render
from shiftnet.cli.runtime import client_from_args, run_async
from shiftnet.cli.tables import render_table
from shiftnet.errors import InvalidInput
from shiftnet.events.folding import by_last_seen

OUTPUTS = ("wide", "yaml", "json", "name")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "get",
        help="list objects in kubectl/oc-style tables",
        description="Show objects of one kind (kubectl short names work: po, svc, ep, ns).",
    )
    p.add_argument("kind", metavar="KIND", help="resource type, e.g. routes, svc, pods, or svc,ep")
    p.add_argument("names", nargs="*", metavar="NAME", help="only these objects")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", help="namespace (default: default)")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    p.add_argument("-l", "--selector", help="label selector, e.g. app=web,tier!=db")
    p.add_argument("-o", "--output", choices=OUTPUTS, help="output format")
    p.add_argument(
        "--show-managed-fields",
        action="store_true",
        help="with -o yaml|json: keep metadata.managedFields (hidden by default, as kubectl)",
    )
    p.add_argument(
        "-w", "--watch", action="store_true", help="after listing, print changes until Ctrl-C"
    )
    p.add_argument(
        "--output-watch-events", action="store_true", help="with -w: prefix rows with the event"
    )
    p.set_defaults(func=run)


def parse_kinds(text: str) -> list[type[Resource]]:
    kinds = [kind_for_name(k.strip()) for k in text.split(",") if k.strip()]
    if not kinds:
        raise InvalidInput("a resource type is required, e.g. shiftnet get routes")
    return kinds


def run(args: argparse.Namespace) -> int:
    kinds = parse_kinds(args.kind)
    if args.names and len(kinds) > 1:
        raise InvalidInput("names can only be given with a single resource type")
    if args.names and args.all_namespaces and any(k.NAMESPACED for k in kinds):
        raise InvalidInput("a resource cannot be retrieved by name across all namespaces (drop -A)")
    if args.names and args.selector:
        raise InvalidInput("a selector (-l) cannot be combined with names")
    if args.selector is not None:
        parse_selector(args.selector)  # a malformed selector is an error, never "everything"
    namespace = None if args.all_namespaces else (args.namespace or DEFAULT_NAMESPACE)
    if args.watch:
        return _watch(args, kinds, namespace)

    async def go() -> list[tuple[type[Resource], list[Resource]]]:
        out: list[tuple[type[Resource], list[Resource]]] = []
        async with client_from_args(args) as client:
            for cls in kinds:
                ns = namespace if cls.NAMESPACED else None
                if args.names:
                    objs: list[Resource] = [await client.get(cls, ns, n) for n in args.names]
                else:
                    objs = list(await client.list(cls, namespace=ns, selector=args.selector))
                if cls is Event:  # newest last, as kubectl events prints them
                    objs = list(by_last_seen(o for o in objs if isinstance(o, Event)))
                out.append((cls, objs))
        return out

    found = run_async(go)
    if isinstance(found, int):
        return found  # interrupted
    return print_results(found, args, namespace)


def print_results(
    found: list[tuple[type[Resource], list[Resource]]],
    args: argparse.Namespace,
    namespace: str | None,
) -> int:
    fmt = args.output
    everything = [o for _, objs in found for o in objs]
    if fmt in ("yaml", "json", "name"):
        single = bool(args.names) and len(args.names) == 1
        if everything or fmt != "name":
            sys.stdout.write(render(everything, fmt, single, args.show_managed_fields))
        if not everything and fmt == "name":
            _no_resources(namespace)
        return 0
    now = dt.datetime.now(dt.UTC)
    printed = 0
    for cls, objs in found:
        if not objs:
            continue
        if printed:
            sys.stdout.write("\n")
        sys.stdout.write(
            render_table(
                cls,
                objs,
                now,
                wide=fmt == "wide",
                with_namespace=args.all_namespaces and cls.NAMESPACED,
            )
        )
        printed += 1
    if not printed:
        _no_resources(namespace if any(c.NAMESPACED for c, _ in found) else None)
    return 0


def _watch(args: argparse.Namespace, kinds: list[type[Resource]], namespace: str | None) -> int:
    if len(kinds) != 1:
        raise InvalidInput("watch (-w) takes a single resource type")
    if args.output in ("yaml", "json"):
        raise InvalidInput("watch (-w) prints tables or names (-o wide|name)")
    cls = kinds[0]
    from shiftnet.cli.watching import watch_objects

    async def go() -> int:
        async with client_from_args(args) as client:
            return await watch_objects(
                client,
                cls,
                namespace if cls.NAMESPACED else None,
                args.selector,
                set(args.names),
                fmt=args.output,
                with_namespace=args.all_namespaces and cls.NAMESPACED,
                with_events=args.output_watch_events,
            )

    return int(run_async(go))


def _no_resources(namespace: str | None) -> None:
    where = f" in {namespace} namespace" if namespace else ""
    print(f"No resources found{where}.", file=sys.stderr)
