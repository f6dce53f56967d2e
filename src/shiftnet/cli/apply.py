"""``shiftnet apply -f FILE|DIR|-``: validate every document, then create or update each."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from shiftnet.cli.applying import apply_documents
from shiftnet.cli.manifests import read_manifests
from shiftnet.cli.naming import object_ref
from shiftnet.cli.objects import decode_documents
from shiftnet.cli.runtime import client_from_args, run_async


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "apply",
        help="create or update objects from YAML/JSON manifests",
        description="Create or update objects from manifests. Every document is checked "
        "first; if any is invalid nothing is written.",
    )
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE",
        help="a manifest file, a directory of *.yaml/*.yml/*.json, or - for stdin (repeatable)",
    )
    p.add_argument("-R", "--recursive", action="store_true", help="descend into sub-directories")
    p.add_argument(
        "-n", "--namespace", help="namespace for objects that name none (default: default)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from shiftnet.api.validation import warnings

    docs = read_manifests(args.filename, recursive=args.recursive)
    objects = decode_documents(docs, args.namespace, may_exist=True)

    async def go() -> int:
        async with client_from_args(args) as client:
            async for _doc, result in apply_documents(client, docs, objects):
                for text in warnings(result.obj):  # as kubectl prints the server's
                    print(f"Warning: {text}", file=sys.stderr, flush=True)
                print(
                    f"{object_ref(type(result.obj), result.obj.name)} {result.action}", flush=True
                )
        return 0

    return int(run_async(go))
