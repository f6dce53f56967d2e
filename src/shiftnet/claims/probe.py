"""What the kernel says is in use right now: bound loopback addresses and busy ports.

The registry knows only shiftnet clusters of this user; anything else (another
user's cluster, a test server, an unrelated daemon) shows up here. Addresses
come from ``/proc/net/{tcp,udp}{,6}`` (every socket of this network
namespace, whoever owns it); a port is tried by binding it, the way the
router and DNS will, and its holder is found through the socket's inode.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
from pathlib import Path

log = logging.getLogger(__name__)

PROC_NET = Path("/proc/net")
TCP_LISTEN = "0A"


def _address(hex_addr: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address of a ``/proc/net`` local-address field (IPv4, or v4-mapped IPv6)."""
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw[::-1])
    if len(raw) == 16:
        words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
        return ipaddress.IPv6Address(words).ipv4_mapped
    return None


def _sockets(proc_net: Path = PROC_NET) -> list[tuple[str, ipaddress.IPv4Address, int, str, str]]:
    """(file, address, port, state, inode) of every IPv4 socket, v4-mapped included."""
    out = []
    for name in ("tcp", "udp", "tcp6", "udp6"):
        try:
            lines = (proc_net / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) < 10:
                continue
            hex_addr, _, hex_port = cols[1].partition(":")
            try:
                addr = _address(hex_addr)
            except ValueError:
                continue
            if addr is not None:
                out.append((name, addr, int(hex_port, 16), cols[3], cols[9]))
    return out


def bound_loopback_addresses(proc_net: Path = PROC_NET) -> set[ipaddress.IPv4Address]:
    """Loopback addresses other than 127.0.0.1 that a process's socket is bound to.

    Sockets no process holds any more (inode 0: TIME_WAIT and other closing
    remnants of a stopped cluster's pods) do not count: they keep no one from
    binding the address and vanish within a minute.
    """
    return {
        addr
        for _, addr, _, _, inode in _sockets(proc_net)
        if inode != "0" and addr.is_loopback and addr != ipaddress.IPv4Address("127.0.0.1")
    }


def bindable(host: str, port: int, *, udp: bool = False) -> bool:
    """Whether ``host:port`` can be bound now, as a server would bind it.

    TCP sets SO_REUSEADDR like HAProxy and asyncio do (connections in
    TIME_WAIT do not make a port busy); UDP does not (a second UDP socket with
    it could share the port).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    kind = socket.SOCK_DGRAM if udp else socket.SOCK_STREAM
    with socket.socket(family, kind) as s:
        if not udp:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _holder_pids(inodes: set[str]) -> list[int]:
    """Processes with one of these socket inodes open (those this user may inspect)."""
    wanted = {f"socket:[{i}]" for i in inodes if i != "0"}
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in wanted:
                        pids.append(int(proc.name))
                        break
    return sorted(pids)


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def port_holders(port: int, *, udp: bool = False) -> list[tuple[int, str]]:
    """(pid, command line) of the processes listening on ``port`` (any address)."""
    inodes = {
        inode
        for name, _, p, state, inode in _sockets()
        if p == port and name.startswith("udp" if udp else "tcp") and (udp or state == TCP_LISTEN)
    }
    return [(pid, _cmdline(pid)) for pid in _holder_pids(inodes)] if inodes else []


def describe_holder(holders: list[tuple[int, str]], limit: int = 80) -> str:
    """'pid 42 (haproxy -f ...)' for a message; 'another process' when none is visible."""
    if not holders:
        return "another process"
    pid, cmd = holders[0]
    if len(cmd) > limit:
        cmd = cmd[: limit - 3] + "..."
    return f"pid {pid} ({cmd})" if cmd else f"pid {pid}"
