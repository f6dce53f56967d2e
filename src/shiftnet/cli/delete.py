"""``shiftnet delete KIND NAME... [-n NS]`` or ``shiftnet delete -f FILE``.

As kubectl: every manifest is read and checked first (a malformed file deletes
nothing); then each object is deleted in turn, and objects that are already
gone are reported and make the exit status 1 unless ``--ignore-not-found``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from shiftnet.api import Resource
from shiftnet.cli.get import parse_kinds
from shiftnet.cli.manifests import read_manifests
from shiftnet.cli.naming import quoted_ref
from shiftnet.cli.objects import DEFAULT_NAMESPACE, decode_documents
from shiftnet.cli.runtime import client_from_args, run_async
from shiftnet.errors import InvalidInput, NotFound


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "delete",
        help="delete objects by type and name, by selector, or from manifests",
        description="Delete objects: shiftnet delete KIND NAME... | -l SELECTOR | -f FILE",
    )
    p.add_argument("kind", nargs="?", metavar="KIND", help="resource type, e.g. route, svc")
    p.add_argument("names", nargs="*", metavar="NAME", help="objects to delete")
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        metavar="FILE",
        help="delete the objects these manifests describe (repeatable; - for stdin)",
    )
    p.add_argument("-R", "--recursive", action="store_true", help="descend into sub-directories")
    p.add_argument("-n", "--namespace", help="namespace (default: default)")
    p.add_argument("-l", "--selector", help="delete every object of KIND matching this selector")
    p.add_argument(
        "--ignore-not-found", action="store_true", help="objects that do not exist are not an error"
    )
    p.set_defaults(func=run)


def _targets(args: argparse.Namespace) -> list[tuple[type[Resource], str | None, str]] | None:
    """(kind, namespace, name) from -f or KIND NAME...; None means 'by selector'."""
    if args.filename:
        if args.kind or args.names or args.selector:
            raise InvalidInput("give either -f FILE or KIND NAME..., not both")
        docs = read_manifests(args.filename, recursive=args.recursive)
        # Deleting needs only kind, namespace and name: field rules are not checked.
        objs = decode_documents(docs, args.namespace, validate=False)
        return [(type(o), o.namespace, o.name) for o in objs]
    if not args.kind:
        raise InvalidInput(
            "a resource type and name are required: shiftnet delete KIND NAME, or -f FILE"
        )
    kinds = parse_kinds(args.kind)
    if len(kinds) != 1:
        raise InvalidInput("delete takes a single resource type")
    cls = kinds[0]
    if args.names and args.selector:
        raise InvalidInput("a selector (-l) cannot be combined with names")
    if not args.names and args.selector is None:
        raise InvalidInput(f"a name is required: shiftnet delete {args.kind} NAME (or -l SELECTOR)")
    ns = (args.namespace or DEFAULT_NAMESPACE) if cls.NAMESPACED else None
    if args.selector is not None:
        return None
    return [(cls, ns, n) for n in args.names]


def run(args: argparse.Namespace) -> int:
    targets = _targets(args)

    async def go() -> int:
        status = 0
        async with client_from_args(args) as client:
            todo = targets
            if todo is None:
                cls = parse_kinds(args.kind)[0]
                ns = (args.namespace or DEFAULT_NAMESPACE) if cls.NAMESPACED else None
                found = await client.list(cls, namespace=ns, selector=args.selector)
                todo = [(cls, o.namespace, o.name) for o in found]
                if not todo:
                    print("No resources found", file=sys.stderr)
            for cls, ns, name in todo:
                try:
                    await client.delete(cls, ns, name)
                except NotFound as err:
                    if not args.ignore_not_found:
                        print(f"error: {err}", file=sys.stderr)
                        status = 1
                    continue
                print(f"{quoted_ref(cls, name)} deleted", flush=True)
        return status

    return int(run_async(go))
