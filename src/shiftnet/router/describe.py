"""``shiftnet describe route`` extension: the servers behind a route and their health.

Why read HAProxy directly: health is what HAProxy's checks see right now, not
anything stored in the cluster. Each router writes ``run/backends.json``
(route -> its HAProxy backends) in its work directory; this module reads it
and asks that router's admin socket for ``show stat``. A router that is not
running, or that runs elsewhere, simply adds a line saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

from shiftnet.api import Route
from shiftnet.router.haproxy.names import ALIASES_INDEX
from shiftnet.router.haproxy.process import socket_dir
from shiftnet.router.haproxy.runtime import RuntimeAPI, RuntimeAPIError, StatRow

BACKENDS_INDEX = "backends.json"


def _router_names(route: Route) -> list[str]:
    names = sorted({e.router_name for e in route.status.ingress})
    return names or ["router"]


def _server_line(row: StatRow) -> str:
    check = f"  check {row.check_status}" if row.check_status else ""
    return (
        f"    {row.name:<28} {row.address:<22} {row.status:<6} weight {row.weight}{check}"
        f"  requests {row.requests_total}"
    )


async def describe_route(route: Route, state_dir: Path | None) -> list[str]:
    """Lines for each router that reported on ``route``: backends, servers, health."""
    if state_dir is None:
        return []
    key = f"{route.metadata.namespace}/{route.metadata.name}"
    lines: list[str] = []
    for name in _router_names(route):
        work = Path(state_dir) / f"router-{name}"
        try:
            index = json.loads((work / "run" / BACKENDS_INDEX).read_text())
        except (OSError, ValueError):
            continue  # that router does not run from this state directory
        try:
            aliases = json.loads((work / "run" / ALIASES_INDEX).read_text())
        except (OSError, ValueError):
            aliases = {}
        backends = [aliases.get(b, b) for b in index.get(key, [])]
        if not backends:
            lines.append(f"Servers (router {name}): none (the route is not served)")
            continue
        try:
            admin = socket_dir(work) / "admin.sock"
            rows = await RuntimeAPI(admin, timeout=2.0).show_stat()
        except RuntimeAPIError:
            lines.append(f"Servers (router {name}): HAProxy is not reachable")
            continue
        lines.append(f"Servers (router {name}):")
        for backend in backends:
            servers = [r for r in rows if r.proxy == backend and r.is_server]
            live = [r for r in servers if r.status != "MAINT"]
            spare = len(servers) - len(live)
            summary = next((r for r in rows if r.proxy == backend and r.is_backend), None)
            head = f"  {backend}"
            if summary is not None:
                head += f"  {summary.status}  requests {summary.requests_total}"
                head += f"  errors {summary.errors}"
            lines.append(head)
            lines.extend(_server_line(r) for r in live)
            if not live:
                lines.append("    no servers (answers 503)")
            if spare:
                lines.append(f"    ({spare} spare or disabled slots)")
    return lines
