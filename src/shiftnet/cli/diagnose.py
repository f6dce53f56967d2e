"""``shiftnet diagnose``: walk what must hold for a Route (or a Service) to work.

``diagnose route NAME -n NS``, ``diagnose https://host[:port]/path`` (the
route found the way the router's lookup finds it) and ``diagnose service
NAME -n NS`` print one line per check, ✓ or ✗, what was found and, for a ✗,
the fix; ``--json`` prints the same as one JSON object. The exit status is
0 only when every check passes. The checks live in ``shiftnet.diagnose``.
With an SDN lab up under the state directory (and no router of its own), the
checks are made from the lab's router node (``diagnose/lab_site.py``).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from shiftnet.cli.objects import DEFAULT_NAMESPACE
from shiftnet.cli.runtime import client_from_args, run_async
from shiftnet.diagnose.result import Report
from shiftnet.errors import ConfigError, InvalidInput

KINDS = ("route", "routes", "service", "services", "svc")


def _seconds(text: str) -> float:
    """A non-negative number of seconds; argparse turns the error into one sentence."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return value


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "diagnose",
        help="check, in order, what must hold for a route or service to work",
        description="Check what must hold for a Route to work (the client's host and port, "
        "DNS, the path to HAProxy, admission, the rendered and the running configuration, "
        "the pods, a real request) or a Service (ClusterIP, endpoints, proxy rules, DNS, "
        "a real connection). Exit status 0 only when every check passes.",
    )
    p.add_argument(
        "what",
        metavar="route|service|URL",
        help="`route`, `service`, or a URL such as https://app.example.com:8443/path",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="the route's or service's name")
    p.add_argument("-n", "--namespace", help="namespace (default: default)")
    p.add_argument(
        "--resolve",
        metavar="HOST:PORT:ADDR",
        help="as curl's --resolve: the client reaches HOST at ADDR without asking DNS",
    )
    p.add_argument(
        "--dns",
        metavar="ADDR:PORT",
        help="diagnose service: the cluster DNS to ask (default: the one this state "
        "directory's cluster claimed, or the lab's)",
    )
    p.add_argument(
        "--reload-owed-after",
        metavar="SECONDS",
        type=_seconds,
        default=None,
        help="diagnose route: a reload HAProxy owes for longer than this fails check 6 "
        "(default 60; the router reloads within 30 s of a change served at run time)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


async def _route_report(args: argparse.Namespace) -> Report:
    from shiftnet.api import Route
    from shiftnet.diagnose.gather_route import (
        find_by_url,
        gather_route,
        parse_resolve,
        parse_url,
        route_target,
    )
    from shiftnet.diagnose.route_checks import OWED_RELOAD_LATE, diagnose_route

    async with client_from_args(args) as client:
        if args.what in ("route", "routes"):
            if not args.name:
                raise InvalidInput("diagnose route needs a NAME")
            ns = args.namespace or DEFAULT_NAMESPACE
            route = await client.get(Route, ns, args.name)
            target = route_target(route)
        else:
            if args.name:
                raise InvalidInput("diagnose URL takes no NAME")
            target = parse_url(args.what)
            route = await find_by_url(client, target)
        target = parse_resolve(args.resolve, target)
        facts = await gather_route(client, route, target, Path(args.state_dir))
    owed_after = args.reload_owed_after
    return diagnose_route(facts, OWED_RELOAD_LATE if owed_after is None else owed_after)


async def _service_report(args: argparse.Namespace) -> Report:
    from shiftnet.diagnose.gather_service import gather_service
    from shiftnet.diagnose.service_checks import diagnose_service

    if not args.name:
        raise InvalidInput("diagnose service needs a NAME")
    ns = args.namespace or DEFAULT_NAMESPACE
    async with client_from_args(args) as client:
        facts = await gather_service(client, ns, args.name, Path(args.state_dir), args.dns)
    return diagnose_service(facts)


def _report(args: argparse.Namespace) -> Report | int:
    if args.what in ("service", "services", "svc"):
        return run_async(lambda: _service_report(args))
    if args.what in ("route", "routes") or "://" in args.what:
        return run_async(lambda: _route_report(args))
    raise InvalidInput(
        f"diagnose: {args.what!r} is neither `route`, `service` nor an http(s):// URL"
    )


def _in_lab(args: argparse.Namespace) -> Report | int | None:
    """In the SDN lab up under the state directory: the report made from its router's node
    (its namespace, its home, the lab's store and DNS); None when there is no lab."""
    from shiftnet.diagnose.lab_site import lab_site

    site = lab_site(Path(args.state_dir))
    if site is None:
        return None
    if os.geteuid() != 0:
        raise ConfigError(
            f"lab {site.prefix} runs in network namespaces: run `shiftnet diagnose` as root"
        )
    from shiftnet.sdn.threadns import entered

    args.state_dir, args.store = site.home, site.store
    if args.dns is None and site.dns:
        args.dns = site.dns
    with entered(site.netns):  # the threads the report starts are created in there too
        return _report(args)


def run(args: argparse.Namespace) -> int:
    result = _in_lab(args)
    if result is None:
        result = _report(args)
    if isinstance(result, int):
        return result
    if args.json:
        print(json.dumps(result.as_json(), indent=2, ensure_ascii=False))
    else:
        print("\n".join(result.lines()))
    return 0 if result.ok else 1
