"""The access-log line of diagnose's own request, and who answered it, in words.

Why a marker: many requests may reach the router at once; ``diagnose``
appends a query parameter with a token of its own to its request's path
(HAProxy's lookup ignores the query, so the same route answers), and the
request line in the access log carries it. A TCP connection (a passthrough
route) has no request line: its line is found by the client's address and
port. The server HAProxy names is a slot (``s0``); its address is what
``show servers state`` says that slot holds, and the pod is the endpoint
with that address. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shiftnet.diagnose.route_facts import Member

MARKER_PARAM = "shiftnet-diagnose"
NO_SERVER = "<NOSRV>"  # HAProxy's name when no server took the request
_FIELDS = 10  # stamp, route, backend, server, status, bytes, timings, client, termination, host


@dataclass(frozen=True)
class AccessEntry:
    """The fields of one line of the router's own access log."""

    route: str
    backend: str
    server: str
    status: str
    client: str


def marked_path(path: str, token: str) -> str:
    """``path`` with the marker parameter added to its query."""
    sep = "&" if "?" in path else "?"
    return f"{path or '/'}{sep}{MARKER_PARAM}={token}"


def parse_line(line: str) -> AccessEntry | None:
    """The fixed ``key=value`` fields of one line (None: not a line of the own format)."""
    fields: dict[str, str] = {}
    for word in line.split(" ", _FIELDS)[1:_FIELDS]:
        key, sep, value = word.partition("=")
        if sep:
            fields[key] = value
    if "backend" not in fields or "server" not in fields:
        return None
    return AccessEntry(
        fields.get("route", "-"),
        fields["backend"],
        fields["server"],
        fields.get("status", "-"),
        fields.get("client", ""),
    )


def find_entry(lines: Iterable[str], token: str, client: str) -> AccessEntry | None:
    """The last line that carries ``MARKER_PARAM=token``, else one from ``client`` (addr:port)."""
    needle = f"{MARKER_PARAM}={token}"
    by_client = f" client={client} " if client else None
    found: AccessEntry | None = None
    for line in lines:
        if needle in line or (by_client is not None and by_client in line):
            entry = parse_line(line)
            if entry is not None:
                found = entry
    return found


def served_by(
    entry: AccessEntry, slots: Mapping[tuple[str, str], str], members: Iterable[Member]
) -> str:
    """ "backend B server S (pod `P` at A)": the slot translated through the running HAProxy
    (``slots``: (backend, server) -> "address:port") and the endpoints (``members``)."""
    if entry.server in (NO_SERVER, "-", ""):
        return f"backend {entry.backend}, no server (HAProxy answered itself)"
    text = f"backend {entry.backend} server {entry.server}"
    address = slots.get((entry.backend, entry.server))
    if address is None:
        return text + " (no longer in HAProxy's servers)"
    pods = {f"{m.address}:{m.port}": m.pod for m in members}
    pod = pods.get(address)
    return text + (f" (pod `{pod}` at {address})" if pod else f" ({address}, no pod of the route)")


def not_known(destination: Mapping[str, str] | None) -> str:
    """Why the answering server is not known, from the router's ``run/access-log.json``."""
    if destination is None:
        return "backend and server not known: the router records no access log destination"
    to, where = destination.get("to"), destination.get("where", "")
    if to == "syslog":
        return f"backend and server not known: the access log goes to syslog {where}"
    if to == "off":
        return f"backend and server not known: the access log is off ({where})"
    if destination.get("format", "own") != "own":
        return (
            f"backend and server not known: the access log {where} is in "
            f"{destination.get('format')}'s format"
        )
    return f"backend and server not known: no line for this request in {where}"
