"""Which TCP ports a running HAProxy (its master and workers) listens on.

Why: HAProxy binds with ``SO_REUSEPORT``, so a second HAProxy on the same
port starts without an error and the kernel splits connections between the
two. A router that starts while a killed router's HAProxy (another state
directory, kept for adoption) still serves its ports would silently share
them with it: half the requests would get the old configuration. The router
asks here first and refuses with the pid to stop instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


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


def listening_ports(pids: Iterable[int]) -> set[int]:
    """TCP ports (IPv4 and IPv6) on which any of ``pids`` holds a listening socket,
    read in those processes' own network namespace."""
    ports: set[int] = set()
    for pid in pids:
        inodes = _socket_inodes(pid)
        if not inodes:
            continue
        for table in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if len(fields) > 9 and fields[3] == _LISTEN and int(fields[9]) in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports
