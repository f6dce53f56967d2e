"""The addresses a router's HAProxy listens on, from the router's ``run/listeners.json``.

Why the record: the router writes it at start from the values its writer puts
on the ``bind`` lines of the HTTP and HTTPS frontends
(``router/listeners.py``), so ``diagnose`` neither parses ``haproxy.cfg``
back nor depends on the environment of the shell it runs in. Pure: parses
text given to it.
"""

from __future__ import annotations

import json

from shiftnet.router.haproxy.names import HTTP_FRONTEND, HTTPS_FRONTEND


def listener_addresses(record: str) -> dict[str, tuple[str, int]]:
    """Frontend name -> (address, port), "" for every address; garbled entries are left out."""
    try:
        data = json.loads(record)
    except ValueError:
        return {}
    out: dict[str, tuple[str, int]] = {}
    if not isinstance(data, dict):
        return out
    for name in (HTTP_FRONTEND, HTTPS_FRONTEND):
        entry = data.get(name)
        if not isinstance(entry, dict):
            continue
        address, port = entry.get("address"), entry.get("port")
        if isinstance(address, str) and type(port) is int and 0 < port < 65536:
            out[name] = (address, port)
    return out
