"""The live system's answers: the system resolver, a TCP connection, an HTTP(S) request.

Why here and small: these are the only network calls ``diagnose`` makes of
its own, each bounded by a timeout, each reporting an error as text rather
than raising, because a failed probe is a finding, not a failure of the tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import ipaddress
import logging
import os
import socket
import ssl
from pathlib import Path

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


def _request(scheme: str, address: str, port: int, host: str, path: str) -> tuple[int, str]:
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
        if conn.sock is None:
            conn.connect()
        local = conn.sock.getsockname() if conn.sock is not None else ("", 0)
        conn.request("GET", path or "/", headers={"Host": host, "User-Agent": "shiftnet-diagnose"})
        response = conn.getresponse()
        response.read()
        return response.status, f"{local[0]}:{local[1]}"
    finally:
        conn.close()


async def request(
    scheme: str, address: str, port: int, host: str, path: str
) -> tuple[int | None, str, str]:
    """GET ``path`` from ``address:port`` with Host (and SNI) ``host``:
    (status, error, the client's own "address:port")."""
    try:
        status, local = await asyncio.to_thread(_request, scheme, address, port, host, path)
    except (OSError, http.client.HTTPException, ssl.SSLError) as err:
        return None, str(err) or type(err).__name__, ""
    return status, "", local


async def exchange(address: str, port: int) -> str:
    """ "" when ``address:port`` answers a request (HTTP or not), else what happened."""
    status, error, _ = await request("http", address, port, address, "/")
    if status is not None:
        return ""
    return error


def _listening(path: Path) -> set[tuple[str, int]]:
    """(address, port) of TCP sockets in LISTEN state from ``/proc/net/tcp`` or ``tcp6``."""
    out: set[tuple[str, int]] = set()
    try:
        lines = path.read_text().splitlines()[1:]
    except OSError:
        return out
    for line in lines:
        fields = line.split()
        if len(fields) < 4 or fields[3] != "0A":
            continue
        hex_addr, hex_port = fields[1].split(":")
        raw = bytes.fromhex(hex_addr)
        # The kernel prints each 32-bit word in host (little-endian) order.
        words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
        out.add((str(ipaddress.ip_address(words)), int(hex_port, 16)))
    return out


def tcp_listeners() -> set[tuple[str, int]]:
    """Every listening TCP socket of this network namespace, as the kernel reports it."""
    return _listening(Path("/proc/net/tcp")) | _listening(Path("/proc/net/tcp6"))


async def ruleset_text(*command: str) -> str:
    """The output of a read-only listing command (``nft list ruleset``), "" when it fails."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), TIMEOUT * 3)
    except (OSError, TimeoutError):
        return ""
    return out.decode(errors="replace") if proc.returncode == 0 else ""


async def query_a(server: str, port: int, name: str) -> tuple[tuple[str, ...], str]:
    """Ask one DNS server for ``name``'s A and AAAA records: (addresses, error)."""
    import dns.asyncquery
    import dns.exception
    import dns.message
    import dns.rcode

    found: list[str] = []
    for rdtype in ("A", "AAAA"):
        query = dns.message.make_query(name, rdtype)
        try:
            answer = await dns.asyncquery.udp(query, server, port=port, timeout=TIMEOUT)
        except (dns.exception.DNSException, OSError) as err:
            return (), str(err) or type(err).__name__
        if answer.rcode() != dns.rcode.NOERROR:
            return (), dns.rcode.to_text(answer.rcode())
        for rrset in answer.answer:
            found.extend(str(r) for r in rrset if hasattr(r, "address"))
    return tuple(found), ""
