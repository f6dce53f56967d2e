"""Which backend and server answered diagnose's request, from the router's own access log.

Why wait: HAProxy sends a request's log message when the response is done
and the router writes it a moment later, so the line is looked for for up
to ``WAIT`` seconds. Where the log goes comes from the router's
``run/access-log.json``; the server slot is translated through HAProxy's
runtime API (``show servers state``), never by reading the rendered
configuration.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

from shiftnet.diagnose.access_entry import AccessEntry, find_entry, not_known, served_by
from shiftnet.diagnose.route_facts import Member
from shiftnet.router.accesslog import DESTINATION_RECORD, ROTATED_SUFFIX, log_path
from shiftnet.router.haproxy.names import ADMIN_SOCKET
from shiftnet.router.haproxy.process import socket_dir
from shiftnet.router.haproxy.runtime import RuntimeAPI, RuntimeAPIError

log = logging.getLogger(__name__)

WAIT = 3.0  # seconds for the request's line to reach the file
POLL = 0.05
TAIL_BYTES = 256 * 1024  # the request is among the last lines written


def destination(work: Path) -> dict[str, str] | None:
    """The router's record of where its access log goes (None: no record)."""
    try:
        data = json.loads((work / "run" / DESTINATION_RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {str(k): str(v) for k, v in data.items()}


def _tail(path: Path) -> list[str]:
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - TAIL_BYTES))
            data = fh.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()


async def _entry(work: Path, token: str, client: str) -> AccessEntry | None:
    path = log_path(work)
    rotated = path.with_name(path.name + ROTATED_SUFFIX)
    deadline = time.monotonic() + WAIT
    while True:
        entry = find_entry(_tail(path), token, client)
        if entry is not None:
            return entry
        if time.monotonic() > deadline:
            return find_entry(_tail(rotated), token, client)  # rotated meanwhile
        await asyncio.sleep(POLL)


async def answered_by(work: Path, token: str, client: str, members: list[Member]) -> str:
    """ "backend … server … (pod …)" for the request marked ``token`` (or from ``client``),
    or why that is not known."""
    record = destination(work)
    if record is None or record.get("to") != "file" or record.get("format", "own") != "own":
        return not_known(record)
    entry = await _entry(work, token, client)
    if entry is None:
        return not_known(record)
    slots: dict[tuple[str, str], str] = {}
    try:
        states = await RuntimeAPI(socket_dir(work) / ADMIN_SOCKET, timeout=3.0).show_servers_state()
        slots = {(s.backend, s.server): f"{s.address}:{s.port}" for s in states}
    except RuntimeAPIError as err:
        log.debug("router work=%s runtime api error=%s", work, err)
    return served_by(entry, slots, members)
