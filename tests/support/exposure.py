"""What a process tree listens on beyond loopback, read from /proc without probing.

Why: "nothing listens outside your machine" is a promise about every socket of
``shiftnet up`` (its own, its HAProxy's, its pods'), and one listener bound to
every address breaks it silently: the cluster works the same from loopback.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from shiftnet.router.haproxy.held_ports import listening_sockets, process_tree

ALL_TABLES = ("tcp", "tcp6", "udp", "udp6")


def descendants(root: int) -> set[int]:
    """``root`` and every process below it (children of children too)."""
    found: set[int] = set()
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo.extend(process_tree(pid) - {pid})
    return found


def is_loopback(address: str) -> bool:
    """127.0.0.0/8 or ::1 (an IPv4-mapped loopback address counts too)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def exposed(pids: Iterable[int]) -> list[str]:
    """Every TCP or UDP socket of ``pids`` that listens beyond loopback, as
    ``proto address:port``, sorted (empty when nothing does)."""
    return sorted(
        f"{proto} {address}:{port}"
        for proto, address, port in listening_sockets(pids, ALL_TABLES)
        if not is_loopback(address)
    )
