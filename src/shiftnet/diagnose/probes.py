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


def _answered(address: str, port: int) -> str:
    """ "" when ``address:port`` answers a GET with anything (an HTTP response, or bytes
    that are not one), else what happened."""
    try:
        _request("http", address, port, address, "/")
    except http.client.RemoteDisconnected as err:  # closed without a byte
        return str(err) or type(err).__name__
    except http.client.BadStatusLine:  # it answered, in another protocol
        return ""
    except (OSError, http.client.HTTPException, ssl.SSLError) as err:
        return str(err) or type(err).__name__
    return ""


async def exchange(address: str, port: int) -> str:
    """ "" when ``address:port`` answers a request (HTTP or not), else what happened."""
    return await asyncio.to_thread(_answered, address, port)


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


def tcp_listeners(pid: int | None = None) -> set[tuple[str, int]]:
    """Every listening TCP socket of this network namespace (of process ``pid``'s, when
    given), as the kernel reports it."""
    base = Path(f"/proc/{pid}/net") if pid is not None else Path("/proc/net")
    return _listening(base / "tcp") | _listening(base / "tcp6")


CLONE_NEWNET = 0x40000000


def _in_netns(netns_path: str, address: str, port: int) -> str:
    """:func:`exchange` from a thread moved into ``netns_path`` (network namespaces are
    per thread; the thread ends with the call, so nothing else runs there)."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    try:
        fd = os.open(netns_path, os.O_RDONLY)
    except OSError as err:
        return f"cannot open network namespace {netns_path}: {os.strerror(err.errno or 0).lower()}"
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            reason = os.strerror(ctypes.get_errno()).lower()
            return f"cannot enter network namespace {netns_path}: {reason}"
    finally:
        os.close(fd)
    return _answered(address, port)


async def exchange_in(netns_path: str | None, address: str, port: int) -> str:
    """:func:`exchange`, made from inside the network namespace at ``netns_path`` if given."""
    if netns_path is None:
        return await exchange(address, port)
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="netns")
    try:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, _in_netns, netns_path, address, port)
    finally:
        pool.shutdown(wait=False)


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
