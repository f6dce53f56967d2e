"""Which TCP ports a running HAProxy (its master and workers) listens on.

Why: HAProxy binds with ``SO_REUSEPORT``, so a second HAProxy on the same
port starts without an error and the kernel splits connections between the
two. A router that starts while a killed router's HAProxy (another state
directory, kept for adoption) still serves its ports would silently share
them with it: half the requests would get the old configuration. The router
asks here first and refuses with the pid to stop instead.

The same reading gives each listening socket's address (TCP, and UDP on
request), which is how the tests check that nothing listens beyond loopback.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterable
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
_UDP_UNCONNECTED = "07"  # TCP_CLOSE in /proc/net/udp: bound, no peer


def process_tree(master: int) -> set[int]:
    """The master and its children (the workers)."""
    found = {master}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[-1].split()
            if len(fields) > 1 and fields[1] == str(master):
                found.add(int(entry.name))
    return found


def _socket_inodes(pid: int) -> set[int]:
    inodes: set[int] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def _address(hex_addr: str) -> tuple[str, int]:
    """``0100007F:1F90`` (or its IPv6 form) from /proc/net -> ``("127.0.0.1", 8080)``."""
    ip_hex, port_hex = hex_addr.rsplit(":", 1)
    raw = bytes.fromhex(ip_hex)
    # The kernel prints each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words)), int(port_hex, 16)


# Per table, the state of a socket that accepts from anyone: a TCP listener, and an
# unconnected UDP socket (TCP_CLOSE; a connected one hears only its peer).
_OPEN_STATES = {"tcp": _LISTEN, "tcp6": _LISTEN, "udp": _UDP_UNCONNECTED, "udp6": _UDP_UNCONNECTED}


def listening_sockets(
    pids: Iterable[int], tables: Iterable[str] = ("tcp", "tcp6")
) -> set[tuple[str, str, int]]:
    """``(protocol, address, port)`` of every listening socket any of ``pids`` holds, read
    in those processes' own network namespace. ``tables`` may add ``udp`` and ``udp6``:
    unconnected UDP sockets, which receive from anyone, count as listening."""
    found: set[tuple[str, str, int]] = set()
    tables = tuple(tables)
    for pid in pids:
        inodes = _socket_inodes(pid)
        if not inodes:
            continue
        for table in tables:
            try:
                lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if (
                    len(fields) > 9
                    and fields[3] == _OPEN_STATES[table]
                    and int(fields[9]) in inodes
                ):
                    found.add((table.rstrip("6"), *_address(fields[1])))
    return found


def listening_ports(pids: Iterable[int]) -> set[int]:
    """TCP ports (IPv4 and IPv6) on which any of ``pids`` holds a listening socket,
    read in those processes' own network namespace."""
    return {port for _, _, port in listening_sockets(pids)}
