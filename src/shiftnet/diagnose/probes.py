"""The live system's answers: the system resolver, a TCP connection, an HTTP(S) request.

Why here and small: these are the only network calls ``diagnose`` makes of
its own, each bounded by a timeout, each reporting an error as text rather
than raising, because a failed probe is a finding, not a failure of the tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import logging
import os
import socket
import ssl

log = logging.getLogger(__name__)

TIMEOUT = 3.0


async def resolve(host: str) -> tuple[tuple[str, ...], str]:
    """The system resolver's IPv4/IPv6 addresses for ``host`` (as a client sees them)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, None, type=socket.SOCK_STREAM), TIMEOUT
        )
    except (OSError, TimeoutError) as err:
        return (), str(err) or type(err).__name__
    out: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in out:
            out.append(address)
    return tuple(out), ""


async def connect(address: str, port: int) -> str:
    """ "" when a TCP connection to ``address:port`` is accepted, else why not."""
    try:
        async with asyncio.timeout(TIMEOUT):
            _, writer = await asyncio.open_connection(address, port)
    except (OSError, TimeoutError) as err:
        if isinstance(err, OSError) and err.errno:
            return os.strerror(err.errno).lower()
        return (str(err) or type(err).__name__).lower()
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return ""


def _request(scheme: str, address: str, port: int, host: str, path: str) -> int:
    conn = http.client.HTTPConnection(address, port, timeout=TIMEOUT)
    if scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # a diagnosis, not a trust decision
        raw = socket.create_connection((address, port), TIMEOUT)
        try:
            conn.sock = context.wrap_socket(raw, server_hostname=host)  # SNI: the route's host
        except (OSError, ssl.SSLError):
            raw.close()
            raise
    try:
        conn.request("GET", path or "/", headers={"Host": host, "User-Agent": "shiftnet-diagnose"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


async def request(
    scheme: str, address: str, port: int, host: str, path: str
) -> tuple[int | None, str]:
    """GET ``path`` from ``address:port`` with Host (and SNI) ``host``: (status, error)."""
    try:
        status = await asyncio.to_thread(_request, scheme, address, port, host, path)
    except (OSError, http.client.HTTPException, ssl.SSLError) as err:
        return None, str(err) or type(err).__name__
    return status, ""
