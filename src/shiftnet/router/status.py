"""Writing a route's ``status.ingress[]`` entry for this router, without fighting.

Why compare without timestamps: two replicas of one router compute the same
entry from the same store, but each would stamp its own
``lastTransitionTime``. An entry is written only when something other than
timestamps differs, and a condition that did not change keeps its old time,
so the second replica finds nothing to write and the store is not ping-ponged.
Only this router's entry (by ``routerName``) is touched; other routers' entries
are left as they are.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from shiftnet.api import Route, RouteIngress
from shiftnet.client import Client
from shiftnet.events.recorder import DISCARD, EventSink

log = logging.getLogger(__name__)


def _without_times(entry: RouteIngress) -> dict[str, Any]:
    data = entry.to_dict()
    for cond in data.get("conditions", []):
        cond.pop("lastTransitionTime", None)
    return data


def current_entry(route: Route, router_name: str) -> RouteIngress | None:
    for entry in route.status.ingress:
        if entry.router_name == router_name:
            return entry
    return None


def needs_write(route: Route, desired: RouteIngress) -> bool:
    existing = current_entry(route, desired.router_name)
    return existing is None or _without_times(existing) != _without_times(desired)


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merged(route: Route, desired: RouteIngress, now: str) -> Route | None:
    """``route`` with its entry for ``desired.router_name`` replaced; None when unchanged."""
    if not needs_write(route, desired):
        return None
    existing = current_entry(route, desired.router_name)
    old_conditions = {c.type: c for c in existing.conditions} if existing else {}
    entry = desired.model_copy(deep=True)
    for cond in entry.conditions:
        before = old_conditions.get(cond.type)
        if before is not None and before.status == cond.status and before.last_transition_time:
            cond.last_transition_time = before.last_transition_time
        else:
            cond.last_transition_time = now
    ingress = [e for e in route.status.ingress if e.router_name != desired.router_name]
    position = next(
        (i for i, e in enumerate(route.status.ingress) if e.router_name == desired.router_name),
        len(ingress),
    )
    ingress.insert(position, entry)
    route.status.ingress = ingress
    return route


def without_entry(route: Route, router_name: str) -> Route | None:
    """``route`` with this router's entry removed; None when it had none."""
    if current_entry(route, router_name) is None:
        return None
    route.status.ingress = [e for e in route.status.ingress if e.router_name != router_name]
    return route


async def write_status(
    client: Client, route: Route, desired: RouteIngress, events: EventSink = DISCARD
) -> bool:
    """Write ``desired`` into the stored route when it differs; True when written.
    A route this router does not serve also gets a Warning event saying why."""
    ns, name = route.metadata.namespace, route.metadata.name
    stamp = now_rfc3339()
    written = await client.mutate(Route, ns, name, lambda r: merged(r, desired, stamp))
    if written is not None:
        cond = desired.conditions[0] if desired.conditions else None
        log.info(
            "route status written route=%s/%s router=%s admitted=%s reason=%s",
            ns,
            name,
            desired.router_name,
            cond.status if cond else "",
            (cond.reason or "") if cond else "",
        )
        if cond is not None and cond.status == "False":
            events.warning(written, cond.reason or "NotAdmitted", cond.message or "")
    return written is not None


async def clear_status(client: Client, route: Route, router_name: str) -> bool:
    """Remove this router's entry (the route left this router's shard)."""
    ns, name = route.metadata.namespace, route.metadata.name
    written = await client.mutate(Route, ns, name, lambda r: without_entry(r, router_name))
    return written is not None
